"""The privacy models as constraints on equivalence classes, vectorized over classes.

- k-anonymity: every class has ≥ k records;
- l-diversity (Machanavajjhala et al. 2007) in three readings: distinct (= p-sensitivity), ≥ l
  distinct sensitive values in every class; entropy, the class's sensitive entropy
  −Σ p ln p ≥ ln l; recursive (c,l), r₁ < c (r_l + r_{l+1} + … + r_m) with r₁ ≥ r₂ ≥ … the
  class's value counts in decreasing order;
- (α,k)-anonymity: no sensitive value holds more than a share α of a class;
- t-closeness: the Earth Mover's Distance between a class's sensitive distribution and the
  whole table's is ≤ t. Numeric sensitive column: the ordered distance over its m distinct
  values, EMD = Σ_i |Σ_{j≤i} (p_j − q_j)| / (m − 1) (Li, Li & Venkatasubramanian 2007);
  categorical: the equal distance, EMD = ½ Σ_j |p_j − q_j| (total variation), or with a
  hierarchy of the sensitive column the hierarchical distance (two values are level(LCA)/H
  apart, H the hierarchy's height): EMD = Σ_N (height(N)/H) · min(pos(N), neg(N)) over the
  internal nodes N, pos and neg the positive and negative excess p − q of N's children (Li et al.);
- δ-disclosure privacy (Brickell & Shmatikov 2008): |ln(p_c(s) / q(s))| < δ for every class c
  and every value s of the table (so every class holds every value);
- β-likeness (Cao & Karras 2012), p_c(s) the class's share, q(s) the table's: basic,
  (p_c(s) − q(s)) / q(s) ≤ β for every s; enhanced, ≤ min(β, −ln q(s)), which binds for
  common values: p_c(s) ≤ q(s)(1 − ln q(s)) < 1, so no class is ever all one value.
(p,α,k)-anonymity is k, l = p and α together.

Generalizing merges classes, and every model here passes a merged class whose parts all pass
(the shares of the merge are a convex combination of its parts'; entropy is concave; the
recursive test is monotone by Machanavajjhala et al.'s Theorem). With suppression, a passing
class merged with a failing one can fail under every model but k and distinct l: the lattice
uses ``monotone_with_suppression`` to know which projections it may prune by.

Each sensitive column may carry its own set of these models (``Sensitive.model``, as ARX puts
criteria on attributes one by one); a class passes when k holds and every column meets its
own set. Each set is monotone by itself, so their conjunction is too, and a column's part
that is monotone with suppression can be pruned by whatever the other columns ask.

With a population (ARX's setting for k-map and δ-presence: the table is the population P,
``Population.in_subset`` marks the research subset T, the records released), classes are
formed on P's records and read per class t = |T ∩ class| and p = |P ∩ class|:
- k holds on the released records: t = 0 (the class releases nothing) or t ≥ k;
- k-map (Sweeney; El Emam & Dankar 2008): t = 0 or p ≥ k_map — a released class's
  generalized tuple matches at least k_map people of the population;
- δ-presence (Nergiz, Atzori & Clifton 2007): δ_min ≤ t / p ≤ δ_max for *every* class, those
  without research records too (their 0 tells an adversary the person is not in T, which
  δ_min > 0 forbids). t counts every research record, released or suppressed: suppressing a
  class's records hides their values, not their membership, so suppression neither breaks nor
  fixes δ-presence (the lattice treats it as a model no suppression can satisfy).
All three pass a merged class whose parts pass (t and p add up; the ratio of a merge is a
weighted mean of its parts'), and k and k-map keep the projection argument with suppression:
a failing class's research records lie in failing classes of any refinement.

Classes are given as integer ids per record; the sensitive column as integer codes (in value
order for a numeric column). Small domains use a dense classes × values count matrix; large
ones work on the sorted (class, value) pairs, so the cost is O(n log n) whatever m is.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Literal

import numpy as np
import pandas as pd

from app.privacy.anonymity.hierarchies import Tree
from app.privacy.anonymity.profitability import CostBenefit
from app.privacy.anonymity.risk_thresholds import RiskThresholds
from app.privacy.registry import MethodInputError

_DENSE_CELLS = 8_000_000  # classes × values above which the pair form is used


LDiversity = Literal["distinct", "entropy", "recursive"]
BetaLikeness = Literal["basic", "enhanced"]
_TOL = 1e-12  # float slack of a "≤" on shares (a class exactly at α, t or β passes)


_RATIO_TOL = 1e-12  # float slack of δ-presence's bounds (a ratio exactly at δ_min or δ_max passes)


@dataclass(frozen=True, eq=False)
class Population:
    """The research subset T of the population P (the whole table), and the models that read it:
    k-map's k_map, δ-presence's [delta_min, delta_max] (see the module doc)."""

    in_subset: np.ndarray  # bool per record of P
    k_map: int | None = None
    delta_min: float | None = None
    delta_max: float | None = None

    @property
    def presence(self) -> bool:
        return self.delta_min is not None

    def in_order(self, order: np.ndarray) -> Population:
        """The same subset with the records taken in ``order``."""
        return replace(self, in_subset=self.in_subset[order])

    def counts(self, class_ids: np.ndarray, n_classes: int) -> tuple[np.ndarray, np.ndarray]:
        """Per class: research records t and population records p."""
        t = np.bincount(class_ids, weights=self.in_subset, minlength=n_classes).astype(np.int64)
        return t, np.bincount(class_ids, minlength=n_classes)

    def released_ok(self, k: int, t: np.ndarray, p: np.ndarray) -> np.ndarray:
        """k on the released records and k-map: what suppressing the class's research records
        can also satisfy (a class that releases nothing passes both)."""
        ok = (t == 0) | (t >= k)
        if self.k_map is not None:
            ok &= (t == 0) | (p >= self.k_map)
        return ok

    def presence_ok(self, t: np.ndarray, p: np.ndarray) -> np.ndarray:
        """δ-presence of every class (True for all without it)."""
        if not self.presence:
            return np.ones(len(t), dtype=bool)
        ratio = t / np.maximum(p, 1)
        return (ratio >= self.delta_min - _RATIO_TOL) & (ratio <= self.delta_max + _RATIO_TOL)

    def min_cut_size(self, k: int) -> int:
        """The fewest population records a partition needs before a cut can leave both sides
        valid: one side released (≥ max(k, k_map) records) and the other at least one record,
        or, with δ_min > 0, both sides released."""
        released = max(k, self.k_map or 1)
        return 2 * released if self.presence and self.delta_min > 0 else released + 1

    def describe(self) -> list[str]:
        parts = [] if self.k_map is None else [f"k_map={self.k_map}"]
        if self.presence:
            parts.append(f"delta_presence=[{self.delta_min:g}, {self.delta_max:g}]")
        return parts


@dataclass(frozen=True)
class Constraints:
    k: int
    l: int | None = None  # noqa: E741 - the model's name
    alpha: float | None = None
    t: float | None = None
    l_diversity: LDiversity = "distinct"
    c: float | None = None  # recursive (c,l)-diversity
    beta: float | None = None
    beta_likeness: BetaLikeness = "enhanced"
    delta_disclosure: float | None = None
    t_distance: Literal["auto", "hierarchical"] = "auto"  # hierarchical: the sensitive column's hierarchy
    population: Population | None = None  # k-map and δ-presence over a research subset
    # the game-theoretic model (profitability.py); its no-attack variant is k (or k_map) itself,
    # set by the parameters, and only the payout variant decides classes here (the lattice)
    profitability: CostBenefit | None = None
    # ARX's risk-based models, thresholds on the whole release met by suppressing the smallest
    # classes (risk_thresholds.py): lattice only, never projected with suppression on
    risk: RiskThresholds | None = None

    @property
    def payout_model(self) -> bool:
        """Whether classes are kept by the publisher's payout (not monotone at all: see
        profitability.py), which the lattice evaluates per node and never prunes by."""
        return self.profitability is not None and not self.profitability.no_attack

    @property
    def needs_sensitive(self) -> bool:
        return any(v is not None for v in (self.l, self.alpha, self.t, self.beta, self.delta_disclosure))

    @property
    def monotone_with_suppression(self) -> bool:
        """Whether a class that passes still passes merged with any other (see module doc)."""
        return (self.alpha is None and self.t is None and self.beta is None and not self.payout_model
                and self.risk is None and self.delta_disclosure is None and (self.l is None or self.l_diversity == "distinct"))

    def monotone_part(self) -> Constraints:
        """The part of these models that survives merging with any class (suppression on):
        all of them when they are monotone so, else k and distinct l (which entropy and
        recursive l-diversity imply: both need l distinct values); never the payout model."""
        return self if self.monotone_with_suppression else Constraints(k=self.k, l=self.l,
                                                                         population=self.population)

    def in_order(self, order: np.ndarray) -> Constraints:
        """These models with the population's subset mask taken in ``order`` (a Mondrian axis's
        order of the records); unchanged without a population."""
        return self if self.population is None else replace(self, population=self.population.in_order(order))

    def describe(self, *, with_k: bool = True) -> str:
        parts = [f"k={self.k}"] if with_k else []
        if self.l is not None:
            parts.append(f"l={self.l} ({self.l_diversity}" + (f", c={self.c:g})" if self.l_diversity
                                                               == "recursive" else ")"))
        if self.alpha is not None:
            parts.append(f"alpha={self.alpha:g}")
        if self.t is not None:
            parts.append(f"t={self.t:g}" + (" (hierarchical)" if self.t_distance == "hierarchical" else ""))
        if self.beta is not None:
            parts.append(f"beta={self.beta:g} ({self.beta_likeness})")
        if self.delta_disclosure is not None:
            parts.append(f"delta_disclosure={self.delta_disclosure:g}")
        if self.population is not None and with_k:
            parts += self.population.describe()
        if self.profitability is not None and with_k:
            parts.append(self.profitability.describe())
        if self.risk is not None and with_k:
            parts.append(self.risk.describe())
        return ", ".join(parts)


@dataclass(frozen=True)
class HierarchyLevels:
    """A sensitive column's hierarchy as the hierarchical EMD reads it, leaves in DFS order (the
    codes): per depth d = H..1 of the children, where each child's leaves start, where each
    parent's children start, and the parent's weight height/H."""

    height: int
    levels: tuple[tuple[np.ndarray, np.ndarray, float], ...]

    @classmethod
    def from_tree(cls, tree: Tree) -> HierarchyLevels:
        height, levels = tree.height, []
        for d in range(height, 0, -1):
            children = np.flatnonzero(tree.depth == d)  # ids ascending: DFS order
            starts = tree.lo[children]
            parent = tree.anc[d - 1, starts]
            groups = np.flatnonzero(np.r_[True, parent[1:] != parent[:-1]])
            levels.append((starts, groups, (height - d + 1) / height))
        return cls(height=height, levels=tuple(levels))

    def emd(self, diff: np.ndarray) -> np.ndarray:
        """Hierarchical EMD of each row of ``diff`` (classes × leaves: p − q)."""
        total = np.zeros(diff.shape[0])
        for starts, groups, weight in self.levels:
            extra = diff if len(starts) == diff.shape[1] else np.add.reduceat(diff, starts, axis=1)
            pos = np.add.reduceat(np.maximum(extra, 0.0), groups, axis=1)
            neg = np.add.reduceat(np.maximum(-extra, 0.0), groups, axis=1)
            total += weight * np.minimum(pos, neg).sum(axis=1)
        return total


@dataclass(frozen=True)
class Sensitive:
    """A sensitive column as codes 0..m-1 with the table's distribution q (for t-closeness)."""

    column: str
    codes: np.ndarray
    ordered: bool
    table_dist: np.ndarray
    values: np.ndarray | None = None  # the domain: sorted numbers, or labels as text
    hierarchy: HierarchyLevels | None = None  # t-closeness by the hierarchical distance
    model: Constraints | None = None  # this column's own models; None: the job's (model_of)

    @property
    def m(self) -> int:
        return len(self.table_dist)

    @property
    def distance_kind(self) -> str:
        return "hierarchical" if self.hierarchy is not None else "ordered" if self.ordered else "equal"

    @classmethod
    def from_tree(cls, column: str, tree: Tree) -> Sensitive:
        """A categorical sensitive column under its hierarchy: the codes are its leaves in DFS
        order (a missing cell is the leaf '<missing>' under the root)."""
        codes = tree.leaf_codes.astype(np.int32)
        dist = np.bincount(codes, minlength=tree.n_leaves) / max(len(codes), 1)
        leaves = np.asarray(tree.labels, dtype=object)[tree.anc[tree.height]]
        return cls(column=column, codes=codes, ordered=False, table_dist=dist, values=leaves,
                   hierarchy=HierarchyLevels.from_tree(tree))

    @classmethod
    def from_series(cls, column: str, series: pd.Series, numeric: bool) -> Sensitive:
        if numeric:
            if series.isna().any():
                raise MethodInputError(f"numeric sensitive column {column!r} has missing cells")
            values = series.to_numpy(dtype=float)
            uniques, codes = np.unique(values, return_inverse=True)
        else:  # a missing cell is one more value (code -1 → its own code)
            codes, uniques = pd.factorize(series.astype(str).where(series.notna(), "<missing>"),
                                          sort=True)
        codes = np.asarray(codes, dtype=np.int32)
        dist = np.bincount(codes, minlength=len(uniques)) / max(len(codes), 1)
        return cls(column=column, codes=codes, ordered=numeric, table_dist=dist,
                   values=np.asarray(uniques))


