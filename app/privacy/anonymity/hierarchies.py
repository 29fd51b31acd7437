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

import math
import re
from collections.abc import Iterable
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from app.privacy.anonymity.arx_csv import read_arx_rows
from app.privacy.arrays import distinct_sorted
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


NUMBER = r"[-+]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][-+]?[0-9]+)?"
_NUMBER_TEXT = re.compile(NUMBER)


def leaf_key(value, numeric: bool = False) -> str | None:
    """normalize_value, and in a numeric column a leaf written as a number is that number:
    '017', '7.50' and '1e3' match the data's 17, 7.5 and 1000 (read as numbers, the data kept
    no leading or trailing zeros). Text that is not a number is kept (it matches no value)."""
    key = normalize_value(value)
    if numeric and key is not None and _NUMBER_TEXT.fullmatch(key):
        number = float(key)
        if math.isfinite(number):
            return normalize_value(number)
    return key




# The same keys for many values at once: a hierarchy has a leaf per distinct value, and an
# automatic one over a numeric column of 1,000,000 rows had 328,176 — keyed one by one, the
# tree of that one column took 9.4 s (0.45 s for Adult's 15,610 fnlwgt values). The regular
# expressions run in Arrow (RE2, anchored: the same strings match as with fullmatch), str.strip
# and float() are Python's own, applied by map and numpy's object casts.
NUMBER_ANCHORED = rf"^{NUMBER}$"
_INTEGRAL_DIGITS = r"^(?P<digits>-?(?:0|[1-9][0-9]*))(?:\.0*)?$"  # _INTEGRAL_TEXT, its group named
_PLAIN_INTEGER = r"^(?:0|-?[1-9][0-9]{0,14})$"  # below 10^15 < 2^53
# the integral texts normalize_value writes otherwise: with a fraction, or '-0' (int() writes the
# others as they are; a hierarchy of 600,000 integer leaves then extracts nothing)
_REWRITTEN_ANCHORED = r"^(?:-?(?:0|[1-9][0-9]*)\.0*|-0)$"


def _object_array(values) -> np.ndarray:
    if isinstance(values, (pd.Index, pd.Series)):
        values = values.to_numpy()
    if isinstance(values, np.ndarray) and values.dtype.kind in "biufO":
        return values
    return np.array(list(values), dtype=object)


def _all_text(values: np.ndarray) -> bool:
    return values.dtype.kind == "O" and set(map(type, values)) <= {str}


def full_match(pattern: str, texts: np.ndarray) -> np.ndarray:
    """Whether each text (an object array of str) matches the anchored ``pattern`` whole."""
    if not len(texts):
        return np.zeros(0, dtype=bool)
    try:
        arrow = pa.array(texts, pa.string())
    except UnicodeEncodeError:  # a lone surrogate ('\ud800') has no UTF-8: Python's re reads it
        return np.fromiter(map(bool, map(re.compile(pattern).fullmatch, texts)), dtype=bool, count=len(texts))
    return pc.match_substring_regex(arrow, pattern).to_numpy(zero_copy_only=False)


def format_numbers(x: np.ndarray) -> np.ndarray:
    """``_fmt`` of each number (object array of str): an integral one without its '.0', else
    its repr."""
    x = np.asarray(x, dtype=float)
    out = np.empty(len(x), dtype=object)
    integral = np.isfinite(x) & (np.floor(x) == x)
    small = integral & (np.abs(x) < 2.0**63)  # exact in an int64
    out[small] = x[small].astype(np.int64).astype(str).tolist()
    big = np.flatnonzero(integral & ~small)
    out[big] = [str(int(v)) for v in x[big].tolist()]
    rest = ~integral
    out[rest] = list(map(repr, x[rest].tolist()))
    return out


def normalize_values(values) -> np.ndarray:
    """normalize_value of each value, as an object array (str, or None for a missing one)."""
    arr = _object_array(values)
    if arr.dtype.kind in "iu":
        out = np.empty(len(arr), dtype=object)
        out[:] = arr.astype(str).tolist()
        return out
    if arr.dtype.kind == "f":
        out = format_numbers(arr)
        out[np.isnan(arr)] = None
        return out
    if arr.dtype.kind == "b":
        return np.where(arr, "True", "False").astype(object)
    if not _all_text(arr):
        out = np.empty(len(arr), dtype=object)
        out[:] = [normalize_value(v) for v in arr]
        return out
    out = np.empty(len(arr), dtype=object)
    out[:] = list(map(str.strip, arr))
    integral = np.flatnonzero(full_match(_REWRITTEN_ANCHORED, out))
    if len(integral):  # '39.0' → '39', '-0' → '0' (the digits group is already int()'s writing)
        digits = pc.extract_regex(pa.array(out[integral], pa.string()), _INTEGRAL_DIGITS).field(0)
        digits = pc.if_else(pc.equal(digits, "-0"), "0", digits)
        out[integral] = digits.to_pylist()
    return out


