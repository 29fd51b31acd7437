"""The bulk exact coins (app/privacy/exact_bernoulli.py) safepub's record sampling and
exact_em's proposals draw: each law's rate within 5 standard errors of the exact value, the
uniform draws uniform by a chi-square test, a bad probability refused."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from scipy import stats

from app.privacy.exact_bernoulli import Words, bernoulli_exp, pass_integer_part, uniform_below
from app.privacy.rng import SecureRandom


@pytest.mark.parametrize("x", [Fraction(0), Fraction(1, 8), Fraction(1, 3), Fraction(0.9), Fraction(1),
                               Fraction(5, 2)])
def test_bernoulli_exp_has_the_rate(x):
    n = 200_000
    draws = bernoulli_exp(Words(SecureRandom(seed=3)), x, n)
    p = math.exp(-float(x))
    assert abs(draws.sum() - n * p) <= 5 * math.sqrt(n * p * (1 - p)) + (0.5 if p == 1 else 0)


def test_uniform_below_is_uniform_and_the_integer_part_passes_at_e_to_minus_l():
    words = Words(SecureRandom(seed=13))
    draws = uniform_below(words, np.full(60_000, 6, dtype=np.uint64))
    assert draws.max() < 6 and stats.chisquare(np.bincount(draws.astype(np.int64), minlength=6)).pvalue > 1e-3
    mixed = uniform_below(words, np.array([1, 2, 2**63 + 5] * 20_000, dtype=np.uint64)).reshape(-1, 3)
    assert (mixed[:, 0] == 0).all() and set(np.unique(mixed[:, 1]).tolist()) == {0, 1}
    assert (mixed[:, 2] < np.uint64(2**63 + 5)).all()
    levels = np.array([0, 1, 2, 3] * 50_000, dtype=np.int64)
    passed = pass_integer_part(words, levels)
    for level in range(4):
        rate, p = passed[levels == level].mean(), math.exp(-level)
        assert abs(rate - p) <= 5 * math.sqrt(p * (1 - p) / 50_000) + (1e-12 if level == 0 else 0)


def test_a_probability_with_a_denominator_of_2_to_the_64_is_refused():
    with pytest.raises(ValueError, match="denominator"):
        bernoulli_exp(Words(SecureRandom(seed=1)), Fraction(1, 2**64), 10)
    with pytest.raises(ValueError, match="≥ 0"):
        bernoulli_exp(Words(SecureRandom(seed=1)), Fraction(-1, 2), 10)


class _Words:
    """Stand-in for the CSPRNG: hands out the given words, then zeros."""

    def __init__(self, words: list[int]) -> None:
        self.words = list(words)

    def uint64(self, size: int) -> np.ndarray:
        out, self.words = self.words[:size], self.words[size:]
        return np.array(out + [0] * (size - len(out)), dtype=np.uint64)


def test_uniform_below_rejects_the_words_of_the_incomplete_last_block():
    """w mod b is uniform only for w < b·⌊(2⁶⁴ − 1)/b⌋; the words above are redrawn. For b = 3·2⁶²
    accepting them would put half the mass (not a third) below 2⁶²."""
    b = 3 * 2**62
    assert uniform_below(Words(_Words([b, 2**64 - 1, 7])), np.array([b], dtype=np.uint64))[0] == 7
    assert uniform_below(Words(_Words([2**64 - 1, 5])), np.array([3], dtype=np.uint64))[0] == 2  # 3 | 2⁶⁴ − 1
    n = 60_000
    draws = uniform_below(Words(SecureRandom(seed=4)), np.full(n, b, dtype=np.uint64))
    low = (draws < np.uint64(2**62)).mean()
    assert abs(low - 1 / 3) <= 5 * math.sqrt(2 / 9 / n)