@dataclass
class ClassStats:
    """Per class: size, and what the constraints asked need — distinct values, top share,
    EMD, entropy (nats), the recursive ratio r₁ / (r_l + … + r_m) (inf when the tail is
    empty), the largest |ln(p_c(s)/q(s))| (inf when a value is missing), and the largest
    relative gain (p_c(s) − q(s))/q(s) with, for enhanced β, its excess over min(β, −ln q(s))."""
    size: np.ndarray
    distinct: np.ndarray | None = None
    max_share: np.ndarray | None = None
    distance: np.ndarray | None = None
    entropy: np.ndarray | None = None
    recursive_ratio: np.ndarray | None = None
    disclosure: np.ndarray | None = None
    gain: np.ndarray | None = None
    gain_excess: np.ndarray | None = None

    def satisfied(self, c: Constraints) -> np.ndarray:
        ok = self.size >= c.k
        if c.l is not None:
            if c.l_diversity == "distinct":
                ok &= self.distinct >= c.l
            elif c.l_diversity == "entropy":
                ok &= self.entropy >= np.log(c.l) - _TOL
            else:  # strict, as defined: r₁ < c (r_l + … + r_m)
                ok &= self.recursive_ratio < c.c
        if c.alpha is not None:
            ok &= self.max_share <= c.alpha + _TOL
        if c.t is not None:
            ok &= self.distance <= c.t + _TOL
        if c.delta_disclosure is not None:  # strict, as defined
            ok &= self.disclosure < c.delta_disclosure
        if c.beta is not None:
            ok &= (self.gain <= c.beta + _TOL) if c.beta_likeness == "basic" else (self.gain_excess <= _TOL)
        return ok


