"""Safe noise: discrete Laplace and discrete Gaussian on a power-of-two grid.

Textbook Laplace sampling in floating point (``b * log(u)``) leaks: the set of doubles it can
output depends on the true value, so an attacker can tell neighbouring inputs apart from a
single draw (Mironov 2012, "On significance of the least significant bits for differential
privacy"). Veil never adds float noise to a private value. A mechanism

1. rounds the exact query value to a grid gamma * Z with gamma = 2**e (a power of two, so the
   rounding is exact in binary floating point);
2. adds gamma * X where X is an *integer* drawn from the discrete Laplace
   P(X = x) ∝ exp(-|x| / t) (or the discrete Gaussian P(X = x) ∝ exp(-x² / 2σ²));
3. publishes the result, which lies on the grid whatever the input (no holes to exploit).

Accounting (all of it is in each mechanism's record, see ``NoiseRecord``):

* rounding moves each coordinate by at most half a step, so two neighbouring queries whose
  exact values differ by Δ₁ in L1 (on at most d coordinates) differ by at most
  A = Δ₁/γ + d steps on the grid. The noise is calibrated to A, not to Δ₁/γ: the
  rounding costs a little more noise, not privacy. Values the caller declares integers
  (``integer=True``: counts, histograms; verified) need no rounding on a grid γ ≤ 1, so
  there A = Δ₁/γ exactly, and the grid is chosen by the noise's expected absolute error —
  on γ = 1 that is the geometric mechanism's 1/sinh(ε/Δ₁) < Δ₁/ε (``laplace_shift``,
  ``calibrate_laplace``);
* the sampler turns CSPRNG words into integers with floating-point arithmetic, so each
  outcome's probability is realized only to a small relative error. ``laplace_slack`` and
  ``gaussian_slack`` bound the extra privacy loss this can cause (derivation in
  docs/epsilon.md); the calibration reserves room for it, so the ε *delivered*, bound
  included, never exceeds the ε asked for.

Sampler. A geometric G with P(G = g) ∝ q^g, q = e^{-1/t}, is split as G = D + B·H with
B ≈ √t (B = 1 for t < 1024): D ∈ [0, B) and H ~ Geo(q^B) are independent (a geometric's
remainder and quotient are). Each digit comes from one 64-bit CSPRNG word by the inverse
CDF on its top 53 bits; H is drawn below ⌈4·t/B⌉ and restarts beyond (memoryless). Keeping
each digit's range near √t keeps the floating-point error of every probability near
√t·2^-48 instead of t·2^-48. The discrete Laplace is ±G with a fair sign bit (a spare bit of
the first word), rejecting "−0" (Canonne, Kamath & Steinke 2020, Alg. 2, vectorized). The
discrete Gaussian is CKS Alg. 3: a discrete Laplace draw Y with t = ⌊σ⌋ + 1, accepted with
probability e^{-a}, a = (|Y| - σ²/t)² / 2σ². A 53-bit uniform U < e^{-a} decides it when
e^{-a} ≥ 2^-20; beyond, where a uniform could not resolve the probability, it is decided as
E > a with E ~ Exp(1) drawn as K + F (K geometric, F its fractional part, one word each as
above), which holds every acceptance probability to ~1e-10 relative far into the tail: the δ
the sampler itself costs is ~1e-238 per coordinate (it was ~1e-10 with a uniform throughout,
which made δ below ~1e-13 unservable).
"""

from __future__ import annotations

import functools
import math
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
from scipy import optimize, special

from app.privacy.rng import SecureRandom

