"""dp_statistics under neighbouring: add_remove — each mechanism's add/remove sensitivity holds
on tables with one record added or removed (and is reached), its replace-one counterpart is the
replace-one plan's, the quantile's utility moves by at most max(q, 1 − q) (1 under replace-one),
the exponential mechanism uses that sensitivity exactly, the ledger is priced the replace-one
ε the answers satisfy (per query ε·Δ_replace/Δ_add_remove, never below what the mechanisms
deliver), and n is neither free nor published."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest
from pydantic import ValidationError
from scipy import stats

from app.privacy import registry
from app.privacy.dp_release.statistics import candidates, draw_quantile, group_codes, numeric_values, quantile_exponents
from app.privacy.dp_release.statistics_params import DPStatisticsParams, build_plans
from app.privacy.rng import SecureRandom
from tests.privacy.test_dp_statistics import (
    SCHEMA, _neighbours, assert_sensitivities_hold, exact_inputs, integer_plan, run, table,
)


def params(epsilon: float, *queries: dict, neighbouring: str = "add_remove") -> DPStatisticsParams:
    return DPStatisticsParams.model_validate({"epsilon": epsilon, "neighbouring": neighbouring,
                                              "queries": list(queries)})


def add_remove_neighbours(frame: pd.DataFrame, rng: np.random.Generator, count: int):
    """Tables with one record removed, or one added: random values, bounds, out-of-bound values,
    missing cells."""
    for _ in range(count):
        if rng.random() < 0.5:
            yield frame.drop(index=int(rng.integers(len(frame)))).reset_index(drop=True)
            continue
        added = {"id": -1, "sex": rng.choice(["F", "M", None]), "race": rng.choice(["a", "b", "c", None]),
                 "age": rng.choice([18.0, 90.0, 200.0, 0.0, float(rng.integers(18, 91)), np.nan]),
                 "score": rng.choice([np.nan, -5.0, 5.0, 99.0, -99.0, float(rng.normal())]), "free": 0.5}
        yield pd.concat([frame.astype({"age": float}), pd.DataFrame([added])], ignore_index=True)


QUERIES = [
    {"statistic": "count"}, {"statistic": "count", "by": ["race"]},
    {"statistic": "count", "column": "score"}, {"statistic": "count", "column": "score", "by": ["sex"]},
    {"statistic": "histogram", "column": "race", "by": ["sex"]}, {"statistic": "histogram", "column": "score", "bins": 7},
    {"statistic": "sum", "column": "score"}, {"statistic": "sum", "column": "score", "by": ["race", "sex"]},
    {"statistic": "sum", "column": "age"}, {"statistic": "sum", "column": "age", "by": ["sex"]},
    {"statistic": "mean", "column": "score"}, {"statistic": "mean", "column": "age", "by": ["race"]},
]


@pytest.mark.parametrize("query", QUERIES)
def test_the_add_remove_sensitivity_holds_on_tables_with_a_record_added_or_removed(query):
    frame = table(60, seed=13)
    plan = build_plans(params(1.0, query), SCHEMA)[0]
    # reached exactly: a record added at a bound (or, for a count, anywhere)
    assert_sensitivities_hold(plan, frame, add_remove_neighbours(frame, np.random.default_rng(14), 300), reached=1.0)


@pytest.mark.parametrize("query", QUERIES)
def test_each_mechanisms_replace_one_sensitivity_is_the_replace_one_plans(query):
    """The price's Δ_replace: the replace-one plan's, brute-forced in test_dp_statistics (its
    ungrouped count of records: n, constant under replace-one)."""
    add_remove = build_plans(params(1.0, query), SCHEMA)[0]
    replace = build_plans(params(1.0, query, neighbouring="replace_one"), SCHEMA)[0]
    if replace.free:
        assert [(m.replace_sensitivity, m.replace_coords) for m in add_remove.mechanisms] == [(0.0, 0)]
        frame = table(60, seed=15)
        for other in _neighbours(frame, np.random.default_rng(16), 20):
            assert len(other) == len(frame)
        return
    assert [(m.replace_sensitivity, m.replace_coords) for m in add_remove.mechanisms] == \
        [(m.sensitivity, m.coords) for m in replace.mechanisms]
    assert all(m.replace_sensitivity == m.sensitivity for m in replace.mechanisms)


def _utilities(frame: pd.DataFrame, plan, q: float) -> np.ndarray:
    """u(c) = −|#{x ≤ c} − q·m| per group (rows) and candidate (columns), in exact Fractions."""
    g, labels = group_codes(plan, frame)
    values = numeric_values(plan.value, frame[plan.query.column])
    grid = candidates(plan.value)
    out = np.empty((len(labels), grid.size), dtype=object)
    for group in range(len(labels)):
        mine = np.sort(values[(g == group) & ~np.isnan(values)])
        k = np.searchsorted(mine, grid, side="right")
        out[group] = [-abs(int(x) - Fraction(q) * mine.size) for x in k]
    return out


