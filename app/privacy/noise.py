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
  rounding costs a little more noise, not privacy;
* the sampler turns CSPRNG words into integers with floating-point arithmetic, so each
  outcome's probability is realized only to a small relative error. ``laplace_slack`` and
  ``gaussian_slack`` bound the extra privacy loss this can cause (derivation in
  docs/epsilon.md); the calibration reserves room for it, so the ε *delivered*, bound
  included, never exceeds the ε asked for.

Sampler. A geometric G with P(G = g) ∝ q^g, q = e^{-1/t}, is split as G = L·V + R with
L = ⌊t⌋: V (blocks) and R (remainder in [0, L)) are independent (a geometric's quotient and
remainder are). V has ratio Q = q^L ∈ [e^{-1}, e^{-1/2}) and is drawn by comparing one
64-bit word against the exact thresholds Q^v·2^64 (v < 4; V ≥ 4 restarts, memoryless);
R by the inverse CDF from a 53-bit uniform. The discrete Laplace is ±G with a fair sign bit,
rejecting "−0" (Canonne, Kamath & Steinke 2020, Alg. 2, vectorized). The discrete Gaussian
is CKS Alg. 3: a discrete Laplace draw Y with t = ⌊σ⌋ + 1, accepted with probability
exp(-(|Y| - σ²/t)² / 2σ²).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
from scipy import optimize, special

from app.privacy.rng import SecureRandom

# Relative error we assume for one numpy elementwise float64 operation (exp, expm1, log1p,
# multiply): 16 ulp, generous against glibc's < 1 ulp and SIMD kernels' ≤ 4 ulp.
FLOAT_REL_ERR = 2.0**-48
_BLOCKS = 4  # V is drawn by comparisons for v < 4; V ≥ 4 restarts (memoryless)
_CHUNK = 1 << 20  # values per pass: keeps the working arrays in cache
_MAX_T = 2.0**50  # keeps L·V + R far inside int64
_GAUSS_TAIL_BITS = 30  # Gaussian acceptance probabilities below 2^-30 count towards δ
LAPLACE_SAMPLER = ("discrete Laplace ±G (Canonne-Kamath-Steinke 2020 Alg. 2, vectorized): "
                   "G = L·V + R, V by 64-bit threshold comparisons, R by inverse CDF")
GAUSSIAN_SAMPLER = ("discrete Gaussian by rejection from the discrete Laplace "
                    "(Canonne-Kamath-Steinke 2020 Alg. 3, vectorized)")


# ------------------------------------------------------------------------------- samplers
def _split(t: float) -> tuple[int, float, float]:
    """L = ⌊t⌋, q = e^{-1/t} and Q = q^L for the quotient/remainder split of Geo(q)."""
    L = max(1, int(math.floor(t)))
    return L, math.exp(-1.0 / t), math.exp(-L / t)


def _block_thresholds(t: float) -> np.ndarray:
    """uint64 thresholds fl(Q^v)·2^64, v = 1.._BLOCKS: P(word < thr_v) = fl(Q^v) exactly."""
    L, _, _ = _split(t)
    q_v = np.exp(-np.arange(1, _BLOCKS + 1) * (L / t))
    return (q_v * 2.0**64).astype(np.uint64)


def _geometric(t: float, m: int, rng: SecureRandom) -> tuple[np.ndarray, np.ndarray]:
    """m draws of G ~ Geo(e^{-1/t}) (int64) and m independent fair sign bits."""
    L, _, Q = _split(t)
    words = rng.uint64(2 * m)
    r_words, v_words = words[:m], words[m:]
    negative = (r_words & np.uint64(1)).astype(bool)  # a bit the 53-bit uniform does not use
    g = np.zeros(m, dtype=np.int64)
    if L > 1:  # remainder R in [0, L) by the inverse CDF of the truncated geometric
        w = (r_words >> np.uint64(11)).astype(np.float64) * 2.0**-53
        one_minus_q = -math.expm1(-L / t)
        y = np.log1p(w * -one_minus_q)
        y *= -t
        np.floor(y, out=y)
        np.minimum(y, L - 1, out=y)
        g += y.astype(np.int64)
    thresholds = _block_thresholds(t)
    blocks = _count_below(v_words, thresholds)
    full = np.flatnonzero(blocks == _BLOCKS)
    while full.size:  # V ≥ 4: add 4 and draw again (P = Q^4 ≤ e^{-2}); memoryless
        again = _count_below(rng.uint64(full.size), thresholds)
        blocks[full] += again
        full = full[again == _BLOCKS]
    g += blocks * L
    return g, negative


