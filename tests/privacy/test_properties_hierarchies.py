"""Property-based tests of hierarchies: validation names every data value missing from a
hierarchy and every node with two parents, and the automatic interval hierarchy of a numeric
column holds every value in exactly one interval per level, nested level to level — for
negative, huge and tiny numbers, declared bounds wider than the data and a single value."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
from hypothesis import assume, given, note
from hypothesis import strategies as st

from app.privacy.anonymity.axes import AxisNotes, tree_axis
from app.privacy.anonymity.hierarchies import ROOT, hierarchy_findings, interval_hierarchy, leaf_key, normalize_value
from app.privacy.anonymity.interval_labels import interval_label_warnings, read_interval
from app.privacy.data import ColumnInfo, declared_bounds_problem
from tests.support.properties import bounded

TEXT = st.sampled_from(["a", "b", "A", "x y", "007", "7", "7.0", "-1", "é", "1e3", "NA", " c "])


@st.composite
def hierarchies_and_values(draw):
    """A hierarchy whose rows may give a value or a group two parents, and data values some
    of which it lacks (text, integers, floats written as integers)."""
    width = draw(st.integers(2, 4))
    leaves = draw(st.lists(TEXT, min_size=1, max_size=6))
    groups = st.sampled_from(["G1", "G2", "G3"])
    rows = [[leaf] + [draw(groups) for _ in range(width - 2)] + [ROOT] for leaf in leaves]
    frame = pd.DataFrame(rows, columns=[f"level_{i}" for i in range(width)], dtype=object)
    values = draw(st.lists(st.one_of(TEXT, st.integers(-3, 10), st.sampled_from([7.0, 1000.0, 2.5])),
                           max_size=8))
    return frame, values


@bounded(150)
@given(hierarchies_and_values(), st.booleans())
def test_validation_names_every_missing_value_and_every_second_parent(case, numeric):
    hierarchy, values = case
    findings = hierarchy_findings(hierarchy, values, numeric=numeric)
    leaves = {leaf_key(v, numeric) for v in hierarchy.level_0}
    expected_missing = {leaf_key(v, numeric) for v in values} - {None} - leaves
    assert set(findings.missing) == expected_missing
    assert len(findings.missing) == len(set(findings.missing))
    # a node of level j with two or more parents at level j + 1 (a leaf matched as a key)
    expected_multi = set()
    for level in range(hierarchy.shape[1] - 1):
        parents: dict[str, set[str]] = {}
        for child, parent in zip(hierarchy[f"level_{level}"], hierarchy[f"level_{level + 1}"]):
            name = leaf_key(child, numeric) if level == 0 else str(child)
            parents.setdefault(name, set()).add(str(parent))
        expected_multi |= {(level, name, tuple(sorted(p))) for name, p in parents.items() if len(p) > 1}
    assert {(lv, name, tuple(options)) for lv, name, options in findings.multi} == expected_multi
    # one issue per missing value and per second parent, each naming it
    issues = findings.issues()
    missing_issues = [i for i in issues if i["type"] == "hierarchy_missing_value"]
    assert len(missing_issues) == len(expected_missing)
    for value, issue in zip(findings.missing, missing_issues):
        assert repr(value) in issue["msg"]
    assert len([i for i in issues if i["type"] == "hierarchy_two_parents"]) == len(expected_multi)
    sentences = " ".join(findings.sentences())
    for value in list(expected_missing)[:20]:
        assert repr(value) in sentences
    assert (not expected_missing and not expected_multi and not findings.clashes) == (findings.sentences() == [])


def _interval(label: str) -> tuple[float, bool, float, bool]:
    found = read_interval(label)
    assert found is not None, label
    return found


def _holds(interval, x: float) -> bool:
    lo, lo_in, hi, hi_in = interval
    return (lo < x or (lo_in and lo == x)) and (x < hi or (hi_in and x == hi))


def _inside(inner, outer) -> bool:
    """Interval ``inner`` lies within ``outer``."""
    lo, lo_in, hi, hi_in = inner
    olo, olo_in, ohi, ohi_in = outer
    return (olo < lo or (olo == lo and (olo_in or not lo_in))) and \
        (hi < ohi or (hi == ohi and (ohi_in or not hi_in)))


magnitudes = st.sampled_from([1e-300, 1e-12, 1e-3, 1.0, 7.0, 1e3, 1e9, 1e15, 1e100])


@st.composite
def numeric_columns(draw):
    integer = draw(st.booleans())
    scale = draw(magnitudes)
    if integer:
        top = min(int(scale), 2**53)
        cell = st.integers(-max(top, 1), max(top, 1)).map(float)
    else:
        cell = st.floats(-scale, scale, allow_nan=False, allow_infinity=False)
    values = draw(st.lists(cell, min_size=1, max_size=12))
    if draw(st.booleans()):  # one distinct value
        values = [values[0]] * len(values)
    bounds = None
    if draw(st.booleans()):
        lo, hi = min(values), max(values)
        pad = draw(st.sampled_from([0.0, 0.5, 1.0, scale]))
        bounds = (math.floor(lo - pad) if integer else lo - pad, math.ceil(hi + pad) if integer else hi + pad)
    return np.array(values, dtype=float), bounds, integer, draw(st.integers(1, 5))


@bounded(200)
@given(numeric_columns())
def test_the_automatic_interval_hierarchy_holds_every_value_once_per_level(case):
    values, bounds, integer, levels = case
    lo, hi = bounds if bounds is not None else (values.min(), values.max())
    assume(math.isfinite(hi - lo))
    note(f"values={values.tolist()} lo={lo!r} hi={hi!r} integer={integer} levels={levels}")
    hierarchy, _ = interval_hierarchy(values, lo, hi, levels, integer)
    distinct = np.unique(values)
    # one row per distinct value, its leaf matching the value as the service matches data
    assert len(hierarchy) == len(distinct)
    assert [leaf_key(v, numeric=True) for v in hierarchy.level_0] == [normalize_value(v) for v in distinct]
    assert (hierarchy[f"level_{levels + 1}"] == ROOT).all()
    below = {v: (v, True, v, True) for v in distinct}
    for level in range(1, levels + 1):
        labels = hierarchy[f"level_{level}"].tolist()
        cells = {label: _interval(label) for label in labels}
        for value, label in zip(distinct, labels):
            assert _holds(cells[label], value), (level, value, label)
            assert _inside(below[value], cells[label]), (level, value, label)  # nested
            # exactly one interval of the level holds it
            assert sum(_holds(c, value) for c in cells.values()) == 1, (level, value, cells)
        ordered = sorted(cells.values())
        for (a_lo, a_lo_in, a_hi, a_hi_in), (b_lo, b_lo_in, b_hi, b_hi_in) in zip(ordered, ordered[1:]):
            assert a_hi < b_lo or (a_hi == b_lo and not (a_hi_in and b_lo_in))  # disjoint
        below = {value: cells[label] for value, label in zip(distinct, labels)}
    assert interval_label_warnings(hierarchy, frozenset(leaf_key(v, True) for v in values)) == []


@bounded(100)
@given(numeric_columns())
def test_a_numeric_quasi_identifier_gets_a_tree_whose_spans_hold_its_values(case):
    """Through the path a kanonymity release takes (tree_axis): either a tree whose nodes'
    spans hold the values below them, or a refusal that says why (a range beyond a float64)."""
    from app.privacy.registry import MethodInputError

    values, bounds, integer, levels = case
    info = ColumnInfo("x", "numeric", "quasi_identifier", bounds=bounds, integer=integer)
    try:
        tree = tree_axis(info, pd.Series(values), None, AxisNotes(), levels)
    except MethodInputError as exc:
        # declared bounds the schema refuses (data.declared_bounds_problem: one value padded by 0
        # gives lo == hi), else a range of values beyond a float64
        problem = None if bounds is None else declared_bounds_problem(*map(float, bounds))
        assert (f"declared bounds {problem}" if problem else "wider than") in str(exc)
        return
    if bounds is not None:
        assert declared_bounds_problem(*map(float, bounds)) is None  # refused above otherwise
    lo, hi = bounds if bounds is not None else (values.min(), values.max())
    leaf_value = np.unique(values)  # leaves present, in DFS order of their values
    node_values = {}
    for depth in range(tree.height + 1):
        for leaf in range(tree.n_leaves):
            node_values.setdefault(int(tree.anc[depth, leaf]), []).append(leaf)
    leaf_numbers = np.array([float(tree.labels[tree.anc[tree.height, i]]) for i in range(tree.n_leaves)])
    assert sorted(leaf_numbers.tolist()) == sorted(leaf_value.tolist())
    for node, leaves in node_values.items():
        a, b = tree.span[node]
        xs = leaf_numbers[leaves]
        assert lo <= a <= xs.min() and xs.max() <= b <= hi, (tree.labels[node], a, b, xs)
    ncp = tree.node_ncp()
    assert np.all((ncp >= 0) & (ncp <= 1))
    assert ncp[0] == (1.0 if hi > lo else 0.0)