@pytest.mark.parametrize("q", [0.0, 0.1, 0.25, 0.5, 0.9, 1.0])
def test_the_quantile_utility_moves_by_max_q_1_minus_q_added_or_removed_and_1_replaced(q):
    frame = table(40, seed=17)
    query = {"statistic": "quantile", "column": "age", "by": ["sex"], "quantiles": [q]}
    plan = build_plans(params(1.0, query), SCHEMA)[0]
    replace = build_plans(params(1.0, query, neighbouring="replace_one"), SCHEMA)[0]
    assert plan.quantile_sensitivity(q) == max(Fraction(q), 1 - Fraction(q))
    assert replace.quantile_sensitivity(q) == 1
    base = _utilities(frame, plan, q)
    for relation, neighbours, bound, groups, reached in (
            ("add_remove", add_remove_neighbours(frame, np.random.default_rng(18), 150),
             plan.quantile_sensitivity(q), 1, 1),
            ("replace_one", _neighbours(frame, np.random.default_rng(19), 150), Fraction(1), 2, Fraction(1, 2))):
        worst = Fraction(0)
        for other in neighbours:
            moved = np.abs(_utilities(other, plan, q) - base).max(axis=1)
            assert np.count_nonzero(moved) <= groups, (relation, moved)
            worst = max(worst, moved.max())
        assert bound * reached <= worst <= bound, (relation, worst)



@pytest.mark.parametrize("q", [0.1, 0.5, 0.9])
def test_a_replacement_costs_a_grouped_quantiles_draws_at_most_twice_their_epsilon(q):
    """The price of a grouped quantile under add/remove: against each replacement the utilities of
    all groups move by Σ_g max_c |Δu_g(c)| ≤ 2·Δ_q (a value changed in its group: ≤ 1 ≤ 2Δ_q;
    a record moved between groups: ≤ Δ_q in each of two), and 2·Δ_q is reached — each draw at
    ε_each/(2Δ_q) loses at most 2·ε_each, the ratio 2 (twice the ungrouped 1/Δ_q, up to 4,
    overstated it)."""
    frame = table(40, seed=31)
    query = {"statistic": "quantile", "column": "age", "by": ["sex"], "quantiles": [q]}
    plan = build_plans(params(1.0, query), SCHEMA)[0]
    ungrouped = build_plans(params(1.0, {**query, "by": []}), SCHEMA)[0]
    delta = plan.quantile_sensitivity(q)
    assert plan.replace_ratio == 2.0 and ungrouped.replace_ratio == pytest.approx(float(1 / delta))
    base = _utilities(frame, plan, q)
    worst = Fraction(0)
    for other in _neighbours(frame, np.random.default_rng(32), 150):
        worst = max(worst, np.abs(_utilities(other, plan, q) - base).max(axis=1).sum())
    assert worst == 2 * delta, (worst, delta)

def test_the_exponential_mechanism_uses_the_add_remove_sensitivity_exactly():
    k = np.array([0, 1, 3, 3, 4])
    numerators, denominator = quantile_exponents(k, 0.25, 4, 0.75, Fraction(3, 4))
    exact = [Fraction(3, 4) * abs(x - Fraction(1, 4) * 4) / (2 * Fraction(3, 4)) for x in k]
    assert [Fraction(int(x), denominator) for x in numerators] == [e - min(exact) for e in exact]
    values = np.sort(np.array([1.0, 2.0, 2.0, 5.0]))
    grid = candidates(integer_plan(0, 6))
    rng = SecureRandom(seed=20)
    draws = np.array([draw_quantile(values, grid, 0.5, 1.0, rng, Fraction(1, 2)) for _ in range(10_000)])
    at = np.searchsorted(values, grid, side="right")
    weights = np.exp(-1.0 * np.abs(at - 2.0))  # ε|k − q·m|/(2Δ) with Δ = 1/2
    observed = np.array([(draws == c).sum() for c in grid])
    assert stats.chisquare(observed, weights / weights.sum() * draws.size).pvalue > 1e-3


