"""Hierarchies: ARX parsing and its error messages, validation, automatic hierarchies, trees."""

import numpy as np
import pandas as pd
import pytest

from app.privacy.anonymity.hierarchies import (
    MISSING_LEAF, build_tree, flat_hierarchy, hierarchy_problems, interval_hierarchy,
    parse_arx_hierarchy,
)
from app.privacy.registry import MethodInputError
from tests.privacy.test_anonymity_support import ADULT_QIS, adult_complete, adult_hierarchy_text


@pytest.mark.parametrize("column", ADULT_QIS)
def test_adult_arx_hierarchies_parse_and_cover_the_data(column):
    h = parse_arx_hierarchy(adult_hierarchy_text(column))
    assert list(h.columns) == [f"level_{i}" for i in range(h.shape[1])]
    assert (h.iloc[:, -1] == "*").all()
    assert hierarchy_problems(h, adult_complete()[column].unique()) == []


def test_ragged_row_names_its_line():
    text = "a;x;*\nb;x;*\n\nc;*\n"
    with pytest.raises(MethodInputError, match=r"line 4: 2 fields, expected 3 as on line 1"):
        parse_arx_hierarchy(text)


def test_empty_field_and_empty_file_are_named():
    with pytest.raises(MethodInputError, match=r"line 2: field 2 is empty"):
        parse_arx_hierarchy("a;x;*\nb;;*\n")
    with pytest.raises(MethodInputError, match="empty"):
        parse_arx_hierarchy("\n \n")
    with pytest.raises(MethodInputError, match="at least two fields"):
        parse_arx_hierarchy("a\nb\n")


def test_a_value_must_appear_on_exactly_one_row():
    """A row repeating an earlier one (also 39 vs 39.0, which match the same data value) is
    refused naming both lines and no value; repeated with other parents, the two-parents
    problem names it (as documented)."""
    with pytest.raises(MethodInputError, match=r"^hierarchy line 4 repeats line 1: every value "
                                               r"must appear on exactly one row$"):
        parse_arx_hierarchy("M;*\nF;*\n\nM;*\n")
    with pytest.raises(MethodInputError, match="line 3 repeats line 1"):
        parse_arx_hierarchy("39;30-39;*\n40;40-49;*\n39.0 ;30-39;*\n")
    other_parent = parse_arx_hierarchy("c;y;*\nc;x;*\n")
    assert "'c' at level 0 has 2 parents" in hierarchy_problems(other_parent, ["c"])[0]


def test_hierarchy_cells_are_capped_like_data_cells():
    from app.privacy.anonymity.hierarchies import MAX_CELL_LENGTH

    assert MAX_CELL_LENGTH == 65_536  # app.config's max_cell_length default
    at_cap = parse_arx_hierarchy("a;" + "x" * MAX_CELL_LENGTH + ";*\n")
    assert len(at_cap.iloc[0, 1]) == MAX_CELL_LENGTH
    with pytest.raises(MethodInputError, match=r"line 2: field 1 is longer than 65536 characters"):
        parse_arx_hierarchy("a;*\n" + "b" * 100_000 + ";*\n")
    with pytest.raises(MethodInputError, match="longer than 10 characters"):
        parse_arx_hierarchy("abcdefghijk;*\n", max_cell_length=10)


def test_bom_crlf_and_spaces_are_tolerated():
    h = parse_arx_hierarchy("\ufeffa ; x;*\r\nb;x ;*\r\n")
    assert h.values.tolist() == [["a", "x", "*"], ["b", "x", "*"]]


def test_problems_name_every_missing_value_capped_with_a_count():
    h = parse_arx_hierarchy("a;*\nb;*\n")
    values = ["a", "b"] + [f"v{i:02d}" for i in range(25)]
    (problem,) = hierarchy_problems(h, values)
    assert problem.startswith("25 data value(s) missing from the hierarchy")
    assert "'v00'" in problem and "'v19'" in problem and "'v20'" not in problem
    assert "(and 5 more)" in problem


