"""Labels of a numeric column's hierarchy that read as intervals, checked against the leaves
under them: a warning at upload (interval_label_warnings) and on a release that shows such a
label (released_outside_labels)."""

from __future__ import annotations

import math
import re
from collections.abc import Iterable

import numpy as np
import pandas as pd

from app.privacy.anonymity.hierarchies import NUMBER, NUMBER_ANCHORED, full_match, leaf_key
from app.privacy.anonymity.leaf_keys import cell_texts

# A label of a numeric column's hierarchy that reads as an interval is checked against the leaves
# under it: ARX's own Adult age hierarchy puts 20 under '15-19' and '0-19'. Labels are the
# user's words and are released as written, so a label that does not hold its values is a
# warning at upload, never a refusal. Forms read: 'a-b' (both ends in, as ARX and the automatic
# hierarchies write them; an en or em dash too), '[a, b)' with either bracket on either side,
# '<a', '<=a' ('≤'), '>a', '>=a' ('≥') and 'a+' (a or more). A 'b' below 'a' is no interval
# ('2020-01' is a month).
_N = f"({NUMBER})"
_DASHED = re.compile(rf"{_N}\s*[-\u2013\u2014]\s*{_N}")
_BRACKETED = re.compile(rf"([\[(])\s*{_N}\s*[,;]\s*{_N}\s*([\])])")
_COMPARED = re.compile(rf"(<=|>=|<|>|\u2264|\u2265)\s*{_N}")
_OR_MORE = re.compile(rf"{_N}\s*\+")
MAX_NAMED_OUTSIDE = 5  # values named in the warning, each with its labels

Interval = tuple[float, bool, float, bool]  # lower end, lower end in, upper end, upper end in


def read_interval(label: str) -> Interval | None:
    """The interval a label names, or None when it names none."""
    inf = math.inf
    if m := _DASHED.fullmatch(label):
        lo, hi = float(m.group(1)), float(m.group(2))
        return (lo, True, hi, True) if lo <= hi else None
    if m := _BRACKETED.fullmatch(label):
        lo, hi = float(m.group(2)), float(m.group(3))
        return (lo, m.group(1) == "[", hi, m.group(4) == "]") if lo <= hi else None
    if m := _COMPARED.fullmatch(label):
        op, x = m.group(1), float(m.group(2))
        return {"<": (-inf, False, x, False), "<=": (-inf, False, x, True), "\u2264": (-inf, False, x, True),
                ">": (x, False, inf, False), ">=": (x, True, inf, False), "\u2265": (x, True, inf, False)}[op]
    if m := _OR_MORE.fullmatch(label):
        return float(m.group(1)), True, inf, False
    return None


def _held(read: list[Interval | None], inverse: np.ndarray, x: np.ndarray) -> np.ndarray:
    """Whether each x[i] lies in the interval read[inverse[i]] (a label read as none holds all)."""
    ends = np.array([r if r is not None else (-math.inf, True, math.inf, True) for r in read], dtype=float)
    lo, lo_in, hi, hi_in = (ends[inverse, i] for i in range(4))
    return ((lo < x) | ((lo_in == 1) & (lo == x))) & ((x < hi) | ((hi_in == 1) & (x == hi)))


def _leaves_outside_labels(hierarchy: pd.DataFrame, only: set[str] | None = None):
    """(rows, leaves as written, leaves as numbers, wrong[row, level]): the label at that level
    reads as an interval (one of ``only``, when given) that does not hold the row's numeric leaf."""
    rows = hierarchy.to_numpy(dtype=object)
    leaves = rows[:, 0].astype(str)
    x = pd.to_numeric(pd.Series(leaves), errors="coerce").to_numpy(dtype=float)
    numbers = full_match(NUMBER_ANCHORED, leaves.astype(object)) & np.isfinite(x)
    wrong = np.zeros(rows.shape, dtype=bool)
    for level in range(1, rows.shape[1]):
        # each distinct label once, hashed (np.unique of the labels as 'U' text sorted 600,000 of them)
        inverse, labels = pd.factorize(cell_texts(rows[:, level]), use_na_sentinel=False)
        # vectorized over rows, one read per label
        read = [read_interval(label) if only is None or label in only else None for label in labels]
        if any(read):
            wrong[:, level] = numbers & ~_held(read, inverse, x)
    return rows, leaves, x, wrong


