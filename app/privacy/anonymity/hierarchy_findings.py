"""What is wrong with a hierarchy for a column's data values: ``HierarchyFindings`` (missing
values, nodes with two parents, ambiguous group labels, leaves a numeric column cannot hold),
the lookup of a missing value written otherwise in the hierarchy, and the upload's warnings
(``not_number_warnings``, ``top_warnings``). Moved out of hierarchies.py, which re-exports the
public names."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from app.privacy.anonymity.leaf_keys import (
    NUMBER_TEXT, NUMBER_ANCHORED, ROOT, all_text, cell_texts, full_match, leaf_key, leaf_keys,
)
from app.privacy.arrays import distinct_sorted

MAX_NAMED = 20  # values named in one validation message
MAX_ISSUE_CHARS = 1_000_000  # a 422's errors list names every value, up to this much text


def named_list(values: list[str]) -> str:
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
            sentence = f"{len(self.missing)} data value(s) missing from the hierarchy: {named_list(self.missing)}"
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
                                f"{level + 1}: {named_list(options)}")
            if len(multi) > MAX_NAMED:
                problems.append(f"(and {len(multi) - MAX_NAMED} more values with two parents at level {level})")
        if self.clashes:
            problems.append(f"{len(self.clashes)} group label(s) equal to a data value of another row, so a "
                            f"released label would be ambiguous: {named_list(self.clashes)}; rename the group(s)")
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
    labels = cell_texts(rows[:, 1:]) if rows.shape[1] > 1 else rows[:, 1:]
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
        if all_text(leaf_array):
            not_numbers = leaf_array[~full_match(NUMBER_ANCHORED, leaf_array)].tolist()
        else:
            not_numbers = [leaf for leaf in leaves if not NUMBER_TEXT.fullmatch(leaf)]
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
            f"{column!r} is numeric, so no value of it can be one: {named_list(findings.not_numbers)}; "
            "they are ignored"]


def top_warnings(hierarchy: pd.DataFrame, data: frozenset[str], numeric: bool = False) -> list[str]:
    """``data``: the data values' keys (value_keys). A last level of several values gets a root '*' above it (build_tree): said, and a first row
    that holds no data value and shares no label with another row is pointed at as a likely
    header (a pandas export's 'level_0,level_1' gives such a top)."""
    rows = hierarchy.to_numpy(dtype=object)
    tops = sorted({str(t) for t in rows[:, -1]})
    if len(tops) < 2:
        return []
    warning = f"the hierarchy's last level holds {len(tops)} values ({named_list(tops)}), not one: a root '*' is added above them"
    others = {str(label) for label in rows[1:, 1:].ravel()}
    first = [str(cell) for cell in rows[0]]
    if len(rows) > 1 and leaf_key(first[0], numeric) not in data and not others & set(first[1:]):
        warning += (f"; the first row ({', '.join(repr(cell) for cell in first)}) holds no value of the data and "
                    "shares no label with another row: if it is a header, remove it")
    return [warning]
