"""Integer-valued queries (noise's ``integer=True``): counts need no rounding onto a grid γ ≤ 1,
so the calibration pays the shift Δ/γ, not Δ/γ + d, and picks the grid of least expected
absolute error — the integers themselves (the geometric mechanism) at Δ/ε ≥ 1.

Checked here: the delivered ε by brute force (the exact loss of the discrete Laplace on the
chosen grid against every integer move of L1 ≤ Δ over ≤ d coordinates, sampler slack added),
the refusal of a value that is not an integer, the legacy path unchanged (calibrations and
seeded outputs recorded before the option existed), and dp_statistics' counts on the integer
grid with the smaller error measured."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd
import pytest

from app.privacy import noise
from app.privacy.context import RunContext
from app.privacy.data import ColumnInfo, MethodInput
from app.privacy.dp_release.statistics import run_statistics
from app.privacy.dp_release.statistics_params import DPStatisticsParams, build_plans
from app.privacy.rng import SecureRandom

# (sensitivity, coords, ε): Δ/ε ≥ 1 (γ = 1), Δ/ε just below 1 (γ = 1 at the sampler's floor
# t = 1, more noise than ε needs but less error than a finer grid), Δ/ε < 1 (γ = 2^-k), d > Δ
CASES = [(1.0, 1, 1.0), (2.0, 2, 1.0), (2.0, 2, 0.3), (1.0, 1, 1.01), (1.0, 1, 3.0), (2.0, 2, 5.0),
         (3.0, 2, 0.7), (1.0, 2, 0.5)]


def _log_pmf(y: np.ndarray, t: float) -> np.ndarray:
    """log P(Y = y) of the discrete Laplace of scale t steps: ((1 − q)/(1 + q))·q^|y|."""
    q = math.exp(-1.0 / t)
    return math.log((1.0 - q) / (1.0 + q)) - np.abs(y) / t


def _brute_force_loss(sensitivity: float, coords: int, e: int, t: float) -> float:
    """max over integer moves v (|v|₁ ≤ Δ, ≤ d non-zero coordinates) of the exact privacy loss
    max_y log P(y | 0)/P(y | v/γ) of the product of discrete Laplaces, plus the sampler's slack
    at that move. The log-ratio of one coordinate is (|y − s| − |y|)/t (the normalizations
    cancel): its numerator is maximized over a window of integer outputs y holding every
    maximizer, in integer arithmetic, so the float error is the final division's only."""
    gamma = 2.0**e
    reach = int(sensitivity)
    steps_per_unit = int(1 / gamma)
    assert steps_per_unit == 1 / gamma  # γ = 2^-k ≤ 1: integers stay on the grid, unrounded
    window = np.arange(-4 * reach * steps_per_unit - 8, 4 * reach * steps_per_unit + 9, dtype=np.int64)
    worst = 0.0
    for v in itertools.product(range(-reach, reach + 1), repeat=coords):
        if sum(map(abs, v)) > sensitivity or not any(v):
            continue
        steps = [vi * steps_per_unit for vi in v]
        numerator = sum(int(np.max(np.abs(window - s) - np.abs(window))) for s in steps)
        moved = sum(1 for s in steps if s)
        worst = max(worst, numerator / t + noise.laplace_slack(t, float(sum(map(abs, steps))), moved))
    return worst


@pytest.mark.parametrize("sensitivity,coords,epsilon", CASES)
def test_the_integer_option_delivers_at_most_epsilon_by_brute_force(sensitivity, coords, epsilon):
    e, t, delivered = noise.calibrate_laplace(sensitivity, coords, epsilon, True)
    assert 2.0**e <= 1.0 and t >= 1.0
    exact = _brute_force_loss(sensitivity, coords, e, t)
    assert exact <= delivered <= epsilon, (exact, delivered, epsilon)
    if coords <= sensitivity:  # a move can then reach Δ/γ steps over d coordinates: the bound is tight
        assert exact == delivered
    assert delivered == noise.laplace_loss(2.0**e, t, sensitivity, coords, True)


