"""dp_statistics: the queries' ε add up to at most ε and each noise scale is its sensitivity over
its ε; the stated sensitivities hold on neighbouring tables (a record changed, moved between
groups, made missing); the noise is centred and its stated 95 % interval covers ≈ 95 % of
seeded draws; the quantile's exact sampler has the exponential mechanism's law (chi-square);
values are clamped into the bounds; bad queries are refused naming the query and field."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest
from pydantic import ValidationError
from scipy import stats

from app.privacy import registry
from app.privacy.context import RunContext
from app.privacy.data import ColumnInfo, MethodInput
from app.privacy.dp_release import exact_em
from app.privacy.dp_release.statistics import (
    candidates, draw_quantile, exact_sums, grid_steps, laplace_halfwidth, level_codes, mean_interval,
    quantile_exponents, run_statistics,
)
from app.privacy.dp_release.statistics_params import (
    DPStatisticsParams, build_plans, check_rows, shares, spent_epsilon,
)
from app.privacy.noise import NoiseRecord
from app.privacy.registry import MethodInputError
from app.privacy.rng import SecureRandom

SCHEMA = [ColumnInfo("id", "numeric", role="identifier"),
          ColumnInfo("sex", "categorical", categories=("F", "M")),
          ColumnInfo("race", "categorical", categories=("a", "b", "c")),
          ColumnInfo("age", "numeric", bounds=(18, 90), integer=True),
          ColumnInfo("score", "numeric", bounds=(-5.0, 5.0)),
          ColumnInfo("free", "numeric")]  # no declared bounds


def table(n: int, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    score = np.round(rng.normal(1.0, 2.0, n), 3)
    score[rng.random(n) < 0.1] = np.nan
    return pd.DataFrame({"id": np.arange(n), "sex": rng.choice(["F", "M"], n),
                         "race": rng.choice(["a", "b", "c", None], n, p=[0.5, 0.3, 0.15, 0.05]),
                         "age": rng.integers(18, 91, n), "score": score, "free": rng.random(n)})


def params(epsilon: float, *queries: dict) -> DPStatisticsParams:
    return DPStatisticsParams.model_validate({"epsilon": epsilon, "queries": list(queries)})


def run(p: DPStatisticsParams, frame: pd.DataFrame, seed: int | None = 1):
    return run_statistics(MethodInput(SCHEMA, frame), p, RunContext(SecureRandom(seed=seed)))


# ------------------------------------------------------------------------ accounting
def test_shares_add_up_to_at_most_epsilon_and_each_scale_is_sensitivity_over_its_epsilon():
    p = params(2.0, {"statistic": "count"}, {"statistic": "count", "by": ["sex"], "share": 3},
               {"statistic": "histogram", "column": "race"}, {"statistic": "sum", "column": "score"},
               {"statistic": "sum", "column": "age", "by": ["race"]}, {"statistic": "mean", "column": "age"},
               {"statistic": "quantile", "column": "age", "quantiles": [0.25, 0.75], "by": ["sex"]})
    eps = shares(p)
    assert eps[0] == 0 and sum(eps) <= 2.0 and sum(eps) == pytest.approx(2.0)
    assert eps[1] == pytest.approx(3 * eps[2]) and eps[2] == pytest.approx(2.0 / 8)
    result = run(p, table(500))
    g, meta = result.guarantees, result.metadata["dp_statistics"]
    assert g["epsilon"] == 2.0 and g["delta"] == 0.0 and g["private"] is False  # seeded
    assert sum(g["epsilon_split"].values()) <= 2.0 and g["epsilon_delivered"] <= 2.0
    expected = {1: [2.0], 2: [2.0], 3: [10.0], 4: [180.0], 5: [72.0, 1.0]}  # score: [-5, 5]; age: [18, 90]
    for facts in meta["queries"]:
        q = facts["query"]
        assert facts["epsilon"] == pytest.approx(eps[q]) and facts["epsilon_delivered"] <= eps[q]
        for m, sensitivity in zip(facts["mechanisms"], expected.get(q, [])):
            assert m["sensitivity"] == sensitivity
            assert m["epsilon_delivered"] <= m["epsilon_share"]
            ideal = sensitivity / m["epsilon_share"]
            assert ideal <= m["scale"] <= ideal * 1.05, (q, m["scale"], ideal)
        if q == 5:  # the ungrouped mean: S at the whole share, C at half (composed by cases)
            assert [m["epsilon_share"] for m in facts["mechanisms"]] == pytest.approx([eps[5], eps[5] / 2], rel=1e-6)
            assert facts["epsilon_delivered"] == pytest.approx(eps[5], rel=1e-6)
    quantile = meta["queries"][6]["mechanisms"][0]
    assert quantile["epsilon_each"] == pytest.approx(eps[6] / 2 / 2) and quantile["draws"] == 3 * 2  # (F, M, missing) × 2
    assert quantile["candidates"] == 73  # every integer of [18, 90]
    rows = result.frame
    assert (rows.groupby("query")["epsilon"].first().to_numpy() == pytest.approx(eps))


def test_a_table_of_free_counts_costs_nothing_and_releases_n():
    p = params(1.0, {"statistic": "count"})
    assert spent_epsilon(p) == 0.0 and registry.get("dp_statistics").epsilon_cost(p, SCHEMA) == 0.0
    out = run(p, table(37)).frame
    assert out["value"].tolist() == [37.0] and out["ci95_low"].tolist() == [37.0]
    assert registry.get("dp_statistics").epsilon_cost(params(1.0, {"statistic": "count", "by": ["sex"]}), SCHEMA) == 1.0


# ------------------------------------------------------------------------ sensitivities
def _neighbours(frame: pd.DataFrame, rng: np.random.Generator, count: int):
    """Tables with one record's values replaced: random values, bounds, out-of-bound values, missing."""
    for _ in range(count):
        other = frame.astype({"age": float})  # a copy; age may become missing
        i = int(rng.integers(len(frame)))
        other.loc[i, "sex"] = rng.choice(["F", "M"])
        other.loc[i, "race"] = rng.choice(["a", "b", "c", None])
        other.loc[i, "score"] = rng.choice([np.nan, -5.0, 5.0, 99.0, -99.0, float(rng.normal())])
        other.loc[i, "age"] = rng.choice([18, 90, int(rng.integers(18, 91)), np.nan])
        yield other


