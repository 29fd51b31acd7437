"""safepub's Scorer compresses the scored records to their distinct (leaves, label) tuples with a
count each (safepub_search.distinct_records): every metric's score at every node must be the same
Fraction as the per-record computation kept here as the reference (class of each record, sizes by
counting records, each kept record's cost summed) — on random tables with many ties, without
suppression (k_score 1) and with it, with unscored rows beside the scored ones, and through
safepub's own preparation of a table with missing cells and a label of many values."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pandas as pd
import pytest

from app.privacy.anonymity import safepub
from app.privacy.anonymity.lattice import Columns
from app.privacy.anonymity.safepub_scores import METRICS
from app.privacy.anonymity.safepub_search import Scorer, lattice_nodes
from app.privacy.data import ColumnInfo, MethodInput
from tests.privacy.test_anonymity_safepub import DOMAIN, HIER, INFOS, _parts


def _per_record(cols: Columns, costs, metric: str, k_score: int, rows: np.ndarray, labels, node) -> Fraction:
    """The score counted record by record (the Scorer's computation before the compression)."""
    ids, n_classes = cols.classes(node)
    ids, index = ids[rows], np.flatnonzero(rows)
    n = len(ids)
    if n == 0:
        return Fraction(0)
    sizes = np.bincount(ids, minlength=n_classes)
    kept_class = sizes >= k_score
    kept = kept_class[ids]  # per record
    if metric == "group_size":
        return Fraction(int(kept_class.sum()) + int(bool(((sizes > 0) & ~kept_class).any())))
    if metric == "classification":
        if all(level == tree.height for level, tree in zip(node, cols.trees)):
            return Fraction(0)
        pairs, counts = np.unique(np.stack([ids, labels[index]], axis=1), axis=0, return_counts=True)
        mode = pd.Series(counts).groupby(pairs[:, 0]).max().to_numpy()
        return Fraction(int(mode[mode >= k_score].sum()))
    suppressed = int((~kept).sum())
    if metric == "discernibility":
        return -(Fraction(sum(int(s) ** 2 for s in sizes[kept_class]), n) + suppressed)
    if metric == "entropy":
        total = 0
        for q, level in enumerate(node):
            if level == cols.trees[q].height:
                total += n * n
                continue
            _, counts = np.unique(cols.codes[q][level][index][kept], return_counts=True)
            total += sum(int(c) ** 2 for c in counts) + n * suppressed
        return -Fraction(total, n * len(node))
    loss = Fraction(len(node) * suppressed)
    for q, level in enumerate(node):
        cost = costs[q].numerators[level][cols.codes[q][level][index][kept]]
        loss += Fraction(sum(int(c) for c in cost), costs[q].den)
    return -loss


def _check_every_node(cols, costs, rows, labels, top, k_score: int) -> None:
    for metric in METRICS:
        scorer = Scorer(cols, costs, metric, k_score, rows, labels)
        assert scorer.records.n == int(rows.sum()) == int(scorer.records.counts.sum())
        for node in lattice_nodes(top):
            assert scorer.score(node) == _per_record(cols, costs, metric, k_score, rows, labels, node), \
                (metric, k_score, node)


@pytest.mark.parametrize("k_score", [1, 2, 4, 9])
def test_every_metric_equals_the_per_record_score_on_tables_with_ties(k_score):
    """Tables of 1 … 120 records drawn from 48 domain records (many repeated records, and classes
    of equal size), two labels; the domain rows _parts appends are never scored."""
    rng = np.random.default_rng(100 + k_score)
    for n in (1, 7, 40, 120):
        frame = pd.DataFrame([DOMAIN[i] for i in rng.integers(0, 12 if n > 40 else len(DOMAIN), n)],
                             columns=["a", "b", "x"])
        cols, costs, rows, top = _parts(frame)
        labels = np.zeros(len(rows), dtype=np.int64)
        labels[:n] = rng.integers(0, 2, n)
        scorer = Scorer(cols, costs, "granularity", k_score, rows, labels)
        assert len(scorer.records.counts) < n or n < 12  # the records really are compressed
        _check_every_node(cols, costs, rows, labels, top, k_score)


def test_every_metric_equals_the_per_record_score_through_safepubs_preparation():
    """Missing categorical cells ('<missing>' leaves), automatic intervals on x, and a label of 300
    values (classification_score's path over the (class, label) groups present)."""
    rng = np.random.default_rng(3)
    n = 400
    a = rng.choice(np.array(["a1", "a2", "a3", "a4", None], dtype=object), n)
    b = rng.choice(np.array(["b1", "b2", "b3", None], dtype=object), n)
    frame = pd.DataFrame({"a": a, "b": b, "x": rng.integers(0, 11, n).astype(float),
                          "y": [f"L{i}" for i in rng.integers(0, 300, n)]})
    columns = [*INFOS, ColumnInfo(name="y", type="categorical", role="label")]
    data = MethodInput(columns=columns, frame=frame, hierarchies=HIER)
    table, scored, hierarchies, uploaded = safepub._in_domain_table(data, ["a", "b", "x"], "y")
    assert scored == n and (table["a"] == "<missing>").any()
    trees, costs, _ = safepub._trees(table, {c.name: c for c in columns}, ["a", "b", "x"], hierarchies, uploaded)
    cols = Columns(trees)
    labels = pd.factorize(table["y"])[0].astype(np.int64)
    rows = np.ones(len(table), dtype=bool)
    for k_score in (1, 3, 6):
        _check_every_node(cols, costs, rows, labels, tuple(t.height for t in trees), k_score)


def test_no_scored_record_scores_zero():
    cols, costs, rows, top = _parts(pd.DataFrame({"a": ["a1"], "b": ["b1"], "x": [3]}))
    rows[:] = False
    for metric in METRICS:
        scorer = Scorer(cols, costs, metric, 2, rows, np.zeros(len(rows), dtype=np.int64))
        assert scorer.records.n == 0 and all(scorer.score(node) == 0 for node in lattice_nodes(top))
