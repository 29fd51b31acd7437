"""SafePub's search: the public cost of every generalized cell, the granularity and
discernibility scores with their proven sensitivities (the other quality models:
safepub_scores.py), and the choice of a full-domain generalization with the exact exponential
mechanism — one draw over the whole lattice (``exhaustive``), or SafePub's random walk down it,
each pivot one draw (``random_walk``).

Scores are exact rationals computed on the input table D (not on the sample: see
docs/methods/safepub.md, "Deviations"), with the classes of fewer than ``k_score`` records counted
as suppressed. Neighbours add or remove one record t (n changes by one). In a full-domain
generalization every member of a class has the same generalized values, hence the same cost.

* granularity: −(Σ over kept records of Σ_q cost_q + m·(suppressed records)), cost_q ∈ [0, 1]
  the generalized value's public share of q's domain (m quasi-identifiers). Adding t changes
  only t's own term unless t's class crosses from k_score − 1 to k_score records: then k_score − 1
  records go from m to the class's cost c ∈ [0, m] and t adds c, a change of
  k_score·c − (k_score − 1)·m ∈ [−(k_score − 1)·m, m]. Sensitivity m·max(1, k_score − 1).
* discernibility: −(Σ over kept classes |E|² / n + suppressed records). Adding t (n → n + 1) to a
  class of e records moves the loss by (n(2e + 1) − A)/(n(n + 1)) when the class stays kept
  (A = Σ|E|² over kept classes, e² ≤ A ≤ n², e ≤ n): above −1 (A ≤ n², e ≥ 0) and at most 1
  (A ≥ e², and n(2e + 1) − e² ≤ n(n + 1), e ≤ n; reached when all n records are in t's class); by
  1 − A/(n(n + 1)) ∈ (0, 1] when it stays suppressed; and by k²/(n + 1) − A/(n(n + 1)) − (k − 1)
  ∈ (−k, 1] when it crosses (k = k_score ≤ n + 1). Sensitivity k_score (at k_score = 1 nothing is
  suppressed and only the kept case occurs: 1; it was max(2, k_score), from a looser (−1, 2) for
  the kept case — no job reaches k_score = 1: δ ≤ 0.1 is below δ(1), ≥ 0.30 measured over
  ε_anon, so k ≥ 2).

The exponential mechanism P(node) ∝ exp(η·score) with η = ε_step / (2·sensitivity) is
ε_step-DP; the candidate sets depend only on earlier choices (public), so the steps compose.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from fractions import Fraction

import numpy as np

from app.privacy.anonymity.hierarchies import Tree, with_missing_leaf
from app.privacy.anonymity.lattice import Columns, class_ids
from app.privacy.anonymity.safepub_scores import (
    classification_score, entropy_score, group_size_score,
)
from app.privacy.dp_release import exact_em
from app.privacy.dp_release.zcdp import ExactSampler
from app.privacy.rng import SecureRandom

NUMERIC_GRID = 2**30  # a numeric cell's cost (interval width / declared range) rounded up to 2⁻³⁰

Node = tuple[int, ...]


@dataclass
class LevelCost:
    """Per quasi-identifier and level: the cost of each code of that level as numerator / den."""

    numerators: list[np.ndarray]  # per level, int64 per code
    den: int


def categorical_costs(tree: Tree, hierarchy) -> LevelCost:
    """(leaves under the value − 1) / (leaves of the domain − 1), counted in the hierarchy as
    given (every row, with a '<missing>' leaf added as build_tree adds it), never in the data —
    so the cost is public. Level L of the tree is the hierarchy's column L (the root build_tree
    adds above several tops is level = its column count, cost 1)."""
    table = np.asarray(hierarchy.astype(str).to_numpy(dtype=object))
    table = with_missing_leaf(table)
    leaves = len(set(table[:, 0].tolist()))
    den = max(leaves - 1, 1)
    numerators = []
    for level in range(tree.height + 1):
        nodes = tree.anc[tree.height - level]  # per leaf (DFS order), the node at that level
        first = int(nodes.min())
        labels = tree.labels
        if level < table.shape[1]:
            values, sizes = np.unique(table[:, level].astype(str), return_counts=True)
            counts = dict(zip(values.tolist(), sizes.tolist()))
            codes = np.arange(first, int(nodes.max()) + 1)
            num = np.array([counts.get(str(labels[c]), leaves) - 1 for c in codes], dtype=np.int64)
        else:
            num = np.full(int(nodes.max()) - first + 1, den, dtype=np.int64)
        numerators.append(np.clip(num, 0, den))
    return LevelCost(numerators, den)


def numeric_costs(tree: Tree) -> LevelCost:
    """The covered interval's width over the declared range (tree.node_ncp: spans from the
    hierarchy or the automatic cuts, clipped to the declared bounds — public), rounded up."""
    ncp = tree.node_ncp()
    if not np.all((ncp >= 0) & (ncp <= 1)):  # NaN too: the sensitivities hold for costs in [0, 1] only
        raise RuntimeError(f"safepub: a numeric cost of {tree.column!r} is outside [0, 1] (bounds too wide?)")
    numerators = []
    for level in range(tree.height + 1):
        nodes = tree.anc[tree.height - level]
        codes = np.arange(int(nodes.min()), int(nodes.max()) + 1)
        numerators.append(np.minimum(np.ceil(ncp[codes] * NUMERIC_GRID), NUMERIC_GRID).astype(np.int64))
    return LevelCost(numerators, NUMERIC_GRID)


@dataclass
class DistinctRecords:
    """The scored records compressed to their distinct tuples of leaves (and label): a node's
    classes are groups of tuples, since every level's code is a function of the leaf's. Per
    quasi-identifier and level, each tuple's code; per tuple, how many records share it."""

    codes: list[list[np.ndarray]]
    cards: list[list[int]]
    heights: list[int]
    counts: np.ndarray  # int64, records per tuple
    labels: np.ndarray | None  # the tuple's label code (classification only)
    n_labels: int  # label codes are below it (0 without labels)
    n: int  # records scored, = counts.sum()


