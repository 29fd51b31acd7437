"""The exact samplers: discrete Laplace and discrete Gaussian integers from CSPRNG words.

A geometric G with P(G = g) ∝ q^g, q = e^{-1/t}, is split as G = D + B·H with
B ≈ 11·√t, a power of two (B = 1 for t < 4096): D ∈ [0, B) and H ~ Geo(q^B) are
independent (a geometric's remainder and quotient are). Each digit comes from one 64-bit CSPRNG word by the inverse
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

How far the realized probabilities can stray from the ideal ones is bounded in ``slack``.
"""

from __future__ import annotations

import math

import numpy as np

from app.privacy.rng import SecureRandom

RESTART = 4.0  # the high digit is drawn on [0, ⌈4τ⌉) and restarts beyond (P ≈ e^-4)
_CHUNK = 1 << 20  # values per pass: keeps the working arrays in cache
MAX_T = 2.0**50  # keeps L·V + R far inside int64
# Acceptance probabilities ≥ 2^-20 are decided by a 53-bit uniform (fast, 2^-33 relative);
# smaller ones (~0.2% of the proposals) by the exponential comparison below.
UNIFORM_MAX_ARG = 20.0 * math.log(2.0)
LAPLACE_SAMPLER = ("discrete Laplace ±G (Canonne-Kamath-Steinke 2020 Alg. 2, vectorized); "
                   "G = D + B·H, two independent digits by inverse CDF from 53-bit uniforms")
GAUSSIAN_SAMPLER = ("discrete Gaussian by rejection from the discrete Laplace "
                    "(Canonne-Kamath-Steinke 2020 Alg. 3, vectorized)")


def split_digits(t: float) -> tuple[int, float, int]:
    """(B, τ_H, S) of the split G = D + B·H.

    D ∈ [0, B) with P ∝ q^D and H ~ Geo(q^B) are independent (q^{D + BH} = q^D · (q^B)^H).
    The inverse CDF of a digit errs by about its range times 2^-48 relative, so for large t
    two digits (B ≈ 11·√t, which balances their error bounds) keep the error ∝ √t instead of
    ∝ t. H is drawn on [0, S), S = ⌈4τ_H⌉, and restarts (adding S) when it lands beyond:
    memoryless, P ≈ e^{-4}."""
    B = 1 if t < 2.0**12 else 2 ** int(round(math.log2(t) / 2 + 3.5))
    tau_h = t / B
    return B, tau_h, int(math.ceil(RESTART * tau_h))


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
    B, tau_h, size = split_digits(t)
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
    if not (1.0 <= t <= MAX_T):
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
    if not (1.0 <= sigma <= MAX_T / 2):
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
        far = np.flatnonzero(arg > UNIFORM_MAX_ARG)
        if far.size:
            accept[far] = _bernoulli_exp(arg[far], rng)
        out[pending[accept]] = y[accept]
        pending = pending[~accept]
    return out.reshape(shape)


FRAC_SCALE = -math.expm1(-1.0)  # 1 - e^-1: the mass of [0, 1) under Exp(1)


def _exponential_parts(m: int, rng: SecureRandom) -> tuple[np.ndarray, np.ndarray]:
    """m draws of E ~ Exp(1) as (K, F): K = ⌊E⌋ ~ Geo(e^-1) (int64) and F = E - K ∈ [0, 1),
    density ∝ e^{-f} — independent, as a geometric's quotient and remainder are."""
    k = _high_digit(rng.uint64(m), 1.0, int(RESTART), rng)
    f = _uniform53(rng.uint64(m))
    f *= -FRAC_SCALE
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