# Relative error we assume for one numpy elementwise float64 operation (exp, expm1, log1p,
# multiply): 16 ulp, generous against glibc's < 1 ulp and SIMD kernels' ≤ 4 ulp.
FLOAT_REL_ERR = 2.0**-48
_RESTART = 4.0  # the high digit is drawn on [0, ⌈4τ⌉) and restarts beyond (P ≈ e^-4)
_CHUNK = 1 << 20  # values per pass: keeps the working arrays in cache
_MAX_T = 2.0**50  # keeps L·V + R far inside int64
_GRID_TOLERANCE = 2.0**-20  # noise a Laplace grid may add over the least, to be coarser
# Gaussian outcomes whose acceptance probability e^{-a} has a > 512 (beyond ~33σ, mass ~1e-238)
# count towards δ; below that every acceptance probability holds to ~1e-10 relative.
_GAUSS_MAX_ARG = 512.0
# Acceptance probabilities ≥ 2^-20 are decided by a 53-bit uniform (fast, 2^-33 relative);
# smaller ones (~0.2% of the proposals) by the exponential comparison below.
_UNIFORM_MAX_ARG = 20.0 * math.log(2.0)
LAPLACE_SAMPLER = ("discrete Laplace ±G (Canonne-Kamath-Steinke 2020 Alg. 2, vectorized); "
                   "G = D + B·H, two independent digits by inverse CDF from 53-bit uniforms")
GAUSSIAN_SAMPLER = ("discrete Gaussian by rejection from the discrete Laplace "
                    "(Canonne-Kamath-Steinke 2020 Alg. 3, vectorized)")


# ------------------------------------------------------------------------------- samplers
def _digits(t: float) -> tuple[int, float, int]:
    """(B, τ_H, S) of the split G = D + B·H.

    D ∈ [0, B) with P ∝ q^D and H ~ Geo(q^B) are independent (q^{D + BH} = q^D · (q^B)^H).
    The inverse CDF of a digit errs by about its range times 2^-48 relative, so for large t
    two digits (B ≈ 11·√t, which balances their error bounds) keep the error ∝ √t instead of
    ∝ t. H is drawn on [0, S), S = ⌈4τ_H⌉, and restarts (adding S) when it lands beyond:
    memoryless, P ≈ e^{-4}."""
    B = 1 if t < 2.0**12 else 2 ** int(round(math.log2(t) / 2 + 3.5))
    tau_h = t / B
    return B, tau_h, int(math.ceil(_RESTART * tau_h))


def _uniform53(words: np.ndarray) -> np.ndarray:
    w = (words >> np.uint64(11)).astype(np.float64)
    w *= 2.0**-53
    return w


def _low_digit(words: np.ndarray, t: float, size: int) -> np.ndarray:
    """D on [0, size) with P(D = x) ∝ e^{-x/t}: inverse CDF from the top 53 bits."""
    y = _uniform53(words)
    y *= math.expm1(-size / t)  # -w·(1 - e^{-size/t})
    np.log1p(y, out=y)
    y *= -t
    np.floor(y, out=y)
    np.minimum(y, size - 1, out=y)
    return y.astype(np.int64)


def _high_digit(words: np.ndarray, tau: float, size: int, rng: SecureRandom) -> np.ndarray:
    """H ~ Geo(e^{-1/τ}): x = ⌊-τ·log1p(-w)⌋; x ≥ size restarts with size added."""
    y = _uniform53(words)
    np.negative(y, out=y)
    np.log1p(y, out=y)
    y *= -tau
    np.floor(y, out=y)
    out = y.astype(np.int64)
    over = np.flatnonzero(out >= size)
    if over.size:  # rare (P ≈ e^-4): add one block and draw those again, recursively
        out[over] = size + _high_digit(rng.uint64(over.size), tau, size, rng)
    return out


def _geometric(t: float, m: int, rng: SecureRandom) -> tuple[np.ndarray, np.ndarray]:
    """m draws of G ~ Geo(e^{-1/t}) (int64) and m independent fair sign bits."""
    B, tau_h, size = _digits(t)
    words = rng.uint64((2 if B > 1 else 1) * m).reshape(-1, m)
    negative = (words[0] & np.uint64(1)) == 1  # a bit the 53-bit uniform does not use
    g = _high_digit(words[-1], tau_h, size, rng)
    if B > 1:
        g *= B
        g += _low_digit(words[0], t, B)
    return g, negative


