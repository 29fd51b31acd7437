"""The independent check of a released table, run before any anonymity release is returned.

Deliberately separate from the algorithms' own bookkeeping: it reads only the released frame
(the strings a user downloads), groups records by their released quasi-identifier values and
recomputes k, distinct l, the top share α and the t-closeness distance from scratch.
The other models (entropy and recursive l-diversity, δ-disclosure, β-likeness) are recomputed
here from the (class, value) counts, written from their definitions rather than shared with
models.py. A release that fails is an error (:class:`VerificationError`), never a result.
The population check (k-map, δ-presence) is in verify_population.py.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from app.privacy.anonymity.hierarchies import MISSING_LEAF, leaf_keys, normalize_values, with_missing_leaf
from app.privacy.registry import MethodInputError

CHUNK_CELLS = 4_000_000


class VerificationError(RuntimeError):
    """An anonymity release failed its independent check: a defect, never returned as a result."""


@dataclass
class Achieved:
    k: int
    classes: int
    records: int
    l: int | None = None  # noqa: E741
    alpha: float | None = None
    t: float | None = None
    entropy_l: float | None = None  # smallest e^H over classes: "as diverse as this many values"
    recursive_c: float | None = None  # largest r₁ / (r_l + … + r_m) over classes
    delta_disclosure: float | None = None  # largest |ln(p_c(s) / q(s))|
    beta: float | None = None  # largest relative gain (p_c(s) − q(s)) / q(s)
    k_map: int | None = None  # smallest population count of a released class
    delta_presence_min: float | None = None  # smallest |T ∩ class| / |P ∩ class| over every class
    delta_presence_max: float | None = None  # largest
    population_check: dict | None = None  # how k-map and δ-presence were counted (verify_population)

    def as_dict(self) -> dict:
        return {key: value for key, value in self.__dict__.items() if value is not None}


def worst_achieved(each: list[Achieved]) -> Achieved:
    """One figure per model over several sensitive columns' checks of the same release: the
    weakest (smallest l and entropy l, largest α, t, c, β, δ)."""
    def pick(name: str, worst):
        values = [getattr(a, name) for a in each if getattr(a, name) is not None]
        return worst(values) if values else None
    return Achieved(k=each[0].k, classes=each[0].classes, records=each[0].records, l=pick("l", min),
                    alpha=pick("alpha", max), t=pick("t", max), entropy_l=pick("entropy_l", min),
                    recursive_c=pick("recursive_c", max), delta_disclosure=pick("delta_disclosure", max),
                    beta=pick("beta", max))


def equivalence_classes(frame: pd.DataFrame, columns: list[str]) -> np.ndarray:
    """Class id per record: records with equal values (missing equal to missing) on ``columns``."""
    if not columns:
        return np.zeros(len(frame), dtype=np.int64)
    coded = [pd.factorize(frame[name], use_na_sentinel=False) for name in columns]
    return joint_ids([(codes, len(uniques)) for codes, uniques in coded], len(frame))


def joint_ids(columns: list[tuple[np.ndarray, int]], n: int) -> np.ndarray:
    """Id (0..) per record of its tuple of codes, given each column's codes and their count."""
    key = np.zeros(n, dtype=np.int64)
    radix = 1
    for codes, cardinality in columns:
        card = max(cardinality, 1)
        if radix * card >= 2**62:
            key, seen = pd.factorize(key)
            radix = len(seen)
        key = key * card + codes
        radix *= card
    ids, _ = pd.factorize(key)
    return ids.astype(np.int64)


def first_of(ids: np.ndarray, n: int) -> np.ndarray:
    """The first record of each of the ids 0..n-1."""
    first = np.full(n, -1, dtype=np.int64)
    first[ids[::-1]] = np.arange(len(ids))[::-1]
    return first


