"""Optimal full-domain generalization over the lattice of hierarchy levels (the ARX / Flash /
OLA family), with a suppression limit and a time budget.

A lattice node is a vector of levels, one per quasi-identifier; generalizing every value of
column q to level L_q gives the node's table. A node satisfies the constraints when the records
of the classes that violate them (then suppressed) are at most the suppression limit.

Information loss of a node (what is minimized): the average NCP over records and QIs with a
suppressed record counting 1 on every QI (spec 04). Without suppression this is a sum of
per-column terms known before reading classes, which gives a lower bound for every node; the
search is best-first on that bound (branch and bound): it stops when the next bound is no
better than the best loss found, which makes the result optimal.

With a population (k-map and δ-presence over a research subset T, see models.py) the nodes
generalize the whole population, only T's records count against the suppression limit and in
the loss (they are the records released), and a node passes only if every class meets
δ-presence: no suppression can change a class's ratio (it counts suppressed research records
too), so a δ-presence failure rules the node out, as the projections do below.

ARX's risk thresholds (risk_thresholds.py: average risk, records at risk, sample uniques) are
facts of the whole table: after the classes failing the per-class models are suppressed, the
fewest smallest kept classes that make them hold are suppressed too. Without suppression they are
monotone (merging classes lowers each figure) and the projections test them; with suppression
the projections leave them out (the least suppression they need is not shown monotone).

The profitability model (profitability.py: a class is kept iff the publisher's expected payout
is positive) is evaluated on every node it reaches and never pruned by: it is not monotone even
without suppression (generalizing lowers every payout and the attack's odds at once), so the
projections test the other models alone. The "publisher_payout" metric minimizes
1 − payout / (records · benefit): the mean over released-to-be records of IL, plus the attack's
expected loss over the benefit for kept records, plus 1 per suppressed record; the bound (mean IL
over all records, a sum of per-column terms as for NCP) stays below it, so the search stays exact.

The "classification" metric (Iyengar's, ARX's classification metric with a label outside the
quasi-identifiers) minimizes the share of records that a classifier predicting each class's most
frequent label gets wrong, a suppressed record counting 1: the training error of the best
classifier of the release. Generalizing merges classes, and a merged class's minority is at
least the sum of its parts'; suppressing a record adds 1 and lowers its class's minority by at
most 1. So a node's loss is at least the loss, nothing suppressed, of any finer node — among
them the node with one column at the same level and every other at 0: the bound is the largest
of those single-column losses, computed once per column and level. (ARX counts every record of
a class whose two most frequent labels tie; that is not monotone, and ARX has no bound for it.)
"discernibility" (Bayardo & Agrawal: Σ |E|² over the classes, n per suppressed record) is searched
the same way: merging classes of a and b records raises a² + b² to (a + b)², and every model
suppresses whole classes, a class of s records then costing n·s ≥ s².

A node that suppresses every record releases nothing (with a limit up to 1 it may pass, and
with "ncp" it ties the top node, every value '*', at loss 1; "entropy_monotonic" charges it
nothing): it is released only when no node that keeps a record passes — the search and the
greedy climb go on past it.

Pruning by monotonicity (generalizing merges classes; k-anonymity and distinct l-diversity are
monotone with or without suppression, every other model — entropy and recursive l, α, t, β,
δ-disclosure — without suppression only; with suppression the projections are tested on k and
distinct l alone, which every l-diversity reading implies — on each sensitive column its own
models' part, when columns have models of their own): a class of the projection onto two columns is a union of the
node's classes, so when the 2-column projection at the node's levels already suppresses more
than the limit, so does the node, and so does every node below it. All pairs are tabulated
once (cheap), which rules most nodes out without a look at the full table. Nodes above a
passing node pass too, but with no suppression their bound already ends the search.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from app.privacy.anonymity.hierarchies import Tree
from app.privacy.anonymity.label_modes import label_modes
from app.privacy.anonymity.models import Constraints, Sensitive, as_sensitives, model_of, satisfied
from app.privacy.anonymity.profitability import entropy_loss

# metrics read from the classes alone, monotone under generalization, bounded by finer nodes (module doc)
CLASS_METRICS = ("classification", "discernibility")


@dataclass
class LatticeResult:
    levels: tuple[int, ...]
    suppressed: np.ndarray  # bool per record
    loss: float
    optimal: bool
    timed_out: bool
    evaluated: int  # nodes the search checked (the greedy climb's checks are climb_evaluated)
    lattice_size: int
    pruned_by_projection: int
    seconds: float
    heuristic: bool = False
    top_node_fallback: bool = False  # the released node is the top one: every QI fully generalized
    model_suppressed: int | None = None  # profitability: records of classes the model drops at the node
    climb_evaluated: int = 0  # checks of the greedy climb a heuristic result came from


class Columns:
    """Per quasi-identifier and level: each record's node as a small integer, and its cost.

    Costs: "ncp" — the released node's NCP (the loss is their mean over records and QIs);
    "entropy" — non-uniform entropy, −log2 P(value | released node) with frequencies of the
    input (the loss is their sum). A suppressed record costs 1 on every QI under "ncp" (what the
    release's metrics count, spec 04: the root's NCP is 0 on a column of one value, and a
    search that charged that made suppression look cheaper than it is), what its root would
    under "entropy", and nothing under "entropy_monotonic" (ARX's
    ``createEntropyMetric(true)``), which ignores suppression; "publisher_payout" — the
    profitability model's IL share of each column (ln leaves covered / Σ ln leaves), a suppressed
    record costing 1 in all (see the module doc); "classification" — the records a majority-label
    classifier of the release gets wrong, plus the suppressed ones (``labels``: a code per record);
    "discernibility" — Σ |E|² over the kept classes plus n per suppressed record (the release's
    metrics.discernibility). For these two (CLASS_METRICS) ``ncp`` holds no costs and ``total``
    the per-column lower bounds of the module doc. ``metric`` None: the codes alone (safepub
    prices nodes with its own public costs: no float array per record and level)."""

    def __init__(self, trees: list[Tree], metric: str | None = "ncp", weights: np.ndarray | None = None,
                 labels: np.ndarray | None = None) -> None:
        self.trees = trees
        self.metric = metric
        if (metric == "classification") != (labels is not None):
            raise ValueError("the classification metric, and it alone, reads a label per record")
        self.labels = labels
        self.n_labels = 0 if labels is None else int(labels.max(initial=-1)) + 1
        # the records the loss is over (a population's research subset), all by default
        self.weights = np.ones(len(trees[0].leaf_codes), dtype=bool) if weights is None else weights
        self.codes: list[list[np.ndarray]] = []
        self.cards: list[list[int]] = []
        self.ncp: list[list[np.ndarray]] = []  # per-record cost at each level
        # profitability's IL: Σ_q ln(leaves under a record's node) over Σ_q ln(leaves)
        self.log_domain = float(sum(np.log(t.n_leaves) for t in trees))
        self._log_cover: dict[tuple[int, int], np.ndarray] = {}
        self._last: tuple | None = None  # the last classes computed (the loss reads them again)
        for tree in trees:
            node_ncp = tree.node_ncp()
            leaf_freq = np.bincount(tree.leaf_codes, minlength=tree.n_leaves)
            codes, cards, costs = [], [], []
            for level in range(tree.height + 1):
                nodes = tree.level_codes(level)
                first = int(tree.anc[tree.height - level].min())
                codes.append((nodes - first).astype(np.int64))
                cards.append(int(tree.anc[tree.height - level].max()) - first + 1)
                if metric is None or metric in CLASS_METRICS:
                    continue
                if metric == "publisher_payout":  # every QI of one value: IL 0 (entropy_loss), not 0/0
                    costs.append(np.log(tree.leafcount()[nodes]) / self.log_domain if self.log_domain > 0
                                 else np.zeros(len(nodes)))
                elif metric.startswith("entropy"):
                    node_freq = np.bincount(nodes, minlength=len(tree.labels))
                    costs.append(np.log2(node_freq[nodes] / leaf_freq[tree.leaf_codes]))
                else:
                    costs.append(node_ncp[nodes])
            self.codes.append(codes)
            self.cards.append(cards)
            self.ncp.append(costs)
        n = int(self.weights.sum())
        self.normalizer = (float(n * len(trees)) if metric == "ncp" else float(max(n, 1))
                           if metric in ("publisher_payout", "classification") else 1.0)
        self.count_suppressed = metric != "entropy_monotonic"
        self.total = ([self._single_column_bounds(q) for q in range(len(trees))] if metric in CLASS_METRICS
                      else [np.array([x[self.weights].sum() for x in col]) / self.normalizer for col in self.ncp])

    def off_majority(self, ids: np.ndarray, n_classes: int, kept: np.ndarray) -> int:
        """Kept records whose label is not their class's most frequent one (ties: either)."""
        modes = label_modes(ids, n_classes, self.labels, kept.astype(np.float64), self.n_labels)
        return int(kept.sum()) - int(modes.sum())

    def class_loss(self, ids: np.ndarray, n_classes: int, suppressed: np.ndarray | None = None) -> float:
        """A CLASS_METRICS loss of the classes ``ids``, the records ``suppressed`` (default none)
        counted as such — 1 each under "classification" (at least what it took off its class's
        wrong labels), n each under "discernibility" (a whole class of s suppressed, as every model
        suppresses: n·s ≥ s²) —, so the loss is at least the one without suppression."""
        suppressed = np.zeros(len(ids), dtype=bool) if suppressed is None else suppressed & self.weights
        kept = ~suppressed & self.weights
        if self.metric == "classification":
            return (self.off_majority(ids, n_classes, kept) + int(suppressed.sum())) / self.normalizer
        sizes = np.bincount(ids[kept], minlength=n_classes).astype(np.float64)
        return float(np.dot(sizes, sizes)) + float(suppressed.sum()) * float(self.weights.sum())

    def _single_column_bounds(self, q: int) -> np.ndarray:
        """Per level of column q: the loss, nothing suppressed, of the node with q at that level and
        every other column at 0 — a finer node than any with q at that level."""
        bounds = []
        for level in range(len(self.codes[q])):
            levels = [0] * len(self.trees)
            levels[q] = level
            bounds.append(self.class_loss(*class_ids(self.codes, self.cards, levels)))
        return np.array(bounds)

    def bound(self, nodes: np.ndarray) -> np.ndarray:
        """A lower bound of each node's loss (module doc): the sum of its columns' terms, or for
        CLASS_METRICS the largest of its columns' single-column losses."""
        terms = [self.total[q][nodes[:, q]] for q in range(len(self.trees))]
        return np.max(terms, axis=0) if self.metric in CLASS_METRICS else np.sum(terms, axis=0)

    def classes(self, levels, columns: list[int] | None = None) -> tuple[np.ndarray, int]:
        """Class id per record with column ``columns[i]`` (default: all) at ``levels[i]``."""
        key = (tuple(int(x) for x in levels), None if columns is None else tuple(columns))
        if self._last is None or self._last[0] != key:
            self._last = (key, class_ids(self.codes, self.cards, levels, columns))
        return self._last[1]

    def information_loss(self, levels) -> np.ndarray:
        """Profitability's IL per record at the node (profitability.entropy_loss)."""
        total = np.zeros(len(self.weights))
        for q, level in enumerate(levels):
            if (q, int(level)) not in self._log_cover:
                tree = self.trees[q]
                self._log_cover[q, int(level)] = np.log(tree.leafcount()[tree.level_codes(int(level))])
            total += self._log_cover[q, int(level)]
        return entropy_loss(total, self.log_domain)


