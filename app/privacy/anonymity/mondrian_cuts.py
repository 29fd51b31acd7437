"""Mondrian's search of every boundary (mondrian.py's module doc, "Which boundaries are searched"):
the unit boundaries of each partition that leave k records on both sides, the check of the
sensitive models and the population's on both sides of all of them at once (the counts left of
each boundary from one bincount of (segment, value) pairs and a cumulative sum), the most
balanced passing boundary, and the layered fallback when the count table would be too big.
InfoGain Mondrian (mondrian_infogain.py) scores the same boundaries."""

from __future__ import annotations

import numpy as np

from app.privacy.anonymity.models import Constraints, Sensitive, model_of, satisfied, stats_from_counts

SEARCH_CELLS = 8_000_000  # (boundaries + partitions) × sensitive values for the full search
FALLBACK_LAYERS = 8  # boundaries per side of the median tried when the full table is too big


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


def boundaries(unit: np.ndarray, same_part: np.ndarray, part: np.ndarray, starts: np.ndarray,
                sizes: np.ndarray, c: Constraints, only: np.ndarray | None = None):
    """Every unit boundary (position, its partition, records left of it) of the partitions in
    ``only`` (all when None) leaving at least k records on both sides."""
    b = np.flatnonzero((unit[1:] != unit[:-1]) & same_part) + 1
    bp = part[b] if len(b) else np.zeros(0, dtype=np.int64)
    lhs = b - starts[bp]
    side_k = 1 if c.population is not None else c.k  # with a population the models check k
    fits_k = (lhs >= side_k) & (sizes[bp] - lhs >= side_k)
    if only is not None:
        fits_k &= only[bp]
    return b[fits_k], bp[fits_k], lhs[fits_k]


def most_balanced_passing_cut(unit: np.ndarray, same_part: np.ndarray, part: np.ndarray, starts: np.ndarray,
                              sizes: np.ndarray, ordered: tuple[Sensitive, ...], c: Constraints,
                              only: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per partition in ``only``, the boundary nearest its median whose two sides both satisfy
    k and the sensitive constraints, searching every boundary (mondrian.py's module docstring).

    ``ordered`` are the sensitive columns with their codes by position (this axis's order)."""
    n_part = len(starts)
    b, bp, lhs = boundaries(unit, same_part, part, starts, sizes, c, only)
    best = np.zeros(n_part, dtype=np.int64)
    ok = np.zeros(n_part, dtype=bool)
    if not len(b):
        return best, ok
    if (len(b) + n_part) * sum(s.m for s in ordered) > SEARCH_CELLS:
        return layered_cut(b, bp, lhs, part, starts, sizes, ordered, c)
    good = sides_satisfy(b, bp, part, starts, sizes, ordered, c)
    b, bp, lhs = b[good], bp[good], lhs[good]
    gap = np.abs(lhs - sizes[bp] / 2.0)
    pick = np.lexsort((b, gap, bp))  # per partition: smallest gap, then the leftmost
    head = pick[np.r_[True, bp[pick][1:] != bp[pick][:-1]]] if len(pick) else pick
    best[bp[head]] = b[head]
    ok[bp[head]] = True
    return best, ok


def sides_satisfy(b: np.ndarray, bp: np.ndarray, part: np.ndarray, starts: np.ndarray, sizes: np.ndarray,
                   ordered: tuple[Sensitive, ...], c: Constraints) -> np.ndarray:
    """Per boundary, whether both sides satisfy the sensitive models and the population's (k is
    already checked). Segments start at every partition start and every boundary; per segment,
    the count of each sensitive value; a cumulative sum gives the counts before any segment
    start (:func:`counts_left`)."""
    breaks = np.union1d(starts, b)
    segment = np.searchsorted(breaks, np.arange(len(part)), side="right") - 1
    good = np.ones(len(b), dtype=bool)
    for sensitive in ordered:
        model = model_of(sensitive, c)  # the column's own models, or the job's
        if not model.needs_sensitive:
            continue
        left, total = counts_left(breaks, segment, sensitive.codes, sensitive.m, starts, sizes, b, bp)
        good &= (stats_from_counts(left, model, sensitive).satisfied(model)
                 & stats_from_counts(total - left, model, sensitive).satisfied(model))
    if c.population is not None:  # research and population records on each side
        pop = c.population
        side = {}
        for name, where in (("t", segment[pop.in_subset]), ("p", segment)):
            left, total = counts_left(breaks, where, np.zeros(len(where), dtype=np.int64), 1, starts, sizes, b, bp)
            side[name] = (left[:, 0], total[:, 0] - left[:, 0])
        for t, p in zip(side["t"], side["p"]):
            good &= pop.released_ok(c.k, t, p) & pop.presence_ok(t, p)
    return good


def layered_cut(b, bp, lhs, part, starts, sizes, ordered, c, first=None):
    """The fallback when the full count table is too big: the ``FALLBACK_LAYERS`` boundaries
    on each side of the median, nearest first, each layer checked for all partitions at once
    (a partition keeps the first layer that passes). ``first``: a rank tried before the
    distance to the median (lower first; InfoGain's negated gain)."""
    n_part = len(starts)
    gap = np.abs(lhs - sizes[bp] / 2.0)
    order = np.lexsort((b, gap, bp) if first is None else (b, gap, first, bp))
    b, bp = b[order], bp[order]
    rank = np.arange(len(b)) - np.searchsorted(bp, bp)  # 0 = nearest the median
    best = np.zeros(n_part, dtype=np.int64)
    ok = np.zeros(n_part, dtype=bool)
    for layer in range(2 * FALLBACK_LAYERS):
        here = (rank == layer) & ~ok[bp]
        if not here.any():
            if not (rank > layer).any():
                break
            continue
        cut = np.zeros(n_part, dtype=np.int64)
        cut[bp[here]] = b[here]
        tried = np.zeros(n_part, dtype=bool)
        tried[bp[here]] = True
        side = np.arange(len(part)) >= cut[part]
        passed = tried & satisfied(2 * part + side, 2 * n_part, c, ordered).reshape(n_part, 2).all(axis=1)
        best[passed], ok[passed] = cut[passed], True
    return best, ok