def distinct_records(cols: Columns, rows: np.ndarray, labels: np.ndarray | None) -> DistinctRecords:
    """The records ``rows`` (a boolean mask) of ``cols`` as distinct (leaves, label) tuples with
    their counts: one pass over the records, after which scoring a node costs O(tuples)."""
    index = np.flatnonzero(rows)
    leaves = [[cols.codes[q][0][index]] for q in range(len(cols.trees))]
    cards = [[cols.cards[q][0]] for q in range(len(cols.trees))]
    n_labels = 0 if labels is None else int(labels.max()) + 1
    if labels is not None:
        leaves.append([labels[index]])
        cards.append([n_labels])
    ids, n_tuples = class_ids(leaves, cards, [0] * len(leaves))
    first = np.empty(n_tuples, dtype=np.int64)
    first[ids] = index  # any member stands for its tuple: they share every code
    return DistinctRecords(codes=[[c[first] for c in cols.codes[q]] for q in range(len(cols.trees))],
                           cards=cols.cards, heights=[t.height for t in cols.trees],
                           counts=np.bincount(ids, minlength=n_tuples).astype(np.int64),
                           labels=None if labels is None else labels[first], n_labels=n_labels, n=len(index))


@dataclass
class Scorer:
    """Scores of nodes on the records ``rows`` (a boolean mask over the table); ``labels``: each
    record's label code (classification only). The records are compressed once to their distinct
    tuples with a count each (distinct_records): class sizes are count-weighted sums and a class's
    costs its size times one member's, so each score is the same Fraction as a recount of every
    record (tests/privacy/test_safepub_distinct.py keeps that per-record reference)."""

    cols: Columns
    costs: list[LevelCost]
    metric: str
    k_score: int
    rows: np.ndarray
    labels: np.ndarray | None = None
    cache: dict[Node, Fraction] = field(default_factory=dict)
    records: DistinctRecords = field(init=False)

    def __post_init__(self) -> None:
        self.records = distinct_records(self.cols, self.rows, self.labels if self.metric == "classification" else None)

    def score(self, node: Node) -> Fraction:
        if node not in self.cache:
            self.cache[node] = self._score(node)
        return self.cache[node]

    def _score(self, node: Node) -> Fraction:
        records, n = self.records, self.records.n
        if n == 0:
            return Fraction(0)
        ids, n_classes = class_ids(records.codes, records.cards, node)  # per tuple
        # exact: float sums of integers below 2⁵³
        sizes = np.bincount(ids, weights=records.counts, minlength=n_classes).astype(np.int64)
        if self.metric == "group_size":
            return group_size_score(sizes, self.k_score)
        if self.metric == "classification":
            if all(level == height for level, height in zip(node, records.heights)):
                return Fraction(0)  # every feature at its root: a classifier learns nothing
            return classification_score(ids, n_classes, records.labels, records.counts, records.n_labels,
                                        self.k_score)
        kept = sizes >= self.k_score  # per class
        suppressed = int(n - sizes[kept].sum())
        if self.metric == "discernibility":
            big = sizes[kept].astype(object)
            return -(Fraction(int((big * big).sum()), n) + suppressed)
        # a full-domain class's members share their generalized values, hence their costs: one
        # tuple per kept class stands for all (its cost times the class's size)
        member = np.empty(n_classes, dtype=np.int64)
        member[ids] = np.arange(len(ids))
        member, weight = member[kept], sizes[kept]
        if self.metric == "entropy":
            return entropy_score(records.codes, records.heights, node, member, weight, n, suppressed)
        total = Fraction(len(node) * suppressed)
        for q, level in enumerate(node):
            cost = self.costs[q].numerators[level][records.codes[q][level][member]]
            total += Fraction(int(np.dot(weight, cost)), self.costs[q].den)  # int64: ≤ n·2³⁰
        return -total


