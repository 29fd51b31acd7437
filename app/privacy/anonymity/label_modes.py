"""Per equivalence class, how many records carry its most frequent label: what SafePub's
classification score sums (safepub_scores.py) and what the lattice's classification metric
subtracts from the records kept (lattice.py: the records a majority-label classifier of the
release gets wrong)."""

from __future__ import annotations

import numpy as np


def label_modes(ids: np.ndarray, n_classes: int, labels: np.ndarray, counts: np.ndarray | None,
                n_labels: int) -> np.ndarray:
    """The most frequent label's count per class (0 for a class with no record counted). Per row
    — a record, or a distinct tuple standing for ``counts`` records (weights; 0 leaves a row
    out) —: ``ids`` its class < n_classes, ``labels`` its label code < n_labels."""
    pair = ids.astype(np.int64) * n_labels + labels
    if n_classes * n_labels <= 4 * len(ids) + 1024:
        totals = np.bincount(pair, weights=counts, minlength=n_classes * n_labels).astype(np.int64)
        return totals.reshape(n_classes, n_labels).max(axis=1)
    # many labels: only the (class, label) groups present
    groups, inverse = np.unique(pair, return_inverse=True)
    totals = np.bincount(inverse.ravel(), weights=counts, minlength=len(groups)).astype(np.int64)
    owner = groups // n_labels
    starts = np.flatnonzero(np.r_[True, owner[1:] != owner[:-1]])
    modes = np.zeros(n_classes, dtype=np.int64)
    modes[owner[starts]] = np.maximum.reduceat(totals, starts)
    return modes