def class_stats(class_ids: np.ndarray, n_classes: int, c: Constraints,
                sensitive: Sensitive | None) -> ClassStats:
    """Size, and what the constraints need, per class."""
    size = np.bincount(class_ids, minlength=n_classes)
    stats = ClassStats(size=size)
    if not c.needs_sensitive:
        return stats
    assert sensitive is not None
    s = sensitive.codes if len(sensitive.codes) == len(class_ids) else None
    if s is None:
        raise ValueError("sensitive codes must be given per record of class_ids")
    return _sensitive_stats(stats, class_ids, s, n_classes, c, sensitive)


def as_sensitives(sensitive: Sensitive | Sequence[Sensitive] | None) -> tuple[Sensitive, ...]:
    """One sensitive column, several, or none, as a tuple (every model holds on each column)."""
    if sensitive is None:
        return ()
    return (sensitive,) if isinstance(sensitive, Sensitive) else tuple(sensitive)


def model_of(sensitive: Sensitive, c: Constraints) -> Constraints:
    """The models a sensitive column must meet: its own set when it has one (ARX's per-attribute
    criteria: recursive (c,l)-diversity on one column, t-closeness on another), else the job's."""
    return c if sensitive.model is None else sensitive.model


def reads_sensitive(c: Constraints, sensitives: Sequence[Sensitive]) -> bool:
    """Whether any model reads a sensitive column (k alone reads none)."""
    return any(model_of(s, c).needs_sensitive for s in sensitives)


