"""Automatic hierarchy of a numeric column: intervals whose widths double per level
(``IntervalLevels``, ``interval_hierarchy``). Moved out of hierarchies.py, which re-exports the
public names."""

from __future__ import annotations

import math
from dataclasses import dataclass
from decimal import Decimal

import numpy as np
import pandas as pd

from app.privacy.anonymity.leaf_keys import ROOT, format_numbers


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


def number_text(x: float) -> str:
    """A bound as written in a label: an integer without a decimal point, else its shortest repr."""
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
        return f"{number_text(a[0])}-{number_text(b[0])}" if self.integer else f"[{number_text(a[0])}, {number_text(b[0])})"

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
