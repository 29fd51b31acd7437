"""A quasi-identifier as the algorithms see it: integer codes per record and how a set of
codes is released.

- :class:`NumericAxis`: codes are ranks among the column's distinct values; a class is
  released as the interval [min, max] of its values (NCP (max − min)/R, R the declared bounds'
  width or else the data's range). The "ordered" coding of a categorical column (categories as
  ordered codes, no hierarchy: how popular Python Mondrian implementations measure) is a
  NumericAxis over the codes, R = m − 1.
- :class:`~app.privacy.anonymity.hierarchies.Tree`: a hierarchy (given, flat, or automatic
  intervals for a numeric column).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

import numpy as np
import pandas as pd

from app.privacy.anonymity.hierarchies import (
    MISSING_LEAF, Tree, build_tree, flat_hierarchy, interval_hierarchy, missing_spelled_as_a_value,
)
from app.privacy.data import ColumnInfo
from app.privacy.registry import MethodInputError, declared_bounds


@dataclass
class NumericAxis:
    column: str
    codes: np.ndarray  # per record: index into values
    values: np.ndarray  # sorted distinct values
    lo: float
    hi: float
    integer: bool
    categories: list[str] | None = None  # ordered coding: the category of each code

    @property
    def value_range(self) -> float:
        return self.hi - self.lo


Axis = NumericAxis | Tree


@dataclass
class AxisNotes:
    """What building the axes disclosed or decided, for the release's metadata."""

    range_from_data: list[str] = field(default_factory=list)
    flat: list[str] = field(default_factory=list)
    automatic: list[str] = field(default_factory=list)
    given: list[str] = field(default_factory=list)  # generalized along the hierarchy they were given


def _is_integer(values: np.ndarray) -> bool:
    finite = values[np.isfinite(values)]
    return bool(len(finite)) and bool(np.all(finite == np.round(finite)))


def _numeric_values(name: str, series: pd.Series) -> np.ndarray:
    values = pd.to_numeric(series, errors="coerce").to_numpy(dtype=float)
    bad = np.isnan(values) & series.notna().to_numpy()
    if bad.any():
        raise MethodInputError(f"numeric column {name!r} has {int(bad.sum())} cells that are not numbers")
    if np.isnan(values).any():
        raise MethodInputError(f"numeric quasi-identifier {name!r} has {int(np.isnan(values).sum())} "
                               "missing cells: drop or impute them first")
    return values


def _range(info: ColumnInfo, values: np.ndarray, notes: AxisNotes) -> tuple[float, float]:
    lo, hi = float(values.min()), float(values.max())
    if (declared := declared_bounds(info)) is not None:  # NCP divides by their width: finite, > 0
        blo, bhi = declared
        if lo < blo or hi > bhi:
            raise MethodInputError(f"column {info.name!r} has values outside its declared bounds")
        return blo, bhi
    notes.range_from_data.append(info.name)
    return lo, hi


def numeric_axis(info: ColumnInfo, series: pd.Series, notes: AxisNotes) -> NumericAxis:
    values = _numeric_values(info.name, series)
    lo, hi = _range(info, values, notes)
    distinct, codes = np.unique(values, return_inverse=True)
    return NumericAxis(info.name, codes.astype(np.int32), distinct, lo, hi,
                       info.integer or _is_integer(values))


def _refuse_missing_spelled_as_a_value(name: str, series: pd.Series) -> None:
    """Missing cells are released as MISSING_LEAF: a value spelled so would become one with them."""
    if missing_spelled_as_a_value(series):
        raise MethodInputError(f"column {name!r} holds a value spelled {MISSING_LEAF!r}, the label its "
                               "missing cells are released as: rename that value")


def ordered_axis(info: ColumnInfo, series: pd.Series) -> NumericAxis:
    """Categories sorted as text, coded 0..m-1, generalized as code ranges."""
    _refuse_missing_spelled_as_a_value(info.name, series)
    filled = series.astype(str).where(series.notna(), MISSING_LEAF)
    codes, cats = pd.factorize(filled, sort=True)
    m = len(cats)
    return NumericAxis(info.name, codes.astype(np.int32), np.arange(m, dtype=float), 0.0,
                       float(max(m - 1, 1)), True, categories=[str(c) for c in cats])


def tree_axis(info: ColumnInfo, series: pd.Series, hierarchy: pd.DataFrame | None,
              notes: AxisNotes, auto_levels: int, integer_from_data: bool = True) -> Tree:
    if info.type == "numeric":
        values = _numeric_values(info.name, series)
        lo, hi = _range(info, values, notes)
        # a DP caller (safepub) takes the schema's flag alone: whether every value is whole shapes
        # the automatic intervals' labels, and one record of 30.5 would change them all
        integer = info.integer or (integer_from_data and _is_integer(values))
        spans_of = None
        if hierarchy is not None:
            notes.given.append(info.name)
        else:
            if not np.isfinite(hi - lo):
                raise MethodInputError(f"numeric quasi-identifier {info.name!r} spans a range wider than "
                                       "a float64 holds (hi - lo beyond 1.8e308), so no automatic "
                                       "hierarchy can be built over it: rescale the column or upload "
                                       "a hierarchy for it")
            hierarchy, spans_of = interval_hierarchy(values, lo, hi, auto_levels, integer)
            notes.automatic.append(info.name)
        return build_tree(info.name, series, hierarchy, numeric=True, value_range=(lo, hi),
                          spans_of=spans_of)
    _refuse_missing_spelled_as_a_value(info.name, series)
    if hierarchy is None:
        hierarchy = flat_hierarchy(series.dropna().unique())
        notes.flat.append(info.name)
    else:
        notes.given.append(info.name)
    return build_tree(info.name, series, hierarchy)


def build_axes(frame: pd.DataFrame, infos: list[ColumnInfo], hierarchies: dict[str, pd.DataFrame],
               *, numeric: Literal["interval", "hierarchy"] = "interval",
               categorical: Literal["hierarchy", "ordered"] = "hierarchy",
               auto_levels: int = 4, integer_from_data: bool = True) -> tuple[list[Axis], AxisNotes]:
    """One axis per quasi-identifier. ``numeric='hierarchy'`` generalizes numeric columns over
    their hierarchy (given, else automatic intervals) — what the lattice search needs;
    ``'interval'`` releases class intervals (Mondrian). ``integer_from_data`` False: a numeric
    column is integer only when its schema says so (never read from the values)."""
    notes = AxisNotes()
    axes: list[Axis] = []
    for info in infos:
        series = frame[info.name]
        if info.type == "numeric" and numeric == "interval":
            axes.append(numeric_axis(info, series, notes))
        elif info.type != "numeric" and categorical == "ordered":
            axes.append(ordered_axis(info, series))
        else:
            axes.append(tree_axis(info, series, hierarchies.get(info.name), notes, auto_levels,
                                  integer_from_data))
    return axes, notes
