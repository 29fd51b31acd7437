"""The exponential mechanism over many candidates, sampled exactly and vectorized.

``zcdp.ExactSampler.exponential`` proposes one candidate at a time uniformly and accepts it
with probability exp(−x) in Fraction arithmetic. Its expected number of proposals is
m / Σ_c exp(−x_c) (m candidates, x_c ≥ 0 each one's distance below the best weight): for a
quantile of 10⁶ continuous values over 10⁵ candidates the mass sits on one or two candidates
and a draw took 2.9 s (10⁴ candidates: 0.16 s), after 0.4 s building the 10⁵ Fraction scores
(measured on this machine). ``sample`` draws from the same law with the same proposal, but
decides a whole batch of proposals at once, in integers, and touches Fractions only for the
few proposals that survive the integer part of their exponent.

Exactness. Write x_c = L_c + r_c with L_c = ⌊x_c⌋ an integer and r_c ∈ [0, 1) rational
(x_c = Y_c / D exactly, Y_c and D integers: L_c = Y_c // D, r_c = (Y_c mod D) / D).

* A proposal is an index c uniform on {0, …, m − 1}: a 64-bit CSPRNG word w accepted when
  w < m·⌊(2⁶⁴ − 1)/m⌋ (a multiple of m, so w mod m is exactly uniform) and redrawn otherwise.
* It passes the integer part with probability exactly e^(−L_c): G, the number of successes
  of independent Bernoulli(e^(−1)) trials before the first failure, has P(G ≥ L) = e^(−L);
  a proposal passes when its first L_c trials all succeed (L_c = 0 passes at once).
* Bernoulli(e^(−1)) is Canonne, Kamath & Steinke's Algorithm 1 at γ = 1 (2020): K = 1,
  while Bernoulli(1/K): K += 1; succeed iff K is odd — P(K odd) = Σ_k (−1)^k / k! = e^(−1).
  Bernoulli(1/K) is a word uniform on {0, …, K − 1} (as above) equal to 0.
* A proposal that passed then passes its fractional part with probability exactly e^(−r_c)
  (``ExactSampler.bernoulli_exp`` on the Fraction r_c).

So one proposal is accepted with probability (1/m)·e^(−L_c)·e^(−r_c) = e^(−x_c)/m for index
c, independently of every other proposal. The first accepted one in a sequence of independent
proposals has the law e^(−x_c) / Σ_c' e^(−x_c'): a batch is such a sequence, examined in
order (the decisions after the first acceptance are drawn and discarded, which changes
nothing about it), and a batch without an acceptance is followed by a fresh one. No floating
point touches a probability.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np

from app.privacy.dp_release.zcdp import ExactSampler
from app.privacy.rng import SecureRandom

BATCH = 1 << 15  # the most proposals decided at once (enough for one batch at 10⁵ candidates)
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
    """One integer uniform on {0, …, b − 1} per entry b ≥ 1 of ``bounds`` (uint64 array), by
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


def bernoulli_exp_minus_one(words: Words, size: int) -> np.ndarray:
    """``size`` independent Bernoulli(e^(−1)) draws (CKS 2020, Alg. 1 at γ = 1)."""
    k = np.full(size, 2, dtype=np.uint64)  # Bernoulli(1/1) always succeeds: K starts at 2
    result = np.zeros(size, dtype=bool)
    pending = np.arange(size)
    while pending.size:
        again = uniform_below(words, k[pending]) == 0  # Bernoulli(1/K)
        stop = pending[~again]
        result[stop] = (k[stop] % np.uint64(2)) == 1
        k[pending[again]] += np.uint64(1)
        pending = pending[again]
    return result


def pass_integer_part(words: Words, levels: np.ndarray) -> np.ndarray:
    """True with probability exactly e^(−L) for each L ≥ 0 of ``levels`` (int64): the first L
    of a sequence of Bernoulli(e^(−1)) trials all succeed."""
    alive = np.ones(levels.size, dtype=bool)
    trial = 0
    while True:
        active = np.flatnonzero(alive & (levels > trial))
        if not active.size:
            return alive
        alive[active] = bernoulli_exp_minus_one(words, active.size)
        trial += 1


def sample(rng: SecureRandom, numerators: np.ndarray, denominator: int) -> int:
    """An index c with probability ∝ exp(−numerators[c] / denominator), exactly (module
    docstring). ``numerators``: non-negative integers (an object array of Python ints, exact
    at any size, or int64); ``denominator``: a positive integer."""
    numerators = np.asarray(numerators)
    m = numerators.size
    if m == 0:
        raise ValueError("no candidates")
    if denominator <= 0 or numerators.min() < 0:
        raise ValueError("the exponents must be non-negative")
    whole = (numerators // denominator).astype(np.int64)  # object arithmetic: exact integers
    rest = numerators % denominator
    exact = ExactSampler(rng)
    words = Words(rng)
    batch = min(BATCH, 4 * m)  # m proposals are expected at most (the best weight is e^0)
    while True:
        proposals = uniform_below(words, np.full(batch, m, dtype=np.uint64)).astype(np.int64)
        for c in proposals[pass_integer_part(words, whole[proposals])]:
            if exact.bernoulli_exp(Fraction(int(rest[c]), denominator)):
                return int(c)