def discrete_laplace(t: float, size, rng: SecureRandom) -> np.ndarray:
    """Integers X with P(X = x) ∝ exp(-|x| / t), t ≥ 1 (in grid steps). int64 array."""
    t = float(t)
    if not (1.0 <= t <= _MAX_T):
        raise ValueError("discrete Laplace scale t must lie in [1, 2^50] grid steps")
    shape = (int(size),) if np.isscalar(size) else tuple(int(s) for s in size)
    n = int(np.prod(shape))
    out = np.empty(n, dtype=np.int64)
    for start in range(0, n, _CHUNK):
        stop = min(n, start + _CHUNK)
        out[start:stop] = _signed(t, stop - start, rng)
    return out.reshape(shape)


def _signed(t: float, m: int, rng: SecureRandom) -> np.ndarray:
    """±G, redrawing "−0" (which would give 0 twice the mass of the other values; P ≈ 1/2t)."""
    g, negative = _geometric(t, m, rng)
    bad = np.flatnonzero(negative & (g == 0))
    np.negative(g, out=g, where=negative)
    if bad.size:
        g[bad] = _signed(t, bad.size, rng)
    return g


def discrete_gaussian(sigma: float, size, rng: SecureRandom) -> np.ndarray:
    """Integers X with P(X = x) ∝ exp(-x² / 2σ²), σ ≥ 1 (in grid steps). int64 array."""
    sigma = float(sigma)
    if not (1.0 <= sigma <= _MAX_T / 2):
        raise ValueError("discrete Gaussian σ must lie in [1, 2^49] grid steps")
    shape = (int(size),) if np.isscalar(size) else tuple(int(s) for s in size)
    n = int(np.prod(shape))
    t = math.floor(sigma) + 1.0
    out = np.empty(n, dtype=np.int64)
    pending = np.arange(n)
    while pending.size:
        y = discrete_laplace(t, pending.size, rng)
        arg = (np.abs(y) - sigma * sigma / t) ** 2 / (2.0 * sigma * sigma)
        accept = rng.random(pending.size) < np.exp(-arg)
        far = np.flatnonzero(arg > _UNIFORM_MAX_ARG)
        if far.size:
            accept[far] = _bernoulli_exp(arg[far], rng)
        out[pending[accept]] = y[accept]
        pending = pending[~accept]
    return out.reshape(shape)


_FRAC_SCALE = -math.expm1(-1.0)  # 1 - e^-1: the mass of [0, 1) under Exp(1)


def _exponential_parts(m: int, rng: SecureRandom) -> tuple[np.ndarray, np.ndarray]:
    """m draws of E ~ Exp(1) as (K, F): K = ⌊E⌋ ~ Geo(e^-1) (int64) and F = E - K ∈ [0, 1),
    density ∝ e^{-f} — independent, as a geometric's quotient and remainder are."""
    k = _high_digit(rng.uint64(m), 1.0, int(_RESTART), rng)
    f = _uniform53(rng.uint64(m))
    f *= -_FRAC_SCALE
    np.log1p(f, out=f)
    np.negative(f, out=f)  # F = -log1p(-w(1 - e^-1)), the inverse CDF on [0, 1)
    return k, f


def _bernoulli_exp(arg: np.ndarray, rng: SecureRandom) -> np.ndarray:
    """True with probability e^{-arg} (arg ≥ 0), as E > arg for E = K + F ~ Exp(1).

    P(E > a) = P(K > ⌊a⌋) + P(K = ⌊a⌋)·P(F > a - ⌊a⌋): each term is realized to a small
    *relative* error however small e^{-a} is (``_acceptance_error``), which a uniform compared
    with e^{-a} is not. K and F are compared separately so no float sum rounds F away."""
    whole = np.floor(arg)
    k, f = _exponential_parts(arg.size, rng)
    return (k > whole) | ((k == whole) & (f > arg - whole))


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
    Where the uniform decides (a ≤ _UNIFORM_MAX_ARG): e^{-a} errs by the same plus one
    FLOAT_REL_ERR, and U's 2^-53 grid by 2^-53/e^{-a} ≤ 2^-33 relative."""
    e = sampler_errors(1.0)
    f_shift = (3.0 + math.e) * FLOAT_REL_ERR / _FRAC_SCALE + 2.0**-53
    exponential = ((arg_max / _RESTART + 1.0) * e["tau"] + e["zeta_h"]
                   + (math.e - 1.0) * f_shift
                   + 2.0 * (abs_offset + arg_max) * 4.0 * FLOAT_REL_ERR)
    uniform = (2.0**-53 * math.exp(_UNIFORM_MAX_ARG) + FLOAT_REL_ERR
               + 2.0 * (abs_offset + _UNIFORM_MAX_ARG) * 4.0 * FLOAT_REL_ERR)
    return _log_err(max(exponential, uniform))


