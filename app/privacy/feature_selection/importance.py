"""Out-of-bag permutation importance (seed 004, eq. 3; spec 04 §3 step 1).

For each of K trees: R_k = correct predictions on the tree's out-of-bag rows, R_k^a = correct
predictions after permuting feature a among those rows;
importance(a) = (1/K) Σ_k (R_k - R_k^a) / |OOB_k|.

This is not scikit-learn's impurity importance (``feature_importances_``) nor its
``permutation_importance`` (which permutes a held-out set through the whole forest): each tree
is judged on the rows it never saw. The forest is bagged here (bootstrap counts as sample
weights, as ``RandomForestClassifier`` does) so each tree's OOB rows are known exactly
without scikit-learn's private helpers.

Speed: a permuted copy of a row can only be predicted differently when the row's decision
path tests the permuted feature (otherwise the same tests reach the same leaf) and the
permutation changed the row's value of it; every other (feature, row) pair keeps its original
prediction. So per tree we predict, in one stacked batch, just those pairs. On one-hot data
most indicators are rare and a path tests a few of them, so most pairs are skipped. The result
is exactly the formula above (a test compares it with brute force).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from scipy import sparse
from sklearn.base import BaseEstimator
from sklearn.tree import DecisionTreeClassifier

_BATCH_CELLS = 4_000_000  # cap on a stacked prediction batch (rows × features), ~16 MB float32


class OOBPermutationImportance(BaseEstimator):
    """Bagged decision trees and their out-of-bag permutation importance.

    Parameters mirror scikit-learn's random forest defaults (gini, fully grown trees,
    ``max_features="sqrt"``, bootstrap of n rows). ``max_oob_rows`` evaluates at most that many
    OOB rows per tree (a uniform subset; the estimate stays unbiased) so large tables stay
    tractable. ``random_state`` seeds the bootstrap, the trees and the permutations.

    Fitted attributes: ``importances_`` (per feature), ``oob_accuracy_`` (accuracy of the
    forest's OOB vote), ``used_by_trees_`` (how many trees split on each feature),
    ``n_features_in_``, ``classes_``.
    """

    def __init__(self, n_estimators: int = 1000, max_features: str | float | int | None = "sqrt",
                 max_oob_rows: int | None = None, random_state: int | None = None,
                 progress: Callable[[float], None] | None = None) -> None:
        self.n_estimators = n_estimators
        self.max_features = max_features
        self.max_oob_rows = max_oob_rows
        self.random_state = random_state
        self.progress = progress

    def fit(self, X, y) -> OOBPermutationImportance:
        X = np.ascontiguousarray(X, dtype=np.float32)
        if X.ndim != 2 or len(X) != len(y):
            raise ValueError("X must be 2-D with one row per label")
        if self.n_estimators < 1:
            raise ValueError("n_estimators must be ≥ 1")
        self.classes_, y_codes = np.unique(np.asarray(y), return_inverse=True)
        if len(self.classes_) < 2:
            raise ValueError("the label has a single class")
        y_codes = y_codes.astype(np.float64)  # the trees' targets are class indices
        n, f = X.shape
        rng = np.random.default_rng(self.random_state)
        drops = np.zeros(f)
        used_by = np.zeros(f, dtype=np.int64)
        votes = np.zeros((n, len(self.classes_)))
        for t in range(self.n_estimators):
            counts = np.bincount(rng.integers(n, size=n), minlength=n)
            tree = DecisionTreeClassifier(max_features=self.max_features,
                                          random_state=int(rng.integers(2**31 - 1)))
            tree.fit(X, y_codes, sample_weight=counts.astype(np.float64), check_input=False)
            oob = np.flatnonzero(counts == 0)
            if self.max_oob_rows is not None and len(oob) > self.max_oob_rows:
                oob = np.sort(rng.choice(oob, self.max_oob_rows, replace=False))
            if len(oob) == 0:
                continue
            x_oob, y_oob = X[oob], y_codes[oob]
            proba = tree.predict_proba(x_oob, check_input=False)
            votes[oob] += proba
            correct = (proba.argmax(axis=1) == y_oob).astype(np.float64)  # = tree.predict
            used = np.unique(tree.tree_.feature[tree.tree_.feature >= 0])
            used_by[used] += 1
            drops[used] += _permutation_drops(tree, x_oob, y_oob, correct, used, rng) / len(oob)
            if self.progress is not None and (t + 1) % 25 == 0:
                self.progress((t + 1) / self.n_estimators)
        self.importances_ = drops / self.n_estimators
        seen = votes.sum(axis=1) > 0
        self.oob_accuracy_ = (float(np.mean(votes[seen].argmax(axis=1) == y_codes[seen]))
                              if seen.any() else float("nan"))
        self.used_by_trees_ = used_by
        self.n_features_in_ = f
        return self


def _permutation_drops(tree: DecisionTreeClassifier, x_oob: np.ndarray, y_oob: np.ndarray,
                       correct: np.ndarray, used: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Σ over OOB rows of (correct before - correct after permuting feature a), per a in used.

    Only (feature, row) pairs that can change the prediction are re-predicted: the row's
    decision path must test the feature (else the same tests lead to the same leaf) and the
    permutation must have changed the row's value."""
    m = len(x_oob)
    perms = rng.permuted(np.broadcast_to(np.arange(m), (len(used), m)), axis=1)
    node_feature = tree.tree_.feature
    internal = np.flatnonzero(node_feature >= 0)
    tests = sparse.csr_matrix(
        (np.ones(len(internal)), (internal, np.searchsorted(used, node_feature[internal]))),
        shape=(len(node_feature), len(used)))
    on_path = (tree.decision_path(x_oob, check_input=False) @ tests).tocoo()
    rows, feats = on_path.row, on_path.col  # row i's path tests feature used[j]
    new_values = x_oob[perms[feats, rows], used[feats]]
    changed = new_values != x_oob[rows, used[feats]]
    rows, feats, new_values = rows[changed], feats[changed], new_values[changed]
    drops = np.zeros(len(used))
    step = max(1, _BATCH_CELLS // max(1, x_oob.shape[1]))
    for start in range(0, len(rows), step):  # a few batches at most; rows are vectorized
        ri, fj = rows[start:start + step], feats[start:start + step]
        batch = x_oob[ri]
        batch[np.arange(len(ri)), used[fj]] = new_values[start:start + step]
        after = tree.predict(batch, check_input=False) == y_oob[ri]
        drops += np.bincount(fj, weights=correct[ri] - after, minlength=len(used))
    return drops
