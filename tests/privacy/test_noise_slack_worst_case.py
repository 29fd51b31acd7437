"""The floating-point slack bounds against the worst case their own assumption allows.

app/privacy/noise/slack.py assumes each float operation errs by at most FLOAT_REL_ERR (16 ulp)
relative. Here a sampler whose every operation errs by up to that much, in whichever direction
hurts, is worked out in 60-digit decimals, independently of slack.py's bound formulas: each
boundary of an inverse CDF is moved to the farthest point the errors can put it, then to the next
word of the 2^-53 grid, and the masses between the boundaries are compared with the ideal ones.
Every bound slack.py states (sampler_errors, _acceptance_error, laplace_slack, gaussian_slack)
must cover that worst case, or the ε and δ a release states can be below what it delivers. The
far-tail δ of the discrete Gaussian is compared with the exact tail mass (a sum, not a
normal-tail bound).

Mutation testing (401 mutants of the six slack functions; the other tests killed 153): 61 more
fail here. The existing checks compared the bounds with this machine's kernels (≤ 1 ulp, 30×
below the assumption) or only from above, so a bound could be lowered freely: the low digit's
(zeta_d, within 2 % of this worst case for t ≥ 2^20, 0.4 % at 2^30) without its two
boundaries per mass or its 3 + 1/ρ^S, laplace_slack without its zeta_d or restart terms,
gaussian_slack's tail without its factor 2 or its 1/0.99. The 187 left keep every bound above
the worst case: the high digit's bounds are ~70× above it, and _acceptance_error is the larger
of two terms each of which alone covers the other's worst case (≥ 1.2e-10 against ≤ 1.4e-11,
and 3.2e-10 against 1.2e-10)."""

from __future__ import annotations

import math
from decimal import Decimal, getcontext

import numpy as np
import pytest

from app.privacy import noise
from app.privacy.noise import samplers as noise_samplers
from app.privacy.noise import slack as noise_slack

getcontext().prec = 60
_F = Decimal(2) ** -48  # the assumed error of one operation (noise.FLOAT_REL_ERR, restated)
_GRID = Decimal(2) ** -53  # a 53-bit uniform's step
_ONE = Decimal(1)


def _expm1(x: Decimal) -> Decimal:
    if abs(x) > Decimal("1e-5"):
        return x.exp() - 1
    total, term, k = Decimal(0), Decimal(1), 1
    while abs(term) > Decimal(10) ** -70:
        term = term * x / k
        total += term
        k += 1
    return total


def _errs(ops: int) -> tuple[Decimal, Decimal]:
    return (_ONE - _F) ** ops, (_ONE + _F) ** ops


def _log_error(lo: Decimal, hi: Decimal, ideal: Decimal) -> float:
    return max(abs(float((lo / ideal).ln())), abs(float((hi / ideal).ln())))


def _high_boundaries(tau: float, size: int):
    """b(x) = (lowest, highest) first word with ⌊-τ·log1p(-w)⌋ ≥ x when log1p and the
    multiplication by τ each err by ≤ F (two roundings), on the 2^-53 grid."""
    tau_d = Decimal(repr(tau))

    def b(x: int) -> tuple[Decimal, Decimal]:
        if x == 0:
            return Decimal(0), Decimal(0)
        ws = [-_expm1(Decimal(-x) / (tau_d * c)) for c in _errs(2)]
        return min(ws), max(ws) + _GRID

    return b