# ------------------------------------------------------------------- floating-point slack
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
    B, tau_h, size = _digits(t)
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


# ------------------------------------------------------------------------- calibration
@dataclass(frozen=True)
class NoiseRecord:
    """What a mechanism did, for the release metadata."""

    mechanism: str
    sampler: str
    rng: str
    grid: float  # γ = 2^grid_exponent: every noisy value is an integer multiple of it
    grid_exponent: int
    scale_steps: float  # t (Laplace) or σ (Gaussian) in grid steps
    scale: float  # the same in the query's units
    sensitivity: float  # L1 (Laplace) or L2 (Gaussian), in the query's units
    sensitivity_steps: float  # after rounding to the grid: Δ/γ + d (L1) or Δ/γ + √d (L2)
    coordinates_per_neighbour: int
    epsilon_share: float
    epsilon_delivered: float  # bound on the privacy loss, floating-point slack included
    sampler_slack: float  # the part of epsilon_delivered due to floating point
    delta_share: float | None = None
    delta_delivered: float | None = None
    values: int = 0
    # the values were verified integers: on a grid γ ≤ 1 nothing was rounded, and
    # sensitivity_steps is Δ/γ without the + d (laplace_shift)
    integer_values: bool = False

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    def laplace_loss_against(self, sensitivity: float, coords: int) -> float:
        """This Laplace draw's privacy loss against another neighbour relation's move (Δ over
        ``coords`` coordinates): ``laplace_loss`` at the record's grid, scale and integer flag —
        e.g. the replace-one loss of a mechanism calibrated under add/remove."""
        return laplace_loss(self.grid, self.scale_steps, sensitivity, coords, self.integer_values)

    @property
    def rounded(self) -> bool:
        """Whether the exact values were rounded onto the grid (not: integers on γ ≤ 1)."""
        return not (self.integer_values and self.grid <= 1.0)


def _grid_exponents(scale: float) -> range:
    """Candidate grids: from 2^-60 below the noise scale to the scale itself."""
    top = int(math.floor(math.log2(scale)))
    return range(top - 60, top + 1)


def laplace_shift(grid: float, sensitivity: float, coords: int, integer: bool = False) -> float:
    """The steps two neighbours' values can be apart on the grid γ: Δ/γ + d (rounding moves each
    of the d coordinates by ≤ ½ step), or Δ/γ for integer values on a grid γ ≤ 1 (a power of
    two: 1/γ is an integer, so integers are already on the grid and nothing is rounded)."""
    if integer and grid <= 1.0:
        return sensitivity / grid
    return sensitivity / grid + coords


def laplace_abs_error(grid: float, t: float) -> float:
    """E|γX| of the discrete Laplace of scale t steps on the grid γ: 2γq/(1 − q²), q = e^{-1/t},
    = γ/sinh(1/t) (below the continuous Laplace's γt, by ~1/(6t) relative for large t)."""
    return grid / math.sinh(1.0 / t)


def _settled_scale(shift: float, coords: int, epsilon: float, least: float) -> float | None:
    """The scale t ≥ ``least`` at which shift/t plus the sampler's slack reaches ε (or stays
    under it, when ``least`` binds), with a float safety margin; None when no t ∈ [1, 2^50]."""
    t = max(shift / epsilon, least)
    if t < 1.0 or t > _MAX_T:
        return None
    for _ in range(8):  # the slack grows with t: a few fixed-point steps settle it
        room = epsilon - laplace_slack(t, shift, coords)
        if room <= 0:
            break
        t = max(shift / room, least)
    return t * (1.0 + 2.0**-40)  # float safety margin on the equality