def class_ids(codes: list[list[np.ndarray]], cards: list[list[int]], levels,
              columns: list[int] | None = None) -> tuple[np.ndarray, int]:
    """Dense class id (0 … classes − 1) per row from ``codes[q][level]`` (per column and level,
    one code < ``cards[q][level]`` per row), column ``columns[i]`` (default: all) at ``levels[i]``:
    a mixed-radix key, dense-counted when its range is small."""
    columns = list(range(len(codes))) if columns is None else columns
    key = np.zeros(len(codes[0][0]), dtype=np.int64)
    radix = 1
    for q, level in zip(columns, levels):
        card = cards[q][level]
        if radix * card >= 2**62:  # compress the key before it overflows
            key, uniques = pd.factorize(key)
            radix = len(uniques)
        key = key * card + codes[q][level]
        radix *= card
    if radix <= 4 * len(key) + 1024:
        counts = np.bincount(key, minlength=radix)
        used = np.flatnonzero(counts)
        dense = np.zeros(radix, dtype=np.int64)
        dense[used] = np.arange(len(used))
        return dense[key], len(used)
    ids, uniques = pd.factorize(key)
    return ids.astype(np.int64), len(uniques)


def _suppressed(cols: Columns, levels, c: Constraints, sensitives: tuple[Sensitive, ...],
                columns: list[int] | None = None) -> np.ndarray:
    """The records the node suppresses; with a population, those of T in classes failing k or
    k-map — and every record (more than any limit) when a class fails δ-presence, which no
    suppression fixes."""
    ids, n_classes = cols.classes(levels, columns)
    payout = (lambda: ~model_keeps(cols, levels, ids, n_classes, c)) if c.payout_model else (lambda: False)
    if c.population is None:
        mask = ~satisfied(ids, n_classes, c, sensitives)[ids] | payout()
        if c.risk is not None:  # then the fewest smallest kept classes the thresholds need
            mask |= c.risk.to_suppress(np.bincount(ids[~mask], minlength=n_classes))[ids]
        return mask
    pop = c.population
    t, p = pop.counts(ids, n_classes)
    if not pop.presence_ok(t, p).all():
        return np.ones(len(ids), dtype=bool)
    return (~satisfied(ids, n_classes, c, sensitives)[ids] | payout()) & pop.in_subset


