"""From equivalence classes to released values: labels per class and quasi-identifier, and the
NCP of every released cell.

Released values (all strings):
- numeric axis: the class's value when it has one, else the closed interval ``[min, max]``;
- ordered coding: the category, else ``[first .. last]`` in the published code order;
- hierarchy: the class's lowest common ancestor when the class holds values of all of that
  ancestor's children; otherwise the children it does hold, ``{child1|child2|…}`` (grouped
  children, the information grouping keeps); a single value stays itself.
NCP: numeric (max − min)/R; hierarchy (leaves − 1)/(all leaves − 1) counting leaves present in
the data (a set of children: the sum of their leaves), or for a numeric column generalized
over a hierarchy the covered interval's width over R.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from app.privacy.anonymity.axes import Axis, NumericAxis
from app.privacy.arrays import distinct_sorted
from app.privacy.anonymity.automatic_intervals import number_text
from app.privacy.anonymity.hierarchies import Tree


@dataclass
class Generalization:
    labels: dict[str, np.ndarray]  # per QI, released label per record
    ncp: np.ndarray  # (records, QIs)
    label_ncp: dict[str, dict[str, float]] = field(default_factory=dict)
    label_leaves: dict[str, dict[str, int]] = field(default_factory=dict)


def _class_extremes(codes: np.ndarray, order: np.ndarray, starts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    sorted_codes = codes[order]
    return np.minimum.reduceat(sorted_codes, starts), np.maximum.reduceat(sorted_codes, starts)


def generalize(axes: list[Axis], class_ids: np.ndarray, n_classes: int,
               child_sets: bool = False) -> Generalization:
    """Labels and NCP of a partition into classes 0..n_classes-1 (every id used). With
    ``child_sets`` a class holding only some children of its LCA releases those children."""
    order = np.argsort(class_ids, kind="stable")
    sizes = np.bincount(class_ids, minlength=n_classes)
    starts = np.cumsum(sizes) - sizes
    out = Generalization(labels={}, ncp=np.zeros((len(class_ids), len(axes))))
    for q, axis in enumerate(axes):
        if isinstance(axis, NumericAxis):
            lo, hi = _class_extremes(axis.codes, order, starts)
            labels, ncp = _numeric_labels(axis, lo, hi)
            leaves = None
        else:
            lo, hi = _class_extremes(axis.leaf_codes, order, starts)
            labels, ncp, leaves = _tree_labels(axis, class_ids, lo, hi, child_sets)
        name = axis.column
        out.labels[name] = labels[class_ids]
        out.ncp[:, q] = ncp[class_ids]
        out.label_ncp[name] = {str(lab): float(x) for lab, x in zip(labels, ncp)}
        if leaves is not None:
            out.label_leaves[name] = {str(lab): int(x) for lab, x in zip(labels, leaves)}
    return out


def _numeric_labels(axis: NumericAxis, lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    r = axis.value_range
    ncp = (axis.values[hi] - axis.values[lo]) / r if r > 0 else np.zeros(len(lo))
    if axis.categories is not None:
        cats = axis.categories
        labels = [cats[a] if a == b else f"[{cats[a]} .. {cats[b]}]" for a, b in zip(lo, hi)]
    else:
        text = [number_text(v) for v in axis.values]
        labels = [text[a] if a == b else f"[{text[a]}, {text[b]}]" for a, b in zip(lo, hi)]
    return np.array(labels, dtype=object), ncp


def _children_count(tree: Tree) -> np.ndarray:
    count = np.zeros(len(tree.labels), dtype=np.int64)
    deep = np.flatnonzero(tree.depth > 0)
    parents = tree.anc[tree.depth[deep] - 1, tree.lo[deep]]
    np.add.at(count, parents, 1)
    return count


def _tree_labels(tree: Tree, class_ids: np.ndarray, lo: np.ndarray, hi: np.ndarray,
                 child_sets: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    node_ncp = tree.node_ncp()
    leafcount = tree.leafcount()
    lca = tree.lca(lo, hi)
    labels = np.array(tree.labels, dtype=object)[lca]
    ncp = node_ncp[lca].astype(float)
    leaves = leafcount[lca].astype(np.int64)
    inner = (tree.depth[lca] < tree.height) & child_sets
    if inner.any():
        # which children of its LCA each class holds
        child_depth = np.minimum(tree.depth[lca] + 1, tree.height)[class_ids]
        child = tree.anc[child_depth, tree.leaf_codes]
        n_nodes = len(tree.labels)
        pairs = distinct_sorted(class_ids.astype(np.int64) * n_nodes + child)
        pc, pn = pairs // n_nodes, pairs % n_nodes
        held = np.bincount(pc, minlength=len(lca))
        partial = inner & (held < _children_count(tree)[lca])
        if partial.any():
            keep = partial[pc]
            pc, pn = pc[keep], pn[keep]
            leaves_sum = np.bincount(pc, weights=leafcount[pn], minlength=len(lca))
            total = max(tree.n_leaves - 1, 1)
            if tree.span is not None and tree.value_range:
                span_lo = np.full(len(lca), np.inf)
                span_hi = np.full(len(lca), -np.inf)
                np.minimum.at(span_lo, pc, tree.span[pn, 0])
                np.maximum.at(span_hi, pc, tree.span[pn, 1])
                set_ncp = (span_hi - span_lo) / tree.value_range
            else:
                set_ncp = (leaves_sum - 1) / total
            ncp[partial] = set_ncp[partial]
            leaves[partial] = leaves_sum[partial].astype(np.int64)
            bounds = np.flatnonzero(np.r_[True, pc[1:] != pc[:-1]])
            names = tree.labels
            for start, end in zip(bounds, np.r_[bounds[1:], len(pc)]):
                labels[pc[start]] = "{" + "|".join(names[v] for v in pn[start:end]) + "}"
    return labels, ncp, leaves


def generalize_levels(trees: list[Tree], levels: tuple[int, ...]) -> Generalization:
    """Full-domain generalization: every value of column q released as its level-L_q node."""
    out = Generalization(labels={}, ncp=np.zeros((len(trees[0].leaf_codes), len(trees))))
    for q, (tree, level) in enumerate(zip(trees, levels)):
        nodes = tree.level_codes(level)
        names = np.array(tree.labels, dtype=object)
        node_ncp = tree.node_ncp()
        used = np.unique(nodes)
        out.labels[tree.column] = names[nodes]
        out.ncp[:, q] = node_ncp[nodes]
        out.label_ncp[tree.column] = {str(names[v]): float(node_ncp[v]) for v in used}
        out.label_leaves[tree.column] = {str(names[v]): int(tree.hi[v] - tree.lo[v]) for v in used}
    return out
