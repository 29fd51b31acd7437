"""Array helpers shared across the library: some the numpy in use makes necessary, and the
projection onto the simplex (randomized response's distributions, privbayes' noisy tables)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import pyarrow.compute as pc


def distinct_sorted(values: np.ndarray) -> np.ndarray:
    """``np.unique(values)`` by sorting. numpy ≥ 2.3 answers a plain ``np.unique`` of integers
    from a hash table, which is 100 times slower than a sort when most values differ (numpy
    2.4 here, int64: 1,000,000 distinct 1.9 s against 0.02 s; 9,000,000 — a transaction file of
    1,000,000 lines — 21 s against 0.16 s)."""
    ordered = np.sort(values)
    first = np.ones(len(ordered), dtype=bool)
    np.not_equal(ordered[1:], ordered[:-1], out=first[1:])
    return ordered[first]


def factorize(series: pd.Series) -> tuple[np.ndarray, list[Any]]:
    """``pd.factorize(series)``: each cell's code (-1 for a missing cell) and the distinct
    values in order of first appearance. A text column backed by Arrow (how pandas 3 reads CSV
    text) is encoded by Arrow's own dictionary_encode, which pandas wraps in conversions:
    12.8 ms against 21.6 ms per 10⁶ short strings (pandas 3.1, pyarrow 26)."""
    if isinstance(series.array, pd.arrays.ArrowStringArray):
        encoded = pc.dictionary_encode(series.array.__arrow_array__()).combine_chunks()
        return encoded.indices.fill_null(-1).to_numpy(), encoded.dictionary.to_pylist()
    codes, uniques = pd.factorize(series, use_na_sentinel=True)
    return codes, list(uniques)


def project_to_simplex(v: np.ndarray, total: float = 1.0) -> np.ndarray:
    """Euclidean projection onto {p ≥ 0, Σp = total} (Duchi et al. 2008, by sorting):
    max(v − λ, 0) with λ set so the sum is ``total`` — the closest distribution to an unbiased
    vector in L2 (total 1), or the nearest table of ``total`` records to a noisy one."""
    v = np.asarray(v, dtype=float)
    u = np.sort(v)[::-1]
    css = np.cumsum(u) - total
    idx = np.arange(1, len(v) + 1)
    rho = np.nonzero(u - css / idx > 0)[0][-1]
    theta = css[rho] / (rho + 1.0)
    return np.maximum(v - theta, 0.0)
