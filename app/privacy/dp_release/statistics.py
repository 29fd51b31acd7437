"""dp_statistics: counts, sums, means, histograms and quantiles of a table's columns, over the
whole table or per group, under pure ε-differential privacy (δ = 0). The release is a small
table of the answers — one row per statistic, group and level — with each answer's ε, its
noise and the noise's own 95 % interval.

Neighbours replace one record (n public; common.NEIGHBOURING): the record's values change,
so it may move to another group, another cell, or between a missing and a present value.

  count       of records: ungrouped it is n, public, released as is at no ε; per group the
              group cells' counts, L1 sensitivity 2 (one cell −1, one +1). Of a column's
              non-missing values: sensitivity 1 ungrouped, L1 2 per group.
  histogram   the counts of the column's levels (declared categories, or ``bins`` equal-width
              bins over the declared bounds) and of its missing level, per group: L1 2 (parallel
              composition over the disjoint cells: the histogram costs its ε once).
  sum         of the values clamped into [lo, hi], a missing cell adding 0: a record's part
              lies in [lo, hi] ∪ {0}, so max(hi − lo, |lo|, |hi|) ungrouped, per group L1
              max(hi − lo, 2·max(|lo|, |hi|)) (a record leaves one group's sum for another's).
  mean        per group or not: the sum of x − (lo + hi)/2 over the non-missing cells (a part
              in ±(hi − lo)/2, so sensitivity hi − lo in every case) and the count of those
              cells, each at half the query's ε; the mean is (lo + hi)/2 + sum / count, clipped
              into the bounds (post-processing). The count of non-missing cells is not public,
              even ungrouped, since a cell may be missing: both are measured.
  quantile    the exponential mechanism (McSherry & Talwar 2007) over a grid of candidates in
              the declared bounds, utility u(c) = −|#{x ≤ c} − q·m| (m the non-missing values
              of the group), sampled exactly (exact_em); sensitivity 1 (module statistics_params).

With ``neighbouring: add_remove`` one record, missing cells and all, joins or leaves one group:
n is not public and the ungrouped count of records is measured (sensitivity 1); a count or
histogram has L1 1, a sum max(|lo|, |hi|), a mean's centred sum (hi − lo)/2 and count 1, a
quantile's utility max(q, 1 − q) and each group's draws their full share. The ledger is
debited the replace-one ε the answers also satisfy (statistics_params.ledger_epsilon).

Every noisy value is an exact query value plus discrete Laplace noise on a power-of-two grid
(noise.laplace_mechanism; its delivered ε, floating-point slack included, is ≤ the ε asked).
Counts (of records per group, of non-missing values, a histogram's cells, a mean's count) are
integers and say so (noise's integer option, verified): on a grid γ ≤ 1 they are not rounded,
so their shift is Δ/γ steps without the + d, and the grid is the coarsest within 2⁻²⁰ of the
least expected absolute error — the integers themselves (the geometric mechanism) at most Δ/ε
(beyond a few hundred the finer grids' errors differ by < 10⁻⁴ relative).
A sum is computed exactly: each clamped value is taken on the grid u = 2^⌊log2((hi − lo)/2²⁰)⌋
from lo (a record's part is lo + u·k, k an integer in [0, ⌊(hi − lo)/u⌋], so within the
bounds), the integers are summed exactly in float64 (below 2^52) and the total is rounded to
the noise grid in integer arithmetic — a float sum's rounding can move with one record by more
than the sensitivity (Casacuberta et al., CCS 2022).

The 95 % interval of a Laplace answer covers the noise only (not the sampling error of the
data): the smallest integer a with P(|Y| > a) = 2ρ^(a+1)/(1 + ρ) ≤ 5 %, Y the discrete
Laplace of the answer's scale t (ρ = e^(−1/t)), widened by half a grid step for the rounding of
the exact value onto the grid (a count on a grid γ ≤ 1 was not rounded: not widened). A mean's interval holds its sum and count within their 97.5 %
intervals (together ≥ 95 %, a union bound) and spans the ratio over that box; the whole bounds
when the count's interval reaches 0. A mean whose noisy count is below 1 is not estimated
(NaN: the group may hold no value). A quantile has none.
"""

