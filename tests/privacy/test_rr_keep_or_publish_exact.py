"""randomize_codes at the exact words where it switches from keeping a cell to publishing a
value, with true values that tell the two apart.

test_randomized_response_realized_epsilon.py feeds the boundary words with every true value 0:
keeping a cell and publishing value 0 then give the same output, so a sampler that kept the cell
on the first word of the randomized range (u ≤ T0), or on every word of value 0's segment
(segment ≤ 0), passed it — realizing p0' = (T0 + 1)/2^32 or p0 + p_0 while the ε was computed
from T0 (mutation testing)."""

from __future__ import annotations

import numpy as np
import pytest

from app.privacy.randomized_response import CHUNK, randomize_codes, realized_segments
from app.privacy.rng import SecureRandom

from tests.privacy.test_randomized_response_realized_epsilon import WORDS, FixedWords


@pytest.mark.parametrize("p0,p", [(0.3, np.full(7, 0.1)), (0.5, np.full(4, 0.125)),
                                  (0.4, np.array([0.3, 0.2, 0.1])), (0.2, np.array([0.05, 0.5, 0.25])),
                                  (0.5, np.array([0.125] * 4 + [0.0])), (0.5, np.array([0.0] + [0.125] * 4)),
                                  (0.5, np.array([0.25, 0.25, 0.0, 0.0])),
                                  (0.25, np.full(20, 0.75 / 20)), (0.25, np.linspace(1, 2, 20) / np.linspace(1, 2, 20).sum() * 0.75)])
def test_a_word_below_t0_keeps_the_true_value_and_a_word_above_publishes_its_segment(p0, p):
    k = len(p)
    keep, counts = realized_segments(p0, p)
    starts = keep + np.concatenate([[0], np.cumsum(counts)[:-1]])
    probes = np.unique(np.concatenate([[0, keep - 1, keep, keep + 1, WORDS - 1], starts, starts - 1,
                                       starts + 1, starts + counts - 1]))
    probes = probes[(probes >= 0) & (probes < WORDS)]
    segment = np.searchsorted(starts, probes, side="right") - 1
    for true in (0, k - 1):
        out = randomize_codes(np.full(len(probes), true, dtype=np.int64), p0, p, FixedWords(probes))
        expected = np.where(probes < keep, true, segment)
        assert np.array_equal(out.astype(np.int64), expected), (true, probes[out != expected])


class WordStream(SecureRandom):
    """Hands out successive slices of one array of words, however randomize_codes chunks."""

    def __init__(self, words):
        super().__init__(seed=0)
        self.words = np.asarray(words, dtype=np.uint32)
        self.at = 0

    def uint32(self, size):
        out = self.words[self.at:self.at + size]
        assert len(out) == size, "asked for more words than the column has cells"
        self.at += size
        return out.copy()


@pytest.mark.parametrize("p0,p", [(0.9, np.full(200, 0.1 / 200)), (0.25, np.full(3, 0.25)),
                                  (0.7, np.array([0.2, 0.05, 0.05])),
                                  (0.25, np.linspace(1, 3, 300) / np.linspace(1, 3, 300).sum() * 0.75)])
def test_every_cell_of_a_long_column_is_decided_by_its_own_word(p0, p):
    """Three chunks and a bit: each cell is kept or published from its own word, whichever
    chunk it falls in, with codes beyond 127 (k = 200, 300) intact."""
    k, n = len(p), 3 * CHUNK + 17
    words = np.random.default_rng(5).integers(0, WORDS, n, dtype=np.uint32)
    true = np.random.default_rng(6).integers(0, k, n)
    stream = WordStream(words)
    out = randomize_codes(true, p0, p, stream).astype(np.int64)
    assert stream.at == n
    keep, counts = realized_segments(p0, p)
    starts = keep + np.concatenate([[0], np.cumsum(counts)[:-1]])
    expected = np.where(words < keep, true, np.searchsorted(starts, words, side="right") - 1)
    assert np.array_equal(out, expected)
    assert abs(np.mean(words < keep) - p0) < 0.01  # the words do reach both sides