@pytest.mark.parametrize("query", [{"statistic": "mean", "column": "score"}, {"statistic": "mean", "column": "age"},
                                   {"statistic": "mean", "column": "age", "by": ["race"]},
                                   {"statistic": "sum", "column": "score"}, {"statistic": "histogram", "column": "race"}])
def test_a_replacement_moves_the_mechanisms_together_within_one_of_the_querys_cases(query):
    """replace_cases: every replacement's shifts, mechanism by mechanism, fit inside one case,
    so the ideal replace-one loss Σ part·shift/Δ_add_remove never passes the price's ratio —
    and reaches it (an ungrouped mean: 1, below its parts' separate worsts' 1.5)."""
    from app.privacy.dp_release.statistics_params import _laplace_parts, replace_cases

    plan = build_plans(params(1.0, query), SCHEMA)[0]
    cases = replace_cases(plan)
    parts = _laplace_parts(plan, True)
    frame = table(60, seed=17)
    base = exact_inputs(plan, frame)
    worst = 0.0
    for other in _neighbours(frame, np.random.default_rng(18), 400):
        moved = [np.abs(now - was) for now, was in zip(exact_inputs(plan, other), base)]
        assert any(all(m.sum() <= s + 1e-9 and np.count_nonzero(m) <= c for m, (s, c) in zip(moved, case))
                   for case in cases), (moved, cases)
        worst = max(worst, sum(part * m.sum() / s for (_, s, _, part), m in zip(parts, moved)))
    assert worst <= plan.replace_ratio + 1e-9 and worst >= 0.95 * plan.replace_ratio, (worst, plan.replace_ratio)
    if plan.query.statistic == "mean" and not plan.groups:
        assert plan.replace_ratio == 1.0


# ------------------------------------------------------------------------ the ledger
def test_the_ledger_is_priced_the_replace_one_epsilon_of_each_query():
    queries = [{"statistic": "count"},  # n: constant under replace-one → 0
               {"statistic": "histogram", "column": "race", "by": ["sex"]},  # 1 → 2
               {"statistic": "sum", "column": "score"},  # [-5, 5]: 5 → max(10, 5) = 10
               {"statistic": "sum", "column": "age"},  # [18, 90]: 90 → max(72, 90) = 90
               {"statistic": "mean", "column": "age"},  # max(½·72/36 + ½·0, ½·36/36 + ½·1): replace_cases
               {"statistic": "quantile", "column": "age"},  # Δ 1/2 → 1
               {"statistic": "quantile", "column": "age", "by": ["sex"], "quantiles": [0.25, 0.5], "share": 2},
               {"statistic": "mean", "column": "score", "by": ["sex", "race"]}]  # 2 both
    ratios = [0, 2, 2, 1, 1, 2, 2, 2]  # grouped quantiles: max(mean 1/Δ_q, 2) = 2, whatever the levels
    weights = [1, 1, 1, 1, 1, 1, 2, 1]
    p = params(1.5, *queries)
    priced = registry.get("dp_statistics").epsilon_cost(p, SCHEMA)
    assert priced == pytest.approx(1.5 * sum(r * w for r, w in zip(ratios, weights)) / sum(weights), rel=1e-12)
    result = run(p, table(300, seed=21))
    g, meta = result.guarantees, result.metadata["dp_statistics"]
    assert g["epsilon"] == 1.5 and g["replace_one"]["epsilon"] == priced and g["replace_one"]["delta"] == 0.0
    assert meta["replace_one"]["epsilon"] == priced
    assert sum(meta["replace_one"]["epsilon_split"].values()) == pytest.approx(priced, rel=1e-12)
    for facts in meta["queries"]:
        price = meta["replace_one"]["epsilon_split"][f"queries[{facts['query']}]"]
        delivered = facts["epsilon_delivered_replace_one"]
        assert delivered <= price and facts["epsilon_delivered"] <= facts["epsilon"]
        # Laplace queries: the replace-one loss is the ratio's, grid rounding aside (within 10⁻⁶)
        assert delivered >= price * (1 - 1e-6) - 1e-12, (facts["query"], delivered, price)
    delivered = meta["replace_one"]["epsilon_delivered"]
    assert delivered <= priced and g["replace_one"]["epsilon_delivered"] == delivered
    assert any("replace-one" in s and f"{priced:.7g}" in s for s in g["statements"])


