"""Property-based tests of itemset support counting: the bit-packed matrix and its counting
primitives (AND, the bit-sliced weight counter, the pattern counter, per segment) equal a
brute-force count over random transactions, CSR packing round-trips, and exact Apriori finds
exactly the itemsets a brute force over every combination finds."""

from __future__ import annotations

import itertools

import numpy as np
from hypothesis import given, note
from hypothesis import strategies as st

from app.privacy.data import TransactionData
from app.privacy.itemsets import bits
from app.privacy.itemsets.mining import apriori
from app.privacy.itemsets.supports import exact_oracle
from tests.support.properties import bounded


@st.composite
def transactions(draw, max_rows: int = 200):
    """A dense 0/1 matrix (rows × items; rows across word boundaries), a segment per row and
    some itemsets of one size."""
    m = draw(st.integers(1, 7))
    n = draw(st.sampled_from([0, 1, 63, 64, 65, 127, 129]) | st.integers(0, max_rows))
    density = draw(st.sampled_from([0.0, 0.1, 0.5, 0.9, 1.0]))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    dense = rng.random((n, m)) < density
    segments = draw(st.integers(1, 4))
    row_segment = rng.integers(0, segments, n)
    k = draw(st.integers(1, min(m, 4)))
    itemsets = np.array(draw(st.lists(st.lists(st.integers(0, m - 1), min_size=k, max_size=k, unique=True)
                                      .map(sorted), min_size=1, max_size=10)), dtype=np.int64)
    return dense, row_segment, segments, itemsets


def _csr(dense: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    rows, items = np.nonzero(dense)
    indptr = np.concatenate([[0], np.cumsum(np.bincount(rows, minlength=len(dense)))]).astype(np.int64)
    return indptr, items.astype(np.int64)


@bounded(150)
@given(transactions())
def test_bit_counts_equal_a_brute_force_count_per_segment(case):
    dense, row_segment, segments, itemsets = case
    note(f"dense={dense.astype(int).tolist()} segments={row_segment.tolist()} itemsets={itemsets.tolist()}")
    n, m = dense.shape
    indptr, indices = _csr(dense)
    bm = bits.from_csr(indptr, indices, m, row_segment, segments)
    assert bm.n_rows == n and bm.n_segments == segments
    assert list(bm.seg_rows) == [int((row_segment == s).sum()) for s in range(segments)]
    k = itemsets.shape[1]
    counts = bits.itemset_counts(bm, itemsets)
    weights = bits.weight_counts(bm, itemsets)
    patterns = bits.pattern_counts(bm, itemsets) if k <= 4 else None
    for b, itemset in enumerate(itemsets):
        cols = dense[:, itemset]
        for s in range(segments):
            mine = cols[row_segment == s]
            assert counts[b, s] == int(mine.all(axis=1).sum())
            held = mine.sum(axis=1)
            assert list(weights[b, s]) == [int((held == w).sum()) for w in range(k + 1)]
            code = (mine * (1 << np.arange(k - 1, -1, -1))).sum(axis=1)  # first item most significant
            assert list(patterns[b, s]) == [int((code == i).sum()) for i in range(2**k)]
    # the layout is by segment, rows in their order within a segment: to_csr gives that back
    back_indptr, back_indices = bits.to_csr(bm)
    order = np.argsort(row_segment, kind="stable")
    expected = dense[order]
    got = np.zeros_like(dense)
    for r in range(n):
        got[r, back_indices[back_indptr[r]:back_indptr[r + 1]]] = True
    assert np.array_equal(got, expected)
    # one segment, packed from the dense form: the same words
    single = bits.from_csr(indptr, indices, m)
    assert np.array_equal(single.words, bits.from_dense(dense).words)


@bounded(80)
@given(transactions(max_rows=120), st.sampled_from([0.0, 0.05, 0.2, 0.5, 1.0]))
def test_exact_apriori_finds_exactly_the_frequent_itemsets(case, minsup):
    dense, _, _, _ = case
    n, m = dense.shape
    if n == 0:
        return
    indptr, indices = _csr(dense)
    td = TransactionData(indptr=indptr, indices=indices.astype(np.int32), labels=tuple(f"i{j}" for j in range(m)))
    levels = apriori(exact_oracle(td), minsup, None)
    found = {tuple(int(x) for x in row): float(s) for level in levels
             for row, s in zip(level.itemsets, level.support)}
    expected = {}
    for size in range(1, m + 1):
        for itemset in itertools.combinations(range(m), size):
            support = dense[:, list(itemset)].all(axis=1).mean()
            if support >= minsup:
                expected[itemset] = float(support)
    assert found.keys() == expected.keys()
    assert all(abs(found[key] - expected[key]) < 1e-12 for key in found)