def _count_below(words: np.ndarray, thresholds: np.ndarray) -> np.ndarray:
    """#{v : word < thr_v}; thresholds decrease, so this is V* = min(V, _BLOCKS)."""
    out = np.zeros(words.shape, dtype=np.int64)
    for thr in thresholds:
        out += words < thr
    return out


def discrete_laplace(t: float, size, rng: SecureRandom) -> np.ndarray:
    """Integers X with P(X = x) ∝ exp(-|x| / t), t ≥ 1 (in grid steps). int64 array."""
    t = float(t)
    if not (1.0 <= t <= _MAX_T):
        raise ValueError("discrete Laplace scale t must lie in [1, 2^50] grid steps")
    shape = (int(size),) if np.isscalar(size) else tuple(int(s) for s in size)
    n = int(np.prod(shape))
    out = np.empty(n, dtype=np.int64)
    for start in range(0, n, _CHUNK):
        todo = np.arange(start, min(n, start + _CHUNK))
        while todo.size:
            g, negative = _geometric(t, todo.size, rng)
            # "-0" would give 0 twice the mass of the other values: redraw it (P ≈ 1/2t)
            keep = ~(negative & (g == 0))
            out[todo[keep]] = np.where(negative, -g, g)[keep]
            todo = todo[~keep]
    return out.reshape(shape)


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
        out[pending[accept]] = y[accept]
        pending = pending[~accept]
    return out.reshape(shape)


# ------------------------------------------------------------------- floating-point slack
def _log_err(rel: float) -> float:
    """Bound on |ln(1 + z)| for |z| ≤ rel."""
    return math.inf if rel >= 1.0 else -math.log1p(-rel)


def sampler_errors(t: float) -> dict[str, float]:
    """Bounds on the realized-vs-ideal log-probability errors of the geometric sampler.

    tau: the restart probability fl(Q^4) vs Q^4; zeta_v: each block mass fl(Q^v) - fl(Q^{v+1});
    zeta_r: each remainder mass, whose inverse-CDF boundaries move by the float error of
    -t·log1p(-w(1-Q)) (≤ 5 FLOAT_REL_ERR relative) and by the 2^-53 grid of w.
    """
    L, q, Q = _split(t)
    tau = FLOAT_REL_ERR
    zeta_v = FLOAT_REL_ERR * (1.0 + Q) / (1.0 - Q)
    if L == 1:
        zeta_r = 0.0
    else:
        boundary = 5.0 * FLOAT_REL_ERR / (1.0 - Q) + 2.0**-53
        min_mass = Q * (-math.expm1(-1.0 / t)) / (1.0 - Q)
        zeta_r = 2.0 * boundary / min_mass
    return {"tau": _log_err(tau), "zeta_v": _log_err(zeta_v), "zeta_r": _log_err(zeta_r),
            "block": float(L * _BLOCKS)}


def laplace_slack(t: float, shift: float, coords: int) -> float:
    """Extra privacy loss of the realized discrete Laplace over the ideal one, for two means
    at L1 distance ≤ ``shift`` steps spread over ≤ ``coords`` coordinates.

    Per coordinate shifted by s: (s / (L·4) + 1)·tau + 2·zeta_v + 2·zeta_r (the sign and the
    "−0" rejection are exact and the normalization is common to both inputs)."""
    e = sampler_errors(t)
    return (shift / e["block"] + coords) * e["tau"] + 2.0 * coords * (e["zeta_v"] + e["zeta_r"])


def gaussian_slack(sigma: float, coords: int) -> tuple[float, float]:
    """(extra ε, extra δ) of the realized discrete Gaussian over the ideal one.

    Outside |y| ≤ y0 (acceptance below 2^-30) we give up pointwise control and count the
    mass there towards δ; inside, each outcome's probability is within a factor e^{±λ}."""
    t = math.floor(sigma) + 1.0
    e = sampler_errors(t)
    y0 = sigma * sigma / t + sigma * math.sqrt(2.0 * _GAUSS_TAIL_BITS * math.log(2.0))
    blocks = y0 / e["block"] + 1.0
    kappa = _log_err(200.0 * FLOAT_REL_ERR + 2.0**-53 * 2.0**_GAUSS_TAIL_BITS)
    lam = 2.0 * (blocks * e["tau"] + e["zeta_v"] + e["zeta_r"] + kappa) + 2.0**-50
    tail = 2.0 * (float(special.ndtr(-(y0 - 1.0) / sigma)) / 0.99 * 1.01 + 2.0**-52)
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

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def _grid_exponents(scale: float) -> range:
    """Candidate grids: from 2^-60 below the noise scale to the scale itself."""
    top = int(math.floor(math.log2(scale)))
    return range(top - 60, top + 1)


