"""Generalization hierarchies: ARX's CSV format, validation, automatic hierarchies, and the
tree a quasi-identifier is generalized over.

ARX format: one row per leaf value, ``value;level1;…;top`` (semicolon-separated, every row
the same length; the last column is usually ``*``). Parsed into a DataFrame with columns
``level_0`` (the leaf) … ``level_h`` (the top), all strings.

A :class:`Tree` keeps only the leaves that occur in the data, numbered in depth-first order so
that every node covers a contiguous range of leaf codes: the lowest common ancestor of a set
of leaves is then the LCA of its smallest and largest code, and a split between children is a
threshold on the code. All leaves sit at the same depth (ARX rows have equal lengths).
"""

from __future__ import annotations

import csv
import math
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from app.privacy.registry import MethodInputError

# The longest hierarchy cell, as the service's cap on a data cell (app.config's
# max_cell_length, 65,536 characters): this library cannot import the service's settings, so
# the service passes its own value to parse_arx_hierarchy and this is the default.
MAX_CELL_LENGTH = 65_536
ROOT = "*"
MISSING_LEAF = "<missing>"  # a missing cell of a categorical QI is this leaf, directly under the root
MAX_NAMED = 20  # values named in one validation message
MAX_ISSUE_CHARS = 1_000_000  # a 422's errors list names every value, up to this much text


# ------------------------------------------------------------------------------- parsing
def parse_arx_hierarchy(text: str, max_cell_length: int = MAX_CELL_LENGTH) -> pd.DataFrame:
    """Parse an ARX hierarchy CSV into columns level_0 (leaf) … level_h (top), as strings.

    Cells are stripped of surrounding spaces; blank lines are skipped. Raises
    MethodInputError naming the line of a ragged row, an empty or too long cell, a row that
    repeats an earlier one, or an empty file."""
    if text.startswith("\ufeff"):
        text = text[1:]
    rows: list[list[str]] = []
    seen: dict[tuple, int] = {}  # row (leaf normalized) -> its line
    width = None
    first_line = 0
    for line_no, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        fields = [f.strip() for f in next(csv.reader([line], delimiter=";", quotechar='"'))]
        if width is None:
            width, first_line = len(fields), line_no
            if width < 2:
                raise MethodInputError(
                    f"hierarchy line {line_no}: a row needs at least two fields (value;…;*), found 1")
        elif len(fields) != width:
            raise MethodInputError(
                f"hierarchy line {line_no}: {len(fields)} fields, expected {width} as on line {first_line}")
        empty = [i for i, f in enumerate(fields) if f == ""]
        if empty:
            raise MethodInputError(f"hierarchy line {line_no}: field {empty[0] + 1} is empty")
        long = [i for i, f in enumerate(fields) if len(f) > max_cell_length]
        if long:
            raise MethodInputError(f"hierarchy line {line_no}: field {long[0] + 1} is longer than "
                                   f"{max_cell_length} characters")
        # One row per value: a value listed again with the same generalizations is refused
        # here (by line, naming no value); listed again with others, hierarchy_problems names
        # its two parents.
        key = (normalize_value(fields[0]), *fields[1:])
        if key in seen:
            raise MethodInputError(f"hierarchy line {line_no} repeats line {seen[key]}: every value "
                                   "must appear on exactly one row")
        seen[key] = line_no
        rows.append(fields)
    if not rows:
        raise MethodInputError("hierarchy is empty: expected one row per value, value;level1;…;*")
    frame = pd.DataFrame(rows, columns=[f"level_{i}" for i in range(width)], dtype=object)
    return frame


def parse_hierarchies(texts: dict[str, str], max_cell_length: int = MAX_CELL_LENGTH) -> dict[str, pd.DataFrame]:
    """Every stored hierarchy of a dataset, an error naming its column."""
    parsed = {}
    for column, text in texts.items():
        try:
            parsed[column] = parse_arx_hierarchy(text, max_cell_length)
        except MethodInputError as exc:
            raise MethodInputError(f"the stored hierarchy for {column!r}: {exc}") from None
    return parsed


_INTEGRAL_TEXT = re.compile(r"(-?(?:0|[1-9][0-9]*))(?:\.0*)?")


def normalize_value(value) -> str | None:
    """The text a data value is matched on: integral numbers lose their '.0'; None for missing."""
    if value is None:
        return None
    if isinstance(value, (bool, np.bool_)):
        return str(bool(value))
    if isinstance(value, (float, np.floating)):
        if math.isnan(value):
            return None
        return str(int(value)) if float(value).is_integer() else repr(float(value))
    if isinstance(value, (int, np.integer)):
        return str(int(value))
    if value is pd.NA or value is pd.NaT:
        return None
    # Text: only an integer written with a zero fraction ('39.0', '39.') loses it. '007', '+7' and
    # a 20-digit identifier stay as written: read as numbers they became '7' (one leaf with '7',
    # released so) or lost their last digits.
    text = str(value).strip()
    integral = _INTEGRAL_TEXT.fullmatch(text)
    return str(int(integral.group(1))) if integral else text