def _exact(plan, frame: pd.DataFrame, statistic: str) -> np.ndarray:
    """The exact input of a query's first mechanism."""
    return exact_inputs(plan, frame)[0]


def exact_inputs(plan, frame: pd.DataFrame) -> list[np.ndarray]:
    """The exact input of each of a query's Laplace mechanisms (a mean's: its centred sums and
    its counts of non-missing values), computed here from the table."""
    from app.privacy.dp_release.statistics import group_codes, numeric_values

    g, labels = group_codes(plan, frame)
    statistic, column = plan.query.statistic, plan.query.column
    if statistic == "count" and column is None:  # of records
        return [np.bincount(g, minlength=len(labels)).astype(float)]
    if statistic == "count":  # of a column's non-missing values
        present = frame[column].notna().to_numpy()
        return [np.bincount(g[present], minlength=len(labels)).astype(float)]
    if statistic == "histogram":
        codes, levels = level_codes(plan.value, frame[column], plan.bins)
        return [np.bincount(g * len(levels) + codes, minlength=len(labels) * len(levels)).astype(float)]
    values = numeric_values(plan.value, frame[column])
    counts, sums, unit = exact_sums(values, g, len(labels), plan.value.lo, plan.value.hi)
    lo, hi = Fraction(plan.value.lo), Fraction(plan.value.hi)
    offset = lo if statistic == "sum" else lo - (lo + hi) / 2
    totals = np.array([float(offset * int(c) + Fraction(2) ** unit * int(s)) for c, s in zip(counts, sums)])
    return [totals] if statistic == "sum" else [totals, counts.astype(float)]


