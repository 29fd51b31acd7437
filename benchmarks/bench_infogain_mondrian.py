"""InfoGain Mondrian (LeFevre, DeWitt & Ramakrishnan, KDD 2006; kanonymity's Mondrian with
metric classification) against the default Mondrian and the lattice's classification optimum, on
Adult with its ARX hierarchies, 8 QIs, label income, k = 5, 10, 50. Per release: time, NCP, the
classification loss (records a majority-label classifier of the release gets wrong), and the
held-out accuracy on adult_test of each class's majority label in the release.

A test record's class: for the lattice, its values generalized to the release's levels
(bench_classification_metric.held_out_accuracy); for Mondrian, routed through the cuts
(``mondrian_partition(..., with_tree=True)``): a numeric value unseen in training goes where the
cut's rule sends it (below the threshold value: left), a category the training data does not
hold cannot be placed once a cut on its column is met and is predicted the release's most frequent
label. The released class of a Mondrian leaf is its records' released tuple (classes released at
the same labels are one class of the release, as metrics.classification counts them). The notes
add LeFevre et al.'s own measure: a decision tree (scikit-learn, one-hot of the released values)
trained on the release and tested on the test records' released values."""

from __future__ import annotations

import time

import numpy as np
import pandas as pd

from app.privacy.anonymity.anonymize import Options, anonymize, label_codes
from app.privacy.anonymity.axes import NumericAxis, build_axes
from app.privacy.anonymity.models import Constraints
from app.privacy.anonymity.label_modes import label_modes
from app.privacy.anonymity.mondrian import mondrian_partition
from app.privacy.anonymity.release import generalize
from benchmarks.bench_anonymity import QIS, adult
from benchmarks.bench_classification_metric import adult_test_frame, lattice_release
from benchmarks.common import Row


def _route(tree, axes, frame: pd.DataFrame) -> np.ndarray:
    """The leaf node of the split tree each record of ``frame`` reaches, −1 where a cut reads a
    category the tree's axis does not hold."""
    codes, known = [], []
    for axis in axes:
        values = frame[axis.column]
        if isinstance(axis, NumericAxis):  # rank of the largest training value ≤ it (−1: below all)
            codes.append(np.searchsorted(axis.values, values.to_numpy(dtype=float), side="right") - 1)
            known.append(np.ones(len(frame), dtype=bool))
        else:
            leaf = np.flatnonzero(axis.depth == axis.height)
            code = values.astype(str).map(dict(zip(np.asarray(axis.labels, dtype=object)[leaf], axis.lo[leaf])))
            known.append(code.notna().to_numpy())
            codes.append(code.fillna(-1).to_numpy(dtype=np.int64))
    codes, known = np.column_stack(codes), np.column_stack(known)
    node = np.zeros(len(frame), dtype=np.int64)
    rows = np.arange(len(frame))
    while True:
        a = tree.axis[np.maximum(node, 0)]
        moving = (node >= 0) & (a >= 0)
        if not moving.any():
            return node
        at, dim = node[moving], a[moving]
        lost = ~known[rows[moving], dim]
        node[moving] = np.where(lost, -1, np.where(codes[rows[moving], dim] < tree.threshold[at],
                                                   tree.left[at], tree.right[at]))


def _released_key(frame: pd.DataFrame) -> pd.Series:
    return frame[QIS].astype(str).agg("|".join, axis=1)


def _mondrian_accuracy(frame, infos, hierarchies, release, test, k: int, labels) -> tuple[float, float, int]:
    """Held-out accuracy of the release's majority label per class (test records routed through
    the cuts), the decision tree's, and the test records that could not be placed."""
    axes, _ = build_axes(frame, [infos[q] for q in QIS], hierarchies)
    _, tree = mondrian_partition(axes, Constraints(k=k), None, with_tree=True, labels=labels)
    train_leaf, test_leaf = _route(tree, axes, frame), _route(tree, axes, test)
    key = _released_key(release)
    assert (train_leaf >= 0).all() and key.groupby(train_leaf).nunique().max() == 1  # the release's cuts
    majority = frame["income"].groupby(key).agg(lambda s: s.value_counts().index[0])
    fallback = frame["income"].value_counts().index[0]
    by_leaf = pd.Series(key.to_numpy(), index=train_leaf).groupby(level=0).first()
    test_key = pd.Series(test_leaf).map(by_leaf)
    predicted = test_key.map(majority).fillna(fallback).to_numpy()
    accuracy = float((predicted == test["income"].to_numpy()).mean())
    tree_accuracy = _decision_tree(release, test_key, test["income"])
    return accuracy, tree_accuracy, int((test_leaf < 0).sum())


