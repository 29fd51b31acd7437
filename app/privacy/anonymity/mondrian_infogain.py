"""InfoGain Mondrian's cut score (LeFevre, DeWitt & Ramakrishnan, "Workload-Aware
Anonymization", KDD 2006): the information gain of a classification label at every boundary of
every partition of a Mondrian round, all at once.

A boundary at position b of a partition [s, s + n) (records in one axis's order) splits it into
[s, b) and [b, s + n). With f(x) = x ln x and c_j the partition's count of label j,

    n · gain = f(n) − Σ_j f(c_j) − (f(n_L) − Σ_j f(c_Lj)) − (f(n_R) − Σ_j f(c_Rj))

(the partition's entropy minus the size-weighted entropies of the two sides, times n). The label
counts left of every boundary are those Mondrian already takes for l/α/t
(mondrian_cuts.counts_left): one bincount of (segment, label) pairs, segments starting at every
partition start and every boundary, and a cumulative sum along the segments — while that table
stays within a few cells per record; a label of more values is scored from each record's rank
among its partition's records of its label instead (:func:`_gains_by_rank`), at a cost that does
not grow with the label's cardinality.

Whether a gain is positive is decided on the integer counts, not the float: the gain is 0
exactly when the left side's label counts are proportional to the partition's (c_Lj · n =
c_j · n_L for every j), so a label-pure partition, or a cut that leaves both sides with the
partition's distribution, is recognised as zero-gain whatever the rounding of the logarithms.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from app.privacy.anonymity.models import Constraints, Sensitive
from app.privacy.anonymity import mondrian_cuts
from app.privacy.anonymity.mondrian_cuts import boundaries, counts_left, layered_cut, sides_satisfy

_LABEL_CELLS = 8_000_000  # most (segments) × label values counted at once; beyond: by rank


def _xlogx(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, dtype=float)
    return x * np.log(np.where(x > 0, x, 1.0))


def boundary_gains(b: np.ndarray, bp: np.ndarray, starts: np.ndarray, sizes: np.ndarray,
                   labels: np.ndarray, n_labels: int,
                   counted: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Per boundary ``b`` (in partition ``bp``; ``labels`` the label code of each position of the
    round's order): the information gain of the label in bits per record of the partition, and
    whether it is positive (decided exactly, see the module docstring; the gain is 0 where not).

    When the (segments × label values) table is no larger than a few cells per record (and
    ``_LABEL_CELLS``) it is counted at once; a label of more values is scored by the records'
    ranks (:func:`_gains_by_rank`), whose cost does not grow with the label's cardinality (the
    table's did: 20,000 records of 10,000 labels took 85 s, 100,000 of 2,000 labels 57 s).

    ``counted`` (a bool per position; all when None): the records whose labels are scored — with
    a population, the research subset's, the records released and those the classification
    metric counts (the lattice's loss likewise); the sides' sizes are then theirs."""
    if not len(b):
        return np.zeros(0), np.zeros(0, dtype=bool)
    breaks = np.union1d(starts, b)
    if len(breaks) * n_labels > min(_LABEL_CELLS, 4 * len(labels) + 1024):  # the table outgrows the records
        return _gains_by_rank(b, bp, starts, sizes, labels, counted)
    segment = np.searchsorted(breaks, np.arange(len(labels)), side="right") - 1
    if counted is None:
        n, lhs = sizes[bp], b - starts[bp]
    else:  # only these records' labels: the sides' sizes are their counts
        segment, labels = segment[counted], labels[counted]
        left, total = counts_left(breaks, segment, np.zeros(len(segment), dtype=np.int64), 1, starts, sizes, b, bp)
        n, lhs = total[:, 0], left[:, 0]
    left, total = counts_left(breaks, segment, labels, n_labels, starts, sizes, b, bp)
    spread = (_xlogx(left) + _xlogx(total - left) - _xlogx(total)).sum(axis=1)  # Σ_j f(c_Lj) + f(c_Rj) − f(c_j)
    positive = (left * n[:, None] != total * lhs[:, None]).any(axis=1)
    return _gain(spread, n, lhs, positive), positive