@pytest.mark.parametrize("query", [
    {"statistic": "histogram", "column": "race", "by": ["sex"]},
    {"statistic": "histogram", "column": "score", "bins": 7},
    {"statistic": "sum", "column": "score"}, {"statistic": "sum", "column": "score", "by": ["race", "sex"]},
    {"statistic": "mean", "column": "score", "by": ["race"]}, {"statistic": "sum", "column": "age", "by": ["sex"]},
    # bounds [18, 90] leave out 0: a present 90 made missing moves the sum by 90, beyond hi − lo
    {"statistic": "sum", "column": "age"}, {"statistic": "mean", "column": "age"},
    {"statistic": "count", "column": "score", "by": ["sex"]}, {"statistic": "count", "column": "score"},
])
def test_the_stated_sensitivity_holds_on_neighbouring_tables(query):
    """Every mechanism of the query (a mean's centred sum and count) on 300 replace-one neighbours."""
    frame = table(60, seed=3)
    plan = build_plans(params(1.0, query), SCHEMA)[0]
    assert_sensitivities_hold(plan, frame, _neighbours(frame, np.random.default_rng(4), 300))


@pytest.mark.parametrize("column", ["score", "age"])  # bounds [-5, 5] hold 0, [18, 90] do not
def test_an_ungrouped_means_two_mechanisms_lose_at_most_its_share_against_every_replacement(column):
    """S runs at the query's whole ε and C at half (composed by cases, not added up): on 400
    replacements the loss of both as calibrated — each shift over its scale, rounding steps
    and sampler slack included — never passes the share, and comes within 10⁻³ of it."""
    from app.privacy.dp_release.statistics_params import case_loss

    plan = build_plans(params(1.0, {"statistic": "mean", "column": column}), SCHEMA)[0]
    s, c = plan.mechanisms
    assert s.epsilon == pytest.approx(plan.epsilon, rel=1e-6) and c.epsilon == pytest.approx(plan.epsilon / 2)
    frame = table(60, seed=19)
    base = exact_inputs(plan, frame)
    worst = 0.0
    for other in _neighbours(frame, np.random.default_rng(20), 400):
        moved = [np.abs(now - was) for now, was in zip(exact_inputs(plan, other), base)]
        loss = sum(case_loss(m.sensitivity, m.coords, m.epsilon, float(d.sum()), int(np.count_nonzero(d)),
                             m.integer) for m, d in zip(plan.mechanisms, moved))
        assert loss <= plan.epsilon, (loss, plan.epsilon, moved)
        worst = max(worst, loss)
    assert worst >= plan.epsilon * (1 - 1e-3), worst
    result = run(params(1.0, {"statistic": "mean", "column": column}), frame)
    facts = result.metadata["dp_statistics"]["queries"][0]
    assert plan.epsilon * (1 - 1e-6) <= facts["epsilon_delivered"] <= plan.epsilon



@pytest.mark.parametrize("relation", ["replace_one", "add_remove"])
def test_an_ungrouped_means_delivered_replace_one_loss_is_the_worse_of_its_two_cases(relation):
    """From the published noise records (grid γ, scale t steps): a value changed shifts the sum by
    (hi − lo)/γ_S + 1 steps and the count not at all; made missing, the sum by (hi − lo)/(2γ_S) + 1
    and the count by 1/γ_C (an integer, on the integer grid: not rounded, no + 1). The loss stated
    against a replacement is the larger of the two (calibrated to be nearly equal, so the smaller
    one would also pass a bound on the share)."""
    from app.privacy.noise import laplace_slack

    def loss(m, shift):
        steps = shift / m["grid"] + (0 if m["integer_values"] else 1)
        return steps / m["scale_steps"] + laplace_slack(m["scale_steps"], steps, 1)

    p = DPStatisticsParams.model_validate({"epsilon": 1.0, "neighbouring": relation,
                                           "queries": [{"statistic": "mean", "column": "age"}]})
    facts = run(p, table(200, seed=7)).metadata["dp_statistics"]["queries"][0]
    s, c = facts["mechanisms"]
    assert not s["integer_values"] and c["integer_values"] and c["grid"] == 1.0
    width = 90.0 - 18.0
    cases = [loss(s, width), loss(s, width / 2) + loss(c, 1.0)]
    assert cases[0] != cases[1]
    delivered = facts["epsilon_delivered" if relation == "replace_one" else "epsilon_delivered_replace_one"]
    assert delivered == max(cases) <= facts["epsilon"], (delivered, cases)

