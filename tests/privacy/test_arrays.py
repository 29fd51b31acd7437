"""distinct_sorted is np.unique of an integer array, by sorting (numpy ≥ 2.3 hashes, 100× slower);
factorize is pd.factorize, by Arrow for Arrow-backed text."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from app.privacy.arrays import distinct_sorted, factorize
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


@pytest.mark.parametrize("series", [
    pd.Series(["b", "a", None, "c", "a"], dtype="str"),  # how pandas 3 reads CSV text
    pd.Series(["b", None, "b"], dtype="string[pyarrow]"),
    pd.Series(pd.arrays.ArrowStringArray(pa.chunked_array([pa.array(["x", "y", None]), pa.array(["y", "z", "x"])]))),
    pd.Series([], dtype="str"), pd.Series([None, None], dtype="str"),
    pd.Series(["b", "a", None], dtype=object), pd.Series([1.0, np.nan, 1.0]),
])
def test_factorize_is_pd_factorize(series):
    codes, uniques = factorize(series)
    expected_codes, expected_uniques = pd.factorize(series, use_na_sentinel=True)
    assert codes.tolist() == expected_codes.tolist()  # one dictionary across Arrow's chunks
    assert uniques == list(expected_uniques)
