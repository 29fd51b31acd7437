"""distinct_sorted is np.unique of an integer array, by sorting (numpy ≥ 2.3 hashes, 100× slower)."""

from __future__ import annotations

import numpy as np

from app.privacy.arrays import distinct_sorted
from app.privacy.itemsets.encoding import read_fimi


def test_distinct_sorted_is_np_unique():
    rng = np.random.default_rng(5)
    for values in (rng.integers(-50, 50, 1_000), rng.integers(0, 2**40, 10_000), np.arange(7)[::-1],
                   np.zeros(0, np.int64), np.array([3])):
        got = distinct_sorted(values)
        assert got.dtype == values.dtype and np.array_equal(got, np.unique(values))


def test_fimi_lines_keep_their_items_once_and_in_order():
    tx = read_fimi(b"3 1 3\n\n7 1\n")
    assert tx.labels == ("1", "3", "7")
    assert tx.indptr.tolist() == [0, 2, 2, 4] and tx.indices.tolist() == [0, 1, 0, 2]
    assert read_fimi(b"").n_transactions == 1 and len(read_fimi(b"").indices) == 0
