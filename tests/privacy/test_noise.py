"""Safe noise: the samplers follow their distributions (with enough power to see a 10% scale
error), outputs never leave the grid, and the calibration delivers at most the ε asked for."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from app.privacy import noise
from app.privacy.noise import samplers as noise_samplers
from app.privacy.rng import SecureRandom

N = 200_000


def laplace_interval_mass(t: float, lo: int, hi: int) -> float:
    """P(lo ≤ X ≤ hi) of the discrete Laplace P(x) ∝ q^|x|, q = e^{-1/t}."""
    q = math.exp(-1.0 / t)

    def upper(a: int) -> float:  # P(X ≥ a) for a ≥ 1
        return q**a / (1.0 + q)

    def cdf(b: int) -> float:  # P(X ≤ b)
        return 1.0 - upper(b + 1) if b >= 0 else upper(-b)

    return cdf(hi) - cdf(lo - 1)


def laplace_bins(t: float) -> list[tuple[int, int]]:
    """Integer intervals covering the bulk: single values near 0 for small t, else t/4 wide."""
    width = max(1, int(t // 4))
    edges = [-width // 2 + i * width for i in range(-20, 21)]
    bins = [(edges[i], edges[i + 1] - 1) for i in range(len(edges) - 1)]
    return [(-(10**15), bins[0][0] - 1), *bins, (bins[-1][1] + 1, 10**15)]


def chi2_pvalue(sample: np.ndarray, bins: list[tuple[int, int]], mass) -> float:
    observed = np.array([np.count_nonzero((sample >= lo) & (sample <= hi)) for lo, hi in bins])
    expected = np.array([mass(lo, hi) for lo, hi in bins]) * len(sample)
    keep = expected >= 5
    obs = np.append(observed[keep], observed[~keep].sum())
    exp = np.append(expected[keep], expected[~keep].sum())
    if exp[-1] < 5:
        obs[-2] += obs[-1]
        exp[-2] += exp[-1]
        obs, exp = obs[:-1], exp[:-1]
    exp *= obs.sum() / exp.sum()
    return float(stats.chisquare(obs, exp).pvalue)


@pytest.mark.parametrize("t", [1.0, 3.7, 50.0, 12_345.6, 3.0e6])
def test_discrete_laplace_matches_its_pmf_and_detects_a_10_percent_wrong_scale(t):
    sample = noise.discrete_laplace(t, N, SecureRandom(seed=int(t * 10)))
    bins = laplace_bins(t)
    assert chi2_pvalue(sample, bins, lambda lo, hi: laplace_interval_mass(t, lo, hi)) > 1e-3
    # power: the same test against a scale 10% off must reject, both ways round
    assert chi2_pvalue(sample, bins, lambda lo, hi: laplace_interval_mass(1.1 * t, lo, hi)) < 1e-6
    wrong = noise.discrete_laplace(1.1 * t, N, SecureRandom(seed=7))
    assert chi2_pvalue(wrong, bins, lambda lo, hi: laplace_interval_mass(t, lo, hi)) < 1e-6


def test_zero_has_the_right_mass_despite_the_negative_zero_rejection():
    t = 2.0
    sample = noise.discrete_laplace(t, N, SecureRandom(seed=3))
    p0 = laplace_interval_mass(t, 0, 0)
    observed = np.count_nonzero(sample == 0) / N
    assert abs(observed - p0) < 4 * math.sqrt(p0 * (1 - p0) / N)
    assert abs(np.count_nonzero(sample > 0) - np.count_nonzero(sample < 0)) < 4 * math.sqrt(N)


def test_large_scale_laplace_passes_ks_against_the_continuous_laplace_and_fails_at_110_percent():
    t = 2.0**22
    sample = noise.discrete_laplace(t, N, SecureRandom(seed=11)) / t
    assert stats.kstest(sample, stats.laplace(scale=1.0).cdf).pvalue > 1e-3
    assert stats.kstest(sample, stats.laplace(scale=1.1).cdf).pvalue < 1e-6


def gaussian_mass(sigma: float):
    support = np.arange(-int(12 * sigma) - 2, int(12 * sigma) + 3)
    weights = np.exp(-(support.astype(float) ** 2) / (2 * sigma * sigma))
    cdf = np.cumsum(weights / weights.sum())

    def mass(lo: int, hi: int) -> float:
        lo_i = np.searchsorted(support, max(lo, support[0]))
        hi_i = np.searchsorted(support, min(hi, support[-1]), side="right") - 1
        if hi_i < lo_i:
            return 0.0
        return float(cdf[hi_i] - (cdf[lo_i - 1] if lo_i > 0 else 0.0))

    return mass


@pytest.mark.parametrize("sigma", [1.0, 2.5, 40.0, 3_000.0])
def test_discrete_gaussian_matches_its_pmf_and_detects_a_10_percent_wrong_scale(sigma):
    sample = noise.discrete_gaussian(sigma, N, SecureRandom(seed=int(sigma * 100)))
    width = max(1, int(sigma // 4))
    edges = [-width // 2 + i * width for i in range(-24, 25)]
    bins = [(-(10**12), edges[0] - 1)] + [(edges[i], edges[i + 1] - 1) for i in range(48)] + [
        (edges[-1], 10**12)]
    assert chi2_pvalue(sample, bins, gaussian_mass(sigma)) > 1e-3
    assert chi2_pvalue(sample, bins, gaussian_mass(1.1 * sigma)) < 1e-6


def test_the_exponential_behind_the_gaussian_tail_acceptance_is_exp1_and_not_a_neighbour():
    k, f = noise_samplers._exponential_parts(N, SecureRandom(seed=21))
    assert k.min() >= 0 and np.all((f >= 0) & (f < 1))
    e = k + f
    assert stats.kstest(e, stats.expon.cdf).pvalue > 1e-3
    assert stats.kstest(e, stats.expon(scale=1.02).cdf).pvalue < 1e-6


@pytest.mark.parametrize("a", [0.0, 0.7, 4.5, 9.3, 13.9])
def test_tail_acceptance_happens_with_probability_exp_minus_a(a):
    n = 4 * N
    hits = np.count_nonzero(noise_samplers._bernoulli_exp(np.full(n, a), SecureRandom(seed=int(a * 10))))
    p = math.exp(-a)
    assert abs(hits - n * p) <= 4.5 * math.sqrt(n * p * (1 - p)) + 1


@pytest.mark.parametrize("offset", [0.0, 0.1, 1 / 3, math.pi, -12345.678901])
def test_mechanism_outputs_never_leave_the_power_of_two_grid(offset):
    rng = SecureRandom(seed=5)
    values = offset + np.linspace(-3, 3, 10_001)
    for noisy, rec in (noise.laplace_mechanism(values, 1.0, 1, 0.5, rng),
                       noise.gaussian_mechanism(values, 1.0, 1, 0.5, 1e-6, rng)):
        assert rec.grid == 2.0**rec.grid_exponent
        assert noise.on_grid(noisy, rec.grid)
        steps = noisy / rec.grid
        assert np.all(np.abs(steps) < 2**53)  # exact integers in float64
    # the textbook float Laplace does leave any grid (the attack surface we avoid)
    textbook = values + np.random.default_rng(0).laplace(0, 2.0, values.shape)
    assert not noise.on_grid(textbook, 2.0**-20)


def test_laplace_calibration_delivers_at_most_the_share_and_wastes_little():
    for sens, coords, eps in [(1.0, 1, 1.0), (10.5, 5, 0.6), (0.007, 210, 0.3), (3.0, 1000, 0.01)]:
        e, t, delivered = noise.calibrate_laplace(sens, coords, eps)
        assert delivered <= eps
        assert delivered >= eps * (1 - 1e-9)
        gamma = 2.0**e
        shift = sens / gamma + coords
        assert shift / t + noise.laplace_slack(t, shift, coords) == pytest.approx(delivered)
        # the noise is within 2% of the ideal continuous Laplace scale Δ/ε
        assert gamma * t == pytest.approx(sens / eps, rel=0.02)
        assert noise.laplace_slack(t, shift, coords) < 3e-3 * eps


def test_sampler_error_bounds_are_small_where_calibration_puts_t():
    for t in (3.0e6, 2.0**30):
        errors = noise.sampler_errors(t)
        assert errors["tau"] < 1e-11 and errors["zeta_h"] < 3e-8 and errors["zeta_d"] < 3e-8
    with pytest.raises(ValueError):
        noise.discrete_laplace(0.5, 10, SecureRandom(seed=1))


def analytic_gaussian_delta(sigma: float, sens: float, eps: float) -> float:
    """Balle & Wang (2018): exact δ of the continuous Gaussian mechanism."""
    a, b = sens / (2 * sigma), eps * sigma / sens
    return stats.norm.cdf(a - b) - math.exp(eps) * stats.norm.cdf(-a - b)


def test_gaussian_calibration_meets_delta_and_is_close_to_the_analytic_gaussian():
    sens, coords, eps, delta = 3.0, 10, 1.0, 1e-5
    e, sigma, eps_out, delta_out = noise.calibrate_gaussian(sens, coords, eps, delta)
    assert eps_out <= eps and delta_out <= delta
    real_sigma = sigma * 2.0**e
    # the exact continuous optimum needs a bit less noise; zCDP conversion costs ≤ 25%
    assert analytic_gaussian_delta(real_sigma, sens, eps) <= delta
    assert analytic_gaussian_delta(real_sigma / 1.25, sens, eps) > delta


def test_zcdp_conversion_is_never_worse_than_bun_steinke_and_monotone():
    for rho in (0.01, 0.1, 0.5, 2.0):
        last = 1.0
        for eps in (0.1, 0.5, 1.0, 2.0, 5.0, 10.0):
            d = noise.zcdp_delta(rho, eps)
            if eps > rho:
                assert d <= math.exp(-((eps - rho) ** 2) / (4 * rho)) + 1e-15
            assert d <= last + 1e-15
            last = d


def test_seeded_generator_is_reproducible_and_unseeded_is_not():
    a = noise.discrete_laplace(100.0, 1000, SecureRandom(seed=9))
    b = noise.discrete_laplace(100.0, 1000, SecureRandom(seed=9))
    c = noise.discrete_laplace(100.0, 1000, SecureRandom())
    assert np.array_equal(a, b) and not np.array_equal(a, c)


def test_clamp_keeps_values_in_bounds():
    v = np.array([[-5.0, 0.5], [2.0, np.nan]])
    out = noise.clamp(v, np.array([0.0, 0.0]), np.array([1.0, 1.0]))
    assert out[0, 0] == 0.0 and out[1, 0] == 1.0 and out[0, 1] == 0.5 and np.isnan(out[1, 1])


def test_every_draw_is_counted():
    """The worker refunds a job refused before it drew any randomness; that rests on every
    distribution drawing through bytes(), which counts."""
    rng = SecureRandom()
    assert rng.bytes_drawn == 0
    draws = [lambda: rng.random(3), lambda: rng.integers(10, 4), lambda: rng.normal(5),
             lambda: rng.permutation(6), lambda: rng.choice(4, 2), lambda: rng.uint64(1)]
    for draw in draws:
        before = rng.bytes_drawn
        draw()
        assert rng.bytes_drawn > before
