"""Exact coins in bulk: uniform integers and Bernoulli(e^(−x)) for rational x, vectorized over
many draws, from CSPRNG words only — no floating point touches a probability.

``zcdp.ExactSampler`` draws the same laws one at a time in Fraction arithmetic (its exponential
mechanism, the discrete samplers' references); these serve where thousands of coins are needed
at once: safepub's record sampling (one Bernoulli(e^(−ε_anon)) per record) and ``exact_em``'s
batches of exponential-mechanism proposals.

* ``uniform_below``: w mod b for a 64-bit word w accepted when w < b·⌊(2⁶⁴ − 1)/b⌋ (a multiple of
  b, so the remainder is exactly uniform), redrawn otherwise.
* ``bernoulli_exp``: Canonne, Kamath & Steinke 2020, Algorithm 1 — for x ∈ [0, 1], K = 1, 2, …
  while Bernoulli(x/K) succeeds; the answer is "K odd", which has probability
  Σ_k (−1)^k x^k / k! = e^(−x). Bernoulli(x/K) is Bernoulli(x) and Bernoulli(1/K),
  independently; every still-running draw of round K shares K. A larger x is split as
  e^(−x) = (e^(−1))^⌊x⌋ · e^(−(x − ⌊x⌋)).
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from app.privacy.rng import SecureRandom

_ALL_ONES = np.uint64(2**64 - 1)
_POOL = 1 << 14  # CSPRNG words drawn at a time: the many small draws of a batch share them


class Words:
    """CSPRNG words handed out in order from a buffer refilled by ``rng.uint64``: every word is
    used once, so the draws stay independent and uniform; the buffer only saves the cost of a
    fresh keystream per small draw (a tiny table's quantile made ~10 of them per proposal)."""

    def __init__(self, rng: SecureRandom) -> None:
        self.rng = rng
        self._buffer = np.zeros(0, dtype=np.uint64)

    def take(self, k: int) -> np.ndarray:
        if k > self._buffer.size:
            self._buffer = np.concatenate([self._buffer, self.rng.uint64(max(k, _POOL))])
        out, self._buffer = self._buffer[:k], self._buffer[k:]
        return out


def uniform_below(words: Words, bounds: np.ndarray) -> np.ndarray:
    """One integer uniform on {0, …, b − 1} per entry 1 ≤ b < 2⁶⁴ of ``bounds`` (uint64), by
    rejection: a word w is used when w < b·⌊(2⁶⁴ − 1)/b⌋, a multiple of b."""
    bounds = np.asarray(bounds, dtype=np.uint64)
    out = np.empty(bounds.shape, dtype=np.uint64)
    pending = np.arange(bounds.size)
    while pending.size:
        b = bounds[pending]
        drawn = words.take(pending.size)
        ok = drawn < b * (_ALL_ONES // b)
        out[pending[ok]] = drawn[ok] % b[ok]
        pending = pending[~ok]
    return out


def _bernoulli(words: Words, p: Fraction, size: int) -> np.ndarray:
    """``size`` Bernoulli(p) draws for a rational p ∈ [0, 1] whose denominator is below 2⁶⁴."""
    if p.numerator == p.denominator:
        return np.ones(size, dtype=bool)
    if p.denominator >= 2**64:
        raise ValueError("the probability's denominator must be below 2⁶⁴")
    return uniform_below(words, np.full(size, p.denominator, dtype=np.uint64)) < np.uint64(p.numerator)


def _bernoulli_exp_unit(words: Words, x: Fraction, size: int) -> np.ndarray:
    out = np.empty(size, dtype=bool)
    pending = np.arange(size)
    k = 1
    while pending.size:
        go = _bernoulli(words, x, pending.size)
        if k > 1:
            go &= uniform_below(words, np.full(pending.size, k, dtype=np.uint64)) == 0
        out[pending[~go]] = k % 2 == 1
        pending = pending[go]
        k += 1
    return out


def bernoulli_exp(words: Words, x: Fraction, size: int) -> np.ndarray:
    """``size`` independent Bernoulli(e^(−x)) draws for a rational x ≥ 0 whose denominator is
    below 2⁶⁴, exactly (module docstring)."""
    x = Fraction(x)
    if x < 0:
        raise ValueError("x must be ≥ 0")
    whole = math.floor(x)
    out = _bernoulli_exp_unit(words, x - whole, size)
    for _ in range(whole):
        out &= _bernoulli_exp_unit(words, Fraction(1), size)
    return out


def pass_integer_part(words: Words, levels: np.ndarray) -> np.ndarray:
    """True with probability exactly e^(−L) for each L ≥ 0 of ``levels`` (int64): the first L
    of a sequence of Bernoulli(e^(−1)) trials all succeed (only the draws still alive and with
    trials left are drawn each round)."""
    alive = np.ones(levels.size, dtype=bool)
    trial = 0
    while True:
        active = np.flatnonzero(alive & (levels > trial))
        if not active.size:
            return alive
        alive[active] = bernoulli_exp(words, Fraction(1), active.size)
        trial += 1