from __future__ import annotations

import itertools
import math
import time
from fractions import Fraction
from typing import Any

import numpy as np
import pandas as pd

from app.privacy.context import RunContext
from app.privacy.data import ColumnInfo, MethodInput
from app.privacy.dp_release import exact_em
from app.privacy.dp_release.encoding import ColumnPlan
from app.privacy.dp_release.statistics_guarantee import (
    laplace_facts, query_replace_one_delivered, release_guarantee,
)
from app.privacy.dp_release.statistics_params import (
    MAX_CANDIDATES, MISSING, DPStatisticsParams, QueryPlan, bin_edges, bin_labels, build_plans, check,
    check_rows, ledger_epsilon,
)
from app.privacy.noise import NoiseRecord, calibrate_laplace, laplace_mechanism
from app.privacy.registry import MethodInputError, MethodKind, MethodSpec, register
from app.privacy.results import ReleaseResult
from app.privacy.rng import SecureRandom

SUM_RESOLUTION = 20  # a value is taken on a grid of (hi − lo)/2^20 or finer for the exact sums
UTILITY = ("u(c) = −|#{x ≤ c} − q·m|, m the group's non-missing values; sensitivity 1 under replace-one, "
           "max(q, 1 − q) under add/remove")
OUTPUT_COLUMNS = ["query", "statistic", "column", "group", "level", "value", "epsilon", "noise",
                  "ci95_low", "ci95_high"]


# ------------------------------------------------------------------------- encoding
def numeric_values(plan: ColumnPlan, series: pd.Series) -> np.ndarray:
    """The column as floats clamped into its declared bounds, NaN where missing."""
    if series.dtype.kind in "fiub":  # numbers already: NaN is missing, nothing to coerce
        values = series.to_numpy(dtype=np.float64, copy=True)  # clamped in place below
    else:
        values = pd.to_numeric(series, errors="coerce").to_numpy(dtype=np.float64, copy=True)
        if np.any(np.isnan(values) & series.notna().to_numpy()):
            raise MethodInputError(f"column {plan.name!r} holds non-numeric values")
    np.maximum(values, plan.lo, out=values)  # NaN stays NaN; np.clip is slower here
    np.minimum(values, plan.hi, out=values)
    return values


def level_codes(plan: ColumnPlan, series: pd.Series, bins: int) -> tuple[np.ndarray, list[str]]:
    """Each record's level of the column (a category, or an equal-width bin over the bounds;
    the last level is 'missing') and the levels' labels."""
    if plan.kind == "categorical":
        codes, missing = plan.category_codes(series)
        codes[missing] = len(plan.categories)
        return codes, [str(c) for c in plan.categories] + [MISSING]
    scaled = numeric_values(plan, series) - plan.lo
    scaled *= bins / (plan.hi - plan.lo)
    np.floor(scaled, out=scaled)
    np.minimum(scaled, bins - 1, out=scaled)  # the upper bound is in the last bin
    scaled[np.isnan(scaled)] = bins  # the missing level
    codes = scaled.astype(np.int64)
    return codes, bin_labels(bin_edges(plan.lo, plan.hi, bins)) + [MISSING]


def group_codes(plan: QueryPlan, frame: pd.DataFrame) -> tuple[np.ndarray, list[str]]:
    """Each record's group (0 for all when ungrouped) and the groups' labels ('a=x|b=y')."""
    n = len(frame)
    if not plan.groups:
        return np.zeros(n, dtype=np.int64), [""]
    parts = [level_codes(g, frame[g.name], 0) for g in plan.groups]
    codes = np.ravel_multi_index(tuple(c for c, _ in parts), tuple(len(labels) for _, labels in parts))
    names = [g.name for g in plan.groups]
    labels = ["|".join(f"{k}={v}" for k, v in zip(names, combo))
              for combo in itertools.product(*(labels for _, labels in parts))]
    return np.asarray(codes, dtype=np.int64), labels