def _success_sizes(ids: np.ndarray, n_classes: int, c: Constraints) -> np.ndarray:
    """Per record, the denominator of the adversary's success probability: its class's released
    records (prosecutor: the research subset's, with a population) or the population records of
    its class (journalist)."""
    if c.population is None:
        if c.profitability.attacker == "journalist":
            raise ValueError("the journalist attacker reads a population's class sizes: give one")
        return np.bincount(ids, minlength=n_classes)[ids]
    t, p = c.population.counts(ids, n_classes)
    return (p if c.profitability.attacker == "journalist" else t)[ids]


def model_keeps(cols: Columns, levels, ids: np.ndarray, n_classes: int, c: Constraints) -> np.ndarray:
    """Per record: whether the profitability model keeps its class at the node (payout > 0, or
    for the no-attack variant, the attack does not pay)."""
    return c.profitability.keep(cols.information_loss(levels), _success_sizes(ids, n_classes, c))


def _loss(cols: Columns, levels, suppressed: np.ndarray, c: Constraints) -> float:
    if cols.metric in CLASS_METRICS:
        return cols.class_loss(*cols.classes(levels), suppressed)
    total = 0.0
    if cols.metric == "publisher_payout":  # the attack's expected loss on the records kept
        cb = c.profitability
        ids, n_classes = cols.classes(levels)
        sizes = np.maximum(_success_sizes(ids, n_classes, c), 1)
        kept = ~suppressed & cols.weights & cb.attacked(sizes)
        total += float((cb.publisher_loss / cb.publisher_benefit / sizes[kept]).sum())
    if not cols.count_suppressed:
        suppressed = np.zeros_like(suppressed)
    kept = ~suppressed & cols.weights
    suppressed = suppressed & cols.weights
    for q, level in enumerate(levels):
        cost = (float(suppressed.sum()) if cols.metric == "ncp" else 0.0 if cols.metric == "publisher_payout"
                else cols.ncp[q][-1][suppressed].sum())
        total += cols.ncp[q][level][kept].sum() + cost
    if cols.metric == "publisher_payout":  # a suppressed record pays nothing: 1, whatever the columns' IL
        total += float(suppressed.sum())
    return total / cols.normalizer