def released_outside_labels(column: str, hierarchy: pd.DataFrame, released: Iterable[str]) -> list[str]:
    """The released labels of a numeric column that read as an interval not holding every
    value the uploaded hierarchy puts under them (labels are released as written: ARX's Adult
    age hierarchy shows '15-19' for a 20-year-old). The upload warned its owner; this warns the
    release's readers, who never saw the upload — in the hierarchy's terms only (a label and
    the leaves it holds there), never a value or a count read from the data: 'a 97 under
    85-89' would tell an analyst that such a record exists."""
    rows, leaves, x, wrong = _leaves_outside_labels(hierarchy, {str(label) for label in released})
    outside: dict[str, list[str]] = {}  # label -> the hierarchy's leaves under it that it does not hold
    for level in range(1, rows.shape[1]):
        for i in np.flatnonzero(wrong[:, level])[np.argsort(x[wrong[:, level]], kind="stable")]:
            outside.setdefault(str(rows[i, level]), []).append(str(leaves[i]))
    if not outside:
        return []
    named = "; ".join(f"{label!r} holds {', '.join(held[:3])}" + (" …" if len(held) > 3 else "")
                      for label, held in list(outside.items())[:MAX_NAMED_OUTSIDE])
    more = len(outside) - MAX_NAMED_OUTSIDE
    return [f"{len(outside)} released label(s) of {column!r} read as an interval that does not hold every "
            f"value the uploaded hierarchy puts under it: {named}" + (f" (and {more} more labels)" if more > 0 else "")
            + "; read those labels as the hierarchy's names, not as intervals (correct the hierarchy "
            "to release labels that hold their values)"]


def interval_label_warnings(hierarchy: pd.DataFrame, data: frozenset[str]) -> list[str]:
    """For a numeric column: the leaves that lie outside a label above them which reads as an
    interval, the data's values (``data``: their keys, value_keys(values, numeric=True)) named
    first (those a release can show under the label)."""
    rows, leaves, _, wrong = _leaves_outside_labels(hierarchy)
    outside: list[tuple[str, list[str]]] = []  # leaf as written, the labels that do not hold it
    for i in np.flatnonzero(wrong.any(axis=1)):
        labels = []
        for label in rows[i, 1:][wrong[i, 1:]]:
            if str(label) not in labels:
                labels.append(str(label))
        outside.append((leaves[i], labels))
    if not outside:
        return []
    first = [leaf_key(leaf, numeric=True) in data for leaf, _ in outside]
    in_data = [item for item, shown_first in zip(outside, first) if shown_first]
    if in_data:
        head = (f"{len(in_data)} of the data's values lie outside an interval label above them in the "
                f"hierarchy ({len(outside)} of its {len(rows)} values)")
    else:
        head = (f"{len(outside)} of the hierarchy's {len(rows)} values lie outside an interval label above "
                "them (none of them occurs in the data)")
    ordered = in_data + [item for item, shown_first in zip(outside, first) if not shown_first]
    named = []
    for leaf, labels in ordered[:MAX_NAMED_OUTSIDE]:
        quoted = [repr(label) for label in labels]
        named.append(f"{leaf} under " + (quoted[0] if len(quoted) == 1
                                         else ", ".join(quoted[:-1]) + " and " + quoted[-1]))
    more = len(ordered) - MAX_NAMED_OUTSIDE
    return [head + ": " + "; ".join(named) + (f" (and {more} more values)" if more > 0 else "")
            + ". A release shows the labels as written, so its reader would place these values in the "
            "wrong interval; they are kept as written (labels are yours): correct them if they are "
            "wrong. Read as intervals: 'a-b' (both ends in), '[a, b)', '(a, b]', '<a', '<=a', '>a', "
            "'>=a', 'a+'"]