# ------------------------------------------------------------------------- exact sums
def exact_sums(values: np.ndarray, groups: np.ndarray, size: int, lo: float, hi: float,
               ) -> tuple[np.ndarray, np.ndarray, int]:
    """(non-missing cells per group, Σk per group, e): a present value x is taken as lo + 2^e·k,
    k = round((x − lo)/2^e) clipped into [0, ⌊(hi − lo)/2^e⌋] (exactly, so the part stays within
    the bounds). Σk ≤ n·2^21 < 2^52: float64 adds these integers exactly."""
    e = math.floor(math.log2((hi - lo) / 2.0**SUM_RESOLUTION))
    top = math.floor((Fraction(hi) - Fraction(lo)) / Fraction(2) ** e)
    k = values - lo
    k *= 2.0**-e
    np.rint(k, out=k)
    np.maximum(k, 0.0, out=k)  # NaN (missing) stays NaN; faster than np.clip
    np.minimum(k, float(top), out=k)
    missing = np.isnan(k)
    if size == 1:  # ungrouped: no bincount (a pairwise float64 sum of integers < 2^53 is exact)
        present = len(k) - int(np.count_nonzero(missing))
        k[missing] = 0.0
        return np.array([present]), np.array([float(k.sum())]), e
    k[missing] = 0.0
    slot = np.where(missing, size, groups)  # missing cells go to a slot past the groups
    counts = np.bincount(slot, minlength=size + 1)[:size]
    return counts, np.bincount(slot, weights=k, minlength=size + 1)[:size], e


def grid_steps(offset: Fraction, counts: np.ndarray, unit_exp: int, sums: np.ndarray,
               grid_exp: int) -> np.ndarray:
    """round((offset·count + 2^unit_exp·Σk) / 2^grid_exp) per group, in exact integer
    arithmetic (Python integers in object arrays): the exact sums on the noise grid, in steps."""
    a = offset / Fraction(2) ** grid_exp
    b = Fraction(2) ** (unit_exp - grid_exp)
    p = max(a.denominator, b.denominator)  # both powers of two
    num = (a * p).numerator * counts.astype(object) + (b * p).numerator * sums.astype(np.int64).astype(object)
    steps = (2 * num + p) // (2 * p)
    if np.any(np.abs(steps) >= 2**52):
        raise MethodInputError("a sum is too large for its noise grid")  # check_rows refuses it first
    return steps.astype(np.float64)


def on_grid_mechanism(offset: Fraction, counts: np.ndarray, unit_exp: int, sums: np.ndarray,
                      sensitivity: float, coords: int, epsilon: float, rng: SecureRandom,
                      ) -> tuple[np.ndarray, NoiseRecord]:
    """The discrete Laplace of exact sums: rounded onto the mechanism's own grid first, so the
    mechanism's rounding is the identity."""
    e = calibrate_laplace(sensitivity, coords, epsilon)[0]
    exact = grid_steps(offset, counts, unit_exp, sums, e) * 2.0**e
    noisy, record = laplace_mechanism(exact, sensitivity, coords, epsilon, rng)
    assert record.grid_exponent == e
    return noisy, record


# ------------------------------------------------------------------------- intervals
def laplace_halfwidth(record: NoiseRecord, alpha: float) -> float:
    """The half-width around a noisy answer holding its exact value with probability ≥ 1 − α:
    γ·(a + ½), a the smallest integer with P(|Y| > a) = 2ρ^(a+1)/(1 + ρ) ≤ α (Y the discrete
    Laplace of scale t steps, ρ = e^(−1/t)); ½ a step for the rounding onto the grid — none for
    counts on a grid γ ≤ 1, which were not rounded (γ·a)."""
    t = record.scale_steps
    log_rho = -1.0 / t

    def tail(a: int) -> float:  # log P(|Y| > a)
        return math.log(2.0) + (a + 1) * log_rho - math.log1p(math.exp(log_rho))

    a = max(0, math.ceil((math.log(alpha) - math.log(2.0) + math.log1p(math.exp(log_rho))) / log_rho - 1.0))
    while a > 0 and tail(a - 1) <= math.log(alpha):
        a -= 1
    while tail(a) > math.log(alpha):
        a += 1
    return record.grid * (a + 0.5) if record.rounded else record.grid * a


