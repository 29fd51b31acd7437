"""DTPD, the baseline of seed 000 (spec 01 §5): Du & Zhan's ID3 tree on a binary release
whose records were flipped whole (``warner`` with ``whole_record=true``); the counts at every
node are reconstructed from a conjunction and its complement. ``DTPDClassifier`` follows
scikit-learn's conventions; ``dtpd_train`` fits it on a release."""

from __future__ import annotations

from collections import deque
from typing import Any

import numpy as np
import pandas as pd
from pydantic import Field
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils.validation import check_is_fitted

from app.privacy.context import RunContext
from app.privacy.data import ColumnInfo, MethodInput, SourceRelease
from app.privacy.naive_bayes import (
    TrainParams, as_frame, label_and_features, model_metadata, raw_labels, release_randomization,
    require_two_classes, training_rows,
)
from app.privacy.registry import MethodKind, MethodInputError, MethodSpec, MethodSource, register
from app.privacy.results import ModelResult
from app.privacy.rr_channels import CategoricalChannel, label_of


def _bits(series: pd.Series, domain: tuple[str, ...] | list[str], binarize_spec) -> np.ndarray:
    """0/1 per cell (-1 missing or outside the domain) of a binary column."""
    channel = CategoricalChannel(tuple(domain), 1.0, (0.0, 0.0), tuple(domain), binarize=binarize_spec)
    codes = raw_labels(series, channel, channel.domain)
    return np.where(codes < 0, -1, codes).astype(np.int8)