def _named(values: list[str]) -> str:
    shown = ", ".join(repr(v) for v in values[:MAX_NAMED])
    more = len(values) - MAX_NAMED
    return shown + (f" (and {more} more)" if more > 0 else "")


@dataclass(frozen=True)
class HierarchyFindings:
    """What is wrong with a hierarchy for some data values, as sentences (a message) and as
    one item each (a 422's ``errors``) — computed once for both."""
    missing: list[str]  # data values with no leaf
    multi: list[tuple[int, str, list[str]]]  # (level, node, its parents at level + 1)
    clashes: list[str]  # group labels equal to another row's data value

    def sentences(self) -> list[str]:
        """Every missing data value and every node with two parents, naming up to MAX_NAMED of
        each (``issues`` lists all); [] when fine."""
        problems: list[str] = []
        if self.missing:
            problems.append(f"{len(self.missing)} data value(s) missing from the hierarchy: {_named(self.missing)}")
        for level in sorted({lv for lv, _, _ in self.multi}):
            multi = [(name, options) for lv, name, options in self.multi if lv == level]
            for name, options in multi[:MAX_NAMED]:
                problems.append(f"value {name!r} at level {level} has {len(options)} parents at level "
                                f"{level + 1}: {_named(options)}")
            if len(multi) > MAX_NAMED:
                problems.append(f"(and {len(multi) - MAX_NAMED} more values with two parents at level {level})")
        if self.clashes:
            problems.append(f"{len(self.clashes)} group label(s) equal to a data value of another row, so a "
                            f"released label would be ambiguous: {_named(self.clashes)}; rename the group(s)")
        return problems

    def issues(self) -> list[dict[str, Any]]:
        """The same findings one item each: every missing data value and every node with two
        parents by name (the sentences stop at MAX_NAMED), up to MAX_ISSUE_CHARS of text (a
        cell may hold 65,536 characters)."""
        issues = [{"loc": ["hierarchy", "level_0"], "msg": f"data value {v!r} is missing from the hierarchy",
                   "type": "hierarchy_missing_value"} for v in self.missing]
        issues += [{"loc": ["hierarchy", f"level_{level}"],
                    "msg": f"value {name!r} at level {level} has {len(options)} parents at level {level + 1}: "
                           + ", ".join(repr(o) for o in options), "type": "hierarchy_two_parents"}
                   for level, name, options in self.multi]
        issues += [{"loc": ["hierarchy"], "msg": f"group label {c!r} equals a data value of another row",
                    "type": "hierarchy_ambiguous_label"} for c in self.clashes]
        used = np.cumsum([len(i["msg"]) for i in issues])
        shown = int(np.searchsorted(used, MAX_ISSUE_CHARS, side="right"))
        if shown < len(issues):
            issues = issues[:shown] + [{"loc": ["hierarchy"], "type": "hierarchy_truncated",
                                        "msg": f"(and {len(issues) - shown} more; fix these first)"}]
        return issues


def hierarchy_findings(hierarchy: pd.DataFrame, values: Iterable) -> HierarchyFindings:
    """(Hierarchies are small: plain dictionaries beat pandas here.)"""
    rows = hierarchy.to_numpy(dtype=object)
    leaves = [normalize_value(v) for v in rows[:, 0]]
    data_values = {normalize_value(v) for v in values} - {None}
    multi = []
    for level in range(rows.shape[1] - 1):
        child = leaves if level == 0 else [str(x) for x in rows[:, level]]
        parents: dict[str, list[str]] = {}
        for name, parent in zip(child, rows[:, level + 1]):
            seen = parents.setdefault(name, [])
            if str(parent) not in seen:
                seen.append(str(parent))
        multi += sorted((level, name, sorted(options)) for name, options in parents.items() if len(options) > 1)
    # A group named like a data value of another row: a released 'F' could then be the value F
    # or the group that holds M. (A value generalizing to itself, F;F;*, is unambiguous.) The
    # root is exempt: "any value" is true of every record, a value '*' too — and a column that
    # an earlier k-anonymity step generalized holds '*' beside the values it kept.
    leaf_set = set(leaves)
    clashes = sorted({str(label) for row, leaf in zip(rows[:, 1:], leaves)
                      for j, label in enumerate(row)
                      if str(label) in leaf_set and str(label) != leaf
                      and not (j == len(row) - 1 and str(label) == ROOT)})
    return HierarchyFindings(sorted(data_values - leaf_set), multi, clashes)


