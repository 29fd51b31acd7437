"""The discrete domains of the marginal-based synthesizers (mst, aim; privbayes builds its
columns the same way): every column's levels, a table's level codes, marginal counts over them,
and the decoding of synthetic codes back to values. Separate from marginals.py (the parameters
and the budget) because privbayes, the experiment's TVD and the tests use the domains alone.

Domain (never read from the data): a categorical column's levels are its declared categories
(params, else schema; a boolean column's are False/True); a numeric column is cut into
equal-width bins over its declared bounds — for an integer column one level per integer when
they fit in ``bins``, else its lower bound alone and ``bins`` − 1 runs of ⌊K/(bins−1)⌋ or
⌈K/(bins−1)⌉ consecutive integers (``lower_bound_alone``) — or into the caller's edges. Every column also
gets one level for a missing value (data-independent: a column without missing values
simply measures a count near 0 there). Values are clipped into the bounds.

Decoding (post-processing): a category level is the category; a numeric bin becomes a value
drawn uniformly inside the bin (uniform over its integers for an integer column), from the
job's random source; the missing level is a missing value.
"""

from __future__ import annotations

import itertools
import math
import typing
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from app.privacy.data import ColumnInfo
from app.privacy.dp_release.common import check_references
from app.privacy.dp_release.encoding import ColumnPlan, check_declared, declared_plan
from app.privacy.dp_release.mbi_sampling import level_dtype
from app.privacy.registry import MethodInputError
from app.privacy.rng import SecureRandom

if typing.TYPE_CHECKING:
    from app.privacy.dp_release.marginals import DomainParams

MAX_LEVELS = 1024  # levels of one column, missing level included
MAX_COLUMNS = 100


@dataclass
class Column:
    """One column's discrete domain: levels 0..size-2 are values (categories or bins), level
    size-1 is "missing"."""

    plan: ColumnPlan
    bins: int = 0  # numeric: number of bins
    per_integer: bool = False  # numeric integer column with one level per integer
    edges: tuple[float, ...] | None = None  # numeric: explicit bin edges (as bin_edges gives them)
    edges_given: bool = False  # those edges are the caller's (else the lower-bound rule's)

    @property
    def name(self) -> str:
        return self.plan.name

    @property
    def values(self) -> int:
        return len(self.plan.categories) if self.plan.kind == "categorical" else self.bins

    @property
    def size(self) -> int:
        return self.values + 1

    @property
    def missing_level(self) -> int:
        return self.values

    @property
    def _int_range(self) -> tuple[int, int]:
        lo, hi = math.ceil(self.plan.lo), math.floor(self.plan.hi)
        return lo, hi - lo + 1

    def codes(self, series: pd.Series) -> np.ndarray:
        plan = self.plan
        missing = series.isna().to_numpy()
        if plan.kind == "categorical":
            codes, missing = plan.category_codes(series)
        else:
            v = pd.to_numeric(series, errors="coerce").to_numpy(dtype=np.float64)
            if np.any(np.isnan(v) & ~missing):
                raise MethodInputError(f"column {self.name!r} holds non-numeric values")
            v = np.clip(v, plan.lo, plan.hi)
            if self.edges is not None:  # the last bin holds the upper bound itself
                codes = np.searchsorted(np.asarray(self.edges[1:-1]), np.rint(v) if plan.integer else v,
                                        side="right").astype(np.float64)
            elif plan.integer:  # one level per integer (more integers than bins get edges)
                ilo, count = self._int_range
                codes = np.nan_to_num(np.clip(np.rint(v), ilo, ilo + count - 1) - ilo).astype(np.int64)
            else:
                codes = np.floor((v - plan.lo) / (plan.hi - plan.lo) * self.bins)
            codes = np.nan_to_num(np.minimum(codes, self.bins - 1), nan=0).astype(np.int64)
        codes[missing] = self.missing_level
        return codes

    def bin_edges(self) -> list[float]:
        """Numeric: the lower edge of every bin and the upper edge of the last one (for an
        integer column: the first integer of every bin, then the last integer + 1)."""
        if self.edges is not None:
            return list(self.edges)
        if self.plan.integer:  # one level per integer
            ilo, count = self._int_range
            return [ilo + b for b in range(count + 1)]
        width = (self.plan.hi - self.plan.lo) / self.bins
        return [self.plan.lo + b * width for b in range(self.bins)] + [self.plan.hi]

    def decode(self, codes: np.ndarray, rng: SecureRandom) -> Any:
        codes = np.asarray(codes, dtype=np.int64)
        missing = codes == self.missing_level
        plan = self.plan
        if plan.kind == "categorical":
            out = pd.Categorical.from_codes(np.where(missing, -1, codes), categories=list(plan.categories))
            if all(isinstance(c, (bool, np.bool_)) for c in plan.categories):
                return pd.Series(out).astype(object if missing.any() else bool).to_numpy()
            return out
        edges = np.asarray(self.bin_edges(), dtype=np.float64)
        b = np.where(missing, 0, codes)
        if plan.integer:
            first, width = edges[b], edges[b + 1] - edges[b]  # integers first .. first+width-1
            values = first + np.minimum(np.floor(rng.random(len(b)) * width), width - 1)
            if not missing.any():
                return values.astype(np.int64)
        else:
            values = edges[b] + rng.random(len(b)) * (edges[b + 1] - edges[b])
            values = np.clip(values, plan.lo, plan.hi)
        return np.where(missing, np.nan, values)

    def describe(self) -> dict[str, Any]:
        out = self.plan.describe()
        out.pop("decoding", None)
        out.update(levels=self.size, missing_level=self.missing_level)
        if self.plan.kind == "numeric":
            out.update(bins=self.bins, one_level_per_integer=self.per_integer,
                       bin_edges=self.bin_edges(), edges_given=self.edges_given,
                       lower_bound_alone=self.edges is not None and not self.edges_given,
                       decoding="uniform inside the bin" + (" (its integers)" if self.plan.integer else ""))
        return out


