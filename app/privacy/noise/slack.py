"""Floating-point slack: how far the samplers' realized probabilities can stray from the ideal.

The samplers (``samplers``) turn CSPRNG words into integers with float64 arithmetic, so each
outcome's probability is realized only to a small relative error. ``sampler_errors`` bounds it
for the geometric digits, ``_acceptance_error`` for the Gaussian's acceptance step;
``laplace_slack`` and ``gaussian_slack`` turn those bounds into the extra privacy loss (and, for
the Gaussian, the extra δ) that the calibrations reserve room for (derivation in docs/epsilon.md).
"""

from __future__ import annotations

import math

from scipy import special

from app.privacy.noise.samplers import FRAC_SCALE, RESTART, UNIFORM_MAX_ARG, split_digits

# Relative error we assume for one numpy elementwise float64 operation (exp, expm1, log1p,
# multiply): 16 ulp, generous against glibc's < 1 ulp and SIMD kernels' ≤ 4 ulp.
FLOAT_REL_ERR = 2.0**-48
# Gaussian outcomes whose acceptance probability e^{-a} has a > 512 (beyond ~33σ, mass ~1e-238)
# count towards δ; below that every acceptance probability holds to ~1e-10 relative.
_GAUSS_MAX_ARG = 512.0


def _acceptance_error(arg_max: float, abs_offset: float) -> float:
    """Relative error bound of the realized P(E > a) for a ≤ ``arg_max``, a computed as
    (|y| - σ²/t)²/2σ² with |y| - σ²/t ≤ ``abs_offset``·t.

    K's masses: at most ⌊a⌋/4 + 1 restarts, each erring by ``tau``, plus ``zeta_h`` (the
    Laplace sampler's bounds at t = 1). F = -log1p(-w(1 - e^-1)) errs by ≤ (3 + e)·FLOAT_REL_ERR
    absolute (F < 1: log1p's own error, and the two roundings of its argument amplified by
    |x|/(1 + x) ≤ e - 1, as in ``_low_digit_error``); as dw/dF ≤ 1/(1 - e^-1), each boundary moves in w by ≤ that/(1 - e^-1),
    plus the 2^-53 grid of w. The F term weighs P(K = ⌊a⌋)/P(E > a) ≤ e - 1 of the total.
    a itself errs by ≤ (abs_offset + a)·4·FLOAT_REL_ERR absolute (rounding of σ²/t, the
    square and the division), which is the relative error it causes in e^{-a}; doubled.
    Where the uniform decides (a ≤ UNIFORM_MAX_ARG): e^{-a} errs by the same plus one
    FLOAT_REL_ERR, and U's 2^-53 grid by 2^-53/e^{-a} ≤ 2^-33 relative."""
    e = sampler_errors(1.0)
    f_shift = (3.0 + math.e) * FLOAT_REL_ERR / FRAC_SCALE + 2.0**-53
    exponential = ((arg_max / RESTART + 1.0) * e["tau"] + e["zeta_h"]
                   + (math.e - 1.0) * f_shift
                   + 2.0 * (abs_offset + arg_max) * 4.0 * FLOAT_REL_ERR)
    uniform = (2.0**-53 * math.exp(UNIFORM_MAX_ARG) + FLOAT_REL_ERR
               + 2.0 * (abs_offset + UNIFORM_MAX_ARG) * 4.0 * FLOAT_REL_ERR)
    return _log_err(max(exponential, uniform))


def _log_err(rel: float) -> float:
    """Bound on |ln(1 + z)| for |z| ≤ rel."""
    return math.inf if rel >= 1.0 else -math.log1p(-rel)