def _gain(spread: np.ndarray, n: np.ndarray, lhs: np.ndarray, positive: np.ndarray) -> np.ndarray:
    # a partition without a counted record has no positive gain (and no gain to divide)
    gain = (spread + _xlogx(n) - _xlogx(lhs) - _xlogx(n - lhs)) / (np.maximum(n, 1) * np.log(2.0))
    return np.where(positive, np.maximum(gain, 0.0), 0.0)


def _gains_by_rank(b: np.ndarray, bp: np.ndarray, starts: np.ndarray, sizes: np.ndarray,
                   labels: np.ndarray, counted: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    """:func:`boundary_gains` for a label of many values, in O(records · log) per call.

    Sorted by (partition, label, position), a record of rank r among its partition's T records of
    its label moves one unit of f from the right side to the left when the boundary passes it:
    f(r + 1) + f(T − r − 1) − f(r) − f(T − r). The spread at a boundary is the sum of these over
    the partition's records left of it (a cumulative sum in position order).

    Exactly zero gain (c_Lj · n = c_j · n_L for every label j) needs n | n_L · c_j for every j, so
    n | n_L · G with G the gcd of the partition's label counts: every other boundary is positive.
    The few left (their n_L a multiple of n / gcd(n, G), at most G − 1 distinct values, each
    compared on the partition's m labels: G · m ≤ n pairs) count c_Lj by a search in the sort."""
    n_pos = len(labels)
    pos = np.arange(n_pos) if counted is None else np.flatnonzero(counted)
    part = np.searchsorted(starts, pos, side="right") - 1
    order = np.lexsort((pos, labels[pos], part))
    sp, spos = part[order], pos[order]
    new_group = np.r_[True, (sp[1:] != sp[:-1]) | (labels[spos][1:] != labels[spos][:-1])]
    group_start = np.flatnonzero(new_group)
    group = np.cumsum(new_group) - 1
    group_size = np.diff(np.r_[group_start, len(order)])
    rank = np.arange(len(order)) - group_start[group]
    size = group_size[group]
    step = np.zeros(n_pos)
    step[spos] = _xlogx(rank + 1) + _xlogx(size - rank - 1) - _xlogx(rank) - _xlogx(size - rank)
    before = np.r_[0.0, np.cumsum(step)]
    spread = before[b] - before[starts[bp]]
    seen = np.zeros(n_pos + 1, dtype=np.int64)
    seen[pos + 1] = 1
    seen = np.cumsum(seen)  # counted records before each position
    n_part = len(starts)
    n = (seen[starts + sizes] - seen[starts])[bp]
    lhs = seen[b] - seen[starts[bp]]
    # per partition: its groups (contiguous in the sort) and the gcd of their sizes
    group_part = sp[group_start]
    first_group = np.searchsorted(group_part, np.arange(n_part))
    n_groups = np.bincount(group_part, minlength=n_part)
    common = np.zeros(n_part, dtype=np.int64)
    has = n_groups > 0
    common[has] = np.gcd.reduceat(group_size, first_group[has])
    inside = (lhs > 0) & (lhs < n)
    positive = inside & ((lhs * common[bp]) % np.maximum(n, 1) != 0)
    maybe = inside & ~positive  # left shares possibly the partition's: compared label by label
    if maybe.any():
        key = np.unique(np.column_stack([bp[maybe], lhs[maybe]]), axis=0)  # same n_L, same records left
        kp, kl = key[:, 0], key[:, 1]
        reps = n_groups[kp]
        pair = np.repeat(np.arange(len(key)), reps)
        g = np.repeat(first_group[kp], reps) + np.arange(int(reps.sum())) - np.repeat(np.cumsum(reps) - reps, reps)
        # a position with the key's n_L counted records of its partition before it: the left side
        at = np.searchsorted(seen, seen[starts[kp]] + kl, side="left")
        sorted_key = group * (n_pos + 1) + spos
        left = np.searchsorted(sorted_key, g * (n_pos + 1) + at[pair]) - group_start[g]
        nk = (seen[starts + sizes] - seen[starts])[kp]
        off = np.bincount(pair, weights=left * nk[pair] != group_size[g] * kl[pair], minlength=len(key)) > 0
        rows = np.searchsorted(key[:, 0] * (n_pos + 1) + key[:, 1], bp[maybe] * (n_pos + 1) + lhs[maybe])
        positive[maybe] = off[rows]
    return _gain(spread, n, lhs, positive), positive


def gain_cut(unit: np.ndarray, same_part: np.ndarray, part: np.ndarray, starts: np.ndarray,
              sizes: np.ndarray, ordered: tuple[Sensitive, ...], c: Constraints, labels: np.ndarray,
              n_labels: int, extra: bool) -> tuple[np.ndarray, np.ndarray]:
    """Per partition, InfoGain Mondrian's cut on this axis: among the boundaries whose two sides
    both satisfy every constraint, the one of greatest positive information gain of the label
    (:func:`boundary_gains`), ties to the most balanced,
    then the leftmost. Returns (cut, gain), gain −1 where no allowed boundary has a positive
    gain. ``labels``: the label code of each position (this axis's order)."""
    n_part = len(starts)
    cut = np.zeros(n_part, dtype=np.int64)
    gain_of = np.full(n_part, -1.0)
    b, bp, lhs = boundaries(unit, same_part, part, starts, sizes, c)
    # with a population only the research subset is released: its labels alone are scored
    counted = None if c.population is None else c.population.in_subset
    gain, positive = boundary_gains(b, bp, starts, sizes, labels, n_labels, counted)
    b, bp, lhs, gain = b[positive], bp[positive], lhs[positive], gain[positive]
    if not len(b):
        return cut, gain_of
    # read at the call (a test lowers it to force the layered search)
    if extra and (len(b) + n_part) * sum(s.m for s in ordered) > mondrian_cuts.SEARCH_CELLS:
        # the full count table is too big: the highest-gain boundaries, layer by layer
        best, ok = layered_cut(b, bp, lhs, part, starts, sizes, ordered, c, first=-gain)
        at = np.zeros(len(part) + 1)
        at[b] = gain
        cut[ok], gain_of[ok] = best[ok], at[best[ok]]
        return cut, gain_of
    if extra:
        good = sides_satisfy(b, bp, part, starts, sizes, ordered, c)
        b, bp, lhs, gain = b[good], bp[good], lhs[good], gain[good]
    pick = np.lexsort((b, np.abs(lhs - sizes[bp] / 2.0), -gain, bp))
    head = pick[np.r_[True, bp[pick][1:] != bp[pick][:-1]]] if len(pick) else pick
    cut[bp[head]], gain_of[bp[head]] = b[head], gain[head]
    return cut, gain_of


def greatest_gain(orders, axis_state, same_part, part, starts, sizes, sensitives, constraints,
                   labels, n_labels, extra):
    """Per partition, the axis and cut of greatest positive information gain over all axes
    (ties to the more balanced cut, then the first axis); axis −1 where no cut has a positive gain."""
    n_part = len(starts)
    best_dim = np.full(n_part, -1, dtype=np.int64)
    best_cut = np.zeros(n_part, dtype=np.int64)
    best_gain = np.full(n_part, -1.0)
    best_gap = np.full(n_part, np.inf)
    for d, (_, unit) in enumerate(axis_state):
        o = orders[d]
        cut, gain = gain_cut(unit, same_part, part, starts, sizes,
                              tuple(replace(s, codes=s.codes[o]) for s in sensitives),
                              constraints.in_order(o), labels[o], n_labels, extra)
        gap = np.abs(cut - starts - sizes / 2.0)
        take = (gain >= 0) & ((gain > best_gain) | (gain == best_gain) & (gap < best_gap))
        best_dim[take], best_cut[take], best_gain[take], best_gap[take] = d, cut[take], gain[take], gap[take]
    return best_dim, best_cut