def predecessors(node: Node) -> list[Node]:
    """The nodes one level lower on one quasi-identifier."""
    return [node[:q] + (node[q] - 1,) + node[q + 1:] for q in range(len(node)) if node[q] > 0]


@dataclass
class Walk:
    node: Node
    pivots: list[Node]
    steps_taken: int
    draws: int
    nodes_scored: int


def random_walk(scorer: Scorer, top: Node, steps: int, eta: Fraction, final: str, rng: SecureRandom,
                progress: Callable[[float, str], None] | None = None) -> Walk:
    """SafePub's search (ARX's DataDependentEDDPAlgorithm without its last, non-private step):
    from the top, each step adds the pivot's predecessors to the candidates, removes the pivot
    and draws the next pivot from the candidates with the exponential mechanism at η. The node
    released is one more draw over the visited pivots (final 'exponential') or the last pivot."""
    sampler = ExactSampler(rng)
    candidates: dict[Node, Fraction] = {}
    pivot, pivots, draws, taken = top, [top], 0, 0
    for step in range(steps):
        for p in predecessors(pivot):
            if p not in candidates:
                candidates[p] = scorer.score(p)
        candidates.pop(pivot, None)
        if not candidates:
            break  # the walk reached the bottom and saw every candidate: nothing left to choose
        order = list(candidates)
        pivot = order[sampler.exponential([candidates[c] for c in order], eta)]
        pivots.append(pivot)
        draws += 1
        taken = step + 1
        if progress is not None and step % 16 == 0:
            progress(step / steps, f"search: step {step + 1} of {steps}")
    node = pivot
    if final == "exponential":
        visited = list(dict.fromkeys(pivots))
        node = visited[sampler.exponential([scorer.score(v) for v in visited], eta)]
        draws += 1
    return Walk(node, pivots, taken, draws, len(scorer.cache))


def lattice_nodes(top: Node) -> list[Node]:
    """Every node of the lattice under ``top`` (the product of the levels)."""
    return list(itertools.product(*(range(h + 1) for h in top)))


def exhaustive(scorer: Scorer, top: Node, eta: Fraction, rng: SecureRandom,
               progress: Callable[[float, str], None] | None = None) -> Walk:
    """One exponential-mechanism draw over every node of the lattice at η (the whole ε_search):
    P(node) ∝ exp(η·score), sampled exactly (exact_em: the exponents η·(best − score) as
    integers over one common denominator)."""
    nodes = lattice_nodes(top)
    scores = []
    for i, node in enumerate(nodes):
        scores.append(scorer.score(node))
        if progress is not None and i % 256 == 0:
            progress(i / len(nodes), f"search: scoring node {i + 1} of {len(nodes)}")
    best = max(scores)
    exponents = [eta * (best - v) for v in scores]
    denominator = math.lcm(*(x.denominator for x in exponents))
    numerators = np.array([x.numerator * (denominator // x.denominator) for x in exponents], dtype=object)
    node = nodes[exact_em.sample(rng, numerators, denominator)]
    return Walk(node, [top, node], 0, 1, len(scorer.cache))


def score_threshold(k: int, beta: float) -> int:
    """The class size below which the search counts a class of D as suppressed: ⌈k/β⌉, where a
    class's expected count in the sample reaches k (a public function of k and β)."""
    return max(1, math.ceil(k / beta - 1e-9))