def lattice_search(trees: list[Tree], constraints: Constraints,
                   sensitive: Sensitive | tuple[Sensitive, ...] | None = None,
                   suppression: float = 0.0, time_budget: float = 10.0, max_nodes: int = 200_000,
                   progress: Callable[[float, str], None] | None = None,
                   metric: str = "ncp", labels: np.ndarray | None = None) -> LatticeResult:
    """The node of least information loss whose table meets the constraints with at most
    ``suppression`` (a fraction) of the records suppressed. After ``time_budget`` seconds the
    best node found so far is returned with ``optimal=False`` and ``timed_out=True``."""
    began = time.perf_counter()
    sensitive = as_sensitives(sensitive)  # each column's models (model_of) hold on it
    subset = None if constraints.population is None else constraints.population.in_subset
    cols = Columns(trees, metric, subset, labels)
    n = int(cols.weights.sum())  # the records that may be released (a population's subset)
    limit = int(np.floor(suppression * n + 1e-9))
    heights = [t.height for t in trees]
    size = int(np.prod([h + 1 for h in heights]))
    # the payout model is not monotone even without suppression: never projected (module doc)
    monotone = suppression == 0 and not constraints.payout_model
    if metric == "publisher_payout" and constraints.profitability is None:
        raise ValueError("the publisher_payout metric reads the profitability model's parameters")
    if size > max_nodes:
        return _with_model_counts(cols, constraints, _greedy(cols, constraints, sensitive, limit, began, size))
    nodes = np.array(list(itertools.product(*[range(h + 1) for h in heights])), dtype=np.int64)
    bound = cols.bound(nodes)
    candidate = _projection_filter(cols, nodes, constraints, sensitive, limit, monotone)
    pruned = int((~candidate).sum())
    order = np.lexsort((nodes.sum(axis=1), bound))
    best_levels, best_mask, best_loss = None, None, np.inf
    empty = None  # a node suppressing every record: released only if no node keeps one (module doc)
    evaluated, timed_out, optimal = 0, False, True
    # CLASS_METRICS: a node's loss is at least any finer node's without suppression (module doc),
    # so each node checked raises the floor of the nodes above it; per column and level, the
    # nodes at or above that level give a node's coarser ones at once
    # — kept for the candidate nodes only (the projections rule most nodes out: a fifth the scan)
    floor, slot, at_or_above = None, None, []
    if metric in CLASS_METRICS:
        checked = np.flatnonzero(candidate)
        slot = np.full(len(nodes), -1, dtype=np.int64)
        slot[checked] = np.arange(len(checked))
        floor = bound[checked]
        at_or_above = [nodes[checked, q][None, :] >= np.arange(h + 1)[:, None] for q, h in enumerate(heights)]

    def no_better(value: float) -> bool:  # than the best loss found so far
        return value >= best_loss - 1e-12 * max(1.0, abs(best_loss))

    for rank, i in enumerate(order):
        if no_better(bound[i]):
            break  # no later node can do better: best is optimal
        if not candidate[i] or (floor is not None and no_better(floor[slot[i]])):
            continue
        if time.perf_counter() - began > time_budget:
            timed_out, optimal = True, False
            break
        node = nodes[i]
        if progress is not None and evaluated % 64 == 0:
            progress(min(rank / len(order), 0.99), f"lattice: {evaluated} nodes checked")
        evaluated += 1
        mask = _suppressed(cols, tuple(node), constraints, sensitive)
        if floor is not None:
            coarser = np.logical_and.reduce([at_or_above[q][level] for q, level in enumerate(node)])
            floor[coarser] = np.maximum(floor[coarser], cols.class_loss(*cols.classes(node)))
        if mask.sum() > limit:
            continue
        if mask.sum() >= n:
            empty = empty or (tuple(int(x) for x in node), mask)
            continue
        loss = _loss(cols, node, mask, constraints)
        if loss < best_loss:
            best_levels, best_mask, best_loss = tuple(int(x) for x in node), mask, loss
    if best_levels is None and empty is not None and not timed_out:  # no node keeps a record
        best_levels, best_mask = empty
        best_loss = _loss(cols, best_levels, best_mask, constraints)
    if best_levels is None:
        # out of time before any node passed: the greedy climb's node (a few dozen checks at
        # most; on 1,000,000 rows the top node, every QI '*', was released instead)
        # — or, every node checked, none passed (the payout model, δ-presence): not timed out
        climb = _greedy(cols, constraints, sensitive, limit, began, size)
        return _with_model_counts(cols, constraints, LatticeResult(
            climb.levels, climb.suppressed, climb.loss, False, timed_out, evaluated, size,
            pruned, time.perf_counter() - began, heuristic=True,
            top_node_fallback=climb.levels == tuple(heights), climb_evaluated=climb.climb_evaluated))
    return _with_model_counts(cols, constraints, LatticeResult(
        best_levels, best_mask, float(best_loss), optimal and not timed_out, timed_out, evaluated, size,
        pruned, time.perf_counter() - began))