def assert_sensitivities_hold(plan, frame: pd.DataFrame, neighbours, reached: float = 0.5) -> None:
    """Each mechanism's exact input moves by at most its L1 sensitivity over at most its
    coordinates between ``frame`` and every neighbour, and by at least ``reached`` of it for one."""
    base = exact_inputs(plan, frame)
    worst = [0.0] * len(plan.mechanisms)
    for other in neighbours:
        for i, (mechanism, now) in enumerate(zip(plan.mechanisms, exact_inputs(plan, other))):
            moved = np.abs(now - base[i])
            assert np.count_nonzero(moved) <= mechanism.coords, (mechanism.role, moved)
            worst[i] = max(worst[i], moved.sum())
    for mechanism, w in zip(plan.mechanisms, worst):
        assert w <= mechanism.sensitivity + 1e-9, (mechanism.role, w, mechanism.sensitivity)
        assert w >= reached * mechanism.sensitivity - 1e-9, (mechanism.role, w)  # not loose by far


def test_exact_sums_are_the_rational_sums_of_the_values_on_their_grid():
    rng = np.random.default_rng(5)
    values = rng.uniform(-3.3, 7.1, 10_000)
    values[::7] = np.nan
    groups = rng.integers(0, 3, values.size)
    counts, sums, unit = exact_sums(values, groups, 3, -3.3, 7.1)
    for grp in range(3):
        mine = values[(groups == grp) & ~np.isnan(values)]
        assert counts[grp] == mine.size
        assert abs(-3.3 * counts[grp] + 2.0**unit * sums[grp] - mine.sum()) <= mine.size * 2.0**unit
    steps = grid_steps(Fraction(-3.3), counts, unit, sums, -3)
    for grp in range(3):
        exact = Fraction(-3.3) * int(counts[grp]) + Fraction(2) ** unit * int(sums[grp])
        assert steps[grp] == round(exact * 8)
    # ungrouped (no bincount): the same figures as one group of the grouped path
    whole = exact_sums(values.copy(), np.zeros(values.size, dtype=np.int64), 1, -3.3, 7.1)
    as_group = exact_sums(values.copy(), np.zeros(values.size, dtype=np.int64), 2, -3.3, 7.1)
    assert whole[0][0] == as_group[0][0] == (~np.isnan(values)).sum()
    assert whole[1][0] == as_group[1][0] and whole[2] == as_group[2] == unit


def test_a_value_at_the_upper_bound_stays_within_it_on_the_sums_grid():
    """0.4 / 2^-22 = 1677721.6: rounded to the nearest grid point, hi would become 1677722 steps,
    above hi (and the sum's sensitivity above the stated one); it is clipped to ⌊(hi − lo)/u⌋."""
    counts, sums, unit = exact_sums(np.array([0.4, 0.0]), np.zeros(2, dtype=np.int64), 1, 0.0, 0.4)
    assert unit == -22 and counts[0] == 2
    assert Fraction(2) ** unit * int(sums[0]) <= Fraction(0.4)
    assert Fraction(0.4) - Fraction(2) ** unit * int(sums[0]) < Fraction(2) ** unit


# ------------------------------------------------------------------------ noise
def test_the_noise_is_centred_and_its_95_interval_covers_95_percent():
    frame = table(400, seed=6)
    p = params(0.5, {"statistic": "histogram", "column": "age", "bins": 40},
               {"statistic": "sum", "column": "score", "by": ["race", "sex"]})
    plans = build_plans(p, SCHEMA)
    truth = {0: _exact(plans[0], frame, "histogram"), 1: _exact(plans[1], frame, "sum")}
    errors, covered = {0: [], 1: []}, {0: [], 1: []}
    for seed in range(100):
        out = run(p, frame, seed).frame
        for q in (0, 1):
            rows = out[out["query"] == q]
            errors[q].extend(rows["value"] - truth[q])
            covered[q].extend((rows["ci95_low"] <= truth[q]) & (truth[q] <= rows["ci95_high"]))
    meta = run(p, frame).metadata["dp_statistics"]["queries"]
    for q in (0, 1):
        scale = meta[q]["mechanisms"][0]["scale"]
        e = np.asarray(errors[q])
        assert abs(e.mean()) < 4 * math.sqrt(2) * scale / math.sqrt(e.size), (q, e.mean(), scale)
        assert np.std(e) == pytest.approx(math.sqrt(2) * scale, rel=0.1)  # Laplace: σ = √2·b
        rate = np.mean(covered[q])
        assert 0.93 <= rate <= 0.975, (q, rate, e.size)


