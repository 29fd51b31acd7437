"""The zCDP ledger's charges, from first principles rather than from its own constants.

Replace-one neighbours move a marginal by one count down in one cell and one up in another, so
its L2 sensitivity is √2 (measured here by replacing records of a small table) and a discrete
Gaussian measurement of standard deviation σ costs ρ = Δ₂²/2σ² = 1/σ² (CKS 2020, Thm. 14); an
exponential mechanism of ε₀-bounded range costs ε₀²/8. Mutation testing found the ledger's
arithmetic checked only through a full MST release (31 s, not in the quick runs) or not at all:
a ledger that charged half, let ρ ≤ 0 through, or refused the last of its budget passed the
accounting tests."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from app.privacy import noise
from app.privacy.dp_release import zcdp
from app.privacy.rng import SecureRandom


def _marginal(records: np.ndarray, sizes: tuple[int, int]) -> np.ndarray:
    return np.bincount(records[:, 0] * sizes[1] + records[:, 1], minlength=sizes[0] * sizes[1]).astype(float)


def test_a_marginals_l2_sensitivity_under_replace_one_is_root_two():
    rng = np.random.default_rng(0)
    sizes = (3, 4)
    table = np.column_stack([rng.integers(0, 3, 30), rng.integers(0, 4, 30)])
    base = _marginal(table, sizes)
    worst = 0.0
    for i in range(len(table)):
        for new in itertools.product(range(3), range(4)):
            other = table.copy()
            other[i] = new
            worst = max(worst, float(np.linalg.norm(_marginal(other, sizes) - base)))
    assert worst == pytest.approx(math.sqrt(zcdp.MARGINAL_L2_SQ)) == pytest.approx(math.sqrt(2))


def test_under_add_remove_a_marginal_moves_by_l2_one_and_a_score_by_one():
    """Adding or removing a record moves one cell by 1 (neighbouring="add_remove" in mst, aim):
    L2 sensitivity 1, and the L1 error against an x̂ that does not read the table moves by ≤ 1."""
    rng = np.random.default_rng(0)
    sizes = (3, 4)
    table = np.column_stack([rng.integers(0, 3, 30), rng.integers(0, 4, 30)])
    base = _marginal(table, sizes)
    estimate = rng.uniform(0, 5, base.size)
    l2, score = 0.0, 0.0
    neighbours = [np.delete(table, i, axis=0) for i in range(len(table))]
    neighbours += [np.vstack([table, [new]]) for new in itertools.product(range(3), range(4))]
    for other in neighbours:
        l2 = max(l2, float(np.linalg.norm(_marginal(other, sizes) - base)))
        score = max(score, abs(zcdp.l1_error(_marginal(other, sizes), estimate) - zcdp.l1_error(base, estimate)))
    assert l2 == pytest.approx(math.sqrt(zcdp.L2_SQ["add_remove"])) == pytest.approx(1.0)
    assert score <= zcdp.SCORE_SENSITIVITY["add_remove"] == 1
    assert zcdp.L2_SQ["replace_one"] == zcdp.MARGINAL_L2_SQ == 2.0 and zcdp.SCORE_SENSITIVITY["replace_one"] == 2


@pytest.mark.parametrize("rho", [1e-6, 0.01, 0.5, 3.0])
def test_sigma_for_and_em_epsilon_cost_at_most_their_rho_and_waste_nothing(rho):
    sigma = zcdp.sigma_for(rho)
    cost = 2.0 / (2.0 * sigma * sigma)  # Δ₂² / 2σ², Δ₂ = √2
    assert cost <= rho and cost == pytest.approx(rho, rel=1e-9, abs=0)
    eps0 = zcdp.em_epsilon(rho)
    assert eps0 * eps0 / 8.0 <= rho and eps0 * eps0 / 8.0 == pytest.approx(rho, rel=1e-9, abs=0)


def test_a_measurement_is_charged_one_over_sigma_squared_with_its_slack_and_tail():
    ledger = zcdp.Ledger(rho=1.0)
    rng = SecureRandom(seed=4)
    for sigma in (3.0, 40.0):
        before, slack, tails = ledger.spent, ledger.slack, ledger.tails
        noisy = ledger.measure(np.array([5.0, 0.0, 12.0]), sigma, rng, {"stage": "t"})
        assert noisy.shape == (3,)
        step = ledger.steps[-1]
        assert step["rho"] == pytest.approx(1.0 / sigma**2, rel=1e-15) and step["stage"] == "t"
        assert ledger.spent == pytest.approx(before + 1.0 / sigma**2, rel=1e-12)
        assert ledger.slack == pytest.approx(slack + step["sampler_slack"], rel=1e-12, abs=0) and step["sampler_slack"] > 0
        assert ledger.tails == pytest.approx(tails + step["tail_delta"], rel=1e-12, abs=0) and step["tail_delta"] > 0
    assert ledger.remaining == pytest.approx(1.0 - 1 / 9 - 1 / 1600, rel=1e-12)


def test_the_ledger_spends_up_to_its_total_and_refuses_beyond_or_nothing():
    ledger = zcdp.Ledger(rho=0.1)
    ledger.spend(0.06, {"kind": "a"})
    ledger.spend(0.04, {"kind": "b"})  # exactly the total (0.06 + 0.04 in float is 0.1)
    assert ledger.spent == pytest.approx(0.1) and ledger.remaining == pytest.approx(0.0, abs=1e-15)
    with pytest.raises(RuntimeError, match="exceeded"):
        ledger.spend(1e-6, {"kind": "c"})
    fresh = zcdp.Ledger(rho=0.1)
    for bad in (0.0, -0.01):
        with pytest.raises(RuntimeError):
            fresh.spend(bad, {"kind": "free"})
    assert fresh.steps == [] and fresh.spent == 0.0 and fresh.slack == 0.0 and fresh.tails == 0.0


def test_a_budget_split_in_thirds_is_spent_whole_despite_float_rounding():
    """0.1 + 0.1 + 0.1 is 0.30000000000000004 in float: the last third of ρ = 0.3 is spent,
    not refused for an ulp; 1e-6 more is."""
    ledger = zcdp.Ledger(rho=0.3)
    for i in range(3):
        ledger.spend(0.1, {"kind": "third", "i": i})
    assert ledger.spent > 0.3 and len(ledger.steps) == 3
    with pytest.raises(RuntimeError, match="exceeded"):
        ledger.spend(1e-6, {"kind": "more"})


@pytest.mark.parametrize("sigma", [0.5, 3.0, 16.0, 1000.0])
def test_gaussian_counts_use_a_grid_at_least_16_steps_finer_than_sigma(sigma):
    counts = np.arange(12, dtype=float)
    noisy, record = zcdp.gaussian_counts(counts, sigma, SecureRandom(seed=6))
    grid = record["grid"]
    assert grid == 2.0 ** round(math.log2(grid)) and grid <= 1.0 and sigma / grid >= 16
    assert sigma / grid < 32 or grid == 1.0  # the coarsest such grid: no needless slack
    residual = (noisy - counts) / grid
    assert np.all(residual == np.rint(residual))
    assert record["sigma"] == sigma and record["cells"] == 12
    assert 0 < record["sampler_slack"] <= zcdp.SLACK_PER_MEASUREMENT
    # the slack of the two cells a replaced record moves (one down, one up), not of one
    assert record["sampler_slack"] >= noise.gaussian_slack(sigma / grid, 2)[0]
    assert 0 < record["tail_delta"] <= zcdp.TAIL_PER_MEASUREMENT


def test_gaussian_counts_refuse_counts_that_are_not_integers():
    with pytest.raises(ValueError, match="integers"):
        zcdp.gaussian_counts(np.array([1.0, 2.5]), 5.0, SecureRandom(seed=1))