def _with_model_counts(cols: Columns, c: Constraints, result: LatticeResult) -> LatticeResult:
    """The records of the released node's classes that the profitability model drops."""
    if c.profitability is None:
        return result
    ids, n_classes = cols.classes(result.levels)
    dropped = ~model_keeps(cols, result.levels, ids, n_classes, c) & cols.weights
    return replace(result, model_suppressed=int(dropped.sum()))


def _projection_filter(cols: Columns, nodes: np.ndarray, c: Constraints, sensitive: tuple[Sensitive, ...],
                       limit: int, monotone: bool) -> np.ndarray:
    """False for nodes ruled out by a single column or a pair of columns (see module doc)."""
    q_count = len(cols.trees)
    # with suppression only k and distinct l are monotone: each column's models are projected
    # on their monotone part then (entropy l ≥ ln l and recursive (c,l) both need l distinct
    # values, so this only relaxes); a column whose own models are all monotone keeps them
    proj = c if monotone else c.monotone_part()
    if not monotone:
        sensitive = tuple(replace(s, model=model_of(s, c).monotone_part()) for s in sensitive)
    ok = np.ones(len(nodes), dtype=bool)
    for pair in list(itertools.combinations(range(q_count), 2)) or [(0,)]:
        pair = list(pair)
        grid = [range(len(cols.codes[q])) for q in pair]
        table = np.zeros([len(g) for g in grid], dtype=bool)
        for levels in itertools.product(*grid):
            table[levels] = _suppressed(cols, list(levels), proj, sensitive, pair).sum() <= limit
        ok &= table[tuple(nodes[:, q] for q in pair)]
    return ok


def _greedy(cols: Columns, c: Constraints, sensitive: tuple[Sensitive, ...], limit: int, began: float,
            size: int) -> LatticeResult:
    """Lattice too large to search: climb from the bottom, each step raising the column whose
    next level adds the least loss, until the table passes. Not optimal (flagged)."""
    levels = [0] * len(cols.trees)
    evaluated = 0
    while True:
        evaluated += 1
        mask = _suppressed(cols, tuple(levels), c, sensitive)
        releases = mask.sum() < cols.weights.sum()  # not every record suppressed (module doc)
        if (mask.sum() <= limit and releases) or all(lv == len(cols.codes[q]) - 1 for q, lv in enumerate(levels)):
            break
        steps = [(cols.total[q][lv + 1] - cols.total[q][lv], q)
                 for q, lv in enumerate(levels) if lv + 1 < len(cols.codes[q])]
        levels[min(steps)[1]] += 1
    return LatticeResult(tuple(levels), mask, _loss(cols, levels, mask, c), False, False, 0,
                         size, 0, time.perf_counter() - began, heuristic=True, climb_evaluated=evaluated)