def mean_interval(total: np.ndarray, count: np.ndarray, h_total: float, h_count: float,
                  lo: float, hi: float) -> tuple[np.ndarray, np.ndarray]:
    """The means' interval: the exact centered sum within total ± h_total and the exact count
    within count ± h_count (each a 97.5 % interval), the ratio's range over that box (its
    extremes are at the corners: monotone in each for a positive count), plus (lo + hi)/2 and
    within the bounds; the bounds themselves where the count may be 0."""
    mid = (lo + hi) / 2.0
    c_lo, c_hi = count - h_count, count + h_count
    # where c_lo < 1 the corners are discarded (below); a count on the integers can put c_hi at
    # exactly 0 there, so both are floored at 1 (the identity where the corners are kept)
    corners = np.stack([(total + s * h_total) / c for s in (-1, 1)
                        for c in (np.maximum(c_lo, 1.0), np.maximum(c_hi, 1.0))])
    low = np.clip(mid + corners.min(axis=0), lo, hi)
    high = np.clip(mid + corners.max(axis=0), lo, hi)
    unknown = c_lo < 1.0  # the true count is an integer: below 1 it may be 0
    return np.where(unknown, lo, low), np.where(unknown, hi, high)


# ------------------------------------------------------------------------- quantiles
def candidates(plan: ColumnPlan) -> np.ndarray:
    """The quantile's candidate grid in the declared bounds: every integer of an integer column
    when at most MAX_CANDIDATES, else MAX_CANDIDATES equally spaced values (rounded to integers
    for an integer column)."""
    if plan.integer:
        first, last = math.ceil(plan.lo), math.floor(plan.hi)
        if last - first + 1 <= MAX_CANDIDATES:
            return np.arange(first, last + 1, dtype=np.float64)
        return np.unique(np.rint(np.linspace(first, last, MAX_CANDIDATES)))
    return np.linspace(plan.lo, plan.hi, MAX_CANDIDATES)


def quantile_exponents(at_or_below: np.ndarray, q: float, m: int, epsilon: float,
                       sensitivity: Fraction = Fraction(1)) -> tuple[np.ndarray, int]:
    """The exponential mechanism's exponents ε/(2Δ)·(|k_c − q·m| − min) as integers over one
    denominator (exact_em.sample's input): q and ε are floats, so exact dyadic rationals, and Δ
    a Fraction; k_c = #{x ≤ c}. Computed once per distinct k_c (object arrays: exact at any size)."""
    qa, qb = q.as_integer_ratio()
    ea, eb = epsilon.as_integer_ratio()
    da, db = sensitivity.numerator, sensitivity.denominator
    distinct, inverse = np.unique(at_or_below, return_inverse=True)
    gap = np.abs(distinct.astype(object) * qb - qa * m)  # |k − q·m|·qb
    return ((gap - gap.min()) * (ea * db))[inverse], 2 * eb * qb * da


def draw_quantile(sorted_values: np.ndarray, grid: np.ndarray, q: float, epsilon: float,
                  rng: SecureRandom, sensitivity: Fraction = Fraction(1)) -> float:
    """One ε-DP quantile of a group's sorted non-missing values: a candidate with probability
    ∝ exp(ε·u(c)/(2Δ)), u(c) = −|#{x ≤ c} − q·m| of sensitivity Δ, sampled exactly."""
    at_or_below = np.searchsorted(sorted_values, grid, side="right")
    numerators, denominator = quantile_exponents(at_or_below, q, len(sorted_values), epsilon, sensitivity)
    return float(grid[exact_em.sample(rng, numerators, denominator)])