def satisfied(class_ids: np.ndarray, n_classes: int, c: Constraints,
              sensitives: Sequence[Sensitive]) -> np.ndarray:
    """Per class, whether k holds and, on each sensitive column, that column's models
    (:func:`model_of`); with a population, k on the released records, k-map and δ-presence."""
    if c.population is not None:
        t, p = c.population.counts(class_ids, n_classes)
        ok = c.population.released_ok(c.k, t, p) & c.population.presence_ok(t, p)
    else:
        ok = np.bincount(class_ids, minlength=n_classes) >= c.k
    for sensitive in sensitives:
        model = model_of(sensitive, c)
        if model.needs_sensitive:
            ok &= class_stats(class_ids, n_classes, model, sensitive).satisfied(model)
    return ok


def _gain_threshold(c: Constraints, q: np.ndarray) -> np.ndarray:
    """Enhanced β-likeness: the largest relative gain each value may have, min(β, −ln q(s))."""
    with np.errstate(divide="ignore"):
        return np.minimum(c.beta, -np.log(q))


def stats_from_counts(counts: np.ndarray, c: Constraints, sensitive: Sensitive) -> ClassStats:
    """Class statistics from a dense classes × sensitive-values count matrix."""
    size = counts.sum(axis=1)
    stats = ClassStats(size=size)
    if not c.needs_sensitive:
        return stats
    safe = np.maximum(size, 1)
    q = sensitive.table_dist
    stats.distinct = (counts > 0).sum(axis=1)
    stats.max_share = counts.max(axis=1) / safe
    share = counts / safe[:, None]
    if c.t is not None:
        diff = share - q[None, :]
        if sensitive.hierarchy is not None:
            stats.distance = sensitive.hierarchy.emd(diff)
        elif sensitive.ordered:
            m = counts.shape[1]
            stats.distance = np.abs(np.cumsum(diff, axis=1)[:, :-1]).sum(axis=1) / max(m - 1, 1)
        else:
            stats.distance = 0.5 * np.abs(diff).sum(axis=1)
    if c.l is not None and c.l_diversity == "entropy":
        with np.errstate(divide="ignore", invalid="ignore"):
            stats.entropy = -np.where(counts > 0, share * np.log(share), 0.0).sum(axis=1)
    if c.l is not None and c.l_diversity == "recursive":
        ranked = -np.sort(-counts, axis=1)  # each class's counts, largest first
        tail = ranked[:, c.l - 1:].sum(axis=1)
        with np.errstate(divide="ignore", invalid="ignore"):
            stats.recursive_ratio = np.where(tail > 0, ranked[:, 0] / np.maximum(tail, 1), np.inf)
    if c.delta_disclosure is not None:
        with np.errstate(divide="ignore"):
            stats.disclosure = np.abs(np.log(share / q[None, :])).max(axis=1)
    if c.beta is not None:
        gain = share / q[None, :] - 1.0
        stats.gain = gain.max(axis=1)
        stats.gain_excess = (gain - _gain_threshold(c, q)[None, :]).max(axis=1)
    return stats