def hierarchy_problems(hierarchy: pd.DataFrame, values: Iterable) -> list[str]:
    return hierarchy_findings(hierarchy, values).sentences()


def hierarchy_issues(hierarchy: pd.DataFrame, values: Iterable) -> list[dict[str, Any]]:
    return hierarchy_findings(hierarchy, values).issues()


def flat_hierarchy(values: Iterable) -> pd.DataFrame:
    """value → * for a categorical column without a hierarchy (values sorted as text)."""
    leaves = sorted({v for v in (normalize_value(x) for x in values) if v is not None})
    return pd.DataFrame({"level_0": leaves, "level_1": [ROOT] * len(leaves)}, dtype=object)


# ---------------------------------------------------------------- automatic numeric hierarchy
def _nice_width(raw: float, integer: bool) -> float:
    """The smallest 1, 2 or 5 × 10^e at least ``raw`` (≥ 1 for integer columns)."""
    if integer:
        raw = max(raw, 1.0)
    if raw <= 0:
        return 1.0
    exponent = math.floor(math.log10(raw))
    for step in (1, 2, 5, 10):
        width = step * 10.0**exponent
        if width >= raw * (1 - 1e-12):
            return float(round(width)) if integer else width
    return 10.0 ** (exponent + 1)


def _fmt(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else repr(float(x))


@dataclass(frozen=True)
class IntervalLevels:
    """Automatic hierarchy of a numeric column: intervals from ``lo`` whose widths double per
    level, ``widths[0]`` the finest; the level above the coarsest is ``*``."""

    lo: float
    widths: tuple[float, ...]
    integer: bool

    @classmethod
    def build(cls, lo: float, hi: float, levels: int, integer: bool) -> IntervalLevels:
        finest = _nice_width((hi - lo) / 2.0**levels, integer)
        return cls(lo=float(lo), widths=tuple(finest * 2.0**j for j in range(levels)), integer=integer)

    def interval(self, level: int, index: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Closed interval [a, b] of the cells ``index`` of a level (1-based level)."""
        width = self.widths[level - 1]
        a = self.lo + index * width
        return a, (a + width - 1) if self.integer else a + width

    def label(self, level: int, index: int) -> str:
        a, b = self.interval(level, np.array([index]))
        return f"{_fmt(a[0])}-{_fmt(b[0])}" if self.integer else f"[{_fmt(a[0])}, {_fmt(b[0])})"


def interval_hierarchy(values: np.ndarray, lo: float, hi: float, levels: int,
                       integer: bool) -> tuple[pd.DataFrame, IntervalLevels]:
    """ARX-shaped hierarchy of the distinct ``values``: leaf, intervals doubling per level, *."""
    spec = IntervalLevels.build(lo, hi, levels, integer)
    distinct = np.unique(values[~np.isnan(values)])
    columns = {"level_0": [_fmt(v) for v in distinct]}
    for level in range(1, levels + 1):
        index = np.floor((distinct - spec.lo) / spec.widths[level - 1]).astype(np.int64)
        cells, inverse = np.unique(index, return_inverse=True)
        labels = np.array([spec.label(level, int(i)) for i in cells], dtype=object)
        columns[f"level_{level}"] = labels[inverse]
    columns[f"level_{levels + 1}"] = [ROOT] * len(distinct)
    return pd.DataFrame(columns, dtype=object), spec


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
                spans_of: IntervalLevels | None) -> dict[tuple[int, str], tuple[float, float]]:
    """Interval covered by each (depth, label) node: all hierarchy leaves below it (or the
    automatic interval), clipped to [lo, hi]; the root covers [lo, hi]."""
    out: dict[tuple[int, str], tuple[float, float]] = {}
    height = paths.shape[1] - 1
    for depth in range(1, height + 1):
        level = height - depth
        extent: dict[str, list[float]] = {}
        for label, x in zip(paths[:, depth], numbers):
            span = extent.setdefault(label, [x, x])
            span[0], span[1] = min(span[0], x), max(span[1], x)
        for label, (a, b) in extent.items():
            if spans_of is not None and 0 < level <= len(spans_of.widths):
                index = np.floor((a - spans_of.lo) / spans_of.widths[level - 1])
                ia, ib = spans_of.interval(level, np.array([index]))
                a, b = float(ia[0]), float(ib[0])
            out[(depth, label)] = (min(max(a, lo), hi), max(min(b, hi), lo))
    for label in set(paths[:, 0]):
        out[(0, label)] = (lo, hi)
    return out


def build_tree(column: str, series: pd.Series, hierarchy: pd.DataFrame, *, numeric: bool = False,
               value_range: tuple[float, float] | None = None,
               spans_of: IntervalLevels | None = None) -> Tree:
    """The tree of ``series`` under ``hierarchy`` (ARX-shaped frame). Missing cells become the
    leaf ``<missing>`` under the root (categorical columns only). Raises MethodInputError when
    the hierarchy misses a data value or gives a node two parents."""
    codes, uniques = pd.factorize(series, use_na_sentinel=True)
    names = [normalize_value(v) for v in uniques]
    problems = hierarchy_problems(hierarchy, [n for n in names if n is not None])
    if problems:
        raise MethodInputError(f"hierarchy of column {column!r}: " + "; ".join(problems))
    rows = hierarchy.to_numpy(dtype=object)
    leaves = [normalize_value(v) for v in rows[:, 0]]
    first = {}
    # parse_arx_hierarchy refuses repeated rows; a frame built otherwise may still list a
    # leaf twice with the same parents (two parents are refused above): keep its first row
    for i, leaf in enumerate(leaves):
        first.setdefault(leaf, i)
    table = rows[list(first.values())].astype(str).astype(object)
    table[:, 0] = list(first)
    has_missing = bool((codes < 0).any())
    if has_missing:
        if numeric:
            raise MethodInputError(f"numeric quasi-identifier {column!r} has {(codes < 0).sum()} "
                                   "missing cells: drop or impute them first")
        table = np.vstack([table, np.array([[MISSING_LEAF] * (table.shape[1] - 1) + [ROOT]], dtype=object)])
    present = set(n for n in names if n is not None) | ({MISSING_LEAF} if has_missing else set())
    # paths from the root: column 0 = root ... last = leaf; add a root if the top is not single
    paths = table[:, ::-1]
    if len(set(paths[:, 0])) > 1:
        paths = np.column_stack([np.full(len(paths), ROOT, dtype=object), paths])
    spans = None
    if numeric:
        numbers = pd.to_numeric(pd.Series(paths[:, -1]), errors="coerce").to_numpy(dtype=float)
        if np.isnan(numbers).any():
            raise MethodInputError(f"hierarchy of numeric column {column!r} has leaves that are not numbers")
        lo, hi = value_range
        spans = _node_spans(paths, numbers, lo, hi, spans_of)
    paths = paths[np.array([leaf in present for leaf in paths[:, -1]], dtype=bool)]
    height = paths.shape[1] - 1
    # DFS order: sort leaves by the first-appearance rank of their ancestors, top down
    ranks = [pd.factorize(paths[:, j])[0] for j in range(1, height + 1)]
    order = np.lexsort(ranks[::-1]) if ranks else np.arange(len(paths))
    paths = paths[order]
    n_leaves = len(paths)
    anc = np.zeros((height + 1, n_leaves), dtype=np.int32)
    labels: list[str] = []
    depth_list: list[int] = []
    lo_list: list[int] = []
    hi_list: list[int] = []
    span_list: list[tuple[float, float]] = []
    for j in range(height + 1):
        # nodes at depth j are contiguous runs in DFS order (their label changes at run starts)
        col = paths[:, j]
        starts = np.flatnonzero(np.r_[True, col[1:] != col[:-1]]) if n_leaves else np.array([], int)
        if j > 0:  # a new run also starts where the parent changes
            parent_starts = np.flatnonzero(np.r_[True, anc[j - 1, 1:] != anc[j - 1, :-1]])
            starts = np.union1d(starts, parent_starts)
        ends = np.r_[starts[1:], n_leaves]
        first_id = len(labels)
        run = np.repeat(np.arange(len(starts)), ends - starts)
        anc[j] = first_id + run
        for s, e in zip(starts, ends):
            labels.append(str(col[s]))
            depth_list.append(j)
            lo_list.append(int(s))
            hi_list.append(int(e))
            if spans is not None:
                span_list.append(spans[(j, str(col[s]))])
    leaf_of = {label: i for i, label in enumerate(paths[:, height].tolist())}
    lookup = np.array([leaf_of[n] if n is not None else -1 for n in names], dtype=np.int32)
    leaf_codes = np.where(codes >= 0, lookup[np.maximum(codes, 0)] if len(lookup) else 0,
                          leaf_of.get(MISSING_LEAF, -1)).astype(np.int32)
    return Tree(
        column=column, labels=labels, depth=np.array(depth_list, dtype=np.int32),
        lo=np.array(lo_list, dtype=np.int32), hi=np.array(hi_list, dtype=np.int32), anc=anc,
        leaf_codes=leaf_codes,
        span=np.array(span_list, dtype=float) if spans is not None else None,
        value_range=(value_range[1] - value_range[0]) if value_range is not None else None,
    )
