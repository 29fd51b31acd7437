"""Strict multidimensional Mondrian (LeFevre, DeWitt & Ramakrishnan 2006), breadth-first and
vectorized over all partitions of a round.

Each round, for every partition and every quasi-identifier, the cut is the most balanced unit
boundary (nearest the partition's median) at which both sides satisfy every constraint. Units:
distinct values for a numeric axis; children of the partition's lowest common ancestor for a
hierarchy, the children kept in their depth-first order, so children too small on their own are
*grouped* with their neighbours instead of forcing the whole partition up to the ancestor.
Which axis a partition is cut on, among those with an allowed cut:
- every axis an interval (numeric columns, or categories as ordered codes): the axis whose
  median cut leaves the least loss, Σ over the two sides of |side| × Σ over all axes of the
  side's NCP. Each cut narrows the cut axis's interval and often others (correlated columns),
  and the choice sees all of it. On Adult (30,162, the 8 issue QIs as ordered codes) average
  NCP at k = 2, 5, 10, 25, 50, 100: 0.0131, 0.0426, 0.0736, 0.128, 0.178, 0.235, against
  0.0155, 0.0479, 0.0837, 0.147, 0.218, 0.319 for the widest axis; lower on every interval
  table measured (Adult's 6 numeric columns, Bank's).
- any axis a hierarchy: the axis with the widest normalized range (numeric (max−min)/R,
  hierarchy the NCP of the LCA), LeFevre et al.'s heuristic, and among equally wide axes the
  one whose cut leaves the least loss (``_widest_choice``: ties went to the first axis, so the
  order of the quasi-identifiers changed the release). The least-loss choice alone is myopic
  there: a cut that groups children of the LCA lowers no NCP until a later round, so it is
  worse on Adult with the ARX hierarchies up to k = 25 and with l/α (0.0296 vs 0.0212 at
  k = 2, 0.1176 vs 0.1061 at k = 10; 0.0811 vs 0.0650 at k = 10, l = 3 on 7 QIs), slightly
  better at k = 50 and 100 (0.232 vs 0.243, 0.297 vs 0.302).
Partitions with no allowed cut become equivalence classes.

Which boundaries are searched. With k alone, the two boundaries nearest the median are enough
(a farther one only makes the smaller side smaller). With l, α or t a farther, less balanced
boundary can be the only one whose two sides both satisfy the sensitive constraints. So the
two nearest boundaries of every axis are tried first (Mondrian's balanced cut, widest axis
first); a partition where none passes on any axis — where the two-nearest search would stop
and release it as a class — gets every boundary of every axis evaluated, and takes the most
balanced passing one on the widest axis that has one. Every class the two-nearest search
releases is therefore either released too or cut further, so the partition refines it and no
record's NCP can grow (tested); and no released class can be cut anywhere (maximality). Every
boundary is evaluated at once: the sensitive-value counts left of each boundary come from one
bincount of (segment, value) pairs and a cumulative sum along each partition, the right side's
are the partition's total minus them, and the constraints are checked on all of them together
(cost O(n + boundaries × m) per axis and round, m the sensitive column's distinct values). When
that table would exceed ``SEARCH_CELLS`` cells (huge m), the ``FALLBACK_LAYERS`` boundaries on
each side nearest the median are tried instead, one vectorized check per layer (both searches
in mondrian_cuts.py).

InfoGain Mondrian (``labels`` given; LeFevre, DeWitt & Ramakrishnan, KDD 2006): every boundary of
every axis scored by the information gain of the label (``mondrian_infogain.py``, the label's
counts per side taken as the sensitive values' are), the greatest positive gain among the allowed
cuts taken; a partition with none takes the cut above.

Records are kept, per axis, in an order sorted by (partition, code); a round splits each
partition's run of that order into its two sides, stably, so a round costs O(n) per axis.
"""

from __future__ import annotations

from dataclasses import replace
from collections.abc import Callable
from typing import Literal

import numpy as np

from app.privacy.anonymity.axes import Axis, NumericAxis
from app.privacy.anonymity.models import (
    Constraints, Sensitive, as_sensitives, reads_sensitive, satisfied,
)
from app.privacy.anonymity.mondrian_cuts import most_balanced_passing_cut
from app.privacy.anonymity.mondrian_infogain import greatest_gain
from app.privacy.anonymity.verify_population import SplitTree


