"""dp_statistics' parameters, and each query's plan: its columns' declared domains, its share
of ε, the sensitivities of its mechanisms. Everything here is decided by the parameters and
the schema (never by the data) and is checked at submission, before any debit; messages name
the query (``queries[2].column: …``)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Annotated, Literal

from pydantic import Field, field_validator, model_validator

from app.privacy.data import ColumnInfo
from app.privacy.dp_release.common import DeclaredDomainParams
from app.privacy.dp_release.encoding import ColumnPlan, declared_plan
from app.privacy.noise import calibrate_laplace
from app.privacy.registry import MethodInputError, Params, no_repeats

MAX_QUERIES = 64
MAX_BY = 2
MAX_QUANTILES = 16
MAX_BINS = 256
DEFAULT_BINS = 10
MAX_CELLS = 100_000  # cells of one query's answer (groups × levels)
MAX_QUANTILE_DRAWS = 1_000  # exponential mechanisms of one quantile query (groups × quantiles)
MAX_CANDIDATES = 100_000  # a quantile's candidate grid
MAX_RECORDS = 2**31 - 1  # the sums are exact in float64 integers below 2^53 (statistics.py)
SAFETY = 1e-12  # ε shares nudged down so float rounding never sums above ε
MISSING = "(missing)"  # the level of a missing cell in a histogram or a group

Statistic = Literal["count", "sum", "mean", "histogram", "quantile"]


class StatQuery(Params):
    """One statistic of one column, over the whole table or per group."""

    statistic: Statistic = Field(..., description="count (of records, or of a column's non-missing "
                                 "values), sum, mean, histogram or quantile")
    column: str | None = Field(None, description="the column; required except for a count of records")
    by: list[str] = Field(default_factory=list, max_length=MAX_BY, description="up to 2 categorical "
                          "columns (declared categories) to answer per group; every combination of "
                          "their levels and a missing level is a group, whatever the data holds")
    quantiles: list[Annotated[float, Field(ge=0.0, le=1.0)]] | None = Field(
        None, min_length=1, max_length=MAX_QUANTILES, description="quantile only: the levels q in "
        "[0, 1] (default [0.5], the median); each is an exponential mechanism at the query's ε / "
        "their number")
    bins: int | None = Field(None, ge=2, le=MAX_BINS, description=f"histogram of a numeric column "
                             f"only: equal-width bins over its declared bounds (default {DEFAULT_BINS})")
    share: float | None = Field(None, gt=0.0, le=1000.0, description="the query's weight in the "
                                "split of ε (default 1: equal shares); its ε is epsilon·share / the "
                                "sum of the shares")

    @field_validator("by")
    @classmethod
    def _distinct_by(cls, v):
        return no_repeats(v, "by")

    @field_validator("quantiles")
    @classmethod
    def _distinct_quantiles(cls, v):
        return no_repeats(v, "quantiles")

    @model_validator(mode="after")
    def _fits_the_statistic(self):
        if self.column is None and self.statistic != "count":
            raise ValueError(f"column is required for a {self.statistic}")
        if self.quantiles is not None and self.statistic != "quantile":
            raise ValueError(f"quantiles apply to a quantile, not to a {self.statistic}")
        if self.bins is not None and self.statistic != "histogram":
            raise ValueError(f"bins apply to a histogram, not to a {self.statistic}")
        if self.column is not None and self.column in self.by:
            raise ValueError(f"column {self.column!r} is also in by")
        return self

    @property
    def free(self) -> bool:
        """An ungrouped count of records: n, public under replace-one neighbours."""
        return self.statistic == "count" and self.column is None and not self.by

    @property
    def levels(self) -> list[float]:
        return self.quantiles or [0.5]


class DPStatisticsParams(DeclaredDomainParams):
    queries: list[StatQuery] = Field(..., min_length=1, max_length=MAX_QUERIES, description="the "
                                     f"statistics to answer (1-{MAX_QUERIES}); their ε add up to "
                                     "epsilon (sequential composition)")


# ----------------------------------------------------------------------------- plans
@dataclass
class Mechanism:
    """One discrete Laplace mechanism of a query: its L1 sensitivity, the coordinates a
    neighbour changes, its ε."""

    role: str  # "counts", "sum", "centered sum", "non-missing count"
    sensitivity: float
    coords: int
    epsilon: float


@dataclass
class QueryPlan:
    index: int
    query: StatQuery
    epsilon: float  # the query's share of ε (0 for the free count)
    value: ColumnPlan | None  # the column's declared domain
    groups: list[ColumnPlan] = field(default_factory=list)
    mechanisms: list[Mechanism] = field(default_factory=list)

    @property
    def where(self) -> str:
        return f"queries[{self.index}]"

    @property
    def group_sizes(self) -> list[int]:
        return [len(g.categories) + 1 for g in self.groups]  # + the missing level

    @property
    def group_count(self) -> int:
        return math.prod(self.group_sizes)

    @property
    def bins(self) -> int:
        return self.query.bins or DEFAULT_BINS

    @property
    def level_count(self) -> int:
        """The cells per group of a histogram (levels + missing), else 1."""
        if self.query.statistic != "histogram":
            return 1
        return (self.bins if self.value.kind == "numeric" else len(self.value.categories)) + 1

    @property
    def quantile_epsilon(self) -> float:
        """ε of each exponential mechanism: the query's ε over its quantiles, halved per group
        when grouped (a record moved between groups changes two groups' answers)."""
        return self.epsilon * (1.0 - SAFETY) / len(self.query.levels) / (2 if self.groups else 1)


def shares(params: DPStatisticsParams) -> list[float]:
    """Each query's ε: epsilon·w_q / Σw (w_q = share, default 1; 0 for a free count), nudged
    down so their float sum never passes epsilon."""
    weights = [0.0 if q.free else (q.share or 1.0) for q in params.queries]
    total = sum(weights)
    if total == 0:
        return [0.0] * len(weights)
    return [params.epsilon * w / total * (1.0 - SAFETY) for w in weights]


def spent_epsilon(params: DPStatisticsParams) -> float:
    """The registry's ε hook: epsilon, or 0 when every query is an ungrouped count of records
    (n is public: nothing is measured)."""
    return params.epsilon if any(not q.free for q in params.queries) else 0.0


def _column(where: str, name: str, by_name: dict[str, ColumnInfo]) -> ColumnInfo:
    info = by_name.get(name)
    if info is None:
        raise MethodInputError(f"{where}: {name!r} is not a column")
    if info.role == "identifier":
        raise MethodInputError(f"{where}: {name!r} is an identifier, which is never released; give it "
                               "another role in the dataset schema to query it")
    return info


def _declared(where: str, info: ColumnInfo, params: DPStatisticsParams) -> ColumnPlan:
    try:
        plan = declared_plan(info, params.bounds, params.categories)
    except MethodInputError as exc:
        raise MethodInputError(f"{where}: {exc}") from None
    if plan.kind == "categorical" and MISSING in [str(c) for c in plan.categories]:
        # the answers' level column would show two levels of that name
        raise MethodInputError(f"{where}: {info.name!r} declares a category {MISSING!r}, the label "
                               "dp_statistics gives missing cells; rename the category")
    return plan


def _mechanisms(plan: QueryPlan) -> list[Mechanism]:
    """The discrete Laplace mechanisms of a query and their sensitivities under replace-one
    (a record's values change; it may move between groups and between missing and present)."""
    q, eps, grouped = plan.query, plan.epsilon * (1.0 - SAFETY), bool(plan.groups)
    cells = (2.0, 2) if grouped else (1.0, 1)  # a record leaves one cell for another / one count
    if q.statistic == "histogram" or (q.statistic == "count" and q.column is None):
        return [] if q.free else [Mechanism("counts", 2.0, 2, eps)]
    if q.statistic == "count":
        return [Mechanism("non-missing count", *cells, eps)]
    if q.statistic == "quantile":
        return []
    lo, hi = plan.value.lo, plan.value.hi
    if q.statistic == "sum":  # a missing cell adds 0: a record's part lies in [lo, hi] ∪ {0}
        reach = max(abs(lo), abs(hi))
        sensitivity = max(hi - lo, 2.0 * reach) if grouped else max(hi - lo, reach)
        return [Mechanism("sum", sensitivity, 2 if grouped else 1, eps)]
    # mean: the sum of x − (lo + hi)/2 over non-missing cells (a part in ±(hi − lo)/2, so hi − lo
    # whether the record changes value, group or missingness) and the count of those cells
    return [Mechanism("centered sum", hi - lo, 2 if grouped else 1, eps / 2.0),
            Mechanism("non-missing count", *cells, eps / 2.0)]


def build_plans(params: DPStatisticsParams, columns: list[ColumnInfo]) -> list[QueryPlan]:
    """Every query's plan, or the MethodInputError naming the query and field at fault."""
    by_name = {c.name: c for c in columns}
    for what, given, numeric in (("bounds", params.bounds, True), ("categories", params.categories, False)):
        for name in given or {}:
            if name not in by_name:
                raise MethodInputError(f"{what} given for {name!r}, which is not a column")
            if (by_name[name].type == "numeric") != numeric:
                kind = "numeric" if by_name[name].type == "numeric" else "not numeric"
                raise MethodInputError(f"{what} given for column {name!r}, which is {kind}")
    plans = []
    for i, (q, eps) in enumerate(zip(params.queries, shares(params))):
        where = f"queries[{i}]"
        if q.free and q.share is not None:
            raise MethodInputError(f"{where}.share: an ungrouped count of records needs no ε (n is "
                                   "public under replace-one neighbours)")
        value = None
        if q.column is not None:
            info = _column(f"{where}.column", q.column, by_name)
            if q.statistic in ("sum", "mean", "quantile") and info.type != "numeric":
                raise MethodInputError(f"{where}.column: {q.column!r} is {info.type}: a {q.statistic} "
                                       "needs a numeric column (with declared bounds)")
            if q.bins is not None and info.type != "numeric":
                raise MethodInputError(f"{where}.bins: {q.column!r} is {info.type}: its histogram has "
                                       "one cell per declared category")
            value = _declared(f"{where}.column", info, params)
        groups = []
        for name in q.by:
            info = _column(f"{where}.by", name, by_name)
            if info.type == "numeric":
                raise MethodInputError(f"{where}.by: {name!r} is numeric: group by categorical columns "
                                       "(declared categories)")
            groups.append(_declared(f"{where}.by", info, params))
        plan = QueryPlan(i, q, eps, value, groups)
        plan.mechanisms = _mechanisms(plan)
        _check_size(plan)
        plans.append(plan)
    return plans


def _check_size(plan: QueryPlan) -> None:
    cells = plan.group_count * plan.level_count
    if cells > MAX_CELLS:
        raise MethodInputError(f"{plan.where}: {cells:,} cells to answer (groups × levels; limit "
                               f"{MAX_CELLS:,}): group by fewer or smaller columns")
    draws = plan.group_count * len(plan.query.levels)
    if plan.query.statistic == "quantile" and draws > MAX_QUANTILE_DRAWS:
        raise MethodInputError(f"{plan.where}.quantiles: {draws:,} quantile draws (groups × quantiles; "
                               f"limit {MAX_QUANTILE_DRAWS:,}): ask fewer quantiles or fewer groups")
    for m in plan.mechanisms:
        try:
            calibrate_laplace(m.sensitivity, m.coords, m.epsilon)
        except ValueError:
            raise MethodInputError(f"{plan.where}: its ε = {plan.epsilon:.3g} is too small for the "
                                   f"discrete Laplace of its {m.role} (sensitivity {m.sensitivity:g}): "
                                   "raise epsilon or this query's share") from None


def check(params: DPStatisticsParams, columns: list[ColumnInfo], source=None) -> None:
    build_plans(params, columns)


def check_rows(params: DPStatisticsParams, rows: int, columns: list[ColumnInfo]) -> None:
    """Known at submission: the table's size, and whether a sum of n values within the bounds
    fits the noise grid (its steps must stay below 2^52 to be exact in float64)."""
    if rows < 1:
        raise MethodInputError("the table has no records")
    if rows > MAX_RECORDS:
        raise MethodInputError(f"dp_statistics sums at most {MAX_RECORDS:,} records exactly; the "
                               f"table has {rows:,}")
    for plan in build_plans(params, columns):
        for m in plan.mechanisms:
            if m.role not in ("sum", "centered sum"):
                continue
            grid = 2.0 ** calibrate_laplace(m.sensitivity, m.coords, m.epsilon)[0]
            lo, hi = plan.value.lo, plan.value.hi
            reach = max(abs(lo), abs(hi)) if m.role == "sum" else (hi - lo) / 2.0
            if rows * reach / grid >= 2.0**52:
                raise MethodInputError(f"{plan.where}: a sum of {rows:,} values within the bounds of "
                                       f"{plan.query.column!r} is too large for its noise grid "
                                       f"({grid:g}): raise epsilon or narrow the bounds")
