"""The discrete Gaussian's tail acceptance (an exponential comparison) and its far-tail δ.

1. The realized P(E > a) of ``_bernoulli_exp`` is computed *exactly* (every CSPRNG word is a
   point of the 2^-53 grid, so each probability is a count of grid points: the boundaries are
   located with the very numpy kernels the sampler runs) and held to ``_acceptance_error``.
2. The far-tail δ: outside |y| ≤ y0 the neighbour's realized probabilities are not controlled,
   so its ideal tail mass τ enters δ weighted by e^{ε₀} (P̃₁(S) ≤ e^{Λ}δ₀ + τ̃ + e^{ε₀+Λ}τ),
   not by 1 (at ε = 100 that is ~2e-193 per measurement, above a 1e-200 reserve taken alone).
"""

from __future__ import annotations

import math
from decimal import Decimal, getcontext

import numpy as np
import pytest

from app.privacy import noise
from app.privacy.noise import samplers as noise_samplers
from app.privacy.noise import slack as noise_slack
from app.privacy.dp_release import zcdp

_N = 2**53


def _first_index(pred) -> int:
    """Smallest 53-bit word index i with pred(i) (pred monotone False -> True), else 2^53."""
    lo, hi = 0, _N
    while hi - lo > 1024:
        grid = np.unique(np.linspace(lo, hi - 1, 1025).astype(np.int64))
        ok = pred(grid)
        if not ok.any():
            lo = int(grid[-1]) + 1
            continue
        j = int(np.argmax(ok))
        if j == 0:
            return int(grid[0]) if lo == int(grid[0]) else _first_index_in(pred, lo, int(grid[0]))
        lo, hi = int(grid[j - 1]) + 1, int(grid[j])
    return _first_index_in(pred, lo, hi)


def _first_index_in(pred, lo: int, hi: int) -> int:
    cand = np.arange(lo, min(hi, _N - 1) + 1, dtype=np.int64)
    ok = pred(cand)
    i = int(cand[np.argmax(ok)]) if ok.any() else _N
    window = np.arange(max(0, i - 2048), min(_N, i + 2048), dtype=np.int64)
    flags = pred(window)
    assert np.all(flags[:-1] <= flags[1:]), "the inverse CDF is not monotone near a boundary"
    return i


def _words(i: np.ndarray) -> np.ndarray:
    return np.asarray(i, dtype=np.uint64) << np.uint64(11)


def _k_first(i: np.ndarray) -> np.ndarray:  # _high_digit(·, 1.0, 4, ·) before the restart test
    y = noise_samplers._uniform53(_words(i))
    np.negative(y, out=y)
    np.log1p(y, out=y)
    y *= -1.0
    np.floor(y, out=y)
    return y.astype(np.int64)


def _f(i: np.ndarray) -> np.ndarray:  # _exponential_parts' F
    f = noise_samplers._uniform53(_words(i))
    f *= -noise_samplers.FRAC_SCALE
    np.log1p(f, out=f)
    np.negative(f, out=f)
    return f


@pytest.mark.parametrize("a", [0.3, 2.999999, 3.0, 8.0, 20 * math.log(2) + 1e-12, 14.2, 50.5,
                               255.9, 7 + (1 - 2**-50), 511.999, 512.0])
def test_realized_tail_acceptance_is_exp_minus_a_within_its_bound(a):
    getcontext().prec = 60
    bounds = [0] + [_first_index(lambda i, j=j: _k_first(i) >= j) for j in (1, 2, 3, 4)] + [_N]
    first = [Decimal(bounds[j + 1] - bounds[j]) / _N for j in range(5)]  # K' = 0..3, restart
    restart = first[4]
    k0 = math.floor(a)
    c = a - k0
    p_k_ge = restart ** ((k0 + 1) // 4) * (sum(first[(k0 + 1) % 4:4], Decimal(0)) + restart)
    p_k_eq = restart ** (k0 // 4) * first[k0 % 4]
    p_f_gt = Decimal(_N - _first_index(lambda i: _f(i) > c)) / _N
    realized = p_k_ge + p_k_eq * p_f_gt
    rel = abs(float(realized / (-Decimal(a)).exp() - 1))
    # the bound without its a-rounding term (a is exact here): restarts, K's masses, F's shift
    e = noise.sampler_errors(1.0)
    bound = ((a / noise_samplers.RESTART + 1.0) * e["tau"] + e["zeta_h"]
             + (math.e - 1.0) * (3.0 * noise.FLOAT_REL_ERR / noise_samplers.FRAC_SCALE + 2.0**-53))
    assert rel <= bound
    assert rel <= noise_slack._acceptance_error(noise_slack._GAUSS_MAX_ARG, 0.0)


def test_bernoulli_exp_decides_exactly_the_event_e_greater_than_a():
    # integer a: accept iff K > a or (K == a and F > 0); F = 0 only for the word 0
    assert _f(np.array([0]))[0] == 0.0 and _f(np.array([1]))[0] > 0.0
    assert _f(np.array([_N - 1]))[0] < 1.0  # F never rounds up to 1


def test_far_tail_delta_is_charged_with_the_neighbours_privacy_loss():
    """δ₀·e^{Λ} + τ̃ + e^{ε₀+Λ}·τ must fit δ: at ε = 100 a δ just above the old reserve is not
    servable (refusing is the right answer), whatever the sampler reserve is called."""
    eps, delta, m = 100.0, 1e-195, 1
    _, tail = noise.gaussian_slack(16.0, 2)  # smallest σ (in steps) gaussian_counts uses
    try:
        rho, slack, _ = zcdp.rho_for(eps, delta, m)
    except ValueError:
        return
    eps0 = eps - slack
    true_delta = (noise.zcdp_delta(rho, eps0) * math.exp(slack / 2.0)
                  + m * tail * (1.0 + math.exp(eps0 + slack / 2.0)))
    assert true_delta <= delta


def test_calibrated_gaussian_delta_covers_the_weighted_far_tail():
    eps, delta = 100.0, 1e-198
    try:
        _, sigma, _, delta_out = noise.calibrate_gaussian(1.0, 1, eps, delta)
    except ValueError:
        return  # refusing is the right answer too
    slack_eps, slack_delta = noise.gaussian_slack(sigma, 1)
    assert delta_out >= slack_delta * math.exp(eps - slack_eps)
