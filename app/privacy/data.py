"""What a method receives: a table (or transactions) with its declared schema, and, when the
input is an earlier release, that release's description (the chain)."""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import pandas as pd

ColumnType = Literal["numeric", "categorical", "boolean"]
ColumnRole = Literal["identifier", "quasi_identifier", "sensitive", "insensitive", "label"]


# The narrowest declared bounds: below the smallest normal float64 (2.2e-308) a width has fewer
# than 53 bits, and dividing it (into bins, a grid, an NCP's denominator) underflows towards 0.
MIN_BOUNDS_WIDTH = sys.float_info.min


def declared_bounds_problem(lo: float, hi: float) -> str | None:
    """Why [lo, hi] cannot be a numeric column's declared bounds, or None: both finite, lo < hi,
    and a width hi − lo that is itself a finite, normal float. Every method that reads bounds
    divides by that width (NCP, bins, the [0, 1] scaling, a sensitivity): [-1e308, 1e308] is
    finite but its width is inf (a cost of inf/inf made safepub's sensitivity proof fail),
    and a subnormal width underflows when divided. lo == hi is refused too: a constant column
    has no width to divide, and carries nothing a method could release (declare it
    categorical with its one value, or leave it out). Methods may ask more (dp_release:
    a width ≥ 1e-300, integer bounds within ±2^53)."""
    if not (math.isfinite(lo) and math.isfinite(hi)):
        return "must be two finite numbers [lo, hi]"
    if lo > hi:
        return f"[{lo:.17g}, {hi:.17g}] need lo < hi"
    if lo == hi:
        return (f"[{lo:.17g}, {hi:.17g}] need lo < hi (a constant column needs no bounds: declare it "
                "categorical with its one value, or leave it out)")
    width = hi - lo
    if not math.isfinite(width):
        return (f"[{lo:g}, {hi:g}] have a width hi − lo that overflows a float64 (beyond 1.8e308): "
                "declare narrower bounds or rescale the column")
    if width < MIN_BOUNDS_WIDTH:
        return (f"[{lo:g}, {hi:g}] have a width of {width:.3g}, below {MIN_BOUNDS_WIDTH:.3g} (the "
                "smallest normal float64: bins, grids and ratios over it lose their precision): rescale "
                "the column")
    return None


@dataclass(frozen=True)
class ColumnInfo:
    name: str
    type: ColumnType
    role: ColumnRole = "insensitive"
    bounds: tuple[float, float] | None = None  # declared by the owner; never derived silently
    categories: tuple[str, ...] | None = None  # declared domain of a categorical column
    integer: bool = False
    # Facts of this schema the service inferred from the data at upload instead of the owner
    # declaring them ("type", "integer"): a DP release that relies on one must say so. Empty for
    # a schema written by hand (everything in it declared).
    inferred: tuple[str, ...] = ()
    # Profile facts known before any job reads the data (used to price a job's ε up front).
    distinct: int | None = None
    missing: int = 0
    # An uploaded hierarchy exists for the column: set at submission for a method that reads
    # hierarchies (its check can refuse a quasi-identifier without a public domain before any
    # debit). The job itself reads the hierarchies present when it starts (MethodInput.hierarchies).
    has_hierarchy: bool = False


@dataclass(frozen=True)
class TransactionData:
    """Transactions in CSR form: transaction t holds item codes indices[indptr[t]:indptr[t+1]];
    item code c is called labels[c]."""

    indptr: np.ndarray
    indices: np.ndarray
    labels: tuple[str, ...]

    @property
    def n_transactions(self) -> int:
        return len(self.indptr) - 1

    @property
    def n_items(self) -> int:
        return len(self.labels)


@dataclass(frozen=True)
class SourceRelease:
    """The release a method runs on (None when the input is a dataset). ``chain`` lists the
    steps from the original dataset to this release, oldest first: each step is a dict with
    ``method``, ``params``, ``guarantees`` and ``metadata`` (method-specific published facts
    such as randomization matrices or domains)."""

    release_id: str
    method: str
    params: dict[str, Any]
    guarantees: dict[str, Any]
    metadata: dict[str, Any]
    chain: tuple[dict[str, Any], ...] = ()

    def steps(self) -> tuple[dict[str, Any], ...]:
        """Every step including this release's own, oldest first."""
        own = {"method": self.method, "params": self.params, "guarantees": self.guarantees,
               "metadata": self.metadata, "release_id": self.release_id}
        return (*self.chain, own)


def columns_changed_by(steps, columns, skip=None) -> dict[str, list[str]]:
    """Per column of ``columns`` that a step of ``steps`` protected (randomized, transformed,
    generalized, synthesized: its guarantees' protected_columns), those steps' methods, oldest
    first; ``skip(step)`` true leaves a step out. In the order of ``columns``; columns no step
    changed are absent."""
    wanted = set(columns)
    changed: dict[str, list[str]] = {}
    for step in steps:
        if skip is not None and skip(step):
            continue
        for col in (step.get("guarantees") or {}).get("protected_columns") or []:
            if col in wanted and step["method"] not in changed.setdefault(col, []):
                changed[col].append(step["method"])
    return {col: changed[col] for col in dict.fromkeys(columns) if changed.get(col)}


def named_with_steps(changed: dict[str, list[str]]) -> str:
    """'education (errph), age (errph, trr)' for columns_changed_by's answer."""
    return ", ".join(f"{col} ({', '.join(methods)})" for col, methods in changed.items())


@dataclass
class MethodInput:
    columns: list[ColumnInfo]
    frame: pd.DataFrame | None = None
    transactions: TransactionData | None = None
    hierarchies: dict[str, pd.DataFrame] = field(default_factory=dict)
    source: SourceRelease | None = None

    def column(self, name: str) -> ColumnInfo:
        for col in self.columns:
            if col.name == name:
                return col
        raise KeyError(name)

    def names(self, *, type: str | None = None, role: str | None = None) -> list[str]:
        return [c.name for c in self.columns
                if (type is None or c.type == type) and (role is None or c.role == role)]


def first_shared_name(names: list[str], owners: list[str]) -> tuple[str, str] | None:
    """The columns behind the first two one-hot names (``column=value``) that coincide, or None.
    A column name holding '=' can give another column's item name ('a' = 'b=c' and 'a=b' = 'c'
    are both 'a=b=c'), and so can a value spelled like a marker of the encoding."""
    seen: dict[str, str] = {}
    for name, owner in zip(names, owners):
        if name in seen:
            return seen[name], owner
        seen[name] = owner
    return None