def _low_digit_error(t: float, size: int) -> float:
    """Relative error bound of each mass of ``_low_digit(·, t, size)``.

    y = -t·log1p(-w(1-ρ^S)) (ρ = e^{-1/t}) is computed with relative error
    ≤ (3 + 1/ρ^S)·FLOAT_REL_ERR, so a boundary y = x moves by ≤ that·S; in w by ≤ that over
    t(1-ρ^S); plus the 2^-53 grid of w. Two boundaries per mass; the smallest mass is
    ρ^{S-1}(1-ρ)/(1-ρ^S)."""
    if size <= 1:
        return 0.0
    top = math.exp(-size / t)
    one_minus_top = -math.expm1(-size / t)
    shift = (3.0 + 1.0 / top) * FLOAT_REL_ERR * size / (t * one_minus_top) + 2.0**-53
    min_mass = math.exp(-(size - 1) / t) * (-math.expm1(-1.0 / t)) / one_minus_top
    return 2.0 * shift / min_mass


def sampler_errors(t: float) -> dict[str, float]:
    """Bounds on the realized-vs-ideal log-probability errors of the geometric sampler.

    For H (y = -τ·log1p(-w), relative error ≤ 3·FLOAT_REL_ERR, so a boundary x ≤ S moves in
    w by ≤ 3·FLOAT_REL_ERR·S/τ, plus the 2^-53 grid): ``tau`` bounds the restart probability's
    error (one boundary, mass ρ^S), ``zeta_h`` each mass below S (two boundaries, smallest
    mass ρ^{S-1}(1-ρ)); ``zeta_d`` each mass of the low digit; ``block`` = B·S."""
    B, tau_h, size = split_digits(t)
    rho = math.exp(-1.0 / tau_h)
    shift = 3.0 * FLOAT_REL_ERR * size / tau_h + 2.0**-53
    return {"tau": _log_err(shift / rho**size),
            "zeta_h": _log_err(2.0 * shift / (rho ** (size - 1) * -math.expm1(-1.0 / tau_h))),
            "zeta_d": _log_err(_low_digit_error(t, B)), "block": float(B * size)}


def laplace_slack(t: float, shift: float, coords: int) -> float:
    """Extra privacy loss of the realized discrete Laplace over the ideal one, for two means
    at L1 distance ≤ ``shift`` steps spread over ≤ ``coords`` coordinates.

    A realized mass is P(g)·(1+τ̃)^j·(1+ζ_h)(1+ζ_d) with j = ⌊g/block⌋ restarts, so for a
    coordinate shifted by s the log-ratio errs by ≤ (s/block + 1)·tau + 2·zeta_h + 2·zeta_d
    (the sign and the "−0" rejection are exact; the normalization is common to both inputs)."""
    e = sampler_errors(t)
    return (shift / e["block"] + coords) * e["tau"] + 2.0 * coords * (e["zeta_h"] + e["zeta_d"])


def gaussian_slack(sigma: float, coords: int) -> tuple[float, float]:
    """(extra ε, extra δ) of the realized discrete Gaussian over the ideal one.

    Inside |y| ≤ y0 (acceptance ≥ e^-512) each outcome's probability is within a factor e^{±λ}
    of the ideal one. Outside, the bounds are not carried (they would still grow only linearly
    with the restarts): the mass there (the ideal tail, ×1.01 for the realized one) is counted
    towards δ — ~1e-236 per coordinate at σ ≥ 16 steps, ~1e-217 at σ = 1. The caller weighs it
    by 1 + e^{ε₀}: the neighbour's tail enters the privacy-loss bound at e^{ε₀}."""
    t = math.floor(sigma) + 1.0
    e = sampler_errors(t)
    reach = sigma * math.sqrt(2.0 * _GAUSS_MAX_ARG)
    y0 = sigma * sigma / t + reach
    blocks = y0 / e["block"] + 1.0
    kappa = _acceptance_error(_GAUSS_MAX_ARG, (y0 + sigma * sigma / t) / t)
    lam = 2.0 * (blocks * e["tau"] + e["zeta_h"] + e["zeta_d"] + kappa) + 2.0**-50
    tail = 2.0 * float(special.ndtr(-(y0 - 1.0) / sigma)) / 0.99 * 1.01 * (1.0 + 2.0**-40)
    return 2.0 * coords * lam, coords * tail * math.exp(coords * lam)