def _decision_tree(release: pd.DataFrame, test_key: pd.Series, test_label: pd.Series) -> float:
    """LeFevre et al.'s measure: a decision tree on the one-hot released values, trained on the
    release, tested on each test record's released values (an unplaced record counts wrong)."""
    from sklearn.tree import DecisionTreeClassifier

    train = release[QIS].astype(str)
    by_key = train.set_index(_released_key(release))
    test = by_key[~by_key.index.duplicated()].reindex(test_key.to_numpy())
    placed = test_key.notna().to_numpy()
    columns = pd.get_dummies(train).columns
    model = DecisionTreeClassifier(random_state=0, min_samples_leaf=5).fit(pd.get_dummies(train), release["income"])
    guess = model.predict(pd.get_dummies(test[placed]).reindex(columns=columns, fill_value=False))
    return float((guess == test_label.to_numpy()[placed]).sum() / len(test_label))


def _row(what: str, tested_on: str, r, seconds: float, accuracy: float, more: str) -> Row:
    return Row(workload=f"{what}: held-out accuracy of the release's majority label per class ({tested_on})",
               veil=accuracy, unit="accuracy",
               notes=f"{seconds:.2f} s; NCP {r.metrics['ncp']:.3f}; classification loss "
                     f"{r.metrics['classification']['loss']:.4f}; {r.metrics['classes']} classes; {more}; no Python peer")


def _zero_gain_rows(frame, infos, hierarchies, label: str, k: int, labels: np.ndarray) -> list[Row]:
    """What InfoGain Mondrian's zero-gain rule is worth: partitions with no cut of positive gain
    take the default cut ("default", as shipped) or stay classes ("stop"): the classification
    loss and NCP of each partition, from its class ids (nothing suppressed)."""
    axes, _ = build_axes(frame, [infos[q] for q in QIS], hierarchies)
    rows = []
    for rule in ("default", "stop"):
        started = time.perf_counter()
        ids = mondrian_partition(axes, Constraints(k=k), None, labels=labels, zero_gain=rule)
        seconds = time.perf_counter() - started
        n_classes = int(ids.max()) + 1
        off = len(ids) - int(label_modes(ids, n_classes, labels, None, int(labels.max()) + 1).sum())
        ncp = float(generalize(axes, ids, n_classes).ncp.mean())
        rows.append(Row(workload=f"InfoGain Mondrian, zero-gain partitions {'cut by the default rule' if rule == 'default' else 'left whole'}, "
                                 f"{label}, 8 QIs, k = {k}: classification loss",
                        veil=off / len(ids), unit="loss", higher_is_better=False,
                        notes=f"partition {seconds:.2f} s; NCP {ncp:.3f}; {n_classes} classes; "
                              "zero_gain='stop' is kept in mondrian_partition for this row only; no Python peer"))
    return rows


def cases(quick: bool) -> list[Row]:
    frame, hierarchies, infos = adult(5000 if quick else None)
    test = adult_test_frame()
    label = "Adult 5,000 sample" if quick else "Adult 30,162"
    labels = label_codes(frame["income"])
    rows = []
    for k in ((10,) if quick else (5, 10, 50)):
        for name, options in [("default Mondrian", Options(metric="ncp", label="income")),
                              ("InfoGain Mondrian", Options(metric="classification", label="income"))]:
            started = time.perf_counter()
            r = anonymize(frame, infos, hierarchies, QIS, Constraints(k=k), None, options)
            seconds = time.perf_counter() - started
            accuracy, tree_accuracy, unplaced = _mondrian_accuracy(
                frame, infos, hierarchies, r.frame, test, k, labels if options.metric == "classification" else None)
            rows.append(_row(f"{name}, {label}, 8 QIs, k = {k}, label income", "adult_test, routed through the cuts",
                             r, seconds, accuracy, f"decision tree on the release {tree_accuracy:.3f}; "
                                                   f"{unplaced} test records not placed"))
        for suppression in ((0.0,) if quick else (0.0, 0.04)):
            r, seconds, accuracy = lattice_release(frame, infos, hierarchies, test, k, suppression, "classification")
            rows.append(_row(f"Lattice classification optimum, {label}, 8 QIs, k = {k}, {suppression:.0%} suppression",
                             "adult_test", r, seconds, accuracy, f"optimal={r.metadata['lattice']['optimal']}"))
        if not quick:
            rows += _zero_gain_rows(frame, infos, hierarchies, label, k, labels)
    return rows