def _integer_scale(gamma: float, sensitivity: float, coords: int, epsilon: float) -> float | None:
    """The least t ≥ 1 found on the grid γ for integer values: settled at their shift, or at the
    rounding's larger shift Δ/γ + d (valid a fortiori) when that fixed point misses — at ε below
    ~10⁻⁶ the slack steps with t and 8 steps may not settle. So no grid is worse than it is
    without ``integer``."""
    best = None
    for shift in (laplace_shift(gamma, sensitivity, coords, True), laplace_shift(gamma, sensitivity, coords)):
        t = _settled_scale(shift, coords, epsilon, 1.0)
        if (t is not None and laplace_loss(gamma, t, sensitivity, coords, True) <= epsilon
                and (best is None or t < best)):
            best = t
    return best


@functools.lru_cache(maxsize=4096)  # pure; ~4 ms a call (61 grids): a job's check and run repeat it
def calibrate_laplace(sensitivity: float, coords: int, epsilon: float,
                      integer: bool = False) -> tuple[int, float, float]:
    """(grid exponent e, t, delivered ε) of the discrete Laplace mechanism for a query with
    L1 sensitivity Δ₁ changing ≤ ``coords`` coordinates: among the grids whose delivered ε
    (rounding and slack included) stays ≤ ``epsilon``, the coarsest whose noise γ·t is within
    2^-20 of the least (a finer one buys < 10⁻⁶ of the noise and holds smaller values).

    ``integer``: the values are integers (laplace_mechanism verifies it). Grids γ ≤ 1 then pay
    no rounding (shift Δ/γ, ``laplace_shift``), the scale may sit above what ε needs (t ≥ 1 is
    the sampler's floor: at Δ/ε < 1 the integer grid at t = 1 can still beat a finer one), and
    the grid is chosen by the noise's expected absolute error γ/sinh(1/t) rather than γ·t —
    the figure the answers' error is (and the benchmarks report); γ·t would call every grid
    γ ≤ 1 equal (γ·t = Δ/ε on each), where the coarsest is the most accurate. The variance,
    γ²/(2·sinh²(1/2t)), orders those grids the same way (both fall as γ grows at γ·t fixed).
    Without ``integer`` the noise is measured by γ·t, as it always was in Veil."""
    if sensitivity <= 0 or epsilon <= 0 or coords < 1:
        raise ValueError("sensitivity, epsilon and coords must be positive")
    exponents = _grid_exponents(sensitivity / epsilon)
    if integer:  # one grid coarser: at t = 1 it can beat 2^top at t near 2
        exponents = range(exponents.start, exponents.stop + 1)
    candidates: list[tuple[float, int, float, float]] = []
    for e in exponents:
        gamma = 2.0**e
        if integer:
            t = _integer_scale(gamma, sensitivity, coords, epsilon)
        else:
            t = _settled_scale(laplace_shift(gamma, sensitivity, coords), coords, epsilon, 0.0)
        if t is None or t > _MAX_T:
            continue
        delivered = laplace_loss(gamma, t, sensitivity, coords, integer)
        if delivered > epsilon:
            continue
        cost = laplace_abs_error(gamma, t) if integer else gamma * t
        candidates.append((cost, e, t, delivered))
    if not candidates:
        raise ValueError("no grid delivers this ε: the sensitivity or dimension is too large")
    # the coarsest grid within _GRID_TOLERANCE of the least noise: finer grids buy < 1e-6 of
    # the noise and shrink the values the float64 grid can hold (2^52 steps): γ·t falls only
    # as Δ/ε·(1 + dγ/Δ), so the strict minimum sat at t ~ 10^8 steps, where a sum of 5·10^6
    # values in [0, 1] at ε = 10 no longer fitted; here that limit is ~2^32·Δ/d whatever ε
    least = min(c[0] for c in candidates)
    _, e, t, delivered = max((c for c in candidates if c[0] <= least * (1.0 + _GRID_TOLERANCE)),
                             key=lambda c: c[1])
    return e, t, delivered


