"""Property-based tests of the randomized-response channels and the zCDP accountant:
each channel's transition matrix is stochastic and its stated ε is the log of the largest
ratio of two entries of a column — for the probabilities asked for and for the ones the
sampler realizes on 2^32 words, which the sampler follows word for word; reconstruction of an
exact expected distribution (one step or a chain) gives the truth back; the zCDP conversion is
monotone and composing never buys a smaller ε."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import assume, given, note
from hypothesis import strategies as st

from app.privacy.dp_release.zcdp import Ledger, delivered, rho_for
from app.privacy.noise import zcdp_delta
from app.privacy.randomized_response import (
    delivered_epsilon, probability_threshold, epsilon_bound, estimate_distribution, local_epsilon, randomize_codes,
    realized_segments,
)
from app.privacy.rr_channels import CategoricalChannel, project_to_simplex
from app.privacy.warner import flip_mask, warner_epsilon
from tests.support.properties import bounded

WORDS = 2**32


class _Words:
    """An rng whose uint32 draws are given words, in order (what randomize_codes reads)."""

    def __init__(self, words: np.ndarray) -> None:
        self.words = np.asarray(words, dtype=np.uint32)
        self.at = 0

    def uint32(self, size) -> np.ndarray:
        out = self.words[self.at:self.at + size]
        self.at += size
        return out


@st.composite
def errph_probabilities(draw):
    """p0 and the p_j (Σ = 1 - p0): uniform, random, with tiny or zero entries."""
    k = draw(st.integers(1, 20))
    p0 = draw(st.sampled_from([0.0, 1e-12, 0.05, 0.3, 0.5, 0.9, 0.999999, 1.0]) | st.floats(0, 1))
    if draw(st.booleans()):
        p = np.full(k, (1.0 - p0) / k)
    else:
        weights = np.array(draw(st.lists(st.sampled_from([0.0, 1e-12, 1e-9, 0.1, 1.0, 3.0])
                                         | st.floats(0, 5), min_size=k, max_size=k)))
        assume(weights.sum() > 0)
        p = weights / weights.sum() * (1.0 - p0)
    return float(p0), p


def _ratio_epsilon(matrix: np.ndarray) -> float:
    """log of the largest ratio of two entries of one column (∞ when a column has 0 beside a
    positive entry; columns of zeros publish nothing)."""
    worst = 0.0
    for column in matrix.T:
        if column.max() == 0:
            continue
        if column.min() == 0:
            return math.inf
        worst = max(worst, math.log(column.max()) - math.log(column.min()))
    return worst


@bounded(300)
@given(errph_probabilities())
def test_errph_matrices_are_stochastic_and_their_epsilon_is_the_largest_ratio(case):
    p0, p = case
    note(f"p0={p0!r} p={p.tolist()!r}")
    k = len(p)
    ideal = p0 * np.eye(k) + p[None, :]  # row: true value, column: published value
    assert np.allclose(ideal.sum(axis=1), 1.0) and (ideal >= 0).all()
    if k > 1 and (p > 0).all():
        assert local_epsilon(p0, p) == pytest.approx(_ratio_epsilon(ideal), rel=1e-9, abs=1e-12)
    elif (p == 0).any():
        assert local_epsilon(p0, p) == math.inf
    # what the sampler realizes: T0 keep words and c_j words per value, 2^32 in all
    keep, counts = realized_segments(p0, p)
    assert keep + int(counts.sum()) == WORDS and keep >= 0 and (counts >= 0).all()
    realized = (keep * np.eye(k) + counts[None, :]) / WORDS
    assert np.allclose(realized.sum(axis=1), 1.0)
    stated = delivered_epsilon(p0, p)
    expected = _ratio_epsilon(realized)
    if keep == WORDS or keep == 0:  # every cell kept (∞), none kept (the output ignores the input)
        assert stated == (math.inf if keep == WORDS else 0.0)
    elif k == 1:  # one value: the output is the input whatever is drawn; the formula charges more
        assert stated >= expected
    else:
        assert stated == pytest.approx(expected, rel=1e-12) if math.isfinite(expected) else stated == math.inf
    assert stated <= epsilon_bound(p0, p) or epsilon_bound(p0, p) == math.inf
    # within about one word of each probability asked for
    assert abs(keep / WORDS - p0) <= 2.0 / WORDS
    assert np.all(np.abs(counts / WORDS - p) <= 2.0 * k / WORDS)


@bounded(150)
@given(errph_probabilities(), st.data())
def test_the_sampler_publishes_what_its_realized_segments_say(case, data):
    """Word for word: a word below T0 keeps the cell, and the next c_j words publish value j
    (words at every segment boundary and a few at random)."""
    p0, p = case
    note(f"p0={p0!r} p={p.tolist()!r}")
    k = len(p)
    keep, counts = realized_segments(p0, p)
    edges = np.concatenate([[0, keep], keep + np.cumsum(counts)])  # segment j: [edges[j+1], edges[j+2])
    words = set()
    for e in edges:
        words |= {int(e) - 1, int(e), int(e) + 1}
    words |= set(data.draw(st.lists(st.integers(0, WORDS - 1), max_size=20)))
    words = np.array(sorted(w for w in words if 0 <= w < WORDS), dtype=np.int64)
    true_code = data.draw(st.integers(0, k - 1))
    out = randomize_codes(np.full(len(words), true_code), p0, p, _Words(words.astype(np.uint32)))
    expected = np.where(words < keep, true_code,
                        np.searchsorted(edges[2:], words, side="right"))
    assert np.array_equal(out.astype(np.int64), expected), (words, out, expected)


@bounded(100)
@given(st.floats(0, 1) | st.sampled_from([0.0, 0.5, 1.0, 2.0**-33, 1 - 2.0**-33, 0.75]))
def test_warner_matrix_is_stochastic_and_its_epsilon_is_the_realized_ratio(p):
    """flip_mask flips a cell on exactly the words below T = round((1 - p)·2^32); the stated ε
    is the log ratio of the realized matrix [[p', 1-p'], [1-p', p']], p' = 1 - T/2^32 (∞ at
    p = 0 or 1, where the ideal output is the input or its negation)."""
    threshold = 0 if p >= 1.0 else int(probability_threshold(1.0 - p))
    words = np.array(sorted({0, max(threshold - 1, 0), threshold, min(threshold + 1, WORDS - 1), WORDS - 1}))
    flips = flip_mask(len(words), p, _Words(words.astype(np.uint32)))
    assert np.array_equal(flips, words < threshold)
    keep = 1.0 - threshold / WORDS
    matrix = np.array([[keep, 1 - keep], [1 - keep, keep]])
    assert np.allclose(matrix.sum(axis=1), 1.0)
    realized = _ratio_epsilon(matrix)
    stated = warner_epsilon(p)
    if 0.0 < p < 1.0:
        assert stated == pytest.approx(realized, rel=1e-12) if math.isfinite(realized) else stated == math.inf
    else:
        assert stated == math.inf


@st.composite
def distributions(draw, k: int):
    weights = np.array(draw(st.lists(st.integers(0, 20), min_size=k, max_size=k)), dtype=float)
    assume(weights.sum() > 0)
    return weights / weights.sum()


@bounded(150)
@given(st.data())
def test_reconstruction_of_exact_expected_counts_gives_the_truth_through_a_chain(data):
    k = data.draw(st.integers(2, 6))
    labels = tuple(f"v{i}" for i in range(k))
    truth = data.draw(distributions(k))
    channel = None
    expected = truth
    for _ in range(data.draw(st.integers(1, 3))):
        p0 = data.draw(st.floats(0.05, 1.0))
        p = data.draw(distributions(k)) * (1.0 - p0)
        step = CategoricalChannel(labels, p0, tuple(p), labels)
        channel = step if channel is None else channel.then(step)
        expected = p0 * expected + p  # the published distribution after this step
    n = 10**9
    est = channel.estimate(expected * n)
    assert np.allclose(est["estimate"], truth, atol=1e-9)
    assert np.allclose(est["consistent"], truth, atol=1e-6)
    single_p0 = data.draw(st.floats(0.05, 1.0))
    single_p = data.draw(distributions(k)) * (1.0 - single_p0)
    published = single_p0 * truth + single_p
    assert np.allclose(estimate_distribution(published * n, single_p0, single_p), truth, atol=1e-9)


@bounded(150)
@given(st.lists(st.floats(-5, 5), min_size=1, max_size=8))
def test_the_simplex_projection_is_a_distribution_and_keeps_one(v):
    v = np.array(v)
    out = project_to_simplex(v)
    assert (out >= 0).all() and out.sum() == pytest.approx(1.0)
    # the closest point: no distribution among the vertices and the uniform one is closer
    candidates = [np.eye(len(v))[i] for i in range(len(v))] + [np.full(len(v), 1 / len(v))]
    assert all(np.linalg.norm(out - v) <= np.linalg.norm(c - v) + 1e-9 for c in candidates)
    assert np.allclose(project_to_simplex(out), out, atol=1e-12)


@bounded(60)
@given(st.floats(1e-6, 5.0), st.floats(1e-6, 5.0), st.floats(0.01, 10.0))
def test_zcdp_delta_grows_with_rho_and_falls_with_epsilon(rho1, rho2, epsilon):
    lo, hi = sorted((rho1, rho2))
    assert zcdp_delta(lo, epsilon) <= zcdp_delta(hi, epsilon) + 1e-15
    assert zcdp_delta(hi, epsilon) <= zcdp_delta(hi, epsilon / 2) + 1e-15
    assert 0.0 <= zcdp_delta(lo, epsilon) <= 1.0


@bounded(40)
@given(st.floats(0.05, 10.0), st.floats(0.05, 10.0), st.sampled_from([1e-9, 1e-6, 1e-3]),
       st.integers(1, 200))
def test_rho_for_is_monotone_and_delivers_what_it_promises(eps1, eps2, delta, measurements):
    lo, hi = sorted((eps1, eps2))
    rho_lo, slack, tails = rho_for(lo, delta, measurements)
    rho_hi, _, _ = rho_for(hi, delta, measurements)
    assert rho_lo <= rho_hi * (1 + 1e-9)
    assert rho_for(lo, delta * 10, measurements)[0] >= rho_lo * (1 - 1e-9)
    assert rho_for(lo, delta, measurements * 2)[0] <= rho_lo * (1 + 1e-9)
    eps, spent_delta = delivered(rho_lo, lo, slack, tails)
    assert eps == lo and spent_delta <= delta * (1 + 1e-9)
    # composing: the whole ledger's ρ converts to at least the ε-cost of any part at the same δ
    ledger = Ledger(rho_lo)
    parts = [rho_lo * 0.3, rho_lo * 0.7]
    for part in parts:
        ledger.spend(part, {"what": "a measurement"})
    assert ledger.spent == pytest.approx(rho_lo)
    for part in parts:
        assert zcdp_delta(part, lo - slack) <= zcdp_delta(ledger.spent, lo - slack) + 1e-15
    with pytest.raises(RuntimeError):
        ledger.spend(rho_lo * 0.01, {"what": "one too many"})