class _AxisView:
    """Per-axis helpers: the split unit (value or child of the LCA) and the width."""

    def __init__(self, axis: Axis) -> None:
        self.axis = axis
        if isinstance(axis, NumericAxis):
            self.keys = axis.codes
            r = axis.value_range
            self.scale = axis.values / r if r > 0 else np.zeros_like(axis.values)
        else:
            self.keys = axis.leaf_codes
            self.node_ncp = axis.node_ncp()
            self.flat_anc = axis.anc.ravel()

    def width(self, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
        """NCP of the set whose smallest key is ``lo`` and largest ``hi`` (keys are values'
        ranks, or leaves in depth-first order so the LCA of the two is the set's)."""
        if isinstance(self.axis, NumericAxis):
            return self.scale[hi] - self.scale[lo]
        return np.where(lo == hi, 0.0, self.node_ncp[self.axis.lca(lo, hi)])

    def width_and_unit(self, kv: np.ndarray, sizes: np.ndarray, first: np.ndarray,
                       last: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        lo, hi = kv[first], kv[last]
        if isinstance(self.axis, NumericAxis):
            return self.width(lo, hi), kv
        tree = self.axis
        lca = tree.lca(lo, hi)
        # the record's child of its partition's LCA (the leaf itself below a leaf LCA)
        child_row = np.repeat(np.minimum(tree.depth[lca] + 1, tree.height) * tree.n_leaves, sizes)
        unit = self.flat_anc[child_row + kv]
        width = np.where(lo == hi, 0.0, self.node_ncp[lca])
        return width, unit


def mondrian_partition(axes: list[Axis], constraints: Constraints,
                       sensitive: Sensitive | tuple[Sensitive, ...] | None = None,
                       progress: Callable[[float, str], None] | None = None,
                       search: Literal["all", "nearest"] = "all",
                       dimension: Literal["auto", "least_loss", "widest"] = "auto",
                       with_tree: bool = False, labels: np.ndarray | None = None,
                       zero_gain: Literal["default", "stop"] = "default") -> np.ndarray | tuple[np.ndarray, SplitTree]:
    """Class id of every record (0..C-1) of a strict Mondrian partition satisfying the constraints.
    ``with_tree``: also the cuts made (a :class:`~app.privacy.anonymity.verify.SplitTree`: at
    each cut the axis and the code from which records go right), which the population check
    reads as a certificate that the classes are disjoint and verifies.

    The whole table must satisfy them (else there is no partition at all): the caller checks.
    ``search="nearest"`` tries only the two boundaries nearest the median even with l/α/t (the
    former behaviour, kept to measure what the full search gains). ``dimension`` is how a
    partition picks its axis among those with an allowed cut: ``"widest"`` normalized range
    (LeFevre et al.'s heuristic), ``"least_loss"`` (the cut leaving the least total NCP, see
    :func:`_least_loss_choice`), or ``"auto"``: least loss when every axis is an interval (numeric
    or ordered codes), widest when any is a hierarchy (see the module docstring).

    ``labels`` (a code 0..m-1 per record): InfoGain Mondrian — each partition is cut at the
    boundary of greatest positive information gain of the label over every boundary of every
    axis whose two sides satisfy every constraint (mondrian_infogain.greatest_gain). A partition
    where no allowed cut has a positive gain (label-pure, or every cut leaving both sides its label
    distribution) takes the cut ``dimension`` chooses (``zero_gain="default"``: a zero-gain cut
    still refines the classes, as LeFevre et al. keep cutting), or becomes a class
    (``zero_gain="stop"``, kept to measure what the refinement is worth).

    State of a round: per axis, the ids of the records still being split, ordered by
    (partition, code); partition p occupies the same positions [start_p, start_p + size_p) in
    every axis's order, so a cut is a position and the next round's orders come from a stable
    partition of each run into its two sides (no sort)."""
    n = len(axes[0].codes if isinstance(axes[0], NumericAxis) else axes[0].leaf_codes)
    views = [_AxisView(a) for a in axes]
    if dimension == "auto":
        dimension = "least_loss" if all(isinstance(a, NumericAxis) for a in axes) else "widest"
    k = constraints.k
    sensitives = as_sensitives(sensitive)  # each column's models (model_of) hold on it
    population = constraints.population
    # with a population, a side may release nothing (k counts research records, and a side
    # without any passes k and k-map): sizes are population records, checked by the models
    extra = reads_sensitive(constraints, sensitives) or population is not None
    side_k = 1 if population is not None else k
    smallest_cut = population.min_cut_size(k) if population is not None else 2 * k

    orders = [np.argsort(v.keys, kind="stable").astype(np.int32) for v in views]
    # record × axis keys, in the narrowest integer type (the least-loss choice's cost is
    # mostly gathering these rows); "widest" breaks its ties with the same choice
    key_type = np.int16 if max(int(v.keys.max(initial=0)) for v in views) < 2 ** 15 else np.int32
    keys = np.column_stack([v.keys for v in views]).astype(key_type)
    sizes = np.array([n], dtype=np.int64)
    final = np.full(n, -1, dtype=np.int64)
    side_of = np.zeros(n, dtype=bool)  # side of the cut, by record id (rewritten each round)
    n_final = 0
    round_no = 0
    # the split tree: the node of each partition of the round, and per round the cuts made
    # (node, axis, code, its left child's node; the right child's is the next)
    node_of = np.zeros(1, dtype=np.int64)
    cuts: list[tuple[np.ndarray, ...]] = []
    n_nodes = 1
    n_labels = int(labels.max(initial=-1)) + 1 if labels is not None else 0
    while len(sizes):
        round_no += 1
        if progress is not None:
            progress(1.0 - sizes.sum() / n, f"mondrian round {round_no}")
        n_part = len(sizes)
        starts = np.cumsum(sizes) - sizes
        part = np.repeat(np.arange(n_part), sizes)  # (np.repeat beats gathers by partition)
        same_part = part[1:] == part[:-1]
        best_width = np.full(n_part, -1.0)
        best_dim = np.full(n_part, -1, dtype=np.int64)
        best_cut = np.zeros(n_part, dtype=np.int64)
        axis_state = []
        candidates = []
        for d, view in enumerate(views):
            o = orders[d]
            kv = view.keys[o]
            width, unit = view.width_and_unit(kv, sizes, starts, starts + sizes - 1)
            axis_state.append((width, unit))
            cut, ok = _nearest_cut(unit, same_part, starts, sizes, side_k, extra and (
                lambda cand, valid: _cut_satisfies(cand, valid, part, o, n_part,  # noqa: B023 (called before the loop moves on)
                                                   constraints, sensitives)))
            candidates.append((cut, ok & (width > 0)))
        if dimension == "least_loss":
            best_dim, best_cut = _least_loss_choice(views, keys, orders, candidates, axis_state,
                                                    starts, sizes)
            best_width = np.where(best_dim >= 0, 0.0, -1.0)
        else:
            best_dim, best_cut, best_width = _widest_choice(views, keys, orders, candidates, axis_state,
                                                            starts, sizes)
        stuck = best_dim < 0
        if labels is not None:  # InfoGain Mondrian: the greatest positive gain wherever there is one
            gain_dim, gain_cut = greatest_gain(orders, axis_state, same_part, part, starts, sizes,
                                                sensitives, constraints, labels, n_labels, extra)
            gained = gain_dim >= 0
            if zero_gain == "stop":
                best_dim[~gained], stuck[:] = -1, False
            best_dim[gained], best_cut[gained], stuck[gained] = gain_dim[gained], gain_cut[gained], False
        if extra and search == "all" and stuck.any():
            # no axis has a valid cut near its median: search every boundary of every axis
            # (there the widest axis with a valid boundary is taken, whatever ``dimension``)
            found = [most_balanced_passing_cut(unit, same_part, part, starts, sizes,
                                               tuple(replace(s, codes=s.codes[orders[d]]) for s in sensitives),
                                               constraints.in_order(orders[d]), stuck & (width > 0))
                     for d, (width, unit) in enumerate(axis_state)]
            dim, cut, width = _widest_choice(views, keys, orders, found, axis_state, starts, sizes)
            take = stuck & (dim >= 0)
            best_width[take], best_dim[take], best_cut[take] = width[take], dim[take], cut[take]
        split = best_dim >= 0
        done = ~split
        if done.any():  # partitions with no allowed cut are final classes
            in_done = np.repeat(done, sizes)
            final[orders[0][in_done]] = n_final + np.repeat(np.arange(int(done.sum())), sizes[done])
            n_final += int(done.sum())
        if not split.any():
            break
        if with_tree:  # where the right side starts: its first unit (a value's code, or the
            # first leaf of a child of the LCA, so that every child lies on one side of the cut)
            code = np.zeros(n_part, dtype=np.int64)
            for d in np.unique(best_dim[split]):
                mine = split & (best_dim == d)
                first_unit = axis_state[d][1][best_cut[mine]]
                code[mine] = first_unit if isinstance(views[d].axis, NumericAxis) else views[d].axis.lo[first_unit]
            first_child = n_nodes + 2 * np.arange(int(split.sum()))
            cuts.append((node_of[split], best_dim[split], code[split], first_child))
            n_nodes += 2 * len(first_child)
            node_of = np.column_stack([first_child, first_child + 1]).ravel()
        right = np.arange(len(part)) >= np.repeat(best_cut, sizes)
        for d in np.unique(best_dim[split]):
            mine = np.repeat(best_dim == d, sizes)
            side_of[orders[d][mine]] = right[mine]
        kept_sizes = sizes[split]
        lhs = (best_cut - starts)[split]
        keep = np.repeat(split, sizes)
        kept_starts = np.cumsum(kept_sizes) - kept_sizes
        sizes = np.column_stack([lhs, kept_sizes - lhs]).ravel()
        new_starts = np.cumsum(sizes) - sizes
        # where each record lands: its run's left or right block, at its rank among its side
        pos_in_run = np.arange(int(kept_sizes.sum())) - np.repeat(kept_starts, kept_sizes)
        base_left = np.repeat(new_starts[0::2], kept_sizes) + pos_in_run
        base_right = np.repeat(new_starts[1::2], kept_sizes) - 1
        for d in range(len(views)):
            o = orders[d][keep]
            side = side_of[o]
            ones = np.cumsum(side, dtype=np.int64)
            before = ones[kept_starts] - side[kept_starts]  # right-side records before each run
            ones_in_run = ones - np.repeat(before, kept_sizes)
            target = np.where(side, base_right + ones_in_run, base_left - ones_in_run)
            reordered = np.empty_like(o)
            reordered[target] = o
            orders[d] = reordered
        # a partition under 2k records (with a population: Population.min_cut_size) can never
        # be cut: it is a class now, not next round
        small = sizes < smallest_cut
        if small.any():
            in_small = np.repeat(small, sizes)
            final[orders[0][in_small]] = n_final + np.repeat(np.arange(int(small.sum())), sizes[small])
            n_final += int(small.sum())
            orders = [o[~in_small] for o in orders]
            sizes = sizes[~small]
            node_of = node_of[~small] if with_tree else node_of
    if with_tree:
        tree = SplitTree(columns=[a.column for a in axes], axis=np.full(n_nodes, -1, dtype=np.int64),
                         threshold=np.zeros(n_nodes, dtype=np.int64), left=np.full(n_nodes, -1, dtype=np.int64),
                         right=np.full(n_nodes, -1, dtype=np.int64))
        for node, dim, code, left in cuts:
            tree.axis[node], tree.threshold[node], tree.left[node], tree.right[node] = dim, code, left, left + 1
        return final, tree
    return final


def _widest_choice(views, keys, orders, candidates, axis_state, starts, sizes):
    """Per partition, the widest axis with an allowed cut (LeFevre et al.'s heuristic); among
    equally wide axes — every axis of the whole table is 1, and hierarchy widths repeat — the
    one whose cut leaves the least loss. Ties went to the first quasi-identifier listed, so the
    order of ``quasi_identifiers`` changed the release: on Adult at k = 10 (ARX hierarchies)
    average NCP 0.107–0.122 over 10 orders, the issue's order the worst; with this choice 0.106
    for every order. Returns (best_dim, best_cut, best_width), −1 where no axis has a cut."""
    top = np.full(len(starts), -1.0)
    for d, (_, ok) in enumerate(candidates):
        top = np.where(ok, np.maximum(top, axis_state[d][0]), top)
    widest = [(cut, ok & np.isclose(axis_state[d][0], top, rtol=1e-12, atol=1e-12))
              for d, (cut, ok) in enumerate(candidates)]
    tied = sum(ok.astype(np.int64) for _, ok in widest) > 1
    # a partition with one widest axis takes it; only ties pay for the least-loss comparison
    best_dim, best_cut = _least_loss_choice(views, keys, orders, [(cut, ok & tied) for cut, ok in widest],
                                            axis_state, starts, sizes)
    for d, (cut, ok) in enumerate(widest):
        alone = ok & ~tied
        best_dim[alone], best_cut[alone] = d, cut[alone]
    return best_dim, best_cut, np.where(best_dim >= 0, top, -1.0)


def _least_loss_choice(views, keys, orders, candidates, axis_state, starts, sizes):
    """Per partition, the axis whose median cut leaves the least loss: the smallest
    Σ_sides |side| · Σ_axes NCP(side's values on that axis), among the axes with an allowed cut;
    ties go to the widest axis. Returns (best_dim, best_cut), best_dim −1 where none is allowed.

    In candidate axis d's order each partition's two sides are contiguous runs, so one row
    gather of the record × axis key matrix and one min/max reduceat over the runs
    [start, cut), [cut, next start) give every side's smallest and largest key on every axis."""
    n_part = len(starts)
    best_cost = np.full(n_part, np.inf)
    best_width = np.full(n_part, -1.0)
    best_dim = np.full(n_part, -1, dtype=np.int64)
    best_cut = np.zeros(n_part, dtype=np.int64)
    for d, (cut, ok) in enumerate(candidates):
        if not ok.any():
            continue
        runs = np.column_stack([starts, np.where(ok, cut, starts)]).ravel()
        rows = np.take(keys, orders[d], axis=0)  # (take: ~10× faster than keys[idx] on rows)
        lo = np.minimum.reduceat(rows, runs, axis=0)
        hi = np.maximum.reduceat(rows, runs, axis=0)
        side = np.column_stack([cut - starts, sizes - cut + starts]).ravel().astype(float)
        cost = np.zeros(2 * n_part)
        for e, view in enumerate(views):
            cost += side * view.width(lo[:, e], hi[:, e])
        cost = cost[0::2] + cost[1::2]
        width = axis_state[d][0]
        tie = np.isclose(cost, best_cost, rtol=1e-12, atol=1e-9)
        take = ok & ((cost < best_cost) & ~tie | tie & (width > best_width))
        best_cost[take], best_width[take] = cost[take], width[take]
        best_dim[take], best_cut[take] = d, cut[take]
    return best_dim, best_cut


def _nearest_cut(unit: np.ndarray, same_part: np.ndarray, starts: np.ndarray, sizes: np.ndarray,
                 k: int, check=None) -> tuple[np.ndarray, np.ndarray]:
    """Per partition, the unit boundary nearest its median leaving ≥ k records on both sides
    (and passing ``check``, the l/α/t test of both sides, when given).

    Boundaries farther from the middle only make the smaller side smaller, so the nearest
    boundary on each side of the middle are the only candidates for k."""
    b = np.flatnonzero((unit[1:] != unit[:-1]) & same_part) + 1
    mid = starts + sizes / 2.0
    j = np.searchsorted(b, mid)
    best = np.zeros(len(starts), dtype=np.int64)
    ok = np.zeros(len(starts), dtype=bool)
    best_gap = np.full(len(starts), np.inf)
    for cand_index in (j - 1, j):
        inside = (cand_index >= 0) & (cand_index < len(b))
        cand = np.where(inside, b[np.clip(cand_index, 0, max(len(b) - 1, 0))] if len(b) else 0, 0)
        lhs = cand - starts
        valid = inside & (lhs >= k) & (sizes - lhs >= k)
        if check:
            valid = check(cand, valid)
        gap = np.abs(cand - mid)
        better = valid & (gap < best_gap)
        best[better], best_gap[better], ok[better] = cand[better], gap[better], True
    return best, ok


def _cut_satisfies(cut: np.ndarray, ok: np.ndarray, part: np.ndarray, order: np.ndarray, n_part: int,
                   c: Constraints, sensitives: tuple[Sensitive, ...]) -> np.ndarray:
    """Whether both sides of each partition's cut satisfy, on every sensitive column, that
    column's models (k is already checked)."""
    side = np.arange(len(order)) >= cut[part]
    group = 2 * part + side
    ordered = tuple(replace(s, codes=s.codes[order]) for s in sensitives)  # and the hierarchy kept
    good = satisfied(group, 2 * n_part, c.in_order(order), ordered).reshape(n_part, 2).all(axis=1)
    return ok & good