# ------------------------------------------------------------------------------- run
class Answers:
    """The release's rows, appended query by query, and each query's published facts."""

    def __init__(self) -> None:
        self.columns: dict[str, list[Any]] = {c: [] for c in OUTPUT_COLUMNS}
        self.facts: list[dict[str, Any]] = []

    def add(self, plan: QueryPlan, groups: list[str], levels: list[str], values: np.ndarray,
            noise: str, low: np.ndarray | None = None, high: np.ndarray | None = None) -> None:
        """One row per (group, level), groups outer, in the order of ``values``."""
        size = len(groups) * len(levels)
        q = plan.query
        fill = {"query": [plan.index] * size, "statistic": [q.statistic] * size,
                "column": [q.column or ""] * size, "group": [g for g in groups for _ in levels],
                "level": levels * len(groups), "value": list(np.asarray(values, dtype=np.float64)),
                "epsilon": [plan.epsilon] * size, "noise": [noise] * size,
                "ci95_low": list(np.full(size, np.nan) if low is None else low),
                "ci95_high": list(np.full(size, np.nan) if high is None else high)}
        for name, column in fill.items():
            self.columns[name].extend(column)

    def frame(self) -> pd.DataFrame:
        types = {"query": np.int64, "value": np.float64, "epsilon": np.float64,
                 "ci95_low": np.float64, "ci95_high": np.float64}
        # typed arrays at construction: DataFrame.astype cost ~7 ms on a one-row answer
        return pd.DataFrame({name: np.asarray(column, dtype=types.get(name, object))
                             for name, column in self.columns.items()})


def _laplace_answer(plan: QueryPlan, exact: np.ndarray, rng: SecureRandom) -> tuple[np.ndarray, NoiseRecord]:
    m = plan.mechanisms[0]
    return laplace_mechanism(exact, m.sensitivity, m.coords, m.epsilon, rng, integer=m.integer)


def _interval(noisy: np.ndarray, record: NoiseRecord) -> tuple[np.ndarray, np.ndarray]:
    h = laplace_halfwidth(record, 0.05)
    return noisy - h, noisy + h


def _counts(plan: QueryPlan, frame: pd.DataFrame, answers: Answers, rng: SecureRandom) -> dict[str, Any]:
    """count and histogram: bincounts of the group (× level) cells."""
    q, n = plan.query, len(frame)
    g, group_labels = group_codes(plan, frame)
    if plan.free:
        answers.add(plan, group_labels, [""], np.array([float(n)]), "none: n is public under "
                    "replace-one neighbours", np.array([float(n)]), np.array([float(n)]))
        return {"mechanisms": [], "epsilon_delivered": 0.0}
    levels = [""]
    if q.statistic == "histogram":
        codes, levels = level_codes(plan.value, frame[q.column], plan.bins)
        cells = np.bincount(g * len(levels) + codes if plan.groups else codes,
                            minlength=len(group_labels) * len(levels))
    elif q.column is not None:  # the column's non-missing values
        if plan.value.kind == "categorical":  # a value outside job-declared categories is missing
            present = ~plan.value.category_codes(frame[q.column])[1]
        else:
            present = frame[q.column].notna().to_numpy()
        cells = np.bincount(g[present], minlength=len(group_labels))
    else:
        cells = np.bincount(g, minlength=len(group_labels))
    noisy, record = _laplace_answer(plan, cells.astype(np.float64), rng)
    answers.add(plan, group_labels, levels, noisy, f"discrete Laplace, scale {record.scale:.4g}", *_interval(noisy, record))
    m = plan.mechanisms[0]
    return _delivered(plan, [laplace_facts(m, record, f"L1 {m.sensitivity:g} over {m.coords} cell(s)",
                                           plan.add_remove)], [record],
                      levels=levels if q.statistic == "histogram" else None)


def _delivered(plan: QueryPlan, mechanisms: list[dict[str, Any]], records: list[NoiseRecord],
               **extra: Any) -> dict[str, Any]:
    """A Laplace query's facts: its mechanisms (run with ``records``) and its delivered ε —
    against a replacement the worst of the replacement's cases (an ungrouped mean's two
    worsts never meet: statistics_params.replace_cases), under add/remove the mechanisms'
    added up (sequential composition inside a mean) and the replace-one figure beside."""
    replaced = query_replace_one_delivered(plan, records)
    if not plan.add_remove:
        return {"mechanisms": mechanisms, "epsilon_delivered": replaced, **extra}
    facts = {"mechanisms": mechanisms, "epsilon_delivered": sum(m["epsilon_delivered"] for m in mechanisms),
             "epsilon_delivered_replace_one": replaced}
    return {**facts, **extra}