def _high_digit_worst(tau: float, size: int) -> tuple[float, float]:
    """(restart probability's log error, largest log error of a mass below ``size``)."""
    b = _high_boundaries(tau, size)
    rho = (-_ONE / Decimal(repr(tau))).exp()
    masses = 0.0
    for x in sorted({0, 1, size // 2, size - 2, size - 1} & set(range(size))):
        lo0, hi0 = b(x)
        lo1, hi1 = b(x + 1)
        masses = max(masses, _log_error(lo1 - hi0, hi1 - lo0, rho**x * (1 - rho)))
    lo, hi = b(size)
    return _log_error(1 - hi, 1 - lo, rho**size), masses


def _low_digit_worst(t: float, size: int) -> float:
    """Largest log error of a mass of D ∈ [0, size), y = -t·log1p(w·expm1(-size/t)): expm1 and
    the product err before log1p (its argument), log1p and the multiplication by t after."""
    if size <= 1:
        return 0.0
    t_d = Decimal(repr(t))
    m = _expm1(Decimal(-size) / t_d)

    def b(d: int) -> tuple[Decimal, Decimal]:
        if d == 0:
            return Decimal(0), Decimal(0)
        if d == size:  # the top value takes everything above its lower boundary
            return _ONE, _ONE
        ws = [_expm1(Decimal(-d) / (t_d * after)) / (m * before)
              for before in _errs(2) for after in _errs(2)]
        return min(ws), max(ws) + _GRID

    rho = (-_ONE / t_d).exp()
    worst = 0.0
    for d in sorted({0, 1, size // 2, size - 2, size - 1}):
        lo0, hi0 = b(d)
        lo1, hi1 = b(d + 1)
        worst = max(worst, _log_error(lo1 - hi0, hi1 - lo0, rho**d * (1 - rho) / (1 - rho**size)))
    return worst


def _sampler_worst(t: float) -> dict[str, float]:
    B, tau_h, size = noise_samplers.split_digits(t)
    tau, zeta_h = _high_digit_worst(tau_h, size)
    return {"tau": tau, "zeta_h": zeta_h, "zeta_d": _low_digit_worst(t, B), "block": B * size}


_SCALES = [1.0, 37.0, 4095.0, 4096.0, 123_456.7, 2.0**30, 2.0**45]


@pytest.mark.parametrize("t", _SCALES)
def test_each_sampler_error_bound_covers_the_worst_case_of_16_ulp_operations(t):
    bound, worst = noise.sampler_errors(t), _sampler_worst(t)
    assert bound["block"] == worst["block"]
    for key in ("tau", "zeta_h", "zeta_d"):
        assert bound[key] >= worst[key], key
    if worst["zeta_d"]:
        assert bound["zeta_d"] <= 1.5 * worst["zeta_d"]  # the worst case is reachable: tight


def _fraction_boundary(c: float) -> tuple[Decimal, Decimal]:
    """First word with F = -log1p(-w·(1 - e^-1)) > c: 1 - e^-1 and the product err before
    log1p, log1p after."""
    c_d = Decimal(repr(c))
    scale = -_expm1(-_ONE)
    ws = [-_expm1(-c_d / after) / (scale * before) for before in _errs(2) for after in _errs(1)]
    return min(ws), max(ws) + _GRID


def _tail_acceptance_worst(a: float) -> float:
    """Largest log error of the realized P(E > a), E = K + F (K from the high digit at τ = 1,
    restarting every 4): P = r^q·(1 - b_{j+1} + (b_{j+1} - b_j)·P(F > c)), a = 4q + j + c,
    decreasing in every boundary, so its extremes take the boundaries' extremes."""
    b = _high_boundaries(1.0, int(noise_samplers.RESTART))
    whole = math.floor(a)
    q, j = divmod(whole, 4)
    f_lo, f_hi = _fraction_boundary(a - whole)
    (lo_j, hi_j), (lo_j1, hi_j1), (lo_4, hi_4) = b(j), b(j + 1), b(4)
    low = (1 - hi_4) ** q * (1 - hi_j1 + (hi_j1 - hi_j) * (1 - f_hi))
    high = (1 - lo_4) ** q * (1 - lo_j1 + (lo_j1 - lo_j) * (1 - f_lo))
    return _log_error(low, high, (-Decimal(repr(a))).exp())


def _argument_error(a: float, offset: float) -> float:
    """|ã - a| for ã = (|y| - σ·σ/t)²/(2.0·σ·σ) in float64 (six roundings; the first two
    reach a through the difference u = |y| - σ²/t, |u| ≤ offset·t): ≤ F·(2·offset + 5a)."""
    return float(_F) * (2.0 * offset + 5.0 * a) * (1.0 + 1e-6)


@pytest.mark.parametrize("sigma", [1.0, 1000.5])
def test_the_acceptance_error_bound_covers_both_ways_an_acceptance_is_decided(sigma):
    t = math.floor(sigma) + 1.0
    y0 = sigma * sigma / t + sigma * math.sqrt(2.0 * noise_slack._GAUSS_MAX_ARG)
    offset = (y0 + sigma * sigma / t) / t
    bound = noise_slack._acceptance_error(noise_slack._GAUSS_MAX_ARG, offset)
    # by the exponential comparison, a > 20·ln 2, up to 512
    for a in (noise_samplers.UNIFORM_MAX_ARG + 1e-9, 14.2, 50.5, 255.9, 511.999):
        assert bound >= _tail_acceptance_worst(a) + _argument_error(a, offset), a
    # by a 53-bit uniform against np.exp(-ã) (one rounding), a ≤ 20·ln 2: the grid of U costs
    # up to 2^-53 absolute, 2^-33 relative at the edge
    a = noise_samplers.UNIFORM_MAX_ARG
    rel = float(_F) + 2.0**-53 * math.exp(a)
    assert bound >= math.log1p(rel) + _argument_error(a, offset)
    assert bound >= -math.log1p(-rel) + _argument_error(a, offset)


@pytest.mark.parametrize("t,shift,coords", [(1.0, 1.0, 1), (1.0, 1000.0, 1), (4096.0, 9000.0, 1),
                                            (2.0**30, 3.0e9, 3), (123_456.7, 2.0e6, 40)])
def test_the_laplace_slack_covers_the_worst_case_privacy_loss_excess(t, shift, coords):
    """Two outputs g and g + s of one coordinate differ by ≤ ⌊s/block⌋ + 1 restarts, each
    erring by τ, and in one high and one low digit mass each (both masses of each pair may err
    in opposite directions); the coordinates' excesses add. At t = 1 and a shift of 1,000 steps
    (ε = 1,000) the 251 restarts outweigh the digit masses: the restart term must be there."""
    w = _sampler_worst(t)
    excess = ((math.floor(shift / w["block"]) + coords) * w["tau"]
              + 2 * coords * (w["zeta_h"] + w["zeta_d"]))
    assert noise.laplace_slack(t, shift, coords) >= excess


def _discrete_gaussian_tail(sigma: float, y0: float) -> float:
    """P(|Y| > y0) of the ideal discrete Gaussian, summed term by term (relative to the first
    term, so nothing underflows); Z = σ√(2π)(1 + 2e^{-2π²σ²}) (Poisson summation, σ ≥ 1)."""
    first = math.floor(y0) + 1
    ys = first + np.arange(0, int(60 * sigma * sigma / first) + 64, dtype=np.float64)
    log_terms = -(ys * ys) / (2.0 * sigma * sigma)
    total = math.exp(log_terms[0]) * float(np.sum(np.exp(log_terms - log_terms[0])))
    z = sigma * math.sqrt(2.0 * math.pi) * (1.0 + 2.0 * math.exp(-2.0 * math.pi**2 * sigma**2))
    return 2.0 * total / z


@pytest.mark.parametrize("sigma,coords", [(1.0, 1), (16.0, 2), (1000.5, 1), (2.0**20 + 0.25, 3)])
def test_the_gaussian_slack_covers_the_far_tail_and_the_worst_case_per_outcome_error(sigma, coords):
    t = math.floor(sigma) + 1.0
    y0 = sigma * sigma / t + sigma * math.sqrt(2.0 * noise_slack._GAUSS_MAX_ARG)
    eps, delta = noise.gaussian_slack(sigma, coords)
    # the ideal mass beyond y0, each coordinate's; the realized one is within ~1e-6 of it
    # (its proposals restart at most ~y0/block times there, each erring by τ ≤ 1e-11)
    tail = _discrete_gaussian_tail(sigma, y0)
    assert delta >= coords * tail * (1.0 + 1e-6)
    # inside: P̃(y) = L̃(y)·Ã(y)/Z̃, each factor and the normalization off by ≤ ℓ + κ
    w = _sampler_worst(t)
    offset = (y0 + sigma * sigma / t) / t
    kappa = max(_tail_acceptance_worst(a) + _argument_error(a, offset) for a in (14.2, 511.999))
    per_outcome = 2.0 * (math.floor(y0 / w["block"]) * w["tau"] + w["zeta_h"] + w["zeta_d"] + kappa)
    assert eps >= 2.0 * coords * per_outcome
