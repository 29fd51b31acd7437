"""The samplers past their first chunk and at the edges of their domain.

discrete_laplace fills its output 2^20 values at a time; every test drew at most 200,000, so a
loop that filled only the first chunk (and published np.empty's memory for the rest) passed
them all (mutation testing: stop = min(n, start + _CHUNK) → min(n, _CHUNK)). The scale checks
were tried at t = 0.5 only."""

from __future__ import annotations

import pytest

from app.privacy import noise
from app.privacy.noise import samplers as noise_samplers
from app.privacy.rng import SecureRandom

from tests.privacy.test_noise import chi2_pvalue, laplace_bins, laplace_interval_mass


def test_draws_past_the_first_chunk_follow_the_law_too():
    t = 3.7
    n = noise_samplers._CHUNK + 300_000
    sample = noise.discrete_laplace(t, n, SecureRandom(seed=23))
    rest = sample[noise_samplers._CHUNK:]
    bins = laplace_bins(t)
    assert chi2_pvalue(rest, bins, lambda lo, hi: laplace_interval_mass(t, lo, hi)) > 1e-3
    assert chi2_pvalue(rest, bins, lambda lo, hi: laplace_interval_mass(1.1 * t, lo, hi)) < 1e-6
    shaped = noise.discrete_laplace(t, (2, noise_samplers._CHUNK // 2 + 5), SecureRandom(seed=24))
    assert shaped.shape == (2, noise_samplers._CHUNK // 2 + 5)
    assert chi2_pvalue(shaped[1], bins, lambda lo, hi: laplace_interval_mass(t, lo, hi)) > 1e-3


@pytest.mark.parametrize("t", [0.9, 0.999, 2.0**50 * 1.001, float("nan"), float("inf")])
def test_a_laplace_scale_outside_1_to_2_to_the_50_is_refused(t):
    with pytest.raises(ValueError, match="must lie in"):
        noise.discrete_laplace(t, 3, SecureRandom(seed=1))


@pytest.mark.parametrize("sigma", [0.9, 0.999, 2.0**49 * 1.001, float("nan")])
def test_a_gaussian_sigma_outside_1_to_2_to_the_49_is_refused(sigma):
    with pytest.raises(ValueError, match="must lie in"):
        noise.discrete_gaussian(sigma, 3, SecureRandom(seed=1))


def test_the_edges_of_the_domain_are_accepted():
    assert noise.discrete_laplace(1.0, 3, SecureRandom(seed=1)).shape == (3,)
    assert noise.discrete_laplace(2.0**50, 3, SecureRandom(seed=1)).shape == (3,)
    assert noise.discrete_gaussian(1.0, 3, SecureRandom(seed=1)).shape == (3,)
    assert noise.discrete_gaussian(2.0**49, 3, SecureRandom(seed=1)).shape == (3,)