def test_the_interval_is_the_smallest_with_a_tail_of_at_most_5_percent():
    for t in (1.0, 1.7, 16.0, 1000.0):
        record = NoiseRecord("laplace", "", "", 0.5, -1, t, 0.5 * t, 1.0, 3.0, 1, 1.0, 1.0, 0.0)
        a = laplace_halfwidth(record, 0.05) / 0.5 - 0.5
        rho = math.exp(-1.0 / t)
        tail = lambda k: 2 * rho ** (k + 1) / (1 + rho)  # noqa: E731
        assert a == int(a) and tail(a) <= 0.05 and (a == 0 or tail(a - 1) > 0.05)


def test_a_means_interval_is_the_ratios_range_over_the_box():
    low, high = mean_interval(np.array([30.0, 0.0, 5.0]), np.array([10.0, 2.0, 100.0]), 5.0, 2.0, 0.0, 10.0)
    # 25/12 … 35/8 around 5; the second's count may be 0; the third 0/98 … 10/102
    assert low.tolist() == pytest.approx([5 + 25 / 12, 0.0, 5 + 0 / 98])
    assert high.tolist() == pytest.approx([5 + 35 / 8, 10.0, 5 + 10 / 98])


def test_mean_intervals_cover_the_exact_mean():
    frame = table(300, seed=7)
    p = params(1.0, {"statistic": "mean", "column": "score", "by": ["sex", "race"]})
    present = frame.dropna(subset=["score"])
    grouped = present.groupby(["sex", present["race"].fillna("(missing)")])["score"]
    truth = {f"sex={s}|race={r}": v for (s, r), v in grouped.mean().items()}
    hits = []
    for seed in range(40):
        out = run(p, frame, seed).frame
        for _, row in out[out["group"].isin(truth)].iterrows():
            hits.append(row["ci95_low"] <= truth[row["group"]] <= row["ci95_high"])
    assert np.mean(hits) >= 0.95


# ------------------------------------------------------------------------ quantiles
def test_the_exact_sampler_has_the_exponential_mechanisms_law():
    exponents = [Fraction(0), Fraction(1, 3), Fraction(5, 2), Fraction(7, 4), Fraction(1), Fraction(40)]
    denominator = 12
    numerators = np.array([int(x * denominator) for x in exponents], dtype=object)
    rng = SecureRandom(seed=11)
    draws = np.array([exact_em.sample(rng, numerators, denominator) for _ in range(10_000)])
    weights = np.array([math.exp(-float(x)) for x in exponents[:-1]])  # e^-40: never drawn here
    observed = np.bincount(draws, minlength=len(exponents))
    assert observed[-1] == 0
    assert stats.chisquare(observed[:-1], weights / weights.sum() * draws.size).pvalue > 1e-3


def test_a_tiny_tables_quantile_follows_the_exact_probabilities():
    values = np.sort(np.array([1.0, 2.0, 2.0, 5.0]))
    grid = candidates(integer_plan(0, 6))
    rng = SecureRandom(seed=12)
    draws = np.array([draw_quantile(values, grid, 0.5, 1.0, rng) for _ in range(10_000)])
    k = np.searchsorted(values, grid, side="right")
    weights = np.exp(-0.5 * np.abs(k - 2.0))
    expected = weights / weights.sum() * draws.size
    observed = np.array([(draws == c).sum() for c in grid])
    assert stats.chisquare(observed, expected).pvalue > 1e-3
    numerators, denominator = quantile_exponents(k, 0.5, 4, 1.0)
    assert [Fraction(int(x), denominator) for x in numerators] == [Fraction(abs(int(v) - 2) - 1, 2) for v in k]


def integer_plan(lo: float, hi: float):
    from app.privacy.dp_release.encoding import declared_plan

    return declared_plan(ColumnInfo("x", "numeric", bounds=(lo, hi), integer=True), None, None)


