"""The privacy models as constraints on equivalence classes, vectorized over classes.

- k-anonymity: every class has ≥ k records;
- distinct l-diversity (= p-sensitivity): ≥ l distinct sensitive values in every class;
- (α,k)-anonymity: no sensitive value holds more than a share α of a class;
- t-closeness: the Earth Mover's Distance between a class's sensitive distribution and the
  whole table's is ≤ t. Numeric sensitive column: the ordered distance over its m distinct
  values, EMD = Σ_i |Σ_{j≤i} (p_j − q_j)| / (m − 1) (Li, Li & Venkatasubramanian 2007);
  categorical: the equal distance, EMD = ½ Σ_j |p_j − q_j| (total variation).
(p,α,k)-anonymity is k, l = p and α together.

Classes are given as integer ids per record; the sensitive column as integer codes (in value
order for a numeric column). Small domains use a dense classes × values count matrix; large
ones work on the sorted (class, value) pairs, so the cost is O(n log n) whatever m is.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from app.privacy.registry import MethodInputError

_DENSE_CELLS = 8_000_000  # classes × values above which the pair form is used


@dataclass(frozen=True)
class Constraints:
    k: int
    l: int | None = None  # noqa: E741 - the model's name
    alpha: float | None = None
    t: float | None = None

    @property
    def needs_sensitive(self) -> bool:
        return self.l is not None or self.alpha is not None or self.t is not None

    def describe(self) -> str:
        parts = [f"k={self.k}"]
        if self.l is not None:
            parts.append(f"l={self.l} (distinct)")
        if self.alpha is not None:
            parts.append(f"alpha={self.alpha:g}")
        if self.t is not None:
            parts.append(f"t={self.t:g}")
        return ", ".join(parts)


@dataclass(frozen=True)
class Sensitive:
    """A sensitive column as codes 0..m-1 with the table's distribution q (for t-closeness)."""

    column: str
    codes: np.ndarray
    ordered: bool
    table_dist: np.ndarray
    values: np.ndarray | None = None  # the domain: sorted numbers, or labels as text

    @property
    def m(self) -> int:
        return len(self.table_dist)

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
    size: np.ndarray
    distinct: np.ndarray | None = None
    max_share: np.ndarray | None = None
    distance: np.ndarray | None = None

    def satisfied(self, c: Constraints) -> np.ndarray:
        ok = self.size >= c.k
        if c.l is not None:
            ok &= self.distinct >= c.l
        if c.alpha is not None:
            ok &= self.max_share <= c.alpha + 1e-12
        if c.t is not None:
            ok &= self.distance <= c.t + 1e-12
        return ok


def class_stats(class_ids: np.ndarray, n_classes: int, c: Constraints,
                sensitive: Sensitive | None) -> ClassStats:
    """Size, and what the constraints need (distinct values, top share, EMD), per class."""
    size = np.bincount(class_ids, minlength=n_classes)
    stats = ClassStats(size=size)
    if not c.needs_sensitive:
        return stats
    assert sensitive is not None
    s = sensitive.codes if len(sensitive.codes) == len(class_ids) else None
    if s is None:
        raise ValueError("sensitive codes must be given per record of class_ids")
    return _sensitive_stats(stats, class_ids, s, n_classes, c, sensitive)


def stats_from_counts(counts: np.ndarray, c: Constraints, sensitive: Sensitive) -> ClassStats:
    """Class statistics from a dense classes × sensitive-values count matrix."""
    size = counts.sum(axis=1)
    stats = ClassStats(size=size)
    if not c.needs_sensitive:
        return stats
    safe = np.maximum(size, 1)
    stats.distinct = (counts > 0).sum(axis=1)
    stats.max_share = counts.max(axis=1) / safe
    if c.t is not None:
        diff = counts / safe[:, None] - sensitive.table_dist[None, :]
        if sensitive.ordered:
            m = counts.shape[1]
            stats.distance = np.abs(np.cumsum(diff, axis=1)[:, :-1]).sum(axis=1) / max(m - 1, 1)
        else:
            stats.distance = 0.5 * np.abs(diff).sum(axis=1)
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
    if c.t is not None:
        share = count / size[pg]
        q = sensitive.table_dist
        if sensitive.ordered:
            stats.distance = _ordered_emd_pairs(pg, ps, share, q, n_classes)
        else:
            part = np.abs(share - q[ps]) - q[ps]
            stats.distance = 0.5 * (np.bincount(pg, weights=part, minlength=n_classes) + 1.0)
    return stats


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