def laplace_loss(grid: float, t: float, sensitivity: float, coords: int, integer: bool = False) -> float:
    """The privacy loss of the discrete Laplace mechanism of scale ``t`` steps on the grid
    ``grid`` against a neighbour moving its input by ``sensitivity`` over ``coords``
    coordinates: the shift (``laplace_shift``: Δ/γ + d steps, Δ/γ for integer values on γ ≤ 1)
    over t, plus the sampler's slack at that shift (the loss calibrate_laplace holds to ε,
    here for any shift). 0 when nothing moves."""
    if sensitivity == 0:
        return 0.0
    shift = laplace_shift(grid, sensitivity, coords, integer)
    return shift / t + laplace_slack(t, shift, coords)


def laplace_mechanism(values: np.ndarray, sensitivity: float, coords: int, epsilon: float,
                      rng: SecureRandom, integer: bool = False) -> tuple[np.ndarray, NoiseRecord]:
    """Release ``values`` (any shape) with discrete Laplace noise on a power-of-two grid.

    ``sensitivity``: max L1 distance between the values on neighbouring inputs; ``coords``:
    max number of coordinates that can differ. The output is ε-DP with ε = ``epsilon``
    (see ``NoiseRecord.epsilon_delivered`` for the exact bound, which is ≤ epsilon).
    ``integer``: the values are integers (counts), guaranteed by the caller and verified here
    (ValueError otherwise): the calibration then pays no rounding on grids γ ≤ 1."""
    if integer:
        _require_integers(values)
    e, t, delivered = calibrate_laplace(sensitivity, coords, epsilon, integer)
    gamma = 2.0**e
    steps = _steps(values, gamma)
    noisy = (steps + discrete_laplace(t, steps.shape, rng)) * gamma
    shift = laplace_shift(gamma, sensitivity, coords, integer)
    return noisy, NoiseRecord(
        mechanism="laplace", sampler=LAPLACE_SAMPLER, rng=rng.name, grid=gamma,
        grid_exponent=e, scale_steps=t, scale=gamma * t, sensitivity=float(sensitivity),
        sensitivity_steps=shift, coordinates_per_neighbour=int(coords),
        epsilon_share=float(epsilon), epsilon_delivered=delivered,
        sampler_slack=laplace_slack(t, shift, coords), values=int(steps.size),
        integer_values=bool(integer))


# ------------------------------------------------------------------------- Gaussian
def zcdp_delta(rho: float, epsilon: float) -> float:
    """δ of a ρ-zCDP mechanism at ε: min over α > 1 of
    exp((α-1)(αρ-ε)) / (α-1) · (1-1/α)^α (Canonne, Kamath & Steinke 2020, Cor. 13),
    never above Bun & Steinke's exp(-(ε-ρ)²/4ρ) for ε > ρ (2016, Prop. 1.3)."""
    if rho <= 0:
        return 0.0

    def log_delta(log_a1: float) -> float:
        a = 1.0 + math.exp(log_a1)
        return (a - 1.0) * (a * rho - epsilon) - math.log(a - 1.0) + a * math.log1p(-1.0 / a)

    res = optimize.minimize_scalar(log_delta, bounds=(-20.0, 20.0), method="bounded")
    cks = math.exp(min(0.0, res.fun))
    bun_steinke = math.exp(-((epsilon - rho) ** 2) / (4.0 * rho)) if epsilon > rho else 1.0
    return min(cks, bun_steinke, 1.0)