def leaf_keys(values, numeric: bool = False) -> np.ndarray:
    """leaf_key of each value, as an object array (str, or None)."""
    keys = normalize_values(values)
    if not numeric:
        return keys
    text = np.flatnonzero(keys != None)  # noqa: E711 (elementwise)
    # an integer of up to 15 digits written plainly is its own key (a float holds it exactly and
    # format_numbers writes it so): most leaves of a numeric hierarchy, left as they are instead
    # of floated and written again (0.6 s of build_tree's 5.5 s on 600,000 integer leaves)
    text = text[~full_match(_PLAIN_INTEGER, keys[text])]
    number = text[full_match(NUMBER_ANCHORED, keys[text])]
    x = keys[number].astype(float)  # float() of each text
    finite = np.isfinite(x)
    keys[number[finite]] = format_numbers(x[finite])
    return keys


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
    near: dict[str, str]  # missing data value -> the leaf that writes it otherwise (case, zeros)
    not_numbers: list[str]  # leaves of a numeric column that are not numbers (ignored: a warning)
    data: frozenset[str]  # the data values' keys (value_keys): the warnings read them too

    def sentences(self) -> list[str]:
        """Every missing data value and every node with two parents, naming up to MAX_NAMED of
        each (``issues`` lists all); [] when fine."""
        problems: list[str] = []
        if self.missing:
            sentence = f"{len(self.missing)} data value(s) missing from the hierarchy: {_named(self.missing)}"
            if self.near:
                pairs = [f"{v!r} as {leaf!r}" for v, leaf in self.near.items()]
                sentence += (f"; {len(pairs)} of them are written otherwise in the hierarchy ({_AS_WRITTEN}): "
                             + ", ".join(pairs[:MAX_NAMED]) + (f" (and {len(pairs) - MAX_NAMED} more)"
                                                               if len(pairs) > MAX_NAMED else ""))
            problems.append(sentence)
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
        issues = [{"loc": ["hierarchy", "level_0"], "msg": f"data value {v!r} is missing from the hierarchy"
                   + (f" (it has {self.near[v]!r}: {_AS_WRITTEN})" if v in self.near else ""),
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


_AS_WRITTEN = "values match as written, case and leading zeros included"


def value_keys(values: Iterable, numeric: bool = False) -> frozenset[str]:
    """The keys (leaf_key) data values match leaves on; keyed once per upload (~0.2 s per
    100,000 distinct values), for the findings and the warnings alike."""
    return frozenset(leaf_keys(values, numeric).tolist()) - {None}


def hierarchy_findings(hierarchy: pd.DataFrame, values: Iterable, numeric: bool = False) -> HierarchyFindings:
    """``numeric``: the column is numeric, so its leaves match as numbers (leaf_key).
    Vectorized over the hierarchy's rows: an automatic hierarchy has a row per distinct value."""
    rows = hierarchy.to_numpy(dtype=object)
    leaf_array = leaf_keys(rows[:, 0], numeric)
    leaves = leaf_array.tolist()
    data_values = value_keys(values, numeric)
    labels = _texts(rows[:, 1:]) if rows.shape[1] > 1 else rows[:, 1:]
    multi = []
    for level in range(rows.shape[1] - 1):
        multi += _two_parents(level, leaf_array if level == 0 else labels[:, level - 1], labels[:, level])
    # A group named like a data value of another row: a released 'F' could then be the value F
    # or the group that holds M. (A value generalizing to itself, F;F;*, is unambiguous.) The
    # root is exempt: "any value" is true of every record, a value '*' too — and a column that
    # an earlier k-anonymity step generalized holds '*' beside the values it kept.
    leaf_set = set(leaves)
    clash = pd.Series(labels.ravel(), dtype=object).isin(leaf_set - {None}).to_numpy().reshape(labels.shape)
    clash = clash & (labels != leaf_array[:, None])
    if labels.shape[1]:
        clash[:, -1] &= labels[:, -1] != ROOT
    clashes = sorted(set(labels[clash].tolist()))
    missing = sorted(data_values - leaf_set)
    near = _written_otherwise(leaf_array, missing) if missing else {}
    not_numbers = []
    if numeric:
        if _all_text(leaf_array):
            not_numbers = leaf_array[~full_match(NUMBER_ANCHORED, leaf_array)].tolist()
        else:
            not_numbers = [leaf for leaf in leaves if not _NUMBER_TEXT.fullmatch(leaf)]
    return HierarchyFindings(missing, multi, clashes, near, not_numbers, data_values)


def _near_keys(values: np.ndarray) -> np.ndarray:
    """What values are matched on to point at a leaf written otherwise: case and a number's
    leading or trailing zeros ignored (leaf_key as numbers, casefolded)."""
    keys = leaf_keys(values, numeric=True)
    text = keys != None  # noqa: E711 (elementwise)
    keys[text] = list(map(str.casefold, keys[text]))
    return keys


def _written_otherwise(leaves: np.ndarray, missing: list[str]) -> dict[str, str]:
    """The leaf each missing data value is written as otherwise ('white' for White, '07' for 7),
    the first such leaf; all leaves keyed at once (one at a time, a 600,000-leaf hierarchy's 422
    took 8 s)."""
    leaf_near = _near_keys(leaves)
    first = ~pd.Index(leaf_near, dtype=object).duplicated(keep="first")
    at = pd.Index(leaf_near[first], dtype=object).get_indexer(_near_keys(np.array(missing, dtype=object)))
    written = leaves[first]
    return {v: written[i] for v, i in zip(missing, at.tolist()) if i >= 0}


def _texts(cells: np.ndarray) -> np.ndarray:
    """str() of each cell, an object array of the same shape (the cells themselves when text)."""
    if _all_text(cells.ravel()):
        return cells
    out = np.empty(cells.shape, dtype=object)
    out.ravel()[:] = [str(x) for x in cells.ravel()]
    return out


def _two_parents(level: int, child: np.ndarray, parent: np.ndarray) -> list[tuple[int, Any, list[str]]]:
    """(level, name, its parents sorted) of each child name with more than one parent, sorted."""
    child_code, child_names = pd.factorize(child, use_na_sentinel=False)
    parent_code, parent_names = pd.factorize(parent, use_na_sentinel=False)
    pairs = distinct_sorted(child_code.astype(np.int64) * max(len(parent_names), 1) + parent_code)
    of_child = pairs // max(len(parent_names), 1)
    several = np.bincount(of_child, minlength=len(child_names)) > 1
    out = []
    for c in np.flatnonzero(several):  # a hierarchy with such nodes is refused: few, in practice
        options = sorted(str(parent_names[p]) for p in pairs[of_child == c] % max(len(parent_names), 1))
        out.append((level, child_names[c], options))
    return sorted(out)


def hierarchy_problems(hierarchy: pd.DataFrame, values: Iterable, numeric: bool = False) -> list[str]:
    return hierarchy_findings(hierarchy, values, numeric).sentences()


def hierarchy_issues(hierarchy: pd.DataFrame, values: Iterable, numeric: bool = False) -> list[dict[str, Any]]:
    return hierarchy_findings(hierarchy, values, numeric).issues()


def not_number_warnings(findings: HierarchyFindings, column: str) -> list[str]:
    """The leaves a numeric column cannot hold: allowed, as any leaf absent from the data, but
    named (a row for 'unknown' in an age hierarchy is ignored, not a value)."""
    if not findings.not_numbers:
        return []
    return [f"{len(findings.not_numbers)} leaf value(s) of the hierarchy are not numbers, and column "
            f"{column!r} is numeric, so no value of it can be one: {_named(findings.not_numbers)}; "
            "they are ignored"]


def top_warnings(hierarchy: pd.DataFrame, data: frozenset[str], numeric: bool = False) -> list[str]:
    """``data``: the data values' keys (value_keys). A last level of several values gets a root '*' above it (build_tree): said, and a first row
    that holds no data value and shares no label with another row is pointed at as a likely
    header (a pandas export's 'level_0,level_1' gives such a top)."""
    rows = hierarchy.to_numpy(dtype=object)
    tops = sorted({str(t) for t in rows[:, -1]})
    if len(tops) < 2:
        return []
    warning = f"the hierarchy's last level holds {len(tops)} values ({_named(tops)}), not one: a root '*' is added above them"
    others = {str(label) for label in rows[1:, 1:].ravel()}
    first = [str(cell) for cell in rows[0]]
    if len(rows) > 1 and leaf_key(first[0], numeric) not in data and not others & set(first[1:]):
        warning += (f"; the first row ({', '.join(repr(cell) for cell in first)}) holds no value of the data and "
                    "shares no label with another row: if it is a header, remove it")
    return [warning]


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
        # the float nearest step × 10^e, which writes as it (10 × 10.0**-302 is 9.999999999999999e-302:
        # the cells were then summed in decimal from that writing and those of levels 1 and 4,
        # 2 × and 16 × it, began at different numbers, so a cell was not inside its parent)
        width = float(f"{step}e{exponent}")
        if width >= raw * (1 - 1e-12):
            return float(round(width)) if integer else width
    return float(f"1e{exponent + 1}")


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
        magnitude = float(max(abs(lo), abs(hi)))
        # 'a-b' cells while float64 holds every integer of the range and their differences
        # (below 2^52); beyond, the cell of a value was found by a subtraction that rounded (-1
        # with bounds ±1e100 went into '0-1e100'), so such columns get half-open cells [a, b)
        integer = integer and magnitude < 2.0**52
        finest = _nice_width((hi - lo) / 2.0**levels, integer)
        if magnitude > 0:  # at least two float steps wide: a narrower cell's ends round to one
            # number, '[20272269332919256, 20272269332919256)' for a column of that one value
            finest = max(finest, _nice_width(2.0 * float(np.spacing(magnitude)), integer))
        # an integer column's cells start on an integer, so that 'a-b' holds a..b (bounds may
        # be declared as 0.5)
        origin = math.floor(lo) if integer else float(lo)
        return cls(lo=float(origin), widths=tuple(finest * 2.0**j for j in range(levels)), integer=integer)

    def starts(self, level: int, index: np.ndarray) -> np.ndarray:
        """Where the cells ``index`` of a level start: lo + index · width, summed in decimal from
        the shortest writings of both, so 0.1 · 3 is 0.3 (not 0.30000000000000004) and a
        label's ends are the numbers that decide which values it holds."""
        index = np.asarray(index, dtype=np.int64)
        if self.integer:
            return self.lo + index * self.widths[level - 1]
        cells, inverse = np.unique(index, return_inverse=True)
        lo, width = Decimal(repr(self.lo)), Decimal(repr(self.widths[level - 1]))
        return np.array([float(lo + int(i) * width) for i in cells], dtype=float)[inverse].reshape(index.shape)

    def cells(self, level: int, x: np.ndarray) -> np.ndarray:
        """The cell of each value x of a level: starts(i) <= x < starts(i + 1). (Dividing alone
        put 0.6 in [0.5, 0.6) when the width was 0.1.)"""
        x = np.asarray(x, dtype=float)
        index = np.floor((x - self.lo) / self.widths[level - 1]).astype(np.int64)
        if self.integer:
            return index
        index = index - (x < self.starts(level, index))
        return index + (x >= self.starts(level, index + 1))

    def interval(self, level: int, index: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Interval [a, b] of the cells ``index`` of a level (1-based level): closed for integer
        columns, else [a, b) (b the next cell's start)."""
        index = np.asarray(index, dtype=np.int64)
        a = self.starts(level, index)
        return a, (a + self.widths[level - 1] - 1) if self.integer else self.starts(level, index + 1)

    def label(self, level: int, index: int) -> str:
        a, b = self.interval(level, np.array([index]))
        return f"{_fmt(a[0])}-{_fmt(b[0])}" if self.integer else f"[{_fmt(a[0])}, {_fmt(b[0])})"

    def labels(self, level: int, index: np.ndarray) -> np.ndarray:
        """``label`` of each cell of ``index`` (an object array)."""
        a, b = (format_numbers(end).astype(str) for end in self.interval(level, index))
        if self.integer:
            return np.char.add(np.char.add(a, "-"), b).astype(object)
        return np.char.add(np.char.add(np.char.add(np.char.add("[", a), ", "), b), ")").astype(object)


def interval_hierarchy(values: np.ndarray, lo: float, hi: float, levels: int,
                       integer: bool) -> tuple[pd.DataFrame, IntervalLevels]:
    """ARX-shaped hierarchy of the distinct ``values``: leaf, intervals doubling per level, *."""
    spec = IntervalLevels.build(lo, hi, levels, integer)
    distinct = np.unique(values[~np.isnan(values)])
    columns = {"level_0": format_numbers(distinct)}
    for level in range(1, levels + 1):
        index = spec.cells(level, distinct)
        cells, inverse = np.unique(index, return_inverse=True)
        columns[f"level_{level}"] = spec.labels(level, cells)[inverse]
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
        keep = (full_match(NUMBER_ANCHORED, leaves) if _all_text(leaves)
                else np.array([bool(_NUMBER_TEXT.fullmatch(leaf)) for leaf in leaves], dtype=bool))
        rows, leaves = rows[keep], leaves[keep]
    # parse_arx_hierarchy refuses repeated rows; a frame built otherwise may still list a
    # leaf twice with the same parents (two parents are refused above): keep its first row
    first = ~pd.Index(leaves, dtype=object).duplicated(keep="first")
    table = _texts(rows[first]).copy()
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
        names_here = _texts(col[starts])
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
