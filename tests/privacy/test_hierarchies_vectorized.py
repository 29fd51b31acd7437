"""The hierarchy code vectorized over a hierarchy's rows (an automatic hierarchy has a row per
distinct value: 328,176 for a numeric column of 1,000,000 rows, whose tree took 9.4 s one row
at a time) gives what the row-at-a-time code gave: the keys values and leaves match on, the
automatic hierarchy's labels, the findings (two parents, clashes, leaves that are no number)
and the tree — labels, depths, leaf ranges, ancestors, spans, each record's leaf. The
references below are the former code, one value at a time."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
from hypothesis import given
from hypothesis import strategies as st

from app.privacy.anonymity.automatic_intervals import number_text
from app.privacy.anonymity.hierarchies import (
    MISSING_LEAF, ROOT, IntervalLevels, build_tree, flat_hierarchy, format_numbers, hierarchy_findings,
    interval_hierarchy, leaf_key, leaf_keys, normalize_value, normalize_values,
)
from app.privacy.anonymity.leaf_keys import NUMBER_TEXT
from tests.support.properties import bounded

TEXTS = ["a", "b", "A", "x y", "007", "7", "7.0", "39.", "-0", "-0.00", "-12.000", "1e3", "1E+2", ".5",
         "5.", "+7", " 8 ", "\u00a09\u2003", "\x1c3\x1f", "é", "NA", "inf", "nan", "1e999", "1_000",
         "0x1A", "١٢", "00", "-", "", "G1", ROOT, "999999999999999", "-999999999999999", "9999999999999999",
         "-9999999999999999", "9007199254740993", "12345678901234567890"]
FLOATS = [0.0, -0.0, 1.0, -3.0, 2.5, 0.1, 1e-7, 1e16, 1e20, -2.0**63, 2.0**63, 2.0**64, 1e300,
          math.inf, -math.inf, math.nan, 123456789.125]


def _same(got, expected) -> None:
    assert list(got) == list(expected)
    assert [type(g) for g in got] == [type(e) for e in expected]


@given(st.lists(st.sampled_from(TEXTS), max_size=12), st.booleans())
@bounded(200)
def test_text_keys_match_the_value_at_a_time_keys(values, numeric):
    _same(normalize_values(np.array(values, dtype=object)), [normalize_value(v) for v in values])
    _same(leaf_keys(np.array(values, dtype=object), numeric), [leaf_key(v, numeric) for v in values])


@given(st.lists(st.one_of(st.sampled_from(FLOATS), st.floats(allow_nan=True, allow_infinity=True)), max_size=12),
       st.booleans())
@bounded(200)
def test_number_keys_match_the_value_at_a_time_keys(values, numeric):
    x = np.array(values, dtype=float)
    _same(format_numbers(x), [number_text(v) for v in values])
    _same(normalize_values(x), [normalize_value(v) for v in values])
    _same(leaf_keys(x, numeric), [leaf_key(v, numeric) for v in values])
    ints = np.array([int(v) for v in values if math.isfinite(v) and abs(v) < 2.0**62], dtype=np.int64)
    _same(leaf_keys(ints, numeric), [leaf_key(v, numeric) for v in ints])


def test_mixed_values_take_the_value_at_a_time_path():
    values = [7, 7.0, "7.0", None, True, np.int64(3), pd.NA, float("nan"), " x "]
    _same(normalize_values(values), [normalize_value(v) for v in values])
    _same(leaf_keys(values, True), [leaf_key(v, True) for v in values])
    _same(normalize_values(np.array([True, False])), ["True", "False"])


@given(st.integers(1, 6), st.booleans(), st.floats(-1e6, 1e6), st.floats(1e-3, 1e6))
@bounded(100)
def test_automatic_interval_labels_match_one_at_a_time(levels, integer, lo, width):
    spec = IntervalLevels.build(lo, lo + width, levels, integer)
    for level in range(1, levels + 1):
        cells = np.arange(-3, 40)
        _same(spec.labels(level, cells), [spec.label(level, int(i)) for i in cells])


# ------------------------------------------------------------------ the former row-at-a-time code
def _reference_multi_clashes_not_numbers(hierarchy, numeric):
    rows = hierarchy.to_numpy(dtype=object)
    leaves = [leaf_key(v, numeric) for v in rows[:, 0]]
    multi = []
    for level in range(rows.shape[1] - 1):
        child = leaves if level == 0 else [str(x) for x in rows[:, level]]
        parents: dict = {}
        for name, parent in zip(child, rows[:, level + 1]):
            seen = parents.setdefault(name, [])
            if str(parent) not in seen:
                seen.append(str(parent))
        multi += sorted((level, name, sorted(options)) for name, options in parents.items() if len(options) > 1)
    leaf_set = set(leaves)
    clashes = sorted({str(label) for row, leaf in zip(rows[:, 1:], leaves) for j, label in enumerate(row)
                      if str(label) in leaf_set and str(label) != leaf
                      and not (j == len(row) - 1 and str(label) == ROOT)})
    not_numbers = [leaf for leaf in leaves if numeric and not NUMBER_TEXT.fullmatch(leaf)]
    return multi, clashes, not_numbers


def _reference_tree(series, hierarchy, numeric, value_range, spans_of):
    codes, uniques = pd.factorize(series, use_na_sentinel=True)
    names = [normalize_value(v) for v in uniques]
    rows = hierarchy.to_numpy(dtype=object)
    leaves = [leaf_key(v, numeric) for v in rows[:, 0]]
    if numeric:
        keep = [bool(NUMBER_TEXT.fullmatch(leaf)) for leaf in leaves]
        rows, leaves = rows[keep], [leaf for leaf, k in zip(leaves, keep) if k]
    first = {}
    for i, leaf in enumerate(leaves):
        first.setdefault(leaf, i)
    table = rows[list(first.values())].astype(str).astype(object)
    table[:, 0] = list(first)
    has_missing = bool((codes < 0).any())
    if has_missing and MISSING_LEAF not in list(table[:, 0]):  # under the single top, or '*' above several
        top = table[0, -1] if len(set(table[:, -1])) == 1 else ROOT
        table = np.vstack([table, np.array([[MISSING_LEAF] * (table.shape[1] - 1) + [top]], dtype=object)])
    present = set(n for n in names if n is not None) | ({MISSING_LEAF} if has_missing else set())
    paths = table[:, ::-1]
    if len(set(paths[:, 0])) > 1:
        paths = np.column_stack([np.full(len(paths), ROOT, dtype=object), paths])
    spans = None
    if numeric:
        numbers = np.array([float(leaf) for leaf in paths[:, -1]], dtype=float)
        lo, hi = value_range
        spans, height = {}, paths.shape[1] - 1
        for depth in range(1, height + 1):
            level, extent = height - depth, {}
            for label, x in zip(paths[:, depth], numbers):
                span = extent.setdefault(label, [x, x])
                span[0], span[1] = min(span[0], x), max(span[1], x)
            for label, (a, b) in extent.items():
                if spans_of is not None and 0 < level <= len(spans_of.widths):
                    ia, ib = spans_of.interval(level, spans_of.cells(level, np.array([a])))
                    a, b = float(ia[0]), float(ib[0])
                spans[(depth, label)] = (min(max(a, lo), hi), max(min(b, hi), lo))
        for label in set(paths[:, 0]):
            spans[(0, label)] = (lo, hi)
    paths = paths[np.array([leaf in present for leaf in paths[:, -1]], dtype=bool)]
    height = paths.shape[1] - 1
    ranks = [pd.factorize(paths[:, j])[0] for j in range(1, height + 1)]
    paths = paths[np.lexsort(ranks[::-1]) if ranks else np.arange(len(paths))]
    n_leaves = len(paths)
    anc = np.zeros((height + 1, n_leaves), dtype=np.int32)
    labels, depth, lo_, hi_, span = [], [], [], [], []
    for j in range(height + 1):
        col = paths[:, j]
        starts = np.flatnonzero(np.r_[True, col[1:] != col[:-1]]) if n_leaves else np.array([], int)
        if j > 0:
            starts = np.union1d(starts, np.flatnonzero(np.r_[True, anc[j - 1, 1:] != anc[j - 1, :-1]]))
        ends = np.r_[starts[1:], n_leaves]
        anc[j] = len(labels) + np.repeat(np.arange(len(starts)), ends - starts)
        for s, e in zip(starts, ends):
            labels.append(str(col[s]))
            depth.append(j)
            lo_.append(int(s))
            hi_.append(int(e))
            if spans is not None:
                span.append(spans[(j, str(col[s]))])
    leaf_of = {label: i for i, label in enumerate(paths[:, height].tolist())}
    lookup = np.array([leaf_of[n] if n is not None else -1 for n in names], dtype=np.int32)
    leaf_codes = np.where(codes >= 0, lookup[np.maximum(codes, 0)] if len(lookup) else 0,
                          leaf_of.get(MISSING_LEAF, -1)).astype(np.int32)
    return labels, depth, lo_, hi_, anc, leaf_codes, span


def _assert_tree_matches(tree, reference) -> None:
    labels, depth, lo, hi, anc, leaf_codes, span = reference
    _same(tree.labels, labels)
    assert tree.depth.tolist() == depth and tree.lo.tolist() == lo and tree.hi.tolist() == hi
    assert np.array_equal(tree.anc, anc) and np.array_equal(tree.leaf_codes, leaf_codes)
    if tree.span is not None:
        assert tree.span.tolist() == [list(s) for s in span]


@given(st.lists(st.integers(-50, 50), min_size=1, max_size=40), st.integers(1, 5), st.booleans())
@bounded(150)
def test_automatic_numeric_tree_matches_the_row_at_a_time_tree(values, levels, as_float):
    series = pd.Series(np.array(values, dtype=float if as_float else np.int64) * (0.25 if as_float else 1))
    x = series.to_numpy(dtype=float)
    lo, hi = float(x.min()), float(x.max()) + 1.0
    hierarchy, spans_of = interval_hierarchy(x, lo, hi, levels, not as_float)
    _same(hierarchy["level_0"].tolist(), [number_text(v) for v in np.unique(x)])
    tree = build_tree("x", series, hierarchy, numeric=True, value_range=(lo, hi), spans_of=spans_of)
    _assert_tree_matches(tree, _reference_tree(series, hierarchy, True, (lo, hi), spans_of))


LEAVES = ["7", "007", "8.0", "9", "x", "1e1", "11", "12", "unknown"]
GROUPS = ["G1", "G2", "7", "5-9", "10-14", "[0, 10)"]


@st.composite
def uploaded(draw):
    """An uploaded hierarchy (repeated leaves, two parents, group names that are leaves, leaves
    that are no number) and data values it holds."""
    width = draw(st.integers(2, 4))
    leaves = draw(st.lists(st.sampled_from(LEAVES), min_size=1, max_size=8))
    rows = [[leaf] + [draw(st.sampled_from(GROUPS)) for _ in range(width - 2)]
            + [draw(st.sampled_from([ROOT, ROOT, "top"]))] for leaf in leaves]
    return pd.DataFrame(rows, columns=[f"level_{i}" for i in range(width)], dtype=object)


@given(uploaded(), st.booleans())
@bounded(200)
def test_findings_match_the_row_at_a_time_findings(hierarchy, numeric):
    found = hierarchy_findings(hierarchy, ["7", 8, 9.0, "x"], numeric)
    multi, clashes, not_numbers = _reference_multi_clashes_not_numbers(hierarchy, numeric)
    assert found.multi == multi and found.clashes == clashes and found.not_numbers == not_numbers


@given(uploaded(), st.booleans(), st.booleans())
@bounded(200)
def test_uploaded_tree_matches_the_row_at_a_time_tree(hierarchy, numeric, missing):
    multi, clashes, _ = _reference_multi_clashes_not_numbers(hierarchy, numeric)
    if multi or clashes:  # refused: two parents, or a group named like another row's value
        return
    keys = [leaf_key(v, numeric) for v in hierarchy["level_0"]]
    held = [k for k in keys if not numeric or NUMBER_TEXT.fullmatch(k)]
    if not held:
        return
    if numeric:
        series = pd.Series([float(k) for k in held] * 2)
        x = series.to_numpy()
        rng = (float(x.min()), float(x.max()))
        tree = build_tree("c", series, hierarchy, numeric=True, value_range=rng)
        _assert_tree_matches(tree, _reference_tree(series, hierarchy, True, rng, None))
    else:
        series = pd.Series(held + ([None] if missing else []), dtype=object)
        tree = build_tree("c", series, hierarchy)
        _assert_tree_matches(tree, _reference_tree(series, hierarchy, False, None, None))


def test_flat_hierarchy_tree_with_missing_cells_matches():
    series = pd.Series(["b", None, " a", "b", "7.0", 3], dtype=object)
    hierarchy = flat_hierarchy(series.dropna())
    _assert_tree_matches(build_tree("c", series, hierarchy), _reference_tree(series, hierarchy, False, None, None))


@given(st.lists(st.sampled_from(TEXTS + ["White", "white", "WHITE", "07", "7.50", "7.5"]), min_size=1, max_size=12),
       st.lists(st.sampled_from(TEXTS + ["White", "wHite", "7.500", "0007"]), max_size=6), st.booleans())
@bounded(200)
def test_the_leaf_a_missing_value_is_written_as_is_the_one_found_one_leaf_at_a_time(leaves, values, numeric):
    """'white' for White, '07' for 7: the first leaf whose case-folded number key matches, as the
    loop over the leaves found it (8 s on a 600,000-leaf hierarchy's 422)."""
    leaves = [v for v in leaves if v.strip()]  # a parsed hierarchy has no empty leaf
    if not leaves:
        return
    found = hierarchy_findings(pd.DataFrame({"l0": leaves, "l1": [ROOT] * len(leaves)}, dtype=object), values, numeric)
    near_key = lambda v: leaf_key(v, numeric=True).casefold()  # noqa: E731
    written: dict[str, str] = {}
    for leaf in leaf_keys(np.array(leaves, dtype=object), numeric).tolist():
        written.setdefault(near_key(leaf), leaf)
    assert found.near == {v: written[near_key(v)] for v in found.missing if near_key(v) in written}
    assert list(found.near) == [v for v in found.missing if v in found.near]