def _sums(plan: QueryPlan, frame: pd.DataFrame, answers: Answers, rng: SecureRandom) -> dict[str, Any]:
    """sum and mean, from the exact per-group sums."""
    lo, hi = plan.value.lo, plan.value.hi
    g, group_labels = group_codes(plan, frame)
    values = numeric_values(plan.value, frame[plan.query.column])
    counts, sums, unit = exact_sums(values, g, len(group_labels), lo, hi)
    first = plan.mechanisms[0]
    if plan.query.statistic == "sum":
        noisy, record = on_grid_mechanism(Fraction(lo), counts, unit, sums, first.sensitivity,
                                          first.coords, first.epsilon, rng)
        answers.add(plan, group_labels, [""], noisy, f"discrete Laplace, scale {record.scale:.4g}",
                    *_interval(noisy, record))
        return _delivered(plan, [laplace_facts(first, record, f"{first.sensitivity:g}", plan.add_remove)],
                          [record], value_grid=2.0**unit)
    mid = (Fraction(lo) + Fraction(hi)) / 2
    total, r_total = on_grid_mechanism(Fraction(lo) - mid, counts, unit, sums, first.sensitivity,
                                       first.coords, first.epsilon, rng)
    second = plan.mechanisms[1]
    count, r_count = laplace_mechanism(counts.astype(np.float64), second.sensitivity, second.coords,
                                       second.epsilon, rng, integer=second.integer)
    center = float(mid)
    # A noisy count below 1 says the group may hold no value: its mean is not estimated (NaN,
    # interval the whole bounds) rather than a clipped ratio of noise passed off as a mean.
    means = np.where(count >= 1.0, np.clip(center + total / np.maximum(count, 1.0), lo, hi), np.nan)
    low, high = mean_interval(total, count, laplace_halfwidth(r_total, 0.025),
                              laplace_halfwidth(r_count, 0.025), lo, hi)
    answers.add(plan, group_labels, [""], means, f"discrete Laplace: centered sum scale {r_total.scale:.4g}, "
                f"count scale {r_count.scale:.4g}", low, high)
    width = "(hi − lo)/2" if plan.add_remove else "(hi − lo)"
    return _delivered(plan, [laplace_facts(first, r_total, f"{first.sensitivity:g} {width}", plan.add_remove),
                             laplace_facts(second, r_count, f"L1 {second.sensitivity:g} over {second.coords} "
                                           "cell(s)", plan.add_remove)], [r_total, r_count],
                      value_grid=2.0**unit, center=center, not_estimated=int(np.count_nonzero(count < 1.0)))


def _quantiles(plan: QueryPlan, frame: pd.DataFrame, answers: Answers, rng: SecureRandom,
               ctx: RunContext) -> dict[str, Any]:
    """One exponential mechanism per group and quantile, on each group's sorted values."""
    g, group_labels = group_codes(plan, frame)
    values = numeric_values(plan.value, frame[plan.query.column])
    present = ~np.isnan(values)
    if plan.groups:
        order = np.lexsort((values[present], g[present]))
        ordered, owners = values[present][order], g[present][order]
        bounds = np.searchsorted(owners, np.arange(len(group_labels) + 1))
    else:
        ordered, bounds = np.sort(values[present]), np.array([0, int(present.sum())])
    grid = candidates(plan.value)
    levels = plan.query.levels
    eps = plan.quantile_epsilon
    sensitivities = [plan.quantile_sensitivity(q) for q in levels]
    drawn = np.empty((len(group_labels), len(levels)))
    for group in range(len(group_labels)):  # one mechanism per group: not a loop over records
        ctx.check_cancelled()
        mine = ordered[bounds[group]:bounds[group + 1]]
        for j, q in enumerate(levels):
            drawn[group, j] = draw_quantile(mine, grid, q, eps, rng, sensitivities[j])
    answers.add(plan, group_labels, [f"q={q:g}" for q in levels], drawn.ravel(),
                f"exponential mechanism, ε {eps:.4g} each, {len(grid):,} candidates")
    touched = 2 if plan.groups else 1  # groups a replacement changes (an addition or removal: one)
    facts = {"mechanisms": [{"role": "quantile", "mechanism": "exponential (McSherry & Talwar 2007), "
                             "sampled exactly (exact_em: CSPRNG bits, integer exponents)",
                             "utility": UTILITY, "epsilon_each": eps, "draws": int(drawn.size),
                             "utility_sensitivity": {f"q={q:g}": float(d) for q, d in zip(levels, sensitivities)},
                             "candidates": len(grid), "candidates_first": float(grid[0]),
                             "candidates_last": float(grid[-1]), "rng": rng.name}],
             "epsilon_delivered": eps * len(levels) * (1 if plan.add_remove else touched), "levels": levels}
    if plan.add_remove:  # a value changed: ε_each/Δ_q a draw; moved between groups: ε_each in each of two
        changed = sum(float(1 / d) for d in sensitivities)
        facts["epsilon_delivered_replace_one"] = eps * max(changed, touched * len(levels))
    return facts


