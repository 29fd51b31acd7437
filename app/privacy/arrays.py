"""Array helpers the numpy in use makes necessary."""

from __future__ import annotations

import numpy as np


def distinct_sorted(values: np.ndarray) -> np.ndarray:
    """``np.unique(values)`` by sorting. numpy ≥ 2.3 answers a plain ``np.unique`` of integers
    from a hash table, which is 100 times slower than a sort when most values differ (numpy
    2.4 here, int64: 1,000,000 distinct 1.9 s against 0.02 s; 9,000,000 — a transaction file of
    1,000,000 lines — 21 s against 0.16 s)."""
    ordered = np.sort(values)
    first = np.ones(len(ordered), dtype=bool)
    np.not_equal(ordered[1:], ordered[:-1], out=first[1:])
    return ordered[first]