def verify_release(frame: pd.DataFrame, quasi_identifiers: list[str], *, k: int,
                   sensitive: str | None = None, l: int | None = None,  # noqa: E741
                   alpha: float | None = None, t: float | None = None,
                   table_values: np.ndarray | None = None, table_dist: np.ndarray | None = None,
                   ordered: bool = False, l_diversity: str = "distinct", c: float | None = None,
                   beta: float | None = None, beta_likeness: str = "enhanced",
                   delta_disclosure: float | None = None,
                   t_hierarchy: pd.DataFrame | None = None) -> Achieved:
    """Recompute the privacy figures of ``frame``; raise VerificationError if any is not met.

    For t-closeness, δ-disclosure and β-likeness, ``table_values`` (sorted for an ordered
    column) and ``table_dist`` are the sensitive domain and the distribution of the whole input
    table. ``l`` is read as ``l_diversity`` says (distinct, entropy, recursive with ``c``).
    With ``t_hierarchy`` (an ARX-shaped table of the sensitive column) t is the hierarchical
    distance, and ``table_values`` are its leaf keys."""
    n = len(frame)
    ids = equivalence_classes(frame, quasi_identifiers)
    sizes = np.bincount(ids) if n else np.zeros(0, dtype=np.int64)
    achieved = Achieved(k=int(sizes.min()) if n else 0, classes=len(sizes), records=n)
    failures = []
    if n and achieved.k < k:
        failures.append(f"a class has {achieved.k} records, fewer than k = {k}")
    if sensitive is not None and n and any(v is not None for v in (l, alpha, t, beta, delta_disclosure)):
        if t_hierarchy is not None:
            codes, m = _leaf_codes(frame[sensitive], table_values)
        else:
            codes, m = _sensitive_codes(frame[sensitive], ordered, table_values)
        pairs = _ClassValues.count_pairs(ids, codes, sizes, m)
        distinct = pairs.distinct
        if l is not None:
            achieved.l = int(distinct.min())
            if l_diversity == "distinct" and achieved.l < l:
                failures.append(f"a class has {achieved.l} distinct sensitive values, fewer than l = {l}")
        if l is not None and l_diversity == "entropy":
            smallest, achieved.entropy_l = pairs.entropy_l()
            if smallest < l * (1 - 1e-9):
                failures.append(f"a class is as diverse as {smallest:.4f} equally frequent "
                                f"values (e^entropy), below entropy l = {l}")
        if l is not None and l_diversity == "recursive":
            achieved.recursive_c = _largest_recursive_ratio(pairs.pair_class, pairs.count, len(sizes), l)
            if not achieved.recursive_c < c:
                failures.append(f"a class has r1 / (r_l + … + r_m) = {achieved.recursive_c:.4f}, not "
                                f"below c = {c:g} (recursive (c,l)-diversity, l = {l})")
        if alpha is not None:
            achieved.alpha = pairs.largest_share()
            if achieved.alpha > alpha + 1e-9:
                failures.append(f"a sensitive value holds {achieved.alpha:.4f} of a class, above alpha = {alpha}")
        if t is not None:
            if t_hierarchy is not None:
                achieved.t = _max_tree_distance(ids, codes, sizes, table_values, table_dist, t_hierarchy)
            else:
                achieved.t = _max_distance(ids, codes, sizes, table_dist, ordered)
            if achieved.t > t + 1e-9:
                failures.append(f"a class is at distance {achieved.t:.4f} from the table, above t = {t}")
        if delta_disclosure is not None or beta is not None:
            if table_dist is None:
                raise ValueError("delta_disclosure and beta are relative to the input table: give table_dist")
            ratio = pairs.ratio_to(np.asarray(table_dist, dtype=float))
            q = np.asarray(table_dist, dtype=float)[pairs.value]
        if delta_disclosure is not None:
            missing = bool((distinct < m).any())  # ln 0: a value of the table absent from a class
            achieved.delta_disclosure = float("inf") if missing else float(np.abs(np.log(ratio)).max())
            if not achieved.delta_disclosure < delta_disclosure:  # strict, as defined (and as models.py)
                failures.append("a class lacks a sensitive value of the table" if missing else
                                f"a class's share of a sensitive value is e^{achieved.delta_disclosure:.4f} "
                                f"times the table's, not below e^delta_disclosure = e^{delta_disclosure:g}")
        if beta is not None:
            gain = ratio - 1.0
            achieved.beta = max(float(gain.max()), 0.0)
            bound = beta if beta_likeness == "basic" else np.minimum(beta, -np.log(q))
            worst = float((gain - bound).max())
            if worst > 1e-9:
                failures.append(f"a class's share of a sensitive value exceeds the table's by a relative "
                                f"gain above {beta_likeness} beta = {beta:g}"
                                + ("" if beta_likeness == "basic" else " (or above -ln of its table share)"))
    if failures:
        raise VerificationError("release failed its independent check: " + "; ".join(failures))
    return achieved


