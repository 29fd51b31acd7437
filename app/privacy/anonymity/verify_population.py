"""The independent check of a release against its population (k-map, δ-presence over a
research subset), run before such a release is returned; verify.py checks the released table
itself.

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
from app.privacy.anonymity.verify import (
    CHUNK_CELLS, Achieved, VerificationError, equivalence_classes, first_of, joint_ids,
)
from app.privacy.registry import MethodInputError

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
    ids = joint_ids(list(zip(local_ids, cards)), n_p)
    count = int(ids.max()) + 1
    rep = first_of(ids, count)
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
        tuple_id = joint_ids([(np.asarray(self.covers[q].codes, dtype=np.int64), self.covers[q].domain)
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
        first = first_of(ids, n_c)
        class_rows, cover_rows = {}, {}
        for q in quasi_identifiers:  # each released record is covered by its own labels
            local, labels = pd.factorize(released[q].astype(str))
            cover_rows[q] = _cover_matrix(covers[q], labels)
            class_rows[q] = local[first]
            if not cover_rows[q][local, covers[q].codes[pos]].all():
                failures.append(f"a released label of {q!r} does not cover its record's value")
        rep = first_of(tuple_id, n_d)
        p_d = np.bincount(tuple_id, minlength=n_d)
        t_d = np.bincount(tuple_id[self.in_subset], minlength=n_d)
        covered_by = np.zeros(n_d, dtype=np.int64)
        p_c = np.zeros(n_c, dtype=np.int64)
        t_c = np.zeros(n_c, dtype=np.int64)
        step = max(1, CHUNK_CELLS // max(n_d, 1))
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