def test_p0_of_one_keeps_every_cell_whatever_the_word():
    words = np.array([0, 2**31, WORDS - 2, WORDS - 1], dtype=np.uint32)
    true = np.array([2, 0, 1, 2])
    out = randomize_codes(true, 1.0, np.zeros(3), FixedWords(words))
    assert np.array_equal(out.astype(np.int64), true)
    assert realized_segments(1.0, np.zeros(3))[0] == WORDS


@pytest.mark.parametrize("p", [np.array([0.5 - 1e-10, 1e-10]), np.array([1e-10, 0.25, 0.25 - 1e-10]),
                               np.array([0.5, 0.0])])
def test_the_order_free_bound_is_infinite_when_a_segment_may_hold_no_word(p):
    """epsilon_bound prices a column whose p_j order is unknown: each segment is within 2 words
    of p_j·2^32, so a p_j of ≤ 2 words may realize none and the bound is ∞ — not NaN or a
    negative number from ln of (p_j·2^32 − 2) ≤ 0 (mutation testing: the guard read 'and', or
    np.all, and the realized-epsilon tests passed)."""
    from app.privacy.randomized_response import epsilon_bound

    assert epsilon_bound(0.5, p) == float("inf")
    assert epsilon_bound(1.0, np.zeros(2)) == float("inf")


def test_the_order_free_bound_covers_every_order_of_segments_a_few_words_wide():
    """A p_j of 2.976 words realizes 2 words in some orders (its two edges round apart): the
    realized ε (20.28) is then above the ideal formula's (19.89), and the bound's 2-word
    margins are what cover it (mutation testing: without the −2 of the denominator the bound
    was 19.89 and every other test passed)."""
    import itertools
    import math

    from app.privacy.randomized_response import delivered_epsilon, epsilon_bound, local_epsilon

    p0 = 0.3
    small = np.array([7.6, 2.976, 5.5]) / WORDS
    p = np.append(small, 1.0 - p0 - small.sum())
    realized = [delivered_epsilon(p0, p[list(order)]) for order in itertools.permutations(range(4))]
    assert max(realized) > local_epsilon(p0, p) + 0.3
    for order in itertools.permutations(range(4)):
        # a segment of 2.976 words holds at least one word in every order: finite
        assert math.inf > epsilon_bound(p0, p[list(order)]) >= max(realized)


@pytest.mark.parametrize("words", [1.5, 2.0])
def test_the_order_free_bound_is_infinite_up_to_two_words_not_nan(words):
    """p_j of 1.5 or exactly 2 words: the bound's denominator p_j·2^32 − 2 is ≤ 0 there."""
    from app.privacy.randomized_response import epsilon_bound

    small = words / WORDS
    assert epsilon_bound(0.5, np.array([small, 0.5 - small])) == float("inf")


def test_the_order_free_bound_of_p0_one_is_infinite_even_with_p_j_of_a_few_words():
    """p0 = 1 keeps every cell (randomize_codes publishes the truth), whatever p_j within the
    1e-9 the validation allows (here 2.15 words each): ε is ∞, not ln((2^32 + 4.15)/0.15) ≈ 24.1."""
    from app.privacy.randomized_response import delivered_epsilon, epsilon_bound

    p = np.array([5e-10, 5e-10])
    assert delivered_epsilon(1.0, p) == float("inf")
    assert epsilon_bound(1.0, p) == float("inf")


def test_the_order_free_bound_is_the_ideal_level_for_wide_segments():
    """At p0 = 0.9 and p_j of 0.05 (2·10^8 words) the 2-word margins move ε by ~1e-8."""
    from app.privacy.randomized_response import delivered_epsilon, epsilon_bound, local_epsilon

    p = np.array([0.05, 0.05])
    assert epsilon_bound(0.9, p) == pytest.approx(local_epsilon(0.9, p), rel=1e-7)
    assert epsilon_bound(0.9, p) >= delivered_epsilon(0.9, p)