@dataclass
class _ClassValues:
    """The (class, sensitive value) pairs of a table with their counts, sorted by class: what
    every attribute-disclosure figure here is read from."""
    pair_class: np.ndarray
    value: np.ndarray
    count: np.ndarray
    sizes: np.ndarray
    m: int

    @classmethod
    def count_pairs(cls, ids: np.ndarray, codes: np.ndarray, sizes: np.ndarray, m: int) -> _ClassValues:
        pair, count = np.unique(ids * m + codes, return_counts=True)
        return cls(pair_class=pair // m, value=pair % m, count=count, sizes=sizes, m=m)

    @property
    def distinct(self) -> np.ndarray:
        return np.bincount(self.pair_class, minlength=len(self.sizes))

    def largest_share(self) -> float:
        first = np.flatnonzero(np.r_[True, self.pair_class[1:] != self.pair_class[:-1]])
        return float((np.maximum.reduceat(self.count, first) / self.sizes).max())

    def entropy_l(self) -> tuple[float, float]:
        """The smallest e^H, and it read at 12 digits (a class of 5 equally frequent values is
        e^H = 5, not 4.999999999999998)."""
        smallest = _smallest_entropy_l(self.pair_class, self.count, self.sizes)
        return smallest, float(f"{smallest:.12g}")

    def ratio_to(self, q: np.ndarray) -> np.ndarray:
        """Per pair, the class's share of the value over the reference share q of it."""
        return self.count / self.sizes[self.pair_class] / q[self.value]


def _smallest_entropy_l(pair_class: np.ndarray, count: np.ndarray, sizes: np.ndarray) -> float:
    """min over classes of e^H, H = −Σ_s p ln p over the class's own values."""
    p = count / sizes[pair_class]
    entropy = -np.bincount(pair_class, weights=p * np.log(p), minlength=len(sizes))
    return float(np.exp(entropy.min()))


def _largest_recursive_ratio(pair_class: np.ndarray, count: np.ndarray, n_classes: int, l: int) -> float:  # noqa: E741
    """max over classes of r₁ / (r_l + … + r_m): each class's counts sorted in decreasing order,
    the ones from the l-th on summed (inf when a class has fewer than l values)."""
    order = np.lexsort((-count, pair_class))
    cls, ranked = pair_class[order], count[order]
    position = np.arange(len(cls)) - np.searchsorted(cls, cls)  # 0 for each class's largest
    tail = np.bincount(cls, weights=np.where(position >= l - 1, ranked, 0), minlength=n_classes)
    first = np.bincount(cls, weights=np.where(position == 0, ranked, 0), minlength=n_classes)
    if (tail == 0).any():
        return float("inf")
    return float((first / tail).max())


def _sensitive_codes(values: pd.Series, ordered: bool, table_values: np.ndarray | None) -> tuple[np.ndarray, int]:
    """Codes of the sensitive cells in the table's domain (sorted numbers, or labels as text;
    a missing label is '<missing>'), and the domain's size."""
    if ordered:
        numbers = values.to_numpy(dtype=float)
        domain = np.unique(numbers) if table_values is None else np.asarray(table_values, dtype=float)
        return np.searchsorted(domain, numbers).astype(np.int64), len(domain)
    local, uniques = pd.factorize(values, use_na_sentinel=False)
    labels = ["<missing>" if pd.isna(u) else str(u) for u in uniques]
    if table_values is None:
        return local.astype(np.int64), len(labels)
    index = pd.Index([str(v) for v in table_values]).get_indexer(labels)
    if (index < 0).any():
        raise VerificationError("release holds a sensitive value outside the input table's domain")
    return index[local].astype(np.int64), len(table_values)


def _leaf_codes(values: pd.Series, leaves: np.ndarray) -> tuple[np.ndarray, int]:
    """Codes of the sensitive cells among a hierarchy's leaf keys (as a hierarchy matches data:
    an integral '39.0' is '39'; a missing cell is the leaf '<missing>')."""
    keys = normalize_values(values.to_numpy(dtype=object))
    keys[keys == None] = MISSING_LEAF  # noqa: E711 (elementwise)
    index = pd.Index([str(v) for v in leaves]).get_indexer(keys)
    if (index < 0).any():
        raise VerificationError("release holds a sensitive value outside the hierarchy's leaves")
    return index.astype(np.int64), len(leaves)


def _max_tree_distance(ids: np.ndarray, codes: np.ndarray, sizes: np.ndarray, leaves: np.ndarray,
                       table_dist: np.ndarray, hierarchy: pd.DataFrame) -> float:
    """Largest EMD over classes under the hierarchy's tree metric, written as optimal transport
    on a tree: with every leaf at depth H and two leaves level(LCA)/H apart, each edge weighs
    1/(2H) and the EMD is Σ over the non-root nodes v of |p(v) − q(v)| / (2H), p(v) and q(v) the
    class's and the table's mass below v (a check apart from models.py's sum over parents)."""
    table = hierarchy.astype(str).to_numpy().astype(object)
    table[:, 0] = leaf_keys(table[:, 0])
    if MISSING_LEAF in set(map(str, leaves)):  # a missing cell: a leaf under the top (see hierarchies)
        table = with_missing_leaf(table)
    keys = pd.Index(table[:, 0])
    first = np.flatnonzero(~keys.duplicated(keep="first"))  # a leaf listed twice: its first row
    at = keys[first].get_indexer([str(v) for v in leaves])
    rows = np.where(at < 0, -1, first[np.maximum(at, 0)])
    if (at < 0).any():
        raise VerificationError("a sensitive value is not a leaf of its hierarchy")
    top_single = len(set(table[:, -1])) == 1  # else a root above the tops (as the trees have)
    height = table.shape[1] - 1 if top_single else table.shape[1]
    # each non-root level: the node of every value (nodes named by their path from the top)
    paths = np.full(len(leaves), "", dtype=object)
    nodes_by_level = []
    for j in range(table.shape[1] - 1, -1, -1):
        paths = paths + "\x1f" + table[rows, j].astype(object)
        if j < height:
            nodes_by_level.append(pd.factorize(paths)[0])
    worst = 0.0
    m = len(leaves)
    order = np.argsort(ids, kind="stable")
    ids_sorted, codes_sorted = ids[order], codes[order]
    n_classes, step = len(sizes), max(1, CHUNK_CELLS // max(m, 1))
    bounds = np.searchsorted(ids_sorted, np.arange(0, n_classes + step, step))
    for c0, (a, b) in zip(range(0, n_classes, step), zip(bounds[:-1], bounds[1:])):
        c1 = min(c0 + step, n_classes)
        dense = np.bincount((ids_sorted[a:b] - c0) * m + codes_sorted[a:b], minlength=(c1 - c0) * m)
        diff = dense.reshape(c1 - c0, m) / sizes[c0:c1, None] - np.asarray(table_dist)[None, :]
        total = np.zeros(c1 - c0)
        for node in nodes_by_level:
            by_node = np.argsort(node, kind="stable")
            starts = np.flatnonzero(np.r_[True, np.diff(node[by_node]) != 0])
            total += np.abs(np.add.reduceat(diff[:, by_node], starts, axis=1)).sum(axis=1)
        worst = max(worst, float((total / (2 * height)).max()))
    return worst


def _max_distance(ids: np.ndarray, codes: np.ndarray, sizes: np.ndarray, table_dist: np.ndarray,
                  ordered: bool) -> float:
    """Largest EMD over classes, dense class × value rows computed chunk by chunk."""
    m = len(table_dist)
    order = np.argsort(ids, kind="stable")
    ids_sorted, codes_sorted = ids[order], codes[order]
    n_classes = len(sizes)
    rows = max(1, CHUNK_CELLS // max(m, 1))
    worst = 0.0
    bounds = np.searchsorted(ids_sorted, np.arange(0, n_classes + rows, rows))
    for c0, (a, b) in zip(range(0, n_classes, rows), zip(bounds[:-1], bounds[1:])):
        c1 = min(c0 + rows, n_classes)
        flat = (ids_sorted[a:b] - c0) * m + codes_sorted[a:b]
        dense = np.bincount(flat, minlength=(c1 - c0) * m).reshape(c1 - c0, m).astype(float)
        diff = dense / sizes[c0:c1, None] - table_dist[None, :]
        if ordered:
            dist = np.abs(np.cumsum(diff, axis=1)[:, :-1]).sum(axis=1) / max(m - 1, 1)
        else:
            dist = 0.5 * np.abs(diff).sum(axis=1)
        worst = max(worst, float(dist.max()))
    return worst


def disclosure_levels(frame: pd.DataFrame, quasi_identifiers: list[str], sensitive: str, *,
                      numeric: bool, recursive_l: int = 2) -> dict:
    """Which attribute-disclosure models a table meets over ``quasi_identifiers``, and at what
    level, against the table's own sensitive distribution (what a checker such as pycanon
    reports): distinct and entropy l, recursive c for ``recursive_l``, α, t (ordered distance for
    a numeric column, equal for a categorical one), basic and enhanced β, δ-disclosure. A level
    no parameter reaches is null with the reason."""
    missing = int(frame[sensitive].isna().sum()) if numeric else 0
    if missing:  # as kanonymity: the ordered distance has no place for a missing number
        raise MethodInputError(f"numeric sensitive column {sensitive!r} has {missing} missing cells")
    ids = equivalence_classes(frame, quasi_identifiers)
    sizes = np.bincount(ids)
    codes, m = _sensitive_codes(frame[sensitive], numeric, None)
    q = np.bincount(codes, minlength=m) / len(codes)
    pairs = _ClassValues.count_pairs(ids, codes, sizes, m)
    relative = pairs.ratio_to(q)
    gain = relative - 1.0
    ratio = _largest_recursive_ratio(pairs.pair_class, pairs.count, len(sizes), recursive_l)
    lacking = int((pairs.distinct < m).sum())
    beyond = int(np.unique(pairs.pair_class[gain > -np.log(q[pairs.value]) + 1e-12]).size)

    def level(figure: float | None, reason: str) -> dict:
        return {"level": figure, "reason": None if figure is not None else reason}
    return {
        "sensitive": sensitive, "distance": "ordered" if numeric else "equal",
        "reference": "the table's own distribution of the sensitive column",
        "values": int(m), "classes": int(len(sizes)),
        "l_distinct": int(pairs.distinct.min()),
        "entropy_l": pairs.entropy_l()[1],
        "recursive": {"l": recursive_l, **level(
            float(ratio) if np.isfinite(ratio) else None,
            f"a class has fewer than l = {recursive_l} distinct values: no c makes it (c,l)-diverse")},
        "alpha": pairs.largest_share(),
        "t": _max_distance(ids, codes, sizes, q, numeric),
        "beta_basic": max(float(gain.max()), 0.0),
        "beta_enhanced": level(
            max(float(gain.max()), 0.0) if beyond == 0 else None,
            f"in {beyond} classes a value's relative gain exceeds −ln of its share, which enhanced "
            "β-likeness allows for no β"),
        "delta_disclosure": level(
            float(np.abs(np.log(relative)).max()) if lacking == 0 else None,
            f"{lacking} classes lack some value of the column (ln 0): no δ makes it δ-disclosure private"),
    }