class DTPDClassifier(ClassifierMixin, BaseEstimator):
    """ID3 on a whole-record-flipped binary release (Du & Zhan 2003, spec §5).

    Parameters
    ----------
    randomization : dict, optional
        The ``warner`` step's metadata: ``p`` (θ, the probability a record is published as
        is) and per flipped column its two-label ``domain`` (label 1 = the second) and
        ``binarize`` cut. Columns of X not named are binary columns published unchanged.
        None: nothing was flipped (θ = 1), a plain ID3 tree.
    max_depth : int, optional
        Depth limit; default: as deep as the attributes allow.
    min_count : float
        A node is split only when its reconstructed record count is at least this (a number
        < 1 is a fraction of the training records).
    """

    def __init__(self, randomization: dict[str, Any] | None = None, max_depth: int | None = None,
                 min_count: float = 0.002):
        self.randomization = randomization
        self.max_depth = max_depth
        self.min_count = min_count

    def fit(self, X, y):
        if self.max_depth is not None and self.max_depth < 1:
            raise ValueError("max_depth must be ≥ 1 (or None: as deep as the attributes allow)")
        if not self.min_count >= 0:  # NaN too
            raise ValueError("min_count must be ≥ 0")
        X = as_frame(X)
        y = np.asarray(y)
        keep = pd.notna(y)
        X, y = X.loc[keep], y[keep]
        self.classes_, y_idx = np.unique(y.astype(str) if y.dtype == object else y, return_inverse=True)
        rand = self.randomization or {"p": 1.0, "columns": {}}
        self.theta_ = float(rand.get("p", 1.0))
        if abs(2 * self.theta_ - 1) < 1e-12:
            raise ValueError("θ = 0.5: nothing can be reconstructed")
        flipped_cols = rand.get("columns", {})
        self.feature_names_in_ = np.asarray(X.columns, dtype=object)
        self.n_features_in_ = X.shape[1]
        self.domains_, self.binarize_ = [], []
        bits = np.empty((len(X), X.shape[1]), dtype=np.int8)
        for j, name in enumerate(X.columns):
            spec = flipped_cols.get(name)
            domain = tuple(spec["domain"]) if spec else tuple(sorted({label_of(v) for v in pd.unique(X[name].dropna())}))
            if len(domain) != 2:
                raise ValueError(f"column {name!r} is not binary")
            self.domains_.append(domain)
            self.binarize_.append(spec.get("binarize") if spec else None)
            bits[:, j] = _bits(X[name], domain, None)  # the release is already binary
        if (bits < 0).any():
            raise ValueError("DTPD needs complete binary records: some cells are missing")
        self.flipped_ = np.array([name in flipped_cols for name in X.columns])
        n = len(X)
        min_count = self.min_count * n if self.min_count < 1 else self.min_count
        onehot = np.eye(len(self.classes_))[y_idx]
        self._grow(bits, onehot, min_count)
        return self

    def _grow(self, bits: np.ndarray, onehot: np.ndarray, min_count: float) -> None:
        """Breadth-first ID3. A node holds the rows whose published bits match its path E and
        the rows that match the complement Ē (flipped attributes inverted); the estimated
        count of E ∧ A=v ∧ c is (θ·N*(E∧A=v∧c) − (1−θ)·N*(Ē∧A=v'∧c)) / (2θ−1), clipped at 0."""
        theta, m = self.theta_, bits.shape[1]
        depth_limit = m if self.max_depth is None else min(self.max_depth, m)
        all_rows = np.arange(len(bits))
        root_counts = onehot.sum(axis=0)
        feature, children, dist = [-1], [[-1, -1]], [root_counts / root_counts.sum()]
        queue = deque([(0, all_rows, all_rows, root_counts, frozenset(), 0)])
        while queue:
            node, rows_e, rows_c, counts, used, depth = queue.popleft()
            total = counts.sum()
            if depth >= depth_limit or total < min_count or np.count_nonzero(counts) <= 1:
                continue
            split = self._best_split(bits, onehot, rows_e, rows_c, counts, used, theta)
            if split is None:
                continue
            a, child_counts = split
            feature[node] = a
            for v in (0, 1):
                v_c = v ^ int(self.flipped_[a])
                child = len(feature)
                feature.append(-1)
                children.append([-1, -1])
                c = child_counts[v]
                dist.append(c / c.sum() if c.sum() > 0 else dist[node])
                children[node][v] = child
                queue.append((child, rows_e[bits[rows_e, a] == v], rows_c[bits[rows_c, a] == v_c],
                              c, used | {a}, depth + 1))
        self.tree_feature_ = np.array(feature)
        self.tree_children_ = np.array(children)
        self.tree_distribution_ = np.array(dist)

    def _best_split(self, bits, onehot, rows_e, rows_c, counts, used, theta):
        est = split_counts(bits, onehot, rows_e, rows_c, self.flipped_, theta)
        parent = _entropy(counts)
        sizes = est.sum(axis=2)  # (2, m)
        weights = sizes / np.maximum(sizes.sum(axis=0, keepdims=True), 1e-300)
        gain = parent - (weights * _entropy(est)).sum(axis=0)
        gain[list(used)] = -np.inf
        a = int(np.argmax(gain))
        if not gain[a] > 1e-12:
            return None
        return a, (est[0, a], est[1, a])

    def _leaves(self, X) -> np.ndarray:
        check_is_fitted(self, "tree_feature_")
        X = as_frame(X)
        bits = np.column_stack([
            _bits(X[name], dom, spec)
            for name, dom, spec in zip(self.feature_names_in_, self.domains_, self.binarize_)])
        node = np.zeros(len(X), dtype=np.intp)
        rows = np.arange(len(X))
        while True:
            f = self.tree_feature_[node]
            b = np.where(f >= 0, bits[rows, np.maximum(f, 0)], -1)
            move = (f >= 0) & (b >= 0)  # a missing bit stops at the node it reached
            if not move.any():
                return node
            node = np.where(move, self.tree_children_[node, np.maximum(b, 0)], node)

    def unreadable(self, X) -> dict[str, np.ndarray]:
        """Per feature, the records whose value is missing or outside its two-value domain: a
        record whose path reaches that feature stops there (the node's distribution answers)."""
        check_is_fitted(self, "tree_feature_")
        X = as_frame(X)
        out = {}
        for name, dom, spec in zip(self.feature_names_in_, self.domains_, self.binarize_):
            bad = _bits(X[name], dom, spec) < 0
            if bad.any():
                out[name] = np.flatnonzero(bad)
        return out

    def predict_proba(self, X) -> np.ndarray:
        leaves = self._leaves(X)  # checks the fit first: NotFittedError, not AttributeError
        return self.tree_distribution_[leaves]

    def predict(self, X) -> np.ndarray:
        best = np.argmax(self.predict_proba(X), axis=1)
        return self.classes_[best]

    @property
    def n_nodes_(self) -> int:
        return len(self.tree_feature_)