def build_columns(params: DomainParams, infos: list[ColumnInfo]) -> list[Column]:
    """The released columns' discrete domains, from declared bounds and categories only."""
    chosen = check_references(params, infos)
    if len(chosen) > MAX_COLUMNS:
        given = "'columns' names" if params.columns is not None else "the table has"
        raise MethodInputError(f"{given} {len(chosen)} columns to release; a synthetic table has at "
                               f"most {MAX_COLUMNS}: name the ones you need in 'columns'")
    names = {c.name for c in chosen}
    numeric = {c.name for c in chosen if c.type == "numeric"}
    for name in params.bins if isinstance(params.bins, dict) else {}:
        if name not in names:
            raise MethodInputError(f"bins given for column {name!r}, which is not released")
        if name not in numeric:
            raise MethodInputError(f"bins given for column {name!r}, which is not numeric")
    check_declared(chosen, params.bounds, params.categories)
    out = []
    for info in chosen:
        plan = declared_plan(info, params.bounds, params.categories)
        if plan.kind == "numeric":
            bins = params.bins_of(info.name)
            if isinstance(bins, list):
                col = Column(plan, bins=len(bins) - 1, edges=given_edges(plan, bins), edges_given=True)
            elif plan.integer:
                _, count = Column(plan)._int_range
                if count <= bins:
                    col = Column(plan, bins=count, per_integer=True)
                else:
                    col = Column(plan, bins=bins, edges=lower_bound_alone(plan, bins))
            else:
                col = Column(plan, bins=bins)
        else:
            col = Column(plan)
        if col.size > MAX_LEVELS:  # only a categorical column can: bins are at most MAX_BINS
            raise MethodInputError(
                f"column {info.name!r} has {col.values} categories, {col.size} levels with the missing "
                f"level every column gets (limit {MAX_LEVELS} levels: at most {MAX_LEVELS - 1} categories)")
        out.append(col)
    return out


def label_columns(infos: list[ColumnInfo], released: list[str]) -> frozenset[str]:
    """The released columns whose declared role is label (their marginals weigh
    ``label_weight`` in mst's and aim's selection)."""
    return frozenset(c.name for c in infos if c.role == "label") & set(released)


