"""The mechanisms as a caller meets them: what ``laplace_mechanism`` and ``gaussian_mechanism``
add to the values (the calibrated discrete noise, centred on the rounded value, whatever the
value), and a NoiseRecord from which a reader recomputes the ε it states. The sampler and
calibration tests pass whatever the mechanism does with their output: a mechanism that
published the values without noise, or the noise without the values, passed them all
(mutation testing)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from app.privacy import noise
from app.privacy.rng import SecureRandom

from scipy import stats

from tests.privacy.test_noise import chi2_pvalue, laplace_bins, laplace_interval_mass

N = 100_000


def _normal_mass(sigma: float):
    """Interval masses of the discrete Gaussian at σ of 10⁸ steps, where its pmf is the
    normal density to far below a χ² test's resolution (its support cannot be listed)."""
    return lambda lo, hi: float(stats.norm.cdf((hi + 0.5) / sigma) - stats.norm.cdf((lo - 0.5) / sigma))


def _values(n: int) -> np.ndarray:
    # values of every size and sign, most of them off the grid
    return np.random.default_rng(1).normal(0.0, 1000.0, n)


def test_laplace_mechanism_adds_the_calibrated_discrete_laplace_to_the_rounded_values():
    values = _values(N)
    noisy, rec = noise.laplace_mechanism(values, 2.5, 1, 0.7, SecureRandom(seed=31))
    gamma, t = rec.grid, rec.scale_steps
    residual = (noisy / gamma - np.rint(values / gamma)).astype(np.int64)
    bins = laplace_bins(t)
    assert chi2_pvalue(residual, bins, lambda lo, hi: laplace_interval_mass(t, lo, hi)) > 1e-3
    assert chi2_pvalue(residual, bins, lambda lo, hi: laplace_interval_mass(1.1 * t, lo, hi)) < 1e-6
    # the noise does not depend on the value it is added to
    assert abs(np.corrcoef(residual, values)[0, 1]) < 4 / math.sqrt(N)


def test_gaussian_mechanism_adds_the_calibrated_discrete_gaussian_to_the_rounded_values():
    values = _values(N)
    noisy, rec = noise.gaussian_mechanism(values, 2.5, 3, 0.7, 1e-7, SecureRandom(seed=32))
    gamma, sigma = rec.grid, rec.scale_steps
    residual = (noisy / gamma - np.rint(values / gamma)).astype(np.int64)
    width = max(1, int(sigma // 4))
    edges = [-width // 2 + i * width for i in range(-24, 25)]
    bins = [(-(10**15), edges[0] - 1)] + [(edges[i], edges[i + 1] - 1) for i in range(48)] + [
        (edges[-1], 10**15)]
    assert sigma > 1e6  # the grid is fine: _normal_mass applies
    assert chi2_pvalue(residual, bins, _normal_mass(sigma)) > 1e-3
    assert chi2_pvalue(residual, bins, _normal_mass(1.1 * sigma)) < 1e-6
    assert abs(np.corrcoef(residual, values)[0, 1]) < 4 / math.sqrt(N)


@pytest.mark.parametrize("sens,coords,eps", [(1.0, 1, 1.0), (2.5, 4, 0.3), (0.01, 50, 2.0)])
def test_a_laplace_record_restates_its_own_epsilon(sens, coords, eps):
    """ε = A/t + slack with A = Δ₁/γ + d (rounding moves each coordinate by ≤ ½ step, twice)."""
    _, rec = noise.laplace_mechanism(np.zeros(5), sens, coords, eps, SecureRandom(seed=1))
    assert rec.sensitivity == sens and rec.coordinates_per_neighbour == coords and rec.values == 5
    assert rec.grid == 2.0**rec.grid_exponent and rec.scale == rec.grid * rec.scale_steps
    assert rec.sensitivity_steps == sens / rec.grid + coords
    assert rec.sampler_slack == noise.laplace_slack(rec.scale_steps, rec.sensitivity_steps, coords)
    stated = rec.sensitivity_steps / rec.scale_steps + rec.sampler_slack
    assert stated == pytest.approx(rec.epsilon_delivered, rel=1e-12)
    assert rec.epsilon_delivered <= rec.epsilon_share == eps


@pytest.mark.parametrize("sens,coords,eps,delta", [(1.0, 1, 1.0, 1e-6), (2.5, 4, 0.3, 1e-9)])
def test_a_gaussian_record_restates_its_own_delta(sens, coords, eps, delta):
    """δ from ρ = A²/2σ² with A = Δ₂/γ + √d, at ε minus the sampler's slack, plus its tail."""
    _, rec = noise.gaussian_mechanism(np.zeros(5), sens, coords, eps, delta, SecureRandom(seed=1))
    assert rec.sensitivity_steps == sens / rec.grid + math.sqrt(coords)
    assert rec.grid == 2.0**rec.grid_exponent and rec.scale == rec.grid * rec.scale_steps
    slack_eps, slack_delta = noise.gaussian_slack(rec.scale_steps, coords)
    assert rec.sampler_slack == slack_eps
    eps0 = eps - slack_eps
    rho = rec.sensitivity_steps**2 / (2 * rec.scale_steps**2)
    stated = (noise.zcdp_delta(rho, eps0) * math.exp(slack_eps / 2)
              + slack_delta * (1 + math.exp(eps0)))
    assert stated == pytest.approx(rec.delta_delivered, rel=1e-9, abs=0)
    assert rec.delta_delivered <= rec.delta_share == delta and rec.epsilon_delivered <= eps
    # the calibration is tight: 1% less noise would not deliver δ
    assert (noise.zcdp_delta(rho * 1.0201, eps0) * math.exp(slack_eps / 2)) > delta


@pytest.mark.parametrize("args", [(0.0, 1, 1.0), (-1.0, 1, 1.0), (1.0, 1, 0.0), (1.0, 1, -0.5),
                                  (1.0, 0, 1.0)])
def test_calibration_refuses_a_sensitivity_epsilon_or_dimension_that_is_not_positive(args):
    with pytest.raises(ValueError, match="must be positive"):
        noise.calibrate_laplace(*args)
    with pytest.raises(ValueError, match="must be positive"):
        noise.calibrate_gaussian(*args, 1e-6)


@pytest.mark.parametrize("delta", [0.0, 1.0, -1e-9, 1.5])
def test_gaussian_calibration_refuses_a_delta_outside_zero_one(delta):
    with pytest.raises(ValueError, match="0 < delta < 1"):
        noise.calibrate_gaussian(1.0, 1, 1.0, delta)


def test_one_value_too_large_for_the_grid_refuses_the_whole_release():
    """The noisy sums are exact only below 2^52 steps: one value beyond it is refused, not
    released off the grid with the others."""
    values = np.zeros(10)
    values[7] = 1e300
    with pytest.raises(ValueError, match="too large"):
        noise.laplace_mechanism(values, 1.0, 1, 1.0, SecureRandom(seed=1))
    values[7] = np.nan
    with pytest.raises(ValueError, match="too large"):
        noise.gaussian_mechanism(values, 1.0, 1, 1.0, 1e-6, SecureRandom(seed=1))


def test_on_grid_needs_every_value_on_the_grid():
    assert noise.on_grid(np.array([0.5, -1.5, 3.0]), 0.5)
    assert not noise.on_grid(np.array([0.5, 0.3]), 0.5)
    assert not noise.on_grid(np.array([0.3, 0.5]), 0.5)