def _sensitive_stats(stats: ClassStats, g: np.ndarray, s: np.ndarray, n_classes: int,
                     c: Constraints, sensitive: Sensitive) -> ClassStats:
    m = sensitive.m
    size = np.maximum(stats.size, 1)
    if n_classes * m <= _DENSE_CELLS:
        counts = np.bincount(g.astype(np.int64) * m + s, minlength=n_classes * m).reshape(n_classes, m)
        return stats_from_counts(counts, c, sensitive)
    # pair form: distinct (class, value) pairs with their counts, sorted by class then value
    pair, count = np.unique(g.astype(np.int64) * m + s, return_counts=True)
    pg, ps = pair // m, pair % m
    stats.distinct = np.bincount(pg, minlength=n_classes)
    top = np.zeros(n_classes, dtype=np.int64)
    np.maximum.at(top, pg, count)
    stats.max_share = top / size
    share = count / size[pg]
    q = sensitive.table_dist
    if c.t is not None:
        if sensitive.hierarchy is not None:
            stats.distance = _hierarchical_emd_pairs(pg, ps, share, q, sensitive.hierarchy, n_classes)
        elif sensitive.ordered:
            stats.distance = _ordered_emd_pairs(pg, ps, share, q, n_classes)
        else:
            part = np.abs(share - q[ps]) - q[ps]
            stats.distance = 0.5 * (np.bincount(pg, weights=part, minlength=n_classes) + 1.0)
    if c.l is not None and c.l_diversity == "entropy":
        stats.entropy = -np.bincount(pg, weights=share * np.log(share), minlength=n_classes)
    if c.l is not None and c.l_diversity == "recursive":
        by_count = np.lexsort((-count, pg))  # within each class, largest count first
        ranked_class = pg[by_count]
        first = np.searchsorted(ranked_class, ranked_class, side="left")
        rank = np.arange(len(by_count)) - first
        tail = np.bincount(ranked_class[rank >= c.l - 1], weights=count[by_count][rank >= c.l - 1],
                           minlength=n_classes)
        with np.errstate(divide="ignore", invalid="ignore"):
            stats.recursive_ratio = np.where(tail > 0, top / np.maximum(tail, 1), np.inf)
    if c.delta_disclosure is not None:  # a class without some value of the table is at infinity
        disclosure = _class_max(pg, np.abs(np.log(share / q[ps])), n_classes, fill=np.inf)
        stats.disclosure = np.where(stats.distinct < m, np.inf, disclosure)
    if c.beta is not None:  # a value a class lacks has gain −1: below any bound
        gain = share / q[ps] - 1.0
        stats.gain = np.maximum(_class_max(pg, gain, n_classes, fill=-1.0), -1.0)
        stats.gain_excess = _class_max(pg, gain - _gain_threshold(c, q)[ps], n_classes, fill=-np.inf)
    return stats