def test_a_large_table_finds_its_median_and_quartiles():
    rng = np.random.default_rng(8)
    frame = table(20_000, seed=8)
    frame["score"] = np.clip(rng.normal(1.0, 1.0, len(frame)), -5, 5)
    out = run(params(1.0, {"statistic": "quantile", "column": "score", "quantiles": [0.25, 0.5, 0.75]}), frame).frame
    truth = np.quantile(frame["score"], [0.25, 0.5, 0.75])
    assert np.abs(out["value"].to_numpy() - truth).max() < 0.02


# ------------------------------------------------------------------------ clamping
def test_values_outside_the_bounds_are_clamped():
    frame = table(4)
    frame["score"] = [-50.0, 1.0, 2.0, 400.0]  # clamped to -5 and 5: sum 3, mean 0.75
    frame["age"] = [10, 20, 30, 200]  # 18, 20, 30, 90
    out = run(params(100.0, {"statistic": "sum", "column": "score"}, {"statistic": "mean", "column": "score"},
                     {"statistic": "quantile", "column": "age", "quantiles": [1.0]}), frame).frame
    assert out["value"][0] == pytest.approx(3.0, abs=2.0)
    assert out["value"][1] == pytest.approx(0.75, abs=1.0)
    assert out["value"][2] == 90.0


def test_a_categorical_columns_non_missing_count_counts_its_declared_values():
    """A count of a categorical column's values (ungrouped and per group): missing cells and
    values outside the job's declared categories are not counted. (This query crashed: pandas'
    read-only notna() array was and-ed in place.)"""
    frame = table(300, seed=5)
    p = DPStatisticsParams.model_validate({"epsilon": 100.0, "categories": {"race": ["a", "b"]}, "queries": [
        {"statistic": "count", "column": "race"}, {"statistic": "count", "column": "race", "by": ["sex"]}]})
    out = run(p, frame).frame
    declared = frame["race"].isin(["a", "b"])
    truth = [declared.sum()] + [(declared & (frame["sex"] == s)).sum() for s in ("F", "M")] + [0]
    assert out["group"].tolist() == ["", "sex=F", "sex=M", "sex=(missing)"]
    assert np.abs(out["value"].to_numpy() - truth).max() < 0.5, (out["value"].tolist(), truth)
    assert declared.sum() < frame["race"].notna().sum()  # 'c' is present and left out

# ------------------------------------------------------------------------ validation
@pytest.mark.parametrize("query, fragment", [
    ({"statistic": "mean", "column": "agee"}, "queries[1].column: 'agee' is not a column"),
    ({"statistic": "mean", "column": "sex"}, "queries[1].column: 'sex' is categorical: a mean needs a numeric"),
    ({"statistic": "count", "by": ["age"]}, "queries[1].by: 'age' is numeric"),
    ({"statistic": "sum", "column": "free"}, "queries[1].column: column 'free' has no declared bounds"),
    ({"statistic": "histogram", "column": "sex", "bins": 4}, "queries[1].bins: 'sex' is categorical"),
    ({"statistic": "count", "column": "id"}, "queries[1].column: 'id' is an identifier"),
])
def test_bad_queries_are_refused_naming_the_query_and_field(query, fragment):
    with pytest.raises(MethodInputError) as info:
        build_plans(params(1.0, {"statistic": "count"}, query), SCHEMA)
    assert fragment in str(info.value), str(info.value)


@pytest.mark.parametrize("query, fragment", [
    ({"statistic": "mean"}, "column is required for a mean"),
    ({"statistic": "mean", "column": "age", "quantiles": [0.5]}, "quantiles apply to a quantile"),
    ({"statistic": "sum", "column": "age", "bins": 5}, "bins apply to a histogram"),
    ({"statistic": "count", "by": ["sex", "race", "sex"]}, "by"),
    ({"statistic": "quantile", "column": "age", "quantiles": [1.5]}, "less than or equal to 1"),
    ({"statistic": "mean", "column": "age", "by": ["age"]}, "also in by"),
    ({"statistic": "median", "column": "age"}, "statistic"),
])
def test_malformed_queries_fail_validation(query, fragment):
    with pytest.raises(ValidationError) as info:
        params(1.0, query)
    assert fragment in str(info.value)