def run_statistics(data: MethodInput, params: DPStatisticsParams, ctx: RunContext) -> ReleaseResult:
    started = time.perf_counter()
    frame = data.frame
    if frame is None:
        raise MethodInputError("dp_statistics answers queries on a table")
    check_rows(params, len(frame), data.columns)
    plans = build_plans(params, data.columns)
    answers = Answers()
    for i, plan in enumerate(plans):
        ctx.progress(i / len(plans), f"query {i + 1} of {len(plans)}: {plan.query.statistic}")
        if plan.query.statistic in ("count", "histogram"):
            facts = _counts(plan, frame, answers, ctx.rng)
        elif plan.query.statistic in ("sum", "mean"):
            facts = _sums(plan, frame, answers, ctx.rng)
        else:
            facts = _quantiles(plan, frame, answers, ctx.rng, ctx)
        q = plan.query
        answers.facts.append({"query": i, "statistic": q.statistic, "column": q.column, "by": q.by,
                              "epsilon": plan.epsilon, "groups": plan.group_count, **facts})
    ctx.progress(1.0, "done")
    return _result(params, ctx, plans, answers, len(frame), time.perf_counter() - started)


def _output_infos(out: pd.DataFrame) -> list[ColumnInfo]:
    """The release's schema: the labels' categories are the ones it holds (set by the params and
    the declared domains, never by the data)."""
    infos = []
    for name in OUTPUT_COLUMNS:
        if name in ("statistic", "column", "group", "level", "noise"):
            cats = tuple(dict.fromkeys(str(v) for v in out[name]))
            infos.append(ColumnInfo(name, "categorical", categories=cats))
        else:
            infos.append(ColumnInfo(name, "numeric", integer=name == "query"))
    return infos


def _result(params: DPStatisticsParams, ctx: RunContext, plans: list[QueryPlan], answers: Answers,
            n: int, seconds: float) -> ReleaseResult:
    out = answers.frame()
    g, meta = release_guarantee(params, ctx, plans, answers.facts, n, list(out.columns))
    return ReleaseResult(frame=out, columns=_output_infos(out), guarantees=g,
                         metadata={"dp_statistics": meta},
                         metrics={"rows": len(out), "queries": len(plans), "seconds": seconds})


register(MethodSpec(
    name="dp_statistics",
    family="dp_release",
    kind=MethodKind.release,
    summary="Counts, sums, means, histograms and quantiles of columns, overall or per group (up to "
            "2 categorical columns), under pure ε-DP (δ = 0): discrete Laplace noise on exact values, "
            "an exactly sampled exponential mechanism for quantiles; each answer with its ε and the "
            "noise's 95 % interval. Domains from the declared bounds and categories.",
    params=DPStatisticsParams,
    guarantee="central ε-DP (δ = 0) of the table of answers (replace-one neighbours, or add/remove: "
              "neighbouring: add_remove, debited the replace-one ε it also satisfies)",
    paper="Dwork, McSherry, Nissim & Smith, Calibrating Noise to Sensitivity in Private Data "
          "Analysis, TCC 2006; McSherry & Talwar, Mechanism Design via Differential Privacy, FOCS "
          "2007; Smith, Privacy-Preserving Statistical Estimation with Optimal Convergence Rates, "
          "STOC 2011 (the quantile)",
    run=run_statistics,
    epsilon=lambda params, columns: ledger_epsilon(params, build_plans(params, columns)),
    check=check,
    check_rows=check_rows,
    docs="docs/methods/dp_statistics.md",
))