def lower_bound_alone(plan: ColumnPlan, bins: int) -> tuple[float, ...]:
    """An integer column's default edges when it has more integers than ``bins``: its lower
    bound alone in the first bin, the other integers in ``bins`` − 1 runs of consecutive
    integers (bin_edges' form: each bin's first integer, then the last integer + 1).

    Why: values are decoded uniformly inside their bin, and amounts pile up at their lower
    bound — 92 % of Adult's capital-gain and 95 % of its capital-loss are 0. Equal bins spread
    those zeros over [0, 3125) and [0, 137): the synthetic table had 0.0 % and 0.7 % zeros, and
    99 % of its rows both a gain and a loss, which no real row has (#8 acceptance run). With
    the bound alone they stay 0 (91.5 %, 95.1 %); where the bound holds no spike, one narrow
    bin among 32 costs nothing measurable (AIM on Adult at ε = 1: same misclassification and
    marginal TVDs on the release's bins, TVD on the real data's deciles 0.145 → 0.034)."""
    lo, hi = math.ceil(plan.lo), math.floor(plan.hi)
    rest, runs = hi - lo, bins - 1  # the integers lo + 1 .. hi
    return (float(lo),) + tuple(float(lo + 1 + (b * rest + runs - 1) // runs) for b in range(runs + 1))


def given_edges(plan: ColumnPlan, edges: list[float]) -> tuple[float, ...]:
    """The caller's bin edges of a numeric column, checked against its declared bounds (an integer
    column's: its first and last integer within them); for an integer column in bin_edges' form
    (each bin's first integer, then the last integer + 1)."""
    name, lo, hi = plan.name, plan.lo, plan.hi
    if plan.integer and (lo != math.ceil(lo) or hi != math.floor(hi)):  # bounds [20.5, 60.5]
        lo, hi = float(math.ceil(lo)), float(math.floor(hi))
        if edges[0] != lo or edges[-1] != hi:
            raise MethodInputError(f"bins of column {name!r}: an integer column's edges run from its first "
                                   f"to its last integer within its bounds, from {lo:g} to {hi:g}")
    if edges[0] != lo or edges[-1] != hi:
        raise MethodInputError(f"bins of column {name!r}: the edges must start at its lower bound "
                               f"({lo:g}) and end at its upper bound ({hi:g})")
    if not plan.integer:
        return tuple(float(e) for e in edges)
    if any(e != math.floor(e) for e in edges):
        raise MethodInputError(f"bins of column {name!r}: an integer column's edges are integers")
    return tuple(float(e) for e in edges[:-1]) + (float(hi) + 1.0,)


def candidate_pairs(columns: list[Column], max_cells: int) -> list[tuple[int, int]]:
    """Pairs of columns whose 2-way marginal fits in ``max_cells`` (declared domains only)."""
    return [(i, j) for i, j in itertools.combinations(range(len(columns)), 2)
            if columns[i].size * columns[j].size <= max_cells]


def encode_frame(columns: list[Column], frame: pd.DataFrame, compact: bool = False) -> dict[str, np.ndarray]:
    """Every column's level codes (int64). ``compact``: each in the smallest unsigned type that
    holds its levels (one byte up to 256 levels, two up to MAX_LEVELS): Adult's 15 columns at
    4,950,000 rows take 75 MB instead of 594, and mst's and aim's marginals count the same."""
    if len(frame) < 2:
        raise MethodInputError("the table needs at least 2 records")
    if not compact:
        return {c.name: c.codes(frame[c.name]) for c in columns}
    return {c.name: c.codes(frame[c.name]).astype(level_dtype(c.size)) for c in columns}


def marginal(codes: dict[str, np.ndarray], clique: tuple[str, ...], shape: tuple[int, ...]) -> np.ndarray:
    """Counts of the clique's level combinations, flattened in C order. The flat index is
    ravel_multi_index's, summed in place in one array (codes are below their sizes by
    construction): half its time on one-byte codes, which it converts for every call."""
    index = np.zeros(len(codes[clique[0]]), dtype=np.intp)
    for c, k in zip(clique, shape):
        index *= k
        index += codes[c]
    return np.bincount(index, minlength=math.prod(shape)).astype(np.float64)


def decode_frame(columns: list[Column], codes: dict[str, np.ndarray], rng: SecureRandom) -> pd.DataFrame:
    # copy=False: a frame built from a dict copies every column by default (pandas 3), and the
    # decoded columns are the release (~280 MB more at 4,950,000 × 15)
    return pd.DataFrame({c.name: c.decode(codes[c.name], rng) for c in columns}, copy=False)


def output_infos(columns: list[Column]) -> list[ColumnInfo]:
    return [c.plan.output_info() for c in columns]