@pytest.mark.parametrize("sensitivity,coords,epsilon", CASES)
def test_the_integer_grid_is_never_worse_and_at_delta_over_epsilon_ge_1_is_the_integers(sensitivity, coords, epsilon):
    e, t, _ = noise.calibrate_laplace(sensitivity, coords, epsilon, True)
    e0, t0, _ = noise.calibrate_laplace(sensitivity, coords, epsilon)
    ours, before = noise.laplace_abs_error(2.0**e, t), noise.laplace_abs_error(2.0**e0, t0)
    assert ours < before
    if sensitivity / epsilon >= 1:  # the geometric mechanism: E|X| = 1/sinh(ε/Δ) < Δ/ε
        assert e == 0 and ours == pytest.approx(1.0 / math.sinh(epsilon / sensitivity), rel=1e-6)
    if 0.99 <= sensitivity / epsilon < 1:  # the integers at t = 1 beat 2^-1 at t ≈ 2
        assert e == 0 and t < 1.0 + 1e-9 and ours < 0.87 * before


def test_the_expected_absolute_error_is_the_discrete_laplaces():
    for t in (1.0, 1.7, 30.0):
        y = np.arange(-4000, 4001)
        pmf = np.exp(_log_pmf(y, t))
        assert pmf.sum() == pytest.approx(1.0)
        assert noise.laplace_abs_error(0.5, t) == pytest.approx(0.5 * float(np.sum(np.abs(y) * pmf)))


def test_integer_values_go_on_the_integer_grid_unrounded_and_the_record_says_so():
    values = np.random.default_rng(2).integers(-10**6, 10**6, 50_000).astype(np.float64)
    noisy, rec = noise.laplace_mechanism(values, 2.0, 2, 1.0, SecureRandom(seed=4), integer=True)
    assert rec.grid == 1.0 and rec.integer_values and not rec.rounded
    assert rec.sensitivity_steps == 2.0 and rec.epsilon_delivered <= 1.0
    assert rec.epsilon_delivered == 2.0 / rec.scale_steps + noise.laplace_slack(rec.scale_steps, 2.0, 2)
    assert np.array_equal(noisy, np.rint(noisy))
    residual = noisy - values
    assert np.mean(np.abs(residual)) == pytest.approx(1.0 / math.sinh(0.5), rel=0.03)


@pytest.mark.parametrize("bad", [[1.0, 2.5], [1.0, np.nan], [np.inf], [3.0, 1e-9]])
def test_a_value_that_is_not_an_integer_is_refused(bad):
    with pytest.raises(ValueError, match="integer"):
        noise.laplace_mechanism(np.array(bad), 1.0, 1, 1.0, SecureRandom(seed=1), integer=True)
    noise.laplace_mechanism(np.array(bad)[np.isfinite(bad)], 1.0, 1, 1.0, SecureRandom(seed=1))  # without: rounded


CASES = [(1.0, 1, 1.0), (2.0, 2, 1.0), (72.0, 1, 0.5), (0.3, 3, 0.01), (1000000.0, 1, 2.0),
         (1.0, 1, 10.0), (5.0, 4, 0.1), (1.0, 1, 100.0), (30.0, 30, 1.0)]


@pytest.mark.parametrize("case", CASES)
def test_rounded_grid_is_the_coarsest_within_a_millionth_of_the_least_noise(case):
    """Without ``integer``: the grid buys noise within 2^-20 of Δ/ε (the rounding's d·γ), and is
    no finer than that needs — so values up to ~2^32·Δ/d fit its 2^52 exact steps (the strict
    minimum sat near t = 10^8 steps: a sum of 5·10^6 values in [0, 1] at ε = 10 overflowed)."""
    sensitivity, coords, epsilon = case
    e, t, delivered = noise.calibrate_laplace(*case)
    assert (e, t, delivered) == noise.calibrate_laplace(*case, False)
    gamma = 2.0**e
    assert delivered <= epsilon and noise.laplace_loss(gamma, t, sensitivity, coords) == delivered
    # the noise: Δ/ε plus the rounding's share (≤ 2^-20) and, at small ε, the sampler's slack
    assert gamma * t <= sensitivity / epsilon * (1.0 + (2.0**-19 if epsilon >= 0.1 else 1e-4))
    assert 2.0**52 * gamma >= 2.0**31 * sensitivity / coords
    # one grid coarser costs more than the tolerance: the choice is not needlessly coarse
    coarser = 2.0 * gamma
    assert (sensitivity + coords * coarser) / epsilon > sensitivity / epsilon * (1.0 + 2.0**-20)
    values = np.random.default_rng(0).normal(size=100) * 50
    noisy, rec = noise.laplace_mechanism(values, *case, SecureRandom(seed=5))
    assert noise.on_grid(noisy, gamma) and rec.grid == gamma
    assert rec.sensitivity_steps == sensitivity / gamma + coords and not rec.integer_values and rec.rounded


