"""The independent check of a released table, run before any anonymity release is returned.

Deliberately separate from the algorithms' own bookkeeping: it reads only the released frame
(the strings a user downloads), groups records by their released quasi-identifier values and
recomputes k, distinct l, the top share α and the t-closeness distance from scratch.
The other models (entropy and recursive l-diversity, δ-disclosure, β-likeness) are recomputed
here from the (class, value) counts, written from their definitions rather than shared with
models.py. A release that fails is an error (:class:`VerificationError`), never a result.

With a population (k-map, δ-presence over a research subset), :func:`verify_population`
reads the released strings and the population's raw values: which population records each
released class's labels cover (parsed from the label text — an interval by value, a hierarchy
node by the leaves below every node of that name, a set of children by theirs), never the
algorithm's classes: in O(records × QIs) from the generalization's labels of every population
record when the released classes are proven disjoint (by their labels, or by Mondrian's split
tree, checked), else by comparing every class with every distinct population tuple.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pandas as pd

from app.privacy.anonymity.axes import Axis, NumericAxis
from app.privacy.anonymity.hierarchies import MISSING_LEAF, leaf_keys, normalize_values, with_missing_leaf
from app.privacy.registry import MethodInputError

_CHUNK_CELLS = 4_000_000


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
    return _joint_ids([(codes, len(uniques)) for codes, uniques in coded], len(frame))


def _joint_ids(columns: list[tuple[np.ndarray, int]], n: int) -> np.ndarray:
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


def _first_of(ids: np.ndarray, n: int) -> np.ndarray:
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
    n_classes, step = len(sizes), max(1, _CHUNK_CELLS // max(m, 1))
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
    rows = max(1, _CHUNK_CELLS // max(m, 1))
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


# ------------------------------------------------------------------ population (k-map, δ-presence)
@dataclass
class LabelCover:
    """A quasi-identifier's population values as codes, and the codes a released label stands
    for, read from the label's text: as a mask over the domain (``covers``) and as sorted,
    disjoint half-open ranges of codes (``ranges``; derived from the mask when not given)."""
    codes: np.ndarray  # per population record
    domain: int
    covers: Callable[[str], np.ndarray]  # label -> bool over the domain
    ranges: Callable[[str], np.ndarray] | None = None  # label -> (r, 2) [start, end) code ranges

    def spans(self, label: str) -> np.ndarray:
        """What ``label`` covers as sorted, disjoint, non-empty half-open ranges of codes within
        the domain (whatever ``ranges`` returns is clipped and merged so)."""
        if self.ranges is None:
            return _runs(self.covers(label))
        given = np.clip(np.asarray(self.ranges(label), dtype=np.int64).reshape(-1, 2), 0, self.domain)
        return _union(list(map(tuple, given)))


def _runs(mask: np.ndarray) -> np.ndarray:
    """The runs of True of a mask as (r, 2) half-open ranges."""
    edges = np.flatnonzero(np.diff(np.r_[0, mask.astype(np.int8), 0]))
    return edges.reshape(-1, 2).astype(np.int64)


def _union(ranges: list[tuple[int, int]]) -> np.ndarray:
    """Half-open ranges merged into sorted disjoint ones (empty ones dropped)."""
    out: list[list[int]] = []
    for a, b in sorted((int(a), int(b)) for a, b in ranges if b > a):
        if out and a <= out[-1][1]:
            out[-1][1] = max(out[-1][1], b)
        else:
            out.append([a, b])
    return np.array(out, dtype=np.int64).reshape(-1, 2)


def _mask(ranges: np.ndarray, domain: int) -> np.ndarray:
    out = np.zeros(domain, dtype=bool)
    for a, b in ranges:
        out[a:b] = True
    return out


def label_cover(axis: Axis) -> LabelCover:
    """What a released label of this axis covers: a number 'v' or an interval '[a, b]' the
    values within it; an ordered coding's category or '[c1 .. c2]' the categories between in
    the published order; a hierarchy's node name the leaves below every node so named, a set
    '{a|b}' the leaves below each member."""
    def unknown(label: str):
        raise VerificationError(f"release holds a label of {axis.column!r} its check cannot read: {label!r}")
    if isinstance(axis, NumericAxis) and axis.categories is not None:
        cats = list(axis.categories)
        index = {c: i for i, c in enumerate(cats)}

        def ordered(label: str) -> np.ndarray:
            if label in index:
                return _union([(index[label], index[label] + 1)])
            if label.startswith("[") and label.endswith("]") and " .. " in label:
                a, b = label[1:-1].split(" .. ", 1)
                if a not in index or b not in index:
                    unknown(label)
                return _union([(index[a], index[b] + 1)])
            unknown(label)
        return _cover(axis.codes, len(cats), ordered)
    if isinstance(axis, NumericAxis):
        values = np.asarray(axis.values, dtype=float)

        def interval(label: str) -> np.ndarray:
            try:
                a, b = ((float(x) for x in label[1:-1].split(", ")) if label.startswith("[")
                        else (float(label),) * 2)
            except ValueError:
                unknown(label)
            # the values v with a <= v <= b (values sorted; a NaN bound covers none)
            if np.isnan(a) or np.isnan(b):
                return _union([])
            return _union([(np.searchsorted(values, a, "left"), np.searchsorted(values, b, "right"))])
        return _cover(axis.codes, len(values), interval)
    tree = axis
    nodes: dict[str, list[int]] = {}
    for v, name in enumerate(tree.labels):
        nodes.setdefault(str(name), []).append(v)

    def below(name: str) -> list[tuple[int, int]]:
        return [(tree.lo[v], tree.hi[v]) for v in nodes.get(name) or unknown(name)]

    def node(label: str) -> np.ndarray:
        if label in nodes:
            return _union(below(label))
        if label.startswith("{") and label.endswith("}"):
            return _union([span for part in label[1:-1].split("|") for span in below(part)])
        unknown(label)
    return _cover(tree.leaf_codes, tree.n_leaves, node)


def _cover(codes: np.ndarray, domain: int, ranges: Callable[[str], np.ndarray]) -> LabelCover:
    return LabelCover(codes, domain, lambda label: _mask(ranges(label), domain), ranges)


def _cover_matrix(cover: LabelCover, labels) -> np.ndarray:
    return np.array([cover.covers(str(label)) for label in labels], dtype=bool).reshape(len(labels), cover.domain)


@dataclass
class SplitTree:
    """The certificate Mondrian gives with its classes: its cuts, node by node. Node 0 is the
    whole population; an inner node v cuts on the quasi-identifier ``columns[axis[v]]``, the
    records whose code is below ``threshold[v]`` going to node ``left[v]``, the others to
    ``right[v]`` (codes are the axis's: a numeric value's rank, an ordered category's index, a
    hierarchy leaf's depth-first number — those the check reads the labels in); a leaf has axis
    −1. The check trusts none of it (see :func:`_split_tree_refutes`)."""
    columns: list[str]
    axis: np.ndarray
    threshold: np.ndarray
    left: np.ndarray
    right: np.ndarray


@dataclass
class _HintGroups:
    """The population records grouped by the labels the generalization gives them (the
    ``hints``), every label checked to cover its record's value: a group's records all lie in
    its box, the product over quasi-identifiers of what its labels cover."""
    ids: np.ndarray  # group of every population record
    count: int
    lo: np.ndarray  # (groups, QIs): the smallest code a group's label covers
    hi: np.ndarray  # (groups, QIs): one past the largest
    labels_disjoint: list[bool]  # per QI: no two of its distinct labels cover a common code


def _hint_groups(quasi_identifiers: list[str], covers: dict[str, LabelCover],
                 hints: dict[str, np.ndarray], failures: list[str]) -> tuple[_HintGroups, list[np.ndarray]]:
    """The groups, and per QI each record's label as text. O(records × QIs) and a parse of each
    distinct label; a label not covering its record's value is a failure."""
    n_p = len(covers[quasi_identifiers[0]].codes)
    local_ids, label_lo, label_hi, disjoint, texts, cards = [], [], [], [], [], []
    for q in quasi_identifiers:
        cover = covers[q]
        text = pd.Series(hints[q], dtype=object).astype(str).to_numpy()
        local, labels = pd.factorize(text)
        spans = [cover.spans(label) for label in labels]
        owner = np.repeat(np.arange(len(labels)), [len(s) for s in spans])
        flat = np.concatenate(spans) if spans else np.zeros((0, 2), dtype=np.int64)
        codes = np.asarray(cover.codes, dtype=np.int64)
        if len(flat):  # a record's code inside one of its label's ranges (sorted by label, start)
            width = cover.domain + 1
            at = np.searchsorted(owner * width + flat[:, 0], local * width + codes, side="right") - 1
            at_ok = np.maximum(at, 0)
            inside = (at >= 0) & (owner[at_ok] == local) & (codes < flat[at_ok, 1])
        else:
            inside = np.zeros(n_p, dtype=bool)
        if not inside.all():
            failures.append(f"the generalization of {q!r} does not cover a population record's value")
        counts = np.array([len(s) for s in spans], dtype=np.int64)
        first = np.cumsum(counts) - counts
        has = counts > 0  # a label covering nothing: an empty box (its records failed above)
        lo, hi = np.full(len(labels), cover.domain, dtype=np.int64), np.zeros(len(labels), dtype=np.int64)
        lo[has], hi[has] = flat[first[has], 0], flat[first[has] + counts[has] - 1, 1]
        by_start = flat[np.argsort(flat[:, 0], kind="stable")]
        disjoint.append(bool((by_start[1:, 0] >= by_start[:-1, 1]).all()))
        local_ids.append(local)
        label_lo.append(lo)
        label_hi.append(hi)
        texts.append(text)
        cards.append(len(labels))
    ids = _joint_ids(list(zip(local_ids, cards)), n_p)
    count = int(ids.max()) + 1
    rep = _first_of(ids, count)
    lo = np.column_stack([label_lo[j][local_ids[j][rep]] for j in range(len(quasi_identifiers))])
    hi = np.column_stack([label_hi[j][local_ids[j][rep]] for j in range(len(quasi_identifiers))])
    return _HintGroups(ids, count, lo, hi, disjoint), texts


def _split_tree_refutes(tree: SplitTree, quasi_identifiers: list[str], groups: _HintGroups) -> str | None:
    """None when ``tree`` proves the groups' boxes pairwise disjoint, else why it does not.

    Every group is routed from node 0: at a cut on QI q with threshold θ its whole box must lie
    below θ on q (left) or at or above it (right) — a box across the cut fails. Children are
    numbered after their parent, so the routing ends at a leaf. Two groups ending at different
    leaves parted at some node, one wholly below its θ and the other wholly at or above it on
    its QI: their boxes are disjoint, whatever the tree says of itself. Two groups at one leaf
    fail."""
    n_nodes = len(tree.axis)
    arrays = [np.asarray(a, dtype=np.int64) for a in (tree.axis, tree.threshold, tree.left, tree.right)]
    if n_nodes == 0 or any(len(a) != n_nodes for a in arrays):
        return "the split tree is malformed"
    axis, threshold, left, right = arrays
    column = np.array([quasi_identifiers.index(c) if c in quasi_identifiers else -1 for c in tree.columns]
                      + [-1], dtype=np.int64)
    inner = axis >= 0
    node_ids = np.arange(n_nodes)
    if ((axis >= len(tree.columns)) | inner & (column[np.minimum(axis, len(tree.columns))] < 0)).any():
        return "the split tree cuts on a column that is not a quasi-identifier"
    if (inner & ((left <= node_ids) | (right <= node_ids) | (left >= n_nodes) | (right >= n_nodes))).any():
        return "the split tree has a child not numbered after its parent"
    node = np.zeros(groups.count, dtype=np.int64)
    while True:
        moving = np.flatnonzero(axis[node] >= 0)
        if not len(moving):
            break
        at = node[moving]
        q = column[axis[at]]
        below = groups.hi[moving, q] <= threshold[at]
        above = groups.lo[moving, q] >= threshold[at]
        if not (below | above).all():
            return f"a class's labels of {quasi_identifiers[int(q[~(below | above)][0])]!r} lie on both sides of a cut"
        node[moving] = np.where(below, left[at], right[at])
    if len(np.unique(node)) < groups.count:
        return "two classes end at one leaf of the split tree"
    return None


# The exact check compares every released class with every distinct population tuple on every
# QI (chunked boolean matrices), about 6·10⁸ such cells a second (31 s for 1.85·10¹⁰: synthetic
# 100,000, 23,866 classes × 97,104 tuples × 8 QIs). Above _EXACT_CELLS it is not run: δ-presence
# then fails the job naming the sizes (before minutes of work, or the job's time limit). k-map,
# which the groups' lower bound proves, runs it only below _EXACT_CELLS_K_MAP, to state its
# figure exactly.
_EXACT_CELLS = 2 * 10**10
_EXACT_CELLS_K_MAP = 10**9


def verify_population(released: pd.DataFrame, population_index: pd.Index, in_subset: np.ndarray,
                      quasi_identifiers: list[str], covers: dict[str, LabelCover],
                      hints: dict[str, np.ndarray], *, k_map: int | None,
                      delta_min: float | None, delta_max: float | None,
                      splits: SplitTree | None = None, exact: bool = False) -> Achieved:
    """k-map and δ-presence of a release of research records (``released``, indexed as the
    population) recomputed from the released labels and the population's values: a released
    class's population count is the number of population records its labels cover. For
    δ-presence every population record must be covered by at most one released class, every
    research record a released class covers must be released, and the records no released
    class covers (never in the subset, or suppressed) are grouped by ``hints`` — the labels the
    generalization gives every population record, each checked to cover its record's value —
    their ratio counting the research records suppressed among them.

    Fast path (O(records × QIs)), when every released record's labels are its own hints: the
    population records grouped by their hints, each hint checked to cover its record's value
    (a hint that does not refuses the release), so every group lies inside its box (the
    product over QIs of what its labels cover) and a released class's group is a lower bound
    of its population count — all k-map needs. When the boxes are proven pairwise disjoint —
    each QI's distinct labels covering disjoint codes (full-domain generalization), or
    ``splits``, a Mondrian split tree, sending every box to a leaf of its own
    (:func:`_split_tree_refutes`) — a record is covered by its own group's box and by no other,
    so the counts and shares are the groups' exactly. Otherwise the exact check compares every
    released class with every distinct population tuple (O(classes × tuples × QIs)) when that
    is small enough; when it is not, δ-presence fails the job naming the sizes and k-map
    states its lower bound.

    Returns the figures (k_map: the smallest population count of a released class, or a lower
    bound of it when ``population_check['k_map']`` says so; delta_presence_min / _max over
    every class); raises VerificationError when one is not met. ``exact``: the exact check
    whatever the fast path could prove (what the tests compare it with)."""
    pos = population_index.get_indexer(released.index)
    if (pos < 0).any() or not in_subset[pos].all():
        raise VerificationError("release failed its independent check: a released record is not one "
                                "of the research subset's")
    check = _PopulationCheck(released, pos, in_subset, quasi_identifiers, covers, hints, k_map,
                             delta_min, delta_max)
    presence = delta_min is not None
    if exact:
        return check.exact("asked for", required=False)
    groups, why_not = None, "no generalization of the population records was given"
    if quasi_identifiers and all(q in hints for q in quasi_identifiers):
        failures: list[str] = []
        groups, texts = _hint_groups(quasi_identifiers, covers, hints, failures)
        if failures:
            raise VerificationError("release failed its independent check: " + "; ".join(failures))
        if not all((released[q].astype(str).to_numpy(dtype=object) == texts[j][pos]).all()
                   for j, q in enumerate(quasi_identifiers)):
            groups, why_not = None, "a released record's labels are not its generalization's"
    if groups is None:
        return check.exact(why_not, required=True)
    if all(groups.labels_disjoint):
        proof = "every quasi-identifier's distinct labels cover disjoint values"
    elif splits is not None:
        why_not = _split_tree_refutes(splits, quasi_identifiers, groups)
        proof = None if why_not else "the split tree sends every class to a leaf of its own"
    else:
        proof, why_not = None, "labels of a quasi-identifier overlap and no split tree was given"
    if proof is None and presence:
        return check.exact(why_not, required=True)
    return check.from_groups(groups, proof, why_not)


@dataclass
class _PopulationCheck:
    released: pd.DataFrame
    pos: np.ndarray  # population position of each released record
    in_subset: np.ndarray
    quasi_identifiers: list[str]
    covers: dict[str, LabelCover]
    hints: dict[str, np.ndarray]
    k_map: int | None
    delta_min: float | None
    delta_max: float | None

    def _finish(self, achieved: Achieved, failures: list[str], t: np.ndarray | None = None,
                released: np.ndarray | None = None) -> Achieved:
        if self.k_map is not None and achieved.classes and achieved.k_map < self.k_map:
            failures.append(f"a released class matches {achieved.k_map} population records, fewer than "
                            f"k_map = {self.k_map}")
        if self.delta_min is not None:
            if (t != released).any():
                failures.append("a released class's labels cover research records that were not released")
            if achieved.delta_presence_min < self.delta_min - 1e-12:
                failures.append(f"a class of the population has a share {achieved.delta_presence_min:.6g} of "
                                f"research records, below delta_min = {self.delta_min:g}")
            if achieved.delta_presence_max > self.delta_max + 1e-12:
                failures.append(f"a class of the population has a share {achieved.delta_presence_max:.6g} of "
                                f"research records, above delta_max = {self.delta_max:g}")
        if failures:
            raise VerificationError("release failed its independent check: " + "; ".join(failures))
        return achieved

    def from_groups(self, groups: _HintGroups, proof: str | None, why_not: str | None) -> Achieved:
        """The figures from the hint groups: exact when ``proof`` says how their boxes were
        shown disjoint; without (k-map alone) the groups' lower bound, or the exact check's
        figure when that is cheap."""
        p_g = np.bincount(groups.ids, minlength=groups.count)
        t_g = np.bincount(groups.ids[self.in_subset], minlength=groups.count)
        r_g = np.bincount(groups.ids[self.pos], minlength=groups.count)
        out = r_g > 0
        achieved = Achieved(k=0, classes=int(out.sum()), records=len(self.pos))
        if achieved.classes:
            achieved.k_map = int(p_g[out].min())
        if proof is None:
            tuples = self._tuples()
            if achieved.classes * tuples[1] * len(self.quasi_identifiers) <= _EXACT_CELLS_K_MAP:
                return self.exact(why_not, required=False, tuples=tuples)
            achieved.population_check = {
                "method": "hint groups", "k_map": "lower bound",
                "why": f"{why_not}: each released class's population count is at least the records the "
                       f"generalization gives its labels (each checked to cover its record's value); the exact "
                       f"count, {achieved.classes} released classes against {tuples[1]} distinct population "
                       f"tuples, was not run"}
        else:
            achieved.population_check = {"method": "hint groups", "k_map": "exact", "disjoint": proof}
        if self.delta_min is not None:
            ratios = t_g / np.maximum(p_g, 1)
            achieved.delta_presence_min, achieved.delta_presence_max = float(ratios.min()), float(ratios.max())
        return self._finish(achieved, [], t_g[out], r_g[out])

    def _tuples(self) -> tuple[np.ndarray, int]:
        """The population's distinct tuples of values: the id of each record's, and how many."""
        tuple_id = _joint_ids([(np.asarray(self.covers[q].codes, dtype=np.int64), self.covers[q].domain)
                               for q in self.quasi_identifiers], len(self.in_subset))
        return tuple_id, int(tuple_id.max()) + 1 if len(tuple_id) else 0

    def exact(self, why_not: str, *, required: bool,
              tuples: tuple[np.ndarray, int] | None = None) -> Achieved:
        """Every released class against every distinct population tuple, chunk by chunk:
        O(classes × tuples × QIs). ``required`` (δ-presence, the fast path unproven): refused
        with the sizes when above _EXACT_CELLS."""
        released, pos, quasi_identifiers, covers = self.released, self.pos, self.quasi_identifiers, self.covers
        failures = []
        ids = equivalence_classes(released, quasi_identifiers)
        n_c = int(ids.max()) + 1 if len(ids) else 0
        tuple_id, n_d = tuples or self._tuples()
        cells = n_c * n_d * len(quasi_identifiers)
        if required and cells > _EXACT_CELLS:
            raise MethodInputError(
                f"the independent check of {'δ-presence' if self.delta_min is not None else 'k-map'} "
                f"could not take its fast path ({why_not}), and counting exactly would compare {n_c} "
                f"released classes with {n_d} "
                f"distinct tuples of the population's quasi-identifiers on {len(quasi_identifiers)} "
                f"columns ({cells:.2g} comparisons, above the check's {_EXACT_CELLS:.0e}, which would take "
                "minutes): use algorithm mondrian, whose classes its split tree proves disjoint, or the "
                "lattice with hierarchies whose nodes have distinct names; or fewer quasi-identifiers, or "
                "a smaller population")
        first = _first_of(ids, n_c)
        class_rows, cover_rows = {}, {}
        for q in quasi_identifiers:  # each released record is covered by its own labels
            local, labels = pd.factorize(released[q].astype(str))
            cover_rows[q] = _cover_matrix(covers[q], labels)
            class_rows[q] = local[first]
            if not cover_rows[q][local, covers[q].codes[pos]].all():
                failures.append(f"a released label of {q!r} does not cover its record's value")
        rep = _first_of(tuple_id, n_d)
        p_d = np.bincount(tuple_id, minlength=n_d)
        t_d = np.bincount(tuple_id[self.in_subset], minlength=n_d)
        covered_by = np.zeros(n_d, dtype=np.int64)
        p_c = np.zeros(n_c, dtype=np.int64)
        t_c = np.zeros(n_c, dtype=np.int64)
        step = max(1, _CHUNK_CELLS // max(n_d, 1))
        for c0 in range(0, n_c, step):
            chunk = np.arange(c0, min(c0 + step, n_c))
            match = np.ones((len(chunk), n_d), dtype=bool)
            for q in quasi_identifiers:
                match &= cover_rows[q][class_rows[q][chunk]][:, covers[q].codes[rep]]
            covered_by += match.sum(axis=0)
            p_c[chunk] = match @ p_d
            t_c[chunk] = match @ t_d
        achieved = Achieved(k=0, classes=n_c, records=len(released))
        achieved.population_check = {"method": "exact", "k_map": "exact", "why": why_not}
        if n_c:
            achieved.k_map = int(p_c.min())
        if self.delta_min is None:
            return self._finish(achieved, failures)
        twice = int((covered_by > 1).astype(np.int64) @ p_d)
        if twice:
            failures.append(f"{twice} population records match two released classes or more: no single "
                            "ratio is theirs")
        ratios = [t_c / np.maximum(p_c, 1)]
        alone = covered_by[tuple_id] == 0  # records of no released class
        if alone.any():
            if not all(q in self.hints for q in quasi_identifiers):
                raise VerificationError("release failed its independent check: population records no "
                                        "released class covers, and no generalization of them to group them by")
            hinted = pd.DataFrame({q: np.asarray(self.hints[q])[alone] for q in quasi_identifiers})
            for q in quasi_identifiers:
                local, labels = pd.factorize(hinted[q].astype(str))
                if not _cover_matrix(covers[q], labels)[local, covers[q].codes[alone]].all():
                    failures.append(f"the generalization of {q!r} does not cover a population record's value")
            groups = equivalence_classes(hinted, quasi_identifiers)
            t_g = np.bincount(groups[self.in_subset[alone]], minlength=int(groups.max()) + 1)
            ratios.append(t_g / np.bincount(groups))
        every = np.concatenate(ratios)
        achieved.delta_presence_min, achieved.delta_presence_max = float(every.min()), float(every.max())
        return self._finish(achieved, failures, t_c, np.bincount(ids, minlength=n_c))