def split_counts(bits: np.ndarray, onehot: np.ndarray, rows_e: np.ndarray, rows_c: np.ndarray,
                 flipped: np.ndarray, theta: float, clip: bool = True) -> np.ndarray:
    """Reconstructed counts N(E ∧ A=v ∧ c) for every attribute A, value v and class c, shape
    (2, m, C): (θ·N*(E∧A=v∧c) − (1−θ)·N*(Ē∧A=v'∧c)) / (2θ−1), where ``rows_e`` are the
    published records matching the node's path E, ``rows_c`` those matching its complement Ē
    (flipped attributes inverted), and v' = 1−v for a flipped A, v otherwise. Unbiased;
    clipped at 0 for the tree (``clip``)."""
    def table(rows):
        ones = bits[rows].T.astype(np.float64) @ onehot[rows]  # (m, C): A=1 ∧ c
        return np.stack([onehot[rows].sum(axis=0)[None, :] - ones, ones])
    t_e = table(rows_e)
    t_c = t_e if rows_c is rows_e else table(rows_c)
    flip = np.asarray(flipped, dtype=bool)[:, None]
    est = np.empty_like(t_e)
    for v in (0, 1):
        comp = np.where(flip, t_c[1 - v], t_c[v])
        est[v] = (theta * t_e[v] - (1 - theta) * comp) / (2 * theta - 1)
    return np.maximum(est, 0.0) if clip else est


def _entropy(counts: np.ndarray) -> np.ndarray:
    """Entropy (bits) of class counts along the last axis."""
    total = counts.sum(axis=-1, keepdims=True)
    p = np.divide(counts, total, out=np.zeros_like(counts, dtype=float), where=total > 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(p > 0, -p * np.log2(np.where(p > 0, p, 1.0)), 0.0)
    return terms.sum(axis=-1)


# ---------------------------------------------------------------------- the analysis method
class DTPDParams(TrainParams):
    max_depth: int | None = Field(None, ge=1, le=64, description="depth limit of the tree")
    min_count: float = Field(0.002, ge=0.0, le=1e9, description="smallest reconstructed record count "
                             "a node needs to be split (< 1: a fraction of the records)")


def _whole_record_step(source: SourceRelease | None) -> dict[str, Any]:
    # DTPD inverts Warner's whole-record flip: a step that published one (metadata["warner"])
    steps = [] if source is None else [s for s in source.steps()
                                      if (s.get("metadata") or {}).get("warner", {}).get("whole_record")]
    if len(steps) != 1:
        raise MethodInputError("dtpd_train needs a release made by warner with whole_record=true "
                               f"(found {len(steps)} such step(s) in the chain)")
    return steps[0]


def run_dtpd_train(data: MethodInput, params: DTPDParams, ctx: RunContext) -> ModelResult:
    if data.frame is None:
        raise MethodInputError("dtpd_train needs a table release")
    step = _whole_record_step(data.source)
    warner = step["metadata"]["warner"]
    label, features = label_and_features(params, data.columns, list(warner["columns"]))
    require_two_classes(data.frame, label)
    channels = release_randomization(data.source)
    for f in features:
        ch = channels.get(f)
        if ch is not None and (not isinstance(ch, CategoricalChannel) or ch.steps != (step["method"],)):
            raise MethodInputError(f"column {f!r} was randomized by another step too; DTPD's "
                                   "reconstruction needs the whole-record flip alone")
    ctx.progress(0.1, "growing the tree")
    try:
        model = DTPDClassifier(randomization=warner, max_depth=params.max_depth,
                               min_count=params.min_count).fit(data.frame[features], data.frame[label])
    except ValueError as exc:
        raise MethodInputError(str(exc)) from None
    meta = model_metadata(model, label, features, data.source)
    meta.update(kind="dtpd", theta=model.theta_, flipped=[f for f in features if f in warner["columns"]],
                binarize={f: warner["columns"][f].get("binarize") for f in features if f in warner["columns"]},
                n_nodes=model.n_nodes_)
    ctx.progress(1.0, "done")
    return ModelResult(model=model, metadata=meta, metrics=training_rows(data.frame, label))


def _check_dtpd(params: DTPDParams, columns: list[ColumnInfo], source: SourceRelease | None) -> None:
    if source is not None:
        step = _whole_record_step(source)
        label_and_features(params, columns, list(step["metadata"]["warner"]["columns"]))
    else:
        label_and_features(params, columns, None)


register(MethodSpec(
    name="dtpd_train",
    family="randomized_response",
    kind=MethodKind.analysis,
    summary="Train the DTPD baseline (ID3 on reconstructed counts, Du & Zhan 2003) on a binary "
            "release made by warner with whole_record=true.",
    params=DTPDParams,
    guarantee="post-processing of the release: no further privacy cost",
    paper="Du & Zhan, Using randomized response techniques for privacy-preserving data mining, "
          "KDD 2003; the baseline of seed 000",
    run=run_dtpd_train,
    sources=frozenset({MethodSource.release}),
    check=_check_dtpd,
    produces_randomness=False,
    docs="docs/methods/dtpd_train.md",
))