def calibrate_laplace(sensitivity: float, coords: int, epsilon: float) -> tuple[int, float, float]:
    """(grid exponent e, t, delivered ε) of the discrete Laplace mechanism for a query with
    L1 sensitivity Δ₁ changing ≤ ``coords`` coordinates: the grid minimizing the noise γ·t
    among those whose delivered ε (rounding and slack included) stays ≤ ``epsilon``."""
    if sensitivity <= 0 or epsilon <= 0 or coords < 1:
        raise ValueError("sensitivity, epsilon and coords must be positive")
    best: tuple[float, int, float, float] | None = None
    for e in _grid_exponents(sensitivity / epsilon):
        gamma = 2.0**e
        shift = sensitivity / gamma + coords

        def loss(t: float, shift=shift) -> float:
            return shift / t + laplace_slack(t, shift, coords)

        t = shift / epsilon
        if t < 1.0 or t > _MAX_T:
            continue
        for _ in range(8):  # the slack grows with t: a few fixed-point steps settle it
            room = epsilon - laplace_slack(t, shift, coords)
            if room <= 0:
                break
            t = shift / room
        t *= 1.0 + 2.0**-40  # float safety margin on the equality
        if t > _MAX_T or loss(t) > epsilon:
            continue
        if best is None or gamma * t < best[0]:
            best = (gamma * t, e, t, loss(t))
    if best is None:
        raise ValueError("no grid delivers this ε: the sensitivity or dimension is too large")
    return best[1], best[2], best[3]


def laplace_mechanism(values: np.ndarray, sensitivity: float, coords: int, epsilon: float,
                      rng: SecureRandom) -> tuple[np.ndarray, NoiseRecord]:
    """Release ``values`` (any shape) with discrete Laplace noise on a power-of-two grid.

    ``sensitivity``: max L1 distance between the values on neighbouring inputs; ``coords``:
    max number of coordinates that can differ. The output is ε-DP with ε = ``epsilon``
    (see ``NoiseRecord.epsilon_delivered`` for the exact bound, which is ≤ epsilon)."""
    e, t, delivered = calibrate_laplace(sensitivity, coords, epsilon)
    gamma = 2.0**e
    steps = np.rint(np.asarray(values, dtype=np.float64) / gamma)
    noisy = (steps + discrete_laplace(t, steps.shape, rng)) * gamma
    shift = sensitivity / gamma + coords
    return noisy, NoiseRecord(
        mechanism="laplace", sampler=LAPLACE_SAMPLER, rng=rng.name, grid=gamma,
        grid_exponent=e, scale_steps=t, scale=gamma * t, sensitivity=float(sensitivity),
        sensitivity_steps=shift, coordinates_per_neighbour=int(coords),
        epsilon_share=float(epsilon), epsilon_delivered=delivered,
        sampler_slack=laplace_slack(t, shift, coords), values=int(steps.size))


# ------------------------------------------------------------------------- Gaussian
def zcdp_delta(rho: float, epsilon: float) -> float:
    """δ of a ρ-zCDP mechanism at ε: min over α > 1 of
    exp((α-1)(αρ-ε)) / (α-1) · (1-1/α)^α (Canonne, Kamath & Steinke 2020, Cor. 13),
    never above Bun & Steinke's exp(-(ε-ρ)²/4ρ) (2016, Prop. 1.3)."""
    if rho <= 0:
        return 0.0
    if epsilon <= rho:
        return 1.0

    def log_delta(log_a1: float) -> float:
        a = 1.0 + math.exp(log_a1)
        return (a - 1.0) * (a * rho - epsilon) - math.log(a - 1.0) + a * math.log1p(-1.0 / a)

    res = optimize.minimize_scalar(log_delta, bounds=(-20.0, 20.0), method="bounded")
    cks = math.exp(min(0.0, res.fun))
    bun_steinke = math.exp(-((epsilon - rho) ** 2) / (4.0 * rho))
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
            return epsilon, d0 * math.exp(slack_eps / 2.0) + slack_delta

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
    steps = np.rint(np.asarray(values, dtype=np.float64) / gamma)
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
def clamp(values: np.ndarray, lo, hi) -> np.ndarray:
    """Clip into [lo, hi] (broadcasting per column); NaN stays NaN."""
    return np.minimum(np.maximum(values, lo), hi)


def on_grid(values: np.ndarray, gamma: float) -> bool:
    """True when every value is an integer multiple of gamma (exact for powers of two)."""
    v = np.asarray(values, dtype=np.float64) / gamma
    return bool(np.all(v == np.rint(v)))