def _class_max(pg: np.ndarray, values: np.ndarray, n_classes: int, fill: float) -> np.ndarray:
    """Largest value per class over pairs sorted by class; ``fill`` for a class with none."""
    out = np.full(n_classes, fill, dtype=float)
    if len(pg):
        first = np.flatnonzero(np.r_[True, pg[1:] != pg[:-1]])
        out[pg[first]] = np.maximum.reduceat(values, first)
    return out


def _hierarchical_emd_pairs(pg: np.ndarray, ps: np.ndarray, share: np.ndarray, q: np.ndarray,
                            hierarchy: HierarchyLevels, n_classes: int) -> np.ndarray:
    """The hierarchical EMD from sorted pairs, dense over chunks of classes (the pair form is
    used when all classes × values at once would be too many cells)."""
    m = len(q)
    rows = max(1, _DENSE_CELLS // max(m, 1))
    out = np.zeros(n_classes)
    bounds = np.searchsorted(pg, np.arange(0, n_classes + rows, rows))
    for c0, a, b in zip(range(0, n_classes, rows), bounds[:-1], bounds[1:]):
        c1 = min(c0 + rows, n_classes)
        dense = np.zeros((c1 - c0) * m)
        dense[(pg[a:b] - c0) * m + ps[a:b]] = share[a:b]
        out[c0:c1] = hierarchy.emd(dense.reshape(c1 - c0, m) - q[None, :])
    return out


def _ordered_emd_pairs(pg: np.ndarray, ps: np.ndarray, share: np.ndarray, q: np.ndarray,
                       n_classes: int) -> np.ndarray:
    """Σ_{i<m-1} |P_c(i) − Q(i)| / (m−1) from sorted pairs: the class CDF P_c is constant
    between its own values, and over such a segment Σ|P − Q(i)| is two prefix sums of Q split
    where the nondecreasing Q crosses P."""
    m = len(q)
    if m < 2:
        return np.zeros(n_classes)
    Q = np.cumsum(q)[:-1]  # Q(0..m-2)
    SQ = np.r_[0.0, np.cumsum(Q)]  # SQ[x] = Σ_{i<x} Q(i)
    first = np.r_[True, pg[1:] != pg[:-1]]
    last = np.r_[pg[1:] != pg[:-1], True]
    cum = np.cumsum(share)
    start_cum = np.maximum.accumulate(np.where(first, cum - share, 0.0))
    P = cum - start_cum  # class CDF from this value on
    a = ps
    b = np.where(last, m - 1, np.r_[ps[1:], 0])
    j = np.clip(np.searchsorted(Q, P, side="left"), a, b)
    seg = P * (j - a) - (SQ[j] - SQ[a]) + (SQ[b] - SQ[j]) - P * (b - j)
    head = SQ[ps[first]]  # before a class's first value its CDF is 0: Σ Q(i) for i < that value
    total = np.bincount(pg, weights=seg, minlength=n_classes)
    total[pg[first]] += head
    return total / (m - 1)