def test_problems_name_values_with_two_parents():
    h = parse_arx_hierarchy("a;x;*\nb;x;*\nc;y;*\nc;x;*\nx;p;*\n")
    problems = hierarchy_problems(h, ["a", "b", "c"])
    assert any("'c' at level 0 has 2 parents" in p and "'x'" in p and "'y'" in p for p in problems)
    # an interior node with two parents is found too
    h2 = parse_arx_hierarchy("a;x;P;*\nb;x;Q;*\n")
    assert any("'x' at level 1 has 2 parents" in p for p in hierarchy_problems(h2, ["a", "b"]))


def test_numbers_match_their_text_in_hierarchies():
    h = parse_arx_hierarchy(adult_hierarchy_text("age"))
    assert hierarchy_problems(h, [17, 39.0, "90"]) == []
    assert "'150'" in hierarchy_problems(h, [150])[0]


def test_flat_hierarchy_and_tree_with_missing_cells():
    series = pd.Series(["b", None, "a", "b"])
    tree = build_tree("c", series, flat_hierarchy(series.dropna()))
    assert tree.height == 1
    assert sorted(tree.labels[1:]) == sorted(["a", "b", MISSING_LEAF])
    assert tree.labels[tree.anc[1, tree.leaf_codes[1]]] == MISSING_LEAF
    assert tree.node_ncp()[0] == 1.0 and np.all(tree.node_ncp()[1:] == 0.0)


def test_tree_nodes_cover_contiguous_leaves_and_lca_is_right():
    frame = adult_complete()
    h = parse_arx_hierarchy(adult_hierarchy_text("native-country"))
    tree = build_tree("native-country", frame["native-country"], h)
    names = np.array(tree.labels)
    leaf_names = [names[tree.anc[tree.height, i]] for i in range(tree.n_leaves)]
    parent_of = dict(zip(h.level_0, h.level_1))
    for node in range(len(tree.labels)):  # the leaves of a node are exactly a code range
        below = set(np.flatnonzero((tree.anc == node).any(axis=0)))
        assert below == set(range(tree.lo[node], tree.hi[node]))
    rng = np.random.default_rng(1)
    a, b = rng.integers(0, tree.n_leaves, 200), rng.integers(0, tree.n_leaves, 200)
    got = names[tree.lca(a, b)]
    for x, y, g in zip(a, b, got):
        lx, ly = leaf_names[x], leaf_names[y]
        expected = lx if lx == ly else (parent_of[lx] if parent_of[lx] == parent_of[ly] else "*")
        assert g == expected
    # every record's leaf is its own value
    assert (np.array(leaf_names)[tree.leaf_codes] == frame["native-country"].to_numpy()).all()


def test_tree_rejects_data_outside_the_hierarchy_naming_the_value():
    h = parse_arx_hierarchy("a;*\nb;*\n")
    with pytest.raises(MethodInputError, match=r"column 'c'.*'zz'"):
        build_tree("c", pd.Series(["a", "zz"]), h)


def test_automatic_interval_hierarchy_doubles_widths():
    values = np.arange(17, 91, dtype=float)
    h, spec = interval_hierarchy(values, 17, 90, levels=4, integer=True)
    assert spec.widths == (5.0, 10.0, 20.0, 40.0)
    assert h.shape[1] == 6 and (h.iloc[:, -1] == "*").all()
    for level in range(1, 5):
        for value, label in zip(values, h[f"level_{level}"]):
            lo, hi = map(float, label.split("-"))
            assert lo <= value <= hi and hi - lo + 1 == spec.widths[level - 1]
    assert hierarchy_problems(h, values) == []
    tree = build_tree("age", pd.Series(values), h, numeric=True, value_range=(17, 90),
                      spans_of=spec)
    ncp = tree.node_ncp()
    assert ncp[0] == 1.0  # the root
    leaf_nodes = tree.anc[tree.height]
    assert np.all(ncp[leaf_nodes] == 0.0)
    level1 = tree.level_codes(1)  # width-5 cells: NCP 4/73, clipped at the top of the range
    assert np.isclose(ncp[level1].max(), 4 / 73)