def calibrate_gaussian(sensitivity: float, coords: int, epsilon: float,
                       delta: float) -> tuple[int, float, float, float]:
    """(grid exponent, σ in steps, delivered ε, delivered δ) of the discrete Gaussian
    mechanism for a query with L2 sensitivity Δ₂ changing ≤ ``coords`` coordinates.
    The discrete Gaussian with integer shifts of L2 norm ≤ A is A²/2σ²-zCDP (CKS 2020,
    Thm. 14); A = Δ₂/γ + √coords covers the rounding to the grid."""
    if sensitivity <= 0 or epsilon <= 0 or not (0 < delta < 1) or coords < 1:
        raise ValueError("sensitivity, epsilon, coords must be positive and 0 < delta < 1")
    best: tuple[float, int, float, float, float] | None = None
    for e in _grid_exponents(sensitivity / epsilon):
        gamma = 2.0**e
        shift = sensitivity / gamma + math.sqrt(coords)

        def delivered(sigma: float, shift=shift) -> tuple[float, float]:
            slack_eps, slack_delta = gaussian_slack(sigma, coords)
            eps0 = epsilon - slack_eps
            if eps0 <= 0:
                return math.inf, 1.0
            d0 = zcdp_delta(shift * shift / (2.0 * sigma * sigma), eps0)
            # outside |y| ≤ y0 the neighbour's realized masses are not pointwise controlled, so
            # its tail enters at e^{ε₀}: P̃₁(S) ≤ e^{ε₀+2Λ}P̃₂(S) + e^{Λ}δ₀ + τ̃ + e^{ε₀+Λ}τ
            return epsilon, (d0 * math.exp(slack_eps / 2.0)
                             + slack_delta * (1.0 + math.exp(eps0)))

        lo, hi = shift / epsilon / 4.0, shift / epsilon * 64.0 + 1.0
        if hi > _MAX_T / 2 or delivered(hi)[1] > delta:
            continue
        for _ in range(100):  # bisection on σ: δ decreases as σ grows
            mid = math.sqrt(lo * hi)
            if delivered(mid)[1] <= delta:
                hi = mid
            else:
                lo = mid
            if hi / lo < 1.0 + 1e-9:
                break
        if hi < 1.0:
            continue
        eps_out, delta_out = delivered(hi)
        if best is None or gamma * hi < best[0]:
            best = (gamma * hi, e, hi, eps_out, delta_out)
    if best is None:
        raise ValueError("no grid delivers this (ε, δ)")
    return best[1], best[2], best[3], best[4]


def gaussian_mechanism(values: np.ndarray, sensitivity: float, coords: int, epsilon: float,
                       delta: float, rng: SecureRandom) -> tuple[np.ndarray, NoiseRecord]:
    """Release ``values`` with discrete Gaussian noise on a power-of-two grid:
    (ε, δ)-DP for a query of L2 sensitivity ``sensitivity`` over ≤ ``coords`` coordinates."""
    e, sigma, eps_out, delta_out = calibrate_gaussian(sensitivity, coords, epsilon, delta)
    gamma = 2.0**e
    steps = _steps(values, gamma)
    noisy = (steps + discrete_gaussian(sigma, steps.shape, rng)) * gamma
    slack_eps, _ = gaussian_slack(sigma, coords)
    return noisy, NoiseRecord(
        mechanism="gaussian", sampler=GAUSSIAN_SAMPLER, rng=rng.name, grid=gamma,
        grid_exponent=e, scale_steps=sigma, scale=gamma * sigma, sensitivity=float(sensitivity),
        sensitivity_steps=sensitivity / gamma + math.sqrt(coords),
        coordinates_per_neighbour=int(coords), epsilon_share=float(epsilon),
        epsilon_delivered=float(eps_out), sampler_slack=float(slack_eps), delta_share=float(delta),
        delta_delivered=float(delta_out), values=int(steps.size))


# ------------------------------------------------------------------------------ helpers
def _steps(values: np.ndarray, gamma: float) -> np.ndarray:
    """Values rounded to the grid, in steps; the sums with the noise must stay exact."""
    steps = np.rint(np.asarray(values, dtype=np.float64) / gamma)
    if steps.size and not np.all(np.abs(steps) < 2.0**52):
        raise ValueError("values too large (or not finite) for the noise grid")
    return steps


def _require_integers(values: np.ndarray) -> None:
    """The guarantee of ``integer=True``: every value a finite integer (one vectorized pass)."""
    v = np.asarray(values, dtype=np.float64)
    if v.size and not np.all(np.isfinite(v) & (v == np.rint(v))):
        raise ValueError("values declared integer hold a non-integer (or non-finite) value")


def clamp(values: np.ndarray, lo, hi) -> np.ndarray:
    """Clip into [lo, hi] (broadcasting per column); NaN stays NaN."""
    return np.minimum(np.maximum(values, lo), hi)


def on_grid(values: np.ndarray, gamma: float) -> bool:
    """True when every value is an integer multiple of gamma (exact for powers of two)."""
    v = np.asarray(values, dtype=np.float64) / gamma
    return bool(np.all(v == np.rint(v)))