def test_limits_are_refused_before_the_data_is_read():
    many = [ColumnInfo(f"c{i}", "categorical", categories=tuple(str(j) for j in range(400))) for i in range(2)]
    with pytest.raises(MethodInputError, match=r"queries\[0\]: 160,801 cells"):
        build_plans(params(1.0, {"statistic": "count", "by": ["c0", "c1"]}), many)
    with pytest.raises(MethodInputError, match=r"queries\[0\].share: an ungrouped count"):
        build_plans(params(1.0, {"statistic": "count", "share": 2}), SCHEMA)
    with pytest.raises(MethodInputError, match="no records"):
        check_rows(params(1.0, {"statistic": "count"}), 0, SCHEMA)
    with pytest.raises(MethodInputError, match="bounds given for 'nope'"):
        build_plans(DPStatisticsParams.model_validate({"epsilon": 1, "bounds": {"nope": [0, 1]},
                                                       "queries": [{"statistic": "count"}]}), SCHEMA)


@pytest.mark.parametrize("epsilon", [1.0, 10.0, 100.0])
@pytest.mark.parametrize("statistic", ["sum", "mean"])
@pytest.mark.parametrize("bounds", [(0.0, 1.0), (1e6, 1e6 + 1.0), (-1e300, 1e300)])
def test_large_sums_fit_their_grid_at_every_epsilon(epsilon, statistic, bounds):
    """5·10^6 values in [0, 1] summed at ε = 10 were refused ('too large for its noise grid',
    which advised raising ε): the grid was the strict noise minimum, ~2^-30 there. It is now ~2^-20·Δ/d
    whatever ε, and a sum's reach is ≤ its sensitivity, so tables up to 2^31 rows fit (bounds
    near float64's own limit aside)."""
    column = [ColumnInfo("x", "numeric", bounds=bounds)]
    check_rows(params(epsilon, {"statistic": statistic, "column": "x"}), 5_000_000, column)
    if bounds[1] < 1e300:  # 2^31 sums of 10^300 exceed float64 itself: refused there
        check_rows(params(epsilon, {"statistic": statistic, "column": "x", "by": ["g"]}), 2**31 - 1,
                   column + [ColumnInfo("g", "categorical", categories=("a", "b"))])



@pytest.mark.parametrize("epsilon, bounds, query, fragment", [
    # the replace-one ungrouped mean calibrates its two mechanisms together (case_loss) before the
    # size checks: an ε no grid delivers raised a ValueError there, a 500
    (1e-9, (0.0, 1.0), {"statistic": "mean", "column": "x"}, "ε = 1e-09 is too small for the discrete Laplace of its mean"),
    (1e-9, (0.0, 1.0), {"statistic": "sum", "column": "x"}, "ε = 1e-09 is too small for the discrete Laplace of its sum"),
    # a range near the largest float: a grouped sum's 2·max(|lo|, |hi|), a mean's (hi − lo)/(ε/2) overflow
    (1.0, (0.0, 1e308), {"statistic": "sum", "column": "x", "by": ["g"]}, "its sum (inf) over its ε (1) is beyond the largest"),
    (1.0, (0.0, 1e308), {"statistic": "mean", "column": "x", "by": ["g"]}, "beyond the largest float: narrow the bounds of 'x'"),
])
def test_an_epsilon_or_a_range_no_discrete_laplace_grid_fits_is_refused_naming_the_query(epsilon, bounds, query, fragment):
    schema = [ColumnInfo("x", "numeric", bounds=bounds), ColumnInfo("g", "categorical", categories=("a", "b"))]
    with pytest.raises(MethodInputError, match=r"^queries\[0\]: ") as info:
        build_plans(params(epsilon, query), schema)
    assert fragment in str(info.value), str(info.value)

def test_a_category_named_like_the_missing_level_is_refused():
    """Missing cells are the level '(missing)': a declared category of that name would make two
    levels of one label in the answers."""
    clash = [ColumnInfo("sex", "categorical", categories=("F", "M", "(missing)"))]
    for query in ({"statistic": "histogram", "column": "sex"}, {"statistic": "count", "by": ["sex"]}):
        with pytest.raises(MethodInputError, match=r"queries\[0\].*'sex' declares a category '\(missing\)'"):
            build_plans(params(1.0, query), clash)


