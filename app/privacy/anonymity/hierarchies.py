"""Generalization hierarchies: ARX's CSV format, validation, automatic hierarchies, and the
tree a quasi-identifier is generalized over.

ARX format: one row per leaf value, ``value;level1;…;top`` (semicolon-separated, every row
the same length; the last column is usually ``*``). Parsed into a DataFrame with columns
``level_0`` (the leaf) … ``level_h`` (the top), all strings.

A :class:`Tree` keeps only the leaves that occur in the data, numbered in depth-first order so
that every node covers a contiguous range of leaf codes: the lowest common ancestor of a set
of leaves is then the LCA of its smallest and largest code, and a split between children is a
threshold on the code. All leaves sit at the same depth (ARX rows have equal lengths).

Split by cohesion: how values and leaves are matched (leaf_keys.py), what is wrong with a
hierarchy (hierarchy_findings.py), automatic interval hierarchies (automatic_intervals.py);
their public names are re-exported here, the imports of the code base unchanged.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
import pandas as pd

from app.privacy.anonymity.arx_csv import read_arx_rows
from app.privacy.anonymity.automatic_intervals import IntervalLevels, interval_hierarchy
from app.privacy.anonymity.hierarchy_findings import (
    MAX_ISSUE_CHARS, MAX_NAMED, HierarchyFindings, hierarchy_findings, hierarchy_issues, hierarchy_problems,
    not_number_warnings, top_warnings, value_keys,
)
from app.privacy.anonymity.leaf_keys import (
    NUMBER_TEXT, MISSING_LEAF, NUMBER, NUMBER_ANCHORED, ROOT, all_text, cell_texts, format_numbers, full_match,
    leaf_key, leaf_keys, normalize_value, normalize_values,
)
from app.privacy.arrays import distinct_sorted
from app.privacy.registry import MethodInputError

__all__ = [  # its own names and those moved out (imported from here across the code base)
    "MAX_CELL_LENGTH", "MAX_ISSUE_CHARS", "MAX_NAMED", "MISSING_LEAF", "NUMBER", "NUMBER_ANCHORED", "ROOT",
    "HierarchyFindings", "IntervalLevels", "Tree", "build_tree", "flat_hierarchy", "format_numbers", "full_match",
    "hierarchy_findings", "hierarchy_issues", "hierarchy_problems", "interval_hierarchy", "leaf_key", "leaf_keys",
    "missing_spelled_as_a_value", "normalize_value", "normalize_values", "not_number_warnings",
    "parse_arx_hierarchy", "parse_hierarchies", "top_warnings", "value_keys", "with_missing_leaf",
]


# The longest hierarchy cell, as the service's cap on a data cell (app.config's
# max_cell_length, 65,536 characters): this library cannot import the service's settings, so
# the service passes its own value to parse_arx_hierarchy and this is the default.
MAX_CELL_LENGTH = 65_536


# ------------------------------------------------------------------------------- parsing
def parse_arx_hierarchy(text: str, max_cell_length: int = MAX_CELL_LENGTH) -> pd.DataFrame:
    """Parse an ARX hierarchy CSV into columns level_0 (leaf) … level_h (top), as strings.

    Cells are stripped of surrounding spaces; blank lines are skipped. Raises
    MethodInputError naming the line of a ragged row, an empty or too long cell, a row that
    repeats an earlier one (its leaf compared as normalize_value), or an empty file. Read in
    bulk (app/privacy/anonymity/arx_csv.py)."""
    rows = read_arx_rows(text, max_cell_length, normalize_values)
    return pd.DataFrame(rows, columns=[f"level_{i}" for i in range(rows.shape[1])], dtype=object)


def parse_hierarchies(texts: dict[str, str], max_cell_length: int = MAX_CELL_LENGTH) -> dict[str, pd.DataFrame]:
    """Every stored hierarchy of a dataset, an error naming its column."""
    parsed = {}
    for column, text in texts.items():
        try:
            parsed[column] = parse_arx_hierarchy(text, max_cell_length)
        except MethodInputError as exc:
            raise MethodInputError(f"the stored hierarchy for {column!r}: {exc}") from None
    return parsed


def flat_hierarchy(values: Iterable) -> pd.DataFrame:
    """value → * for a categorical column without a hierarchy (values sorted as text)."""
    leaves = sorted({v for v in (normalize_value(x) for x in values) if v is not None})
    return pd.DataFrame({"level_0": leaves, "level_1": [ROOT] * len(leaves)}, dtype=object)


# ------------------------------------------------------------------------------- the tree
@dataclass
class Tree:
    """A hierarchy restricted to the leaves present in the data, leaves in DFS order.

    Node 0 is the root (depth 0); leaves are at depth ``height``. ``anc[j, leaf]`` is the
    leaf's ancestor at depth j; node v covers leaf codes [lo[v], hi[v]). ``span`` is the
    numeric interval of a node (clipped to the column's range) for numeric columns, else None.
    """

    column: str
    labels: list[str]
    depth: np.ndarray
    lo: np.ndarray
    hi: np.ndarray
    anc: np.ndarray
    leaf_codes: np.ndarray  # per record
    span: np.ndarray | None = None  # (n_nodes, 2)
    value_range: float | None = None

    @property
    def height(self) -> int:
        return self.anc.shape[0] - 1

    @property
    def n_leaves(self) -> int:
        return self.anc.shape[1]

    def leafcount(self) -> np.ndarray:
        return self.hi - self.lo

    def node_ncp(self) -> np.ndarray:
        """NCP of releasing each node: numeric span / range, else (leaves-1)/(all leaves-1)."""
        if self.span is not None and self.value_range:
            return np.clip((self.span[:, 1] - self.span[:, 0]) / self.value_range, 0.0, 1.0)
        total = self.n_leaves - 1
        return (self.leafcount() - 1) / total if total > 0 else np.zeros(len(self.labels))

    def lca(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """Lowest common ancestor of leaf codes a and b (elementwise), by depth scan."""
        same = self.anc[:, a] == self.anc[:, b]  # (height+1, len): True down to the LCA depth
        depth = same.sum(axis=0) - 1  # ancestors agree on a prefix of depths
        return self.anc[depth, a]

    def level_codes(self, level: int) -> np.ndarray:
        """Node of every record at generalization level ``level`` (0 = leaf, height = root)."""
        return self.anc[self.height - level, self.leaf_codes]


def _node_spans(paths: np.ndarray, numbers: np.ndarray, lo: float, hi: float,
                spans_of: IntervalLevels | None) -> list[pd.DataFrame]:
    """Interval covered by each (depth, label) node: all hierarchy leaves below it (or the
    automatic interval), clipped to [lo, hi]; the root covers [lo, hi]. Per depth, a frame
    indexed by label with columns a and b."""
    height = paths.shape[1] - 1
    out = [pd.DataFrame({"a": lo, "b": hi}, index=pd.Index(pd.unique(paths[:, 0]), dtype=object))]
    for depth in range(1, height + 1):
        level = height - depth
        extent = pd.Series(numbers).groupby(paths[:, depth], sort=False).agg(["min", "max"])
        a, b = extent["min"].to_numpy(dtype=float), extent["max"].to_numpy(dtype=float)
        if spans_of is not None and 0 < level <= len(spans_of.widths):
            a, b = spans_of.interval(level, spans_of.cells(level, a))
        out.append(pd.DataFrame({"a": np.minimum(np.maximum(a, lo), hi), "b": np.maximum(np.minimum(b, hi), lo)},
                                index=pd.Index(extent.index, dtype=object)))
    return out


def missing_spelled_as_a_value(series: pd.Series) -> bool:
    """Whether a column holds missing cells and a value spelled '<missing>' (which would be one)."""
    return bool(series.isna().any() and (series.dropna().astype(str) == MISSING_LEAF).any())


def with_missing_leaf(table: np.ndarray) -> np.ndarray:
    """An ARX table (leaf first, as text) with the leaf of missing cells: a row '<missing>' directly
    under the top — the hierarchy's own when it has one, else the root '*' added above its several
    — unless the hierarchy lists '<missing>' itself, which then places them. Adding a '*' above a
    top named otherwise made the hierarchy one level higher, every other distance shorter."""
    if MISSING_LEAF in set(table[:, 0].tolist()):
        return table
    tops = set(table[:, -1].tolist())
    top = tops.pop() if len(tops) == 1 else ROOT
    return np.vstack([table, np.array([[MISSING_LEAF] * (table.shape[1] - 1) + [top]], dtype=object)])


def build_tree(column: str, series: pd.Series, hierarchy: pd.DataFrame, *, numeric: bool = False,
               value_range: tuple[float, float] | None = None,
               spans_of: IntervalLevels | None = None) -> Tree:
    """The tree of ``series`` under ``hierarchy`` (ARX-shaped frame). Missing cells become the
    leaf ``<missing>`` under the root (categorical columns only). Raises MethodInputError when
    the hierarchy misses a data value or gives a node two parents."""
    codes, uniques = pd.factorize(series, use_na_sentinel=True)
    names = normalize_values(uniques)
    present_names = names[names != None]  # noqa: E711 (elementwise)
    problems = hierarchy_problems(hierarchy, present_names, numeric)
    if problems:
        raise MethodInputError(f"hierarchy of column {column!r}: " + "; ".join(problems))
    rows = hierarchy.to_numpy(dtype=object)
    leaves = leaf_keys(rows[:, 0], numeric)
    if numeric:  # a leaf that is no number matches no value of a numeric column: ignored
        keep = (full_match(NUMBER_ANCHORED, leaves) if all_text(leaves)
                else np.array([bool(NUMBER_TEXT.fullmatch(leaf)) for leaf in leaves], dtype=bool))
        rows, leaves = rows[keep], leaves[keep]
    # parse_arx_hierarchy refuses repeated rows; a frame built otherwise may still list a
    # leaf twice with the same parents (two parents are refused above): keep its first row
    first = ~pd.Index(leaves, dtype=object).duplicated(keep="first")
    table = cell_texts(rows[first]).copy()
    table[:, 0] = leaves[first]
    has_missing = bool((codes < 0).any())
    if has_missing:
        if numeric:
            raise MethodInputError(f"numeric quasi-identifier {column!r} has {(codes < 0).sum()} "
                                   "missing cells: drop or impute them first")
        table = with_missing_leaf(table)
    present = set(present_names.tolist()) | ({MISSING_LEAF} if has_missing else set())
    # paths from the root: column 0 = root ... last = leaf; add a root if the top is not single
    paths = table[:, ::-1]
    if len(set(paths[:, 0])) > 1:
        paths = np.column_stack([np.full(len(paths), ROOT, dtype=object), paths])
    spans = None
    if numeric:
        numbers = paths[:, -1].astype(float)  # float() of each leaf's text
        lo, hi = value_range
        spans = _node_spans(paths, numbers, lo, hi, spans_of)
    paths = paths[pd.Series(paths[:, -1], dtype=object).isin(present).to_numpy()]
    height = paths.shape[1] - 1
    # DFS order: sort leaves by the first-appearance rank of their ancestors, top down
    ranks = [pd.factorize(paths[:, j])[0] for j in range(1, height + 1)]
    order = np.lexsort(ranks[::-1]) if ranks else np.arange(len(paths))
    paths = paths[order]
    n_leaves = len(paths)
    anc = np.zeros((height + 1, n_leaves), dtype=np.int32)
    labels: list[str] = []
    depth_parts, lo_parts, hi_parts, span_parts = [], [], [], []
    for j in range(height + 1):
        # nodes at depth j are contiguous runs in DFS order (their label changes at run starts)
        col = paths[:, j]
        starts = np.flatnonzero(np.r_[True, col[1:] != col[:-1]]) if n_leaves else np.array([], int)
        if j > 0:  # a new run also starts where the parent changes
            parent_starts = np.flatnonzero(np.r_[True, anc[j - 1, 1:] != anc[j - 1, :-1]])
            starts = distinct_sorted(np.concatenate([starts, parent_starts]))
        ends = np.r_[starts[1:], n_leaves]
        first_id = len(labels)
        run = np.repeat(np.arange(len(starts)), ends - starts)
        anc[j] = first_id + run
        names_here = cell_texts(col[starts])
        labels += names_here.tolist()
        depth_parts.append(np.full(len(starts), j, dtype=np.int32))
        lo_parts.append(starts)
        hi_parts.append(ends)
        if spans is not None:
            at = spans[j].index.get_indexer(names_here)
            if (at < 0).any():
                raise KeyError((j, names_here[np.flatnonzero(at < 0)[0]]))
            span_parts.append(spans[j].to_numpy(dtype=float)[at])
    depth_list, lo_list, hi_list = (np.concatenate(parts) if parts else np.zeros(0, dtype=np.int32)
                                    for parts in (depth_parts, lo_parts, hi_parts))
    span_list = np.concatenate(span_parts) if span_parts else np.zeros((0, 2))
    # the leaf of each distinct value (its row; the last one of a label written twice)
    leaf_index = pd.Index(paths[:, height], dtype=object)
    last = ~leaf_index.duplicated(keep="last")
    leaf_index, leaf_rows = leaf_index[last], np.flatnonzero(last)
    at = leaf_index.get_indexer(names)
    unknown = (at < 0) & (names != None)  # noqa: E711 (elementwise)
    if unknown.any():
        raise KeyError(names[np.flatnonzero(unknown)[0]])
    lookup = np.where(at < 0, -1, leaf_rows[at]).astype(np.int32)
    held = leaf_index.get_indexer([MISSING_LEAF])[0]
    missing_leaf = int(leaf_rows[held]) if held >= 0 else -1
    leaf_codes = np.where(codes >= 0, lookup[np.maximum(codes, 0)] if len(lookup) else 0,
                          missing_leaf).astype(np.int32)
    return Tree(
        column=column, labels=labels, depth=np.array(depth_list, dtype=np.int32),
        lo=np.array(lo_list, dtype=np.int32), hi=np.array(hi_list, dtype=np.int32), anc=anc,
        leaf_codes=leaf_codes,
        span=np.array(span_list, dtype=float) if spans is not None else None,
        value_range=(value_range[1] - value_range[0]) if value_range is not None else None,
    )