def test_a_large_sum_fits_the_grid_at_large_epsilon():
    # 5·10^6 values in [0, 1] summed, replace-one sensitivity 1, ε = 10: 5·10^6 / 2^-30 ≥ 2^52
    # steps on the old grid (a ValueError); on the coarsest grid within 2^-20 it fits
    noisy, rec = noise.laplace_mechanism(np.array([5e6]), 1.0, 1, 10.0, SecureRandom(seed=1))
    assert abs(noisy[0] - 5e6) < 10 and rec.epsilon_delivered <= 10.0


# ------------------------------------------------------------------------ dp_statistics
SCHEMA = [ColumnInfo("group", "categorical", categories=tuple("abcdefghi")),
          ColumnInfo("x", "numeric", bounds=(0.0, 100.0))]


def _table(n: int) -> pd.DataFrame:
    rng = np.random.default_rng(8)
    return pd.DataFrame({"group": rng.choice(list("abcdefghi"), n), "x": rng.uniform(0, 100, n)})


def _run(query: dict, relation: str, seed: int, epsilon: float = 1.0):
    p = DPStatisticsParams.model_validate({"epsilon": epsilon, "neighbouring": relation, "queries": [query]})
    return run_statistics(MethodInput(SCHEMA, _table(2000)), p, RunContext(SecureRandom(seed=seed)))


@pytest.mark.parametrize("relation", ["replace_one", "add_remove"])
@pytest.mark.parametrize("query", [{"statistic": "histogram", "column": "x", "bins": 20, "by": ["group"]},
                                   {"statistic": "count", "by": ["group"]},
                                   {"statistic": "count", "column": "x"},
                                   {"statistic": "mean", "column": "x", "by": ["group"]},
                                   {"statistic": "mean", "column": "x"}])
def test_dp_statistics_counts_are_noised_on_the_integer_grid_and_state_their_exact_epsilon(query, relation):
    result = _run(query, relation, seed=3)
    facts = result.metadata["dp_statistics"]["queries"][0]
    plan = build_plans(DPStatisticsParams.model_validate(
        {"epsilon": 1.0, "neighbouring": relation, "queries": [query]}), SCHEMA)[0]
    for m, mech in zip(facts["mechanisms"], plan.mechanisms):
        count = m["role"] in ("counts", "non-missing count")
        assert m["integer_values"] is count and mech.integer is count
        shift = m["sensitivity"] / m["grid"] + (0 if count else m["coordinates_per_neighbour"])
        assert m["sensitivity_steps"] == shift
        assert m["epsilon_delivered"] == shift / m["scale_steps"] + noise.laplace_slack(
            m["scale_steps"], shift, m["coordinates_per_neighbour"]) <= m["epsilon_share"]
        if count:
            assert m["grid"] == 1.0  # Δ/ε ≥ 1 here: the integers
    if query["statistic"] != "mean":
        values = result.frame["value"].to_numpy()
        assert np.array_equal(values, np.rint(values))  # noisy counts are integers
        half = (result.frame["ci95_high"] - result.frame["value"]).to_numpy()
        assert np.all(half == np.rint(half))  # no half step: counts were not rounded


def test_a_histograms_error_is_the_geometric_mechanisms_not_the_continuous_laplaces():
    """add/remove at ε = 1, Δ = 1: E|noise| per cell 1/sinh(1) = 0.851 on the integers, where the
    fine grid it replaced gave ≈ Δ/ε = 1.0. 20 runs × 10 groups × 101 cells = 20,200 noises:
    the mean's standard error is ~0.008, the bounds are ±0.05 around 0.851."""
    query = {"statistic": "histogram", "column": "x", "bins": 100, "by": ["group"]}
    frame = _table(2000)
    codes = np.minimum(np.floor(frame["x"].to_numpy() / 1.0), 99).astype(int)
    g = pd.Categorical(frame["group"], categories=list("abcdefghi")).codes
    exact = np.zeros((10, 101))
    np.add.at(exact, (g, codes), 1)
    errors = []
    for seed in range(20):
        values = _run(query, "add_remove", seed).frame["value"].to_numpy().reshape(10, 101)
        errors.append(np.abs(values - exact).ravel())
    mean_error = float(np.mean(np.concatenate(errors)))
    assert 1.0 / math.sinh(1.0) - 0.05 <= mean_error <= 1.0 / math.sinh(1.0) + 0.05 < 0.95, mean_error