def test_a_group_named_like_another_rows_value_is_ambiguous():
    """M;F;* makes a released 'F' mean either F or the group holding M (found by the sweep)."""
    clash = parse_arx_hierarchy("M;F;*\nF;F;*\n")
    assert hierarchy_problems(clash, ["M", "F"]) == [
        "1 group label(s) equal to a data value of another row, so a released label would be "
        "ambiguous: 'F'; rename the group(s)"]
    assert hierarchy_problems(parse_arx_hierarchy("M;M;*\nF;F;*\n"), ["M", "F"]) == []  # to itself
    assert hierarchy_problems(parse_arx_hierarchy("M;any;*\nF;any;*\n"), ["M", "F"]) == []


def test_a_value_equal_to_the_root_is_not_an_ambiguous_group():
    """A column that an earlier k-anonymity step generalized holds '*', and its flat hierarchy is
    then '*;*' beside 'White;*': the root is named like a data value. A released '*' ("any
    value") is true of every record, so that is no ambiguity; it was refused, and every job on a
    Mondrian release failed (acceptance check, through the API)."""
    assert hierarchy_problems(flat_hierarchy(["White", "*", "Black"]), ["White", "*", "Black"]) == []
    assert hierarchy_problems(parse_arx_hierarchy("a;g;*\n*;*;*\n"), ["a", "*"]) == []
    assert hierarchy_problems(parse_arx_hierarchy("a;*;*\n*;g;*\n"), ["a", "*"]) != []  # '*' is a group here


def test_hierarchy_issues_name_every_value_up_to_a_size_and_count_the_rest():
    from app.privacy.anonymity import hierarchies

    h = parse_arx_hierarchy("a;*\n")
    values = [f"value-{i:05d}" for i in range(3000)]
    issues = hierarchies.hierarchy_issues(h, values + ["a"])
    assert [i["msg"] for i in issues] == [f"data value {v!r} is missing from the hierarchy" for v in values]
    long = ["x" * 60_000 + str(i) for i in range(40)]  # 2.4 MB of names
    issues = hierarchies.hierarchy_issues(h, long)
    assert sum(len(i["msg"]) for i in issues[:-1]) <= hierarchies.MAX_ISSUE_CHARS
    assert issues[-1] == {"loc": ["hierarchy"], "type": "hierarchy_truncated",
                          "msg": f"(and {40 - (len(issues) - 1)} more; fix these first)"}
    assert len(issues) - 1 == 16  # 16 × 60,040 characters fit in 1,000,000


def _read(label):
    from app.privacy.anonymity.interval_labels import read_interval

    return read_interval(label)


def _holds(label, x):
    lo, lo_in, hi, hi_in = _read(label)
    return (lo < x or (lo_in and lo == x)) and (x < hi or (hi_in and x == hi))


def test_automatic_cells_hold_huge_and_tiny_values_and_nest():
    """Found by tests/privacy/test_properties_hierarchies.py. A column of the one value
    2.0272269332919256e16 was labelled '[20272269332919256, 20272269332919256)', empty (width 1,
    a quarter of the float step there); -1 with bounds ±1e100 (an integer column) went into
    '0-1e100' (x - lo rounded to 1e100); and cells of width 1e-301 began at other numbers than
    their parents (10 × 10.0**-302 is 9.999999999999999e-302), so level 2's '[-5.846613319901802e-302,
    …)' was not inside level 4's '[-5.8466133199018e-302, …)'."""
    h, _ = interval_hierarchy(np.array([2.0272269332919256e16]), 2.0272269332919256e16,
                              2.0272269332919256e16, 1, False)
    assert _holds(h.level_1[0], 2.0272269332919256e16), h.level_1[0]
    h, spec = interval_hierarchy(np.array([-1.0]), -1e100, 1e100, 1, True)
    assert _holds(h.level_1[0], -1.0), h.level_1[0]
    assert not spec.integer  # beyond 2^52 the cells are half-open: '[a, b)'
    values = np.array([0.0, -8.584661331990179e-301])
    h, _ = interval_hierarchy(values, values.min(), values.max(), 4, False)
    for level in range(1, 4):
        for label, parent in zip(h[f"level_{level}"], h[f"level_{level + 1}"]):
            lo, _, hi, _ = _read(label)
            plo, _, phi, _ = _read(parent)
            assert plo <= lo and hi <= phi, (label, parent)