# ------------------------------------------------------------------------ bin labels
@pytest.mark.parametrize("bounds, bins", [
    ((1e15, 1e15 + 10), 10),  # 6 digits: every label was '[1e+15, 1e+15)'
    ((1e15, 1e15 + 2), 8),  # bins of 0.25 where floats are 0.125 apart: 17 digits
    ((1.0, 1.0 + 1e-9), 4), ((0.0, 1e-300), 256), ((-1e307, 1e307), 256),  # tiny and huge bounds
    ((17.0, 90.0), 16), ((-5.0, 5.0), 3),
])
def test_bin_labels_are_distinct_and_hold_the_values_of_their_bins(bounds, bins):
    from app.privacy.dp_release.statistics_params import bin_edges

    lo, hi = bounds
    plan = build_plans(DPStatisticsParams.model_validate({"epsilon": 1, "bounds": {"score": list(bounds)}, "queries": [
        {"statistic": "histogram", "column": "score", "bins": bins}]}), SCHEMA)[0]
    edges = bin_edges(lo, hi, bins)
    inside = np.array([a + (b - a) / 2 for a, b in zip(edges, edges[1:])])  # a value inside each bin
    codes, labels = level_codes(plan.value, pd.Series(np.append(inside, np.nan)), bins)
    assert codes.tolist() == list(range(bins + 1)) and labels[-1] == "(missing)"
    assert len(set(labels)) == len(labels) == bins + 1
    width = (hi - lo) / bins
    for b, label in enumerate(labels[:-1]):
        assert label[0] == "[" and label[-1] == ("]" if b == bins - 1 else ")")
        left, right = (float(x) for x in label[1:-1].split(", "))
        # each printed edge within a thousandth of a bin of the edge: the bin's values between them
        assert abs(left - edges[b]) <= width / 1000 and abs(right - edges[b + 1]) <= width / 1000
        assert left <= inside[b] <= right
    if bounds == (17.0, 90.0):
        assert labels[:2] == ["[17, 21.5625)", "[21.5625, 26.125)"] and labels[-2] == "[85.4375, 90]"


def test_bins_narrower_than_the_floats_at_their_bounds_are_refused():
    p = DPStatisticsParams.model_validate({"epsilon": 1, "bounds": {"score": [1e15, 1e15 + 1]}, "queries": [
        {"statistic": "count"}, {"statistic": "histogram", "column": "score", "bins": 64}]})
    with pytest.raises(MethodInputError, match=r"queries\[1\]\.bins: 64 bins over \[1000000000000000, "
                                               r"1000000000000001\] are narrower than the spacing"):
        build_plans(p, SCHEMA)


# ------------------------------------------------------------------------ a group without values
def test_a_mean_whose_noisy_count_is_below_1_is_not_estimated():
    """A group may hold no value: with a noisy count below 1 its mean is NaN (no estimate) and its
    interval the whole bounds; otherwise a value within the bounds. At ε = 100 the counts' noise
    is far below 1: the empty groups are never estimated, the others always."""
    frame = table(200, seed=24)
    frame["race"] = frame["race"].where(frame["race"] != "c", "a")  # race=c holds no record
    for epsilon, seeds in ((100.0, range(5)), (0.05, range(30))):
        p = params(epsilon, {"statistic": "mean", "column": "score", "by": ["race"]})
        for seed in seeds:
            out = run(p, frame, seed).frame.set_index("group")
            missing = out["value"].isna()
            assert (out.loc[missing, "ci95_low"] == -5.0).all() and (out.loc[missing, "ci95_high"] == 5.0).all()
            assert out.loc[~missing, "value"].between(-5.0, 5.0).all()
            if epsilon == 100.0:
                assert missing.to_dict() == {"race=a": False, "race=b": False, "race=c": True,
                                             "race=(missing)": False}
                assert abs(out.loc["race=b", "value"] - frame.loc[frame["race"] == "b", "score"].mean()) < 0.05
    meta = run(params(100.0, {"statistic": "mean", "column": "score", "by": ["race"]}), frame).metadata
    assert meta["dp_statistics"]["queries"][0]["not_estimated"] == 1
