"""InfoGain Mondrian's cut score (LeFevre, DeWitt & Ramakrishnan, "Workload-Aware
Anonymization", KDD 2006): the information gain of a classification label at every boundary of
every partition of a Mondrian round, all at once.

A boundary at position b of a partition [s, s + n) (records in one axis's order) splits it into
[s, b) and [b, s + n). With f(x) = x ln x and c_j the partition's count of label j,

    n · gain = f(n) − Σ_j f(c_j) − (f(n_L) − Σ_j f(c_Lj)) − (f(n_R) − Σ_j f(c_Rj))

(the partition's entropy minus the size-weighted entropies of the two sides, times n). The label
counts left of every boundary are those :mod:`~app.privacy.anonymity.mondrian` already takes for
l/α/t (:func:`counts_left`): one bincount of (segment, label) pairs, segments starting at every
partition start and every boundary, and a cumulative sum along the segments.

Whether a gain is positive is decided on the integer counts, not the float: the gain is 0
exactly when the left side's label counts are proportional to the partition's (c_Lj · n =
c_j · n_L for every j), so a label-pure partition, or a cut that leaves both sides with the
partition's distribution, is recognised as zero-gain whatever the rounding of the logarithms.
"""

from __future__ import annotations

import numpy as np

_LABEL_CELLS = 8_000_000  # (segments) × label values counted per pass; more labels take more passes


def counts_left(breaks: np.ndarray, segment: np.ndarray, codes: np.ndarray, m: int, starts: np.ndarray,
                sizes: np.ndarray, b: np.ndarray, bp: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per boundary ``b`` (a position, in partition ``bp``): the count of each code 0..m-1 left of
    it in its partition, and its partition's total count of each code — (len(b), m) both.

    ``breaks``: the sorted segment starts (every partition start and every boundary);
    ``segment``: the segment of each position's record; ``codes``: each position's code (the
    positions may be a subset of the records, ``segment`` and ``codes`` taken alike)."""
    counts = np.bincount(segment * m + codes, minlength=len(breaks) * m).reshape(-1, m)
    before = np.vstack([np.zeros((1, m), dtype=np.int64), np.cumsum(counts, axis=0)])
    first = before[np.searchsorted(breaks, starts)]  # counts before each partition
    total = before[np.searchsorted(breaks, starts + sizes)] - first
    return before[np.searchsorted(breaks, b)] - first[bp], total[bp]


def _xlogx(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, dtype=float)
    return x * np.log(np.where(x > 0, x, 1.0))


def boundary_gains(b: np.ndarray, bp: np.ndarray, starts: np.ndarray, sizes: np.ndarray,
                   labels: np.ndarray, n_labels: int,
                   counted: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Per boundary ``b`` (in partition ``bp``; ``labels`` the label code of each position of the
    round's order): the information gain of the label in bits per record of the partition, and
    whether it is positive (decided exactly, see the module docstring; the gain is 0 where not).

    The (segments × label values) table is counted in passes of at most ``_LABEL_CELLS`` cells:
    each pass the label values of a range, so memory stays bounded whatever the label's
    cardinality (the sums and the proportionality test add up over the passes).

    ``counted`` (a bool per position; all when None): the records whose labels are scored — with
    a population, the research subset's, the records released and those the classification
    metric counts (the lattice's loss likewise); the sides' sizes are then theirs."""
    if not len(b):
        return np.zeros(0), np.zeros(0, dtype=bool)
    breaks = np.union1d(starts, b)
    segment = np.searchsorted(breaks, np.arange(len(labels)), side="right") - 1
    if counted is None:
        n, lhs = sizes[bp], b - starts[bp]
    else:  # only these records' labels: the sides' sizes are their counts
        segment, labels = segment[counted], labels[counted]
        left, total = counts_left(breaks, segment, np.zeros(len(segment), dtype=np.int64), 1, starts, sizes, b, bp)
        n, lhs = total[:, 0], left[:, 0]
    spread = np.zeros(len(b))  # Σ_j f(c_Lj) + f(c_Rj) − f(c_j)
    positive = np.zeros(len(b), dtype=bool)
    width = max(1, _LABEL_CELLS // len(breaks))
    for first in range(0, n_labels, width):
        if width >= n_labels:
            seg, codes, m = segment, labels, n_labels
        else:
            mine = (labels >= first) & (labels < first + width)
            seg, codes, m = segment[mine], labels[mine] - first, min(width, n_labels - first)
        left, total = counts_left(breaks, seg, codes, m, starts, sizes, b, bp)
        spread += (_xlogx(left) + _xlogx(total - left) - _xlogx(total)).sum(axis=1)
        positive |= (left * n[:, None] != total * lhs[:, None]).any(axis=1)
    # a partition without a counted record has no positive gain (and no gain to divide)
    gain = (spread + _xlogx(n) - _xlogx(lhs) - _xlogx(n - lhs)) / (np.maximum(n, 1) * np.log(2.0))
    return np.where(positive, np.maximum(gain, 0.0), 0.0), positive
