"""The low digit of the discrete Laplace sampler, seen on its own.

For t ≥ 2^12 the sampler draws G = D + B·H with D ∈ [0, B), P(D = d) ∝ e^{-d/t}, B ≈ 11√t
(``noise.samplers.split_digits``). test_noise.py's χ² bins are t/4 wide, far wider than B, and the KS test
works at a resolution of 1/√N: a low digit that was always 0 (G a multiple of B, so the
published value gives away the true one modulo B steps) passed both — mutation testing of
``_low_digit`` (y *= -t → y /= -t, and floor → ceil, which never draws D = 0). Here |X| mod B = D
exactly, and its law is tested directly."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from app.privacy import noise
from app.privacy.noise import samplers as noise_samplers
from app.privacy.rng import SecureRandom


@pytest.mark.parametrize("t", [12_345.6, 65_536.0])
def test_the_low_digit_follows_its_truncated_geometric_law(t):
    B = noise_samplers.split_digits(t)[0]
    assert B > 1
    n = 400_000
    d = np.abs(noise.discrete_laplace(t, n, SecureRandom(seed=17))) % B
    q = math.exp(-1.0 / t)
    pmf = q ** np.arange(B) * (1 - q) / (1 - q**B)
    # 32 bins of B/32 values: the e^{-d/t} slope across [0, B) is ~10 % (t = 12,346) or 6 %
    edges = np.linspace(0, B, 33).astype(int)
    observed = np.add.reduceat(np.bincount(d, minlength=B), edges[:-1])
    expected = np.add.reduceat(pmf, edges[:-1]) * n
    assert stats.chisquare(observed, expected).pvalue > 1e-3
    flat = np.full(32, n / 32)
    assert stats.chisquare(observed, flat).pvalue < 1e-6  # the test sees the slope
    # the single values at both ends are drawn as often as their mass says
    for value in (0, B - 1):
        p = pmf[value]
        assert abs(np.count_nonzero(d == value) - n * p) < 5 * math.sqrt(n * p) + 1