def test_a_replace_one_job_is_priced_its_epsilon_and_only_the_count_of_records_is_free():
    cost = registry.get("dp_statistics").epsilon_cost
    both = [{"statistic": "count"}, {"statistic": "histogram", "column": "race"}]
    assert cost(params(1.0, *both, neighbouring="replace_one"), SCHEMA) == 1.0
    assert cost(params(1.0, {"statistic": "count"}, neighbouring="replace_one"), SCHEMA) == 0.0
    assert cost(params(1.0, {"statistic": "count"}), SCHEMA) == 0.0  # noisy n: 0 against a replacement
    assert cost(params(0.7, {"statistic": "histogram", "column": "race", "by": ["sex"]}), SCHEMA) == 1.4
    assert cost(params(1.0, *both), SCHEMA) == pytest.approx(1.0)  # (0 + 2) / 2


def test_under_add_remove_n_is_measured_with_noise_and_not_published():
    frame = table(517, seed=22)
    p = params(1.0, {"statistic": "count", "share": 3}, {"statistic": "histogram", "column": "race"})
    result = run(p, frame)
    out, meta = result.frame, result.metadata["dp_statistics"]
    count = out[out["query"] == 0].iloc[0]
    assert count["epsilon"] == pytest.approx(0.75) and count["noise"].startswith("discrete Laplace")
    mechanism = meta["queries"][0]["mechanisms"][0]
    assert mechanism["sensitivity"] == 1.0 and mechanism["epsilon_delivered_replace_one"] == 0.0
    assert 1 / 0.75 <= mechanism["scale"] <= 1.05 / 0.75
    assert count["ci95_low"] < count["value"] < count["ci95_high"]
    values = {run(p, frame, seed).frame["value"].iloc[0] for seed in range(10)}
    assert len(values) > 1 and all(abs(v - 517) < 30 for v in values)  # noisy, near n
    assert "records" not in meta and "not public" in meta["records_public"]
    assert "added or removed" in result.guarantees["neighbouring"]
    assert 517 not in _numbers(meta) and 517 not in _numbers(result.metrics)


def _numbers(tree) -> list:
    """Every number in a nested dict / list."""
    if isinstance(tree, dict):
        return [x for v in tree.values() for x in _numbers(v)]
    if isinstance(tree, (list, tuple)):
        return [x for v in tree for x in _numbers(v)]
    return [tree] if isinstance(tree, (int, float)) else []


def test_add_remove_halves_the_noise_of_counts_and_keeps_grouped_quantiles_at_full_share():
    frame = table(200, seed=23)
    query = [{"statistic": "histogram", "column": "race", "by": ["sex"]},
             {"statistic": "quantile", "column": "age", "by": ["sex"], "quantiles": [0.5, 0.9]}]
    scales, each = {}, {}
    for relation in ("replace_one", "add_remove"):
        meta = run(params(2.0, *query, neighbouring=relation), frame).metadata["dp_statistics"]["queries"]
        scales[relation] = meta[0]["mechanisms"][0]["scale"]
        each[relation] = meta[1]["mechanisms"][0]["epsilon_each"]
        assert meta[1]["mechanisms"][0]["utility_sensitivity"] == (
            {"q=0.5": 0.5, "q=0.9": 0.9} if relation == "add_remove" else {"q=0.5": 1.0, "q=0.9": 1.0})
    assert scales["add_remove"] == pytest.approx(scales["replace_one"] / 2, rel=0.05)
    assert each["add_remove"] == pytest.approx(2 * each["replace_one"]) and each["add_remove"] == pytest.approx(0.5)


def test_the_relation_is_validated_and_a_share_on_the_count_of_records_is_accepted_under_add_remove():
    with pytest.raises(ValidationError, match="neighbouring"):
        params(1.0, {"statistic": "count"}, neighbouring="swap")
    plans = build_plans(params(1.0, {"statistic": "count", "share": 2}, {"statistic": "sum", "column": "age"}), SCHEMA)
    assert plans[0].epsilon == pytest.approx(2 / 3) and not plans[0].free
    assert math.isclose(plans[0].replace_ratio, 0.0) and plans[1].replace_ratio == 1.0
