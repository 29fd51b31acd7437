"""dp_statistics' parameters, and each query's plan: its columns' declared domains, its share
of ε, the sensitivities of its mechanisms. Everything here is decided by the parameters and
the schema (never by the data) and is checked at submission, before any debit; messages name
the query (``queries[2].column: …``)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Annotated, Literal

from pydantic import Field, field_validator, model_validator

from app.privacy.binning import bin_edges, edge_texts, edges_increase, narrow_bins
from app.privacy.data import ColumnInfo
from app.privacy.dp_release.common import DeclaredDomainParams
from app.privacy.dp_release.encoding import ColumnPlan, declared_plan
from app.privacy.noise import calibrate_laplace, laplace_loss
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
# mechanisms whose values are counts of records: integers, noised with noise's integer option
# (no rounding onto a grid γ ≤ 1, so no + d steps in the shift; laplace_mechanism verifies them)
COUNT_ROLES = ("counts", "non-missing count")

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
    def counts_all_records(self) -> bool:
        """An ungrouped count of records: n, public under replace-one neighbours (free there)."""
        return self.statistic == "count" and self.column is None and not self.by

    @property
    def levels(self) -> list[float]:
        return self.quantiles or [0.5]


class DPStatisticsParams(DeclaredDomainParams):
    queries: list[StatQuery] = Field(..., min_length=1, max_length=MAX_QUERIES, description="the "
                                     f"statistics to answer (1-{MAX_QUERIES}); their ε add up to "
                                     "epsilon (sequential composition)")
    neighbouring: Literal["replace_one", "add_remove"] = Field(
        "replace_one", description="the neighbouring relation ε is stated under: 'replace_one' "
        "(Veil's convention: one record's values changed, n public) or 'add_remove' (one record "
        "added or removed, as diffprivlib and OpenDP state it: a count or histogram has "
        "sensitivity 1, n is not public and its count is noisy). An add_remove job is debited the "
        "replace-one ε its answers also satisfy (up to 2ε, per query ε·Δ_replace/Δ_add_remove), "
        "and its guarantee states both")

    @property
    def add_remove(self) -> bool:
        return self.neighbouring == "add_remove"


# ----------------------------------------------------------------------------- plans
@dataclass
class Mechanism:
    """One discrete Laplace mechanism of a query: its L1 sensitivity and the coordinates a
    neighbour changes under the job's relation, its ε, and the same two under replace-one
    (equal to the first two for a replace-one job) from which its replace-one ε follows."""

    role: str  # "counts", "sum", "centered sum", "non-missing count"
    sensitivity: float
    coords: int
    epsilon: float
    replace_sensitivity: float
    replace_coords: int
    integer: bool = False  # counts: integer values, noised on the integer grid without rounding


@dataclass
class QueryPlan:
    index: int
    query: StatQuery
    epsilon: float  # the query's share of ε (0 for the free count)
    value: ColumnPlan | None  # the column's declared domain
    groups: list[ColumnPlan] = field(default_factory=list)
    mechanisms: list[Mechanism] = field(default_factory=list)
    add_remove: bool = False  # the job's relation: add/remove (else replace-one)
    weight: float = 1.0  # the query's weight in the split of ε (0 for the free count)
    replace_ratio: float = 1.0  # its replace-one ε per unit of its ε (replace_ratio())

    @property
    def free(self) -> bool:
        """n itself, released at no ε: an ungrouped count of records under replace-one."""
        return self.query.counts_all_records and not self.add_remove

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
        """ε of each exponential mechanism: the query's ε over its quantiles; under replace-one
        halved per group when grouped (a record moved between groups changes two groups'
        answers; added or removed, it is in one group)."""
        halved = 2 if self.groups and not self.add_remove else 1
        return self.epsilon * (1.0 - SAFETY) / len(self.query.levels) / halved

    def quantile_sensitivity(self, q: float) -> Fraction:
        """The sensitivity of u(c) = −|#{x ≤ c} − q·m|, exactly. Replace-one: 1 (a value
        changed moves #{x ≤ c} by ≤ 1 at fixed m; made missing, by ≤ 1 while q·m moves by q).
        Add/remove: max(q, 1 − q) (a value added moves #{x ≤ c} by 1 for c ≥ x, 0 below, and
        q·m by q)."""
        if not self.add_remove:
            return Fraction(1)
        return max(Fraction(q), 1 - Fraction(q))

    def replace_ratio_of_quantiles(self) -> Fraction:
        """A quantile query's replace-one ε per unit of its ε: 1 under replace-one. Under
        add/remove each draw runs at ε_each with utility sensitivity Δ_q = max(q, 1 − q), and one
        replacement either changes a value inside its group (utility moved by ≤ 1: ε_each/Δ_q
        per draw of that group; made missing or present, by ≤ Δ_q: ε_each) or moves the record
        between groups — a removal from one group and an addition to another, each an add/remove
        neighbour there: ε_each per draw in two groups. So the mean of 1/Δ_q ungrouped, and
        max(mean 1/Δ_q, 2) = 2 per group (1/Δ_q ≤ 2), not twice the mean (up to 4)."""
        if not self.add_remove:
            return Fraction(1)
        levels = self.query.levels
        changed = sum(1 / self.quantile_sensitivity(q) for q in levels) / len(levels)
        return max(changed, Fraction(2 if self.groups else 1))


def weights(params: DPStatisticsParams) -> list[float]:
    """Each query's weight in the split of ε: its share (default 1), 0 for a free count (an
    ungrouped count of records under replace-one)."""
    return [0.0 if q.counts_all_records and not params.add_remove else (q.share or 1.0)
            for q in params.queries]


def shares(params: DPStatisticsParams) -> list[float]:
    """Each query's ε: epsilon·w_q / Σw (``weights``), nudged down so their float sum never
    passes epsilon."""
    w = weights(params)
    total = sum(w)
    if total == 0:
        return [0.0] * len(w)
    return [params.epsilon * x / total * (1.0 - SAFETY) for x in w]


def spent_epsilon(params: DPStatisticsParams) -> float:
    """The ε the answers are stated under (the job's relation): epsilon, or 0 when every query
    is an ungrouped count of records under replace-one (n is public: nothing is measured)."""
    return params.epsilon if any(weights(params)) else 0.0


def ledger_epsilon(params: DPStatisticsParams, plans: list[QueryPlan]) -> float:
    """The registry's ε hook: the replace-one ε the answers satisfy, which the budget counts.
    Replace-one: ``spent_epsilon``. Add/remove: epsilon·Σ w_q·r_q / Σ w_q, r_q the query's
    ``replace_ratio`` (0 for the ungrouped count of records: n is constant under
    replace-one). Each mechanism runs at its share nudged 10⁻¹² below and delivers at most
    r_q times that against a replacement (``replace_ratio``), so this price is never below
    the replace-one ε delivered."""
    if not params.add_remove:
        return spent_epsilon(params)
    total = sum(p.weight for p in plans)
    return params.epsilon * sum(p.weight * p.replace_ratio for p in plans) / total


def replace_ratio(plan: QueryPlan) -> float:
    """A query's replace-one ε per unit of its ε. A discrete Laplace mechanism of L1
    sensitivity Δ over d coordinates, run at scale t steps on the grid γ, loses
    (Δ/γ + d)/t (a count on γ ≤ 1: (Δ/γ)/t, noise.laplace_shift) plus a sampler slack linear
    in (Δ/γ, d) (noise.calibrate_laplace) against a neighbour: against a replacement (Δ', d')
    it loses at most Δ'/Δ times as much when d'/d ≤ Δ'/Δ — true of every mechanism here — and
    exactly Δ'/Δ times the ideal mechanism's ε. The query's ratio weighs its mechanisms by
    their parts of its ε."""
    if not plan.add_remove:
        return 1.0
    if plan.query.statistic == "quantile":
        return float(plan.replace_ratio_of_quantiles())
    parts = _laplace_parts(plan, plan.add_remove)
    return max(sum(part * (shift / s) for (_, s, _, part), (shift, _) in zip(parts, case))
               for case in replace_cases(plan))


def replace_cases(plan: QueryPlan) -> list[list[tuple[float, int]]]:
    """What one replacement can do to a Laplace query's mechanisms at once: cases, each a
    (replace-one L1 shift, coordinates) per mechanism; the query's replace-one loss is the
    worst case's sum. One case — every mechanism at its own worst — except the ungrouped mean,
    whose two worsts never meet: a value changed moves the centred sum by up to hi − lo and
    the count not at all; a value made missing (or present) moves the sum by at most
    (hi − lo)/2 and the count by 1. Under add/remove (each mechanism at half the ε) that is
    max(2·½, ½ + ½) = 1 times the ε, where the separate worsts add up to 1.5."""
    separate = [[(s, c) for (_, s, c, _) in _laplace_parts(plan, False)]]
    if plan.query.statistic != "mean" or plan.groups:
        return separate  # per group, a record moved between groups is the worst of both at once
    width = plan.value.hi - plan.value.lo
    return [[(width, 1), (0.0, 0)], [(width / 2.0, 1), (1.0, 1)]]


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


def _laplace_parts(plan: QueryPlan, add_remove: bool) -> list[tuple[str, float, int, float]]:
    """(role, L1 sensitivity, coordinates a neighbour changes, part of the query's ε) of each
    discrete Laplace mechanism of a query. Replace-one: a record's values change; it may move
    between groups and between missing and present. Add/remove: a record, missing cells and
    all, joins or leaves one group (docs/methods/dp_statistics.md derives each)."""
    q, grouped = plan.query, bool(plan.groups)
    moved = (1.0, 1) if add_remove else (2.0, 2)  # one cell ±1 / one cell −1 and another +1
    if q.statistic == "histogram" or (q.statistic == "count" and q.column is None):
        if q.counts_all_records:  # n: constant under replace-one
            return [("counts", *((1.0, 1) if add_remove else (0.0, 0)), 1.0)]
        return [("counts", *moved, 1.0)]
    counted = moved if grouped else (1.0, 1)  # ungrouped: one count, moving by ≤ 1 either way
    if q.statistic == "count":
        return [("non-missing count", *counted, 1.0)]
    if q.statistic == "quantile":
        return []
    lo, hi = plan.value.lo, plan.value.hi
    coords = 2 if grouped and not add_remove else 1
    if q.statistic == "sum":  # a missing cell adds 0: a record's part lies in [lo, hi] ∪ {0}
        reach = max(abs(lo), abs(hi))
        if add_remove:  # the part itself joins or leaves one group's sum
            return [("sum", reach, 1, 1.0)]
        return [("sum", max(hi - lo, 2.0 * reach) if grouped else max(hi - lo, reach), coords, 1.0)]
    # mean: the sum of x − (lo + hi)/2 over non-missing cells (a part in ±(hi − lo)/2: hi − lo
    # whether a record changes value, group or missingness; (hi − lo)/2 added or removed) and
    # the count of those cells, at half the query's ε each
    return [("centered sum", (hi - lo) / 2.0 if add_remove else hi - lo, coords, 0.5),
            ("non-missing count", *counted, 0.5)]


def _mechanisms(plan: QueryPlan) -> list[Mechanism]:
    """The discrete Laplace mechanisms of a query, calibrated to the job's relation, with
    their replace-one sensitivities beside."""
    if plan.free:
        return []
    eps = plan.epsilon * (1.0 - SAFETY)
    mechanisms = [Mechanism(role, s, c, eps * part, rs, rc, role in COUNT_ROLES)
                  for (role, s, c, part), (_, rs, rc, _)
                  in zip(_laplace_parts(plan, plan.add_remove), _laplace_parts(plan, False))]
    if plan.query.statistic == "mean" and not plan.groups and not plan.add_remove:
        try:  # calibrates both mechanisms: an ε too small for them is the query's 422, not a 500
            mechanisms[0].epsilon = _joint_centred_sum_epsilon(plan, mechanisms[1], eps)
        except (ValueError, OverflowError):
            raise _uncalibrated(plan, "mean", plan.value.hi - plan.value.lo, eps) from None
    return mechanisms


def _uncalibrated(plan: QueryPlan, role: str, sensitivity: float, epsilon: float) -> MethodInputError:
    """The 422 of a mechanism no discrete Laplace grid delivers: its ε too small, or its
    sensitivity over ε beyond float64 (bounds whose range nears 1.8e308: a grouped sum's
    2·max(|lo|, |hi|) overflowed to inf, a 500)."""
    if not math.isfinite(sensitivity / epsilon):
        return MethodInputError(f"{plan.where}: the sensitivity of its {role} ({sensitivity:g}) over its ε "
                                f"({plan.epsilon:.3g}) is beyond the largest float: narrow the bounds of "
                                f"{plan.query.column!r}")
    return MethodInputError(f"{plan.where}: its ε = {plan.epsilon:.3g} is too small for the discrete Laplace "
                            f"of its {role} (sensitivity {sensitivity:g}): raise epsilon or this query's share")


def case_loss(sensitivity: float, coords: int, epsilon: float, shift: float, moved: int,
              integer: bool = False) -> float:
    """The privacy loss of the discrete Laplace mechanism calibrated to (sensitivity, coords,
    epsilon, integer values or not) against a neighbour moving its input by ``shift`` over
    ``moved`` coordinates — the figure NoiseRecord.laplace_loss_against reads off the
    mechanism as run."""
    if shift == 0:
        return 0.0
    e, t, _ = calibrate_laplace(sensitivity, coords, epsilon, integer)
    return laplace_loss(2.0**e, t, shift, moved, integer)


def _joint_centred_sum_epsilon(plan: QueryPlan, count: Mechanism, eps: float) -> float:
    """Replace-one, ungrouped mean: the centred sum S's ε. Each mechanism keeps its own
    sensitivity (S: hi − lo, the count C: 1), but one replacement never reaches both
    (replace_cases): a value changed moves S by up to hi − lo and C not at all, a value made
    missing moves S by at most (hi − lo)/2 and C by 1. So S can take the query's whole ε
    where C takes half — max(ε_S, ε_S/2 + ε_C) = ε — the noise of an add/remove mean, half
    the sum's noise of the two at half the ε each (separate worsts: 0.75ε). ε_S is then
    nudged down until the second case's grid rounding (half of S's shift, but all of its
    rounding step) fits too."""
    width = plan.value.hi - plan.value.lo
    c_loss = case_loss(count.sensitivity, count.coords, count.epsilon, count.sensitivity, count.coords,
                       count.integer)
    target = eps - c_loss
    eps_s = eps
    for _ in range(60):
        half = case_loss(width, 1, eps_s, width / 2.0, 1)
        if half <= target:
            return eps_s
        eps_s *= target / half * (1.0 - 1e-9)
    raise RuntimeError("the centred sum's ε did not settle")  # never: each step scales the loss down


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
    for i, (q, eps, w) in enumerate(zip(params.queries, shares(params), weights(params))):
        where = f"queries[{i}]"
        if q.counts_all_records and not params.add_remove and q.share is not None:
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
        plan = QueryPlan(i, q, eps, value, groups, add_remove=params.add_remove, weight=w)
        plan.mechanisms = _mechanisms(plan)
        plan.replace_ratio = replace_ratio(plan)
        _check_size(plan)
        _check_bins(plan)
        plans.append(plan)
    return plans


def bin_labels(edges: list[float]) -> list[str]:
    """'[a, b)' per bin ('[a, b]' for the last), edges as binning.edge_texts writes them."""
    text = edge_texts(edges)
    last = len(edges) - 2
    return [f"[{text[b]}, {text[b + 1]}{']' if b == last else ')'}" for b in range(last + 1)]


def _check_bins(plan: QueryPlan) -> None:
    """A numeric histogram's edges must be distinct floats (binning.edges_increase)."""
    if plan.query.statistic != "histogram" or plan.value.kind != "numeric":
        return
    if not edges_increase(bin_edges(plan.value.lo, plan.value.hi, plan.bins)):
        raise MethodInputError(narrow_bins(f"{plan.where}.bins", plan.bins, plan.value.lo, plan.value.hi))


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
            calibrate_laplace(m.sensitivity, m.coords, m.epsilon, m.integer)
        except (ValueError, OverflowError):
            raise _uncalibrated(plan, m.role, m.sensitivity, m.epsilon) from None


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
                # a guard: the grid is ~2^-20·Δ/d whatever ε and a sum's reach is ≤ its Δ, so
                # only ~2^32/d rows overflow it (MAX_RECORDS refuses those first); until the grid
                # was the strict noise minimum (~2^-30 at ε = 10) 5·10^6 values in [0, 1] did
                raise MethodInputError(f"{plan.where}: a sum of {rows:,} values within the bounds of "
                                       f"{plan.query.column!r} is too large for its noise grid "
                                       f"({grid:g})")
