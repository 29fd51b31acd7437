"""rfka and hamdist (spec 04 §3): k-anonymity of the projection checked independently,
OOB permutation importance against a planted signal and a naive reference, the decision log
replayed, Greedy_Hamdist on a hand-made table, and bad parameters."""

from __future__ import annotations

import dataclasses
import itertools
import json

import numpy as np
import pandas as pd
import pytest
from pydantic import ValidationError
from sklearn.tree import DecisionTreeClassifier

from app.privacy import registry
from app.privacy.context import Cancelled, RunContext
from app.privacy.data import ColumnInfo, MethodInput
from app.privacy.experiments import datasets_dir
from app.privacy.feature_selection import HamdistParams, RfkaParams, run_hamdist, run_rfka
from app.privacy.feature_selection.encoding import encode
from app.privacy.feature_selection.importance import OOBPermutationImportance
from app.privacy.feature_selection.selection import (
    greedy_k_anonymous, hamming_scores, jackknife_gini,
)
from app.privacy.registry import MethodInputError
from app.privacy.rng import SecureRandom


def _ctx(seed: int = 7) -> RunContext:
    return RunContext(rng=SecureRandom(seed=seed))


@pytest.fixture(scope="module")
def breast_cancer() -> MethodInput:
    frame = pd.read_csv(datasets_dir() / "breast_cancer" / "breast_cancer_wisconsin.csv")
    columns = [ColumnInfo(c, "numeric", role="label" if c == "class" else "quasi_identifier",
                          integer=True) for c in frame.columns]
    return MethodInput(columns=columns, frame=frame)


@pytest.fixture(scope="module")
def rfka_releases(breast_cancer):
    """rfka at several k on Breast Cancer (raw 1..10 scores: bins=10 keeps the values)."""
    return {k: run_rfka(breast_cancer, RfkaParams(label="class", k=k, bins=10, n_estimators=60),
                        _ctx()) for k in (2, 5, 20)}


def _independent_min_class(frame: pd.DataFrame, label: str) -> int:
    """Smallest number of records sharing one combination of the released features."""
    features = [c for c in frame.columns if c != label]
    if not features:
        return len(frame)
    keys = frame[features].astype(str).agg("|".join, axis=1)
    return int(keys.value_counts().min())


# ------------------------------------------------------------------------- k-anonymity
@pytest.mark.parametrize("k", [2, 5, 20])
def test_rfka_projection_is_k_anonymous_and_exact(rfka_releases, breast_cancer, k):
    release = rfka_releases[k]
    out = release.frame
    selected = release.metadata["feature_selection"]["selected"]
    assert list(out.columns) == [*selected, "class"]
    assert len(out) == len(breast_cancer.frame)
    assert _independent_min_class(out, "class") >= k
    assert release.metrics["min_class_size"] == _independent_min_class(out, "class")
    # The projection is exact: each released indicator is attribute == value in the input.
    for name in selected:
        attr, value = name.split("=")
        np.testing.assert_array_equal(out[name].to_numpy(),
                                      (breast_cancer.frame[attr] == int(value)).to_numpy())
    pd.testing.assert_series_equal(out["class"], breast_cancer.frame["class"])
    g = release.guarantees
    # like kanonymity's: k is what the output achieves (its smallest class), k_requested the ask
    assert g["notion"] == "k_anonymity" and g["k_requested"] == k and g["epsilon"] is None
    assert g["k"] == _independent_min_class(out, "class") >= k
    assert g["protected_columns"] == selected and g["unprotected_columns"] == ["class"]
    json.dumps(release.metadata)  # publishable as JSON
    json.dumps(release.guarantees)


@pytest.mark.parametrize("k", [3, 25])
def test_hamdist_projection_is_k_anonymous(breast_cancer, k):
    release = run_hamdist(breast_cancer, HamdistParams(label="class", k=k, bins=5), _ctx())
    assert _independent_min_class(release.frame, "class") >= k
    assert release.metrics["selected_features"] >= 1


# ------------------------------------------------------------------------- decision log
def _loo_brier(table: pd.DataFrame, kept: list[str], y: pd.Series) -> float:
    """Leave-one-out Brier score of predicting each label by the labels of the other records
    of its class, from a class × label count table (independent of selection.jackknife_gini)."""
    keys = table[kept].to_numpy(dtype=np.int64) @ (1 << np.arange(len(kept)))
    counts = pd.crosstab(keys, y).to_numpy().astype(float)  # classes × labels
    size = counts.sum(axis=1, keepdims=True)
    total = 0.0
    for label in range(counts.shape[1]):  # the records of each class with this label
        others = counts.copy()
        others[:, label] -= 1
        p = others / (size - 1)
        loss = (1 - p[:, label]) ** 2 + (p ** 2).sum(axis=1) - p[:, label] ** 2
        total += float((counts[:, label] * loss).sum())
    return total / len(y)


def _replay(table: pd.DataFrame, order: list[str], k: int, y: pd.Series | None):
    """Algorithm 1 by group-bys; with ``y``, the lookahead: a passing feature is dropped when
    completing the walk without it gives a lower leave-one-out Brier score."""
    def passes(kept, name):  # the kept bits read as one integer per record: its class
        bits = table[[*kept, name]].to_numpy(dtype=np.int64)
        return bool(np.unique(bits @ (1 << np.arange(bits.shape[1])),
                              return_counts=True)[1].min() >= k)

    def complete(kept, rest):
        kept = list(kept)
        for name in rest:
            if passes(kept, name):
                kept.append(name)
        return kept

    kept, log = [], []
    for i, name in enumerate(order):
        if not passes(kept, name):
            log.append((name, "dropped", "fails k-anonymity"))
            continue
        if y is not None:
            rest = order[i + 1:]
            with_it = _loo_brier(table, complete([*kept, name], rest), y)
            without = _loo_brier(table, complete(kept, rest), y)
            if without < with_it - 1e-9:
                log.append((name, "dropped", "lookahead"))
                continue
        kept.append(name)
        log.append((name, "kept", "kept"))
    return kept, log


@pytest.mark.parametrize("k, lookahead", [(2, False), (20, False), (5, True)])
def test_decision_log_replays(breast_cancer, k, lookahead):
    release = run_rfka(breast_cancer, RfkaParams(label="class", k=k, bins=10, n_estimators=60,
                                                  lookahead=lookahead, beam_width=1), _ctx())
    meta = release.metadata["feature_selection"]
    decisions = meta["decisions"]
    features = encode(breast_cancer.frame, breast_cancer.columns,
                      [c for c in breast_cancer.frame.columns if c != "class"], 10)
    table = pd.DataFrame(features.matrix, columns=features.names)
    assert [d["feature"] for d in decisions] == meta["order"]
    assert sorted(meta["order"]) == sorted(features.names)  # every candidate judged once
    assert [d["rank"] for d in decisions] == list(range(1, len(decisions) + 1))
    scores = [d["score"] for d in decisions]
    assert scores == sorted(scores, reverse=True)  # importance, descending
    y = breast_cancer.frame["class"] if lookahead else None
    kept, log = _replay(table, meta["order"], k, y)
    assert [(d["feature"], d["decision"], d["reason"].split(":")[0]) for d in decisions] == log
    assert kept == meta["selected"]
    assert meta["lookahead"]["used"] is lookahead
    for d in decisions:
        if d["decision"] == "kept":
            sizes = table.groupby(kept[:kept.index(d["feature"]) + 1]).size()
            assert d["classes_after"] == len(sizes)
            assert d["min_class_size_after"] == sizes.min()
        else:
            assert d["classes_after"] is None and d["min_class_size_after"] is None
    brier = _loo_brier(table, kept, breast_cancer.frame["class"])
    assert release.metrics["label_loo_brier"] == pytest.approx(brier, rel=1e-9)
    if lookahead:  # it made at least one non-trivial choice on this table
        assert any(d["reason"].startswith("lookahead") for d in decisions)


def test_jackknife_gini_is_the_leave_one_out_brier_score():
    rng = np.random.default_rng(4)
    group = rng.integers(0, 6, 120)
    group[:1] = 9  # a class of one record: predicted by the whole table's frequencies
    label = rng.integers(0, 3, 120)
    prior = np.bincount(label, minlength=3) / 120
    losses = []
    for i in range(120):  # record by record, its class without it
        others = np.flatnonzero((group == group[i]) & (np.arange(120) != i))
        p = np.bincount(label[others], minlength=3) / len(others) if len(others) else prior
        losses.append(np.sum((np.eye(3)[label[i]] - p) ** 2))
    assert jackknife_gini(group, label) == pytest.approx(np.mean(losses), rel=1e-12)


def _blocking_table():
    """A (ranked first) splits 15|15 and says little; B and C are two values of one attribute
    that decide 20 of the 30 labels, but with A kept neither fits at k = 10."""
    value = np.repeat([1, 2, 3], 10)
    y = np.concatenate([np.ones(10), np.zeros(10), np.tile([1, 0], 5)]).astype(int)
    a = np.tile(np.repeat([1, 0], 5), 3)
    return np.column_stack([a, value == 1, value == 2]).astype(np.uint8), y


def test_lookahead_drops_a_feature_that_blocks_better_ones():
    X, y = _blocking_table()
    greedy = greedy_k_anonymous(X, np.array([0, 1, 2]), 10)
    assert [d.kept for d in greedy] == [True, False, False]  # the paper's rule: A alone
    rolled = greedy_k_anonymous(X, np.array([0, 1, 2]), 10, label=y)
    assert [d.kept for d in rolled] == [False, True, True]
    assert rolled[0].reason.startswith("lookahead") and rolled[1].reason == "kept"
    assert jackknife_gini((X[:, 1] + 2 * X[:, 2]).astype(int), y) < jackknife_gini(X[:, 0], y)


@pytest.mark.parametrize("k, width", [(2, 1), (5, 1), (12, 1), (2, 4), (5, 4), (12, 4)])
def test_lookahead_is_never_worse_than_the_papers_rule(k, width):
    """A rollout of the paper's greedy rule: by the score it compares, its release is at
    least as good as the rule's own, for any ranking."""
    rng = np.random.default_rng(k)
    for _ in range(15):
        X = (rng.random((150, 14)) < rng.uniform(0.05, 0.6, 14)).astype(np.uint8)
        y = ((X[:, :3].sum(axis=1) + (rng.random(150) < 0.3)) >= 2).astype(int)
        order = rng.permutation(14)
        score = {}
        for lookahead in (False, True):
            decisions = greedy_k_anonymous(X, order, k, label=y if lookahead else None,
                                           beam_width=width)
            kept = [d.feature for d in decisions if d.kept]
            ids = np.unique(X[:, kept], axis=0, return_inverse=True)[1].ravel()
            assert np.bincount(ids).min() >= k
            score[lookahead] = jackknife_gini(ids, y)
        assert score[True] <= score[False] + 1e-12


def _subset_score(X, y, kept, k):
    """Brier score of the projection on ``kept``, or None when it is not k-anonymous."""
    ids = np.unique(X[:, list(kept)], axis=0, return_inverse=True)[1].ravel() if kept \
        else np.zeros(len(y), dtype=np.int64)
    return jackknife_gini(ids, y) if np.bincount(ids).min() >= k else None


@pytest.mark.parametrize("k", [3, 8, 20])
def test_a_beam_wide_enough_for_every_path_finds_the_best_k_anonymous_subset(k):
    """With room for every path nothing is pruned, so the search must return the best-scoring
    k-anonymous subset (brute force over all 2^7 subsets); a narrow beam can only be worse."""
    rng = np.random.default_rng(100 + k)
    for _ in range(6):
        X = (rng.random((160, 7)) < rng.uniform(0.1, 0.6, 7)).astype(np.uint8)
        y = ((X[:, [0, 3, 5]].sum(axis=1) + (rng.random(160) < 0.25)) >= 2).astype(int)
        order = rng.permutation(7)
        scores = [_subset_score(X, y, s, k) for r in range(8)
                  for s in itertools.combinations(range(7), r)]
        best = min(s for s in scores if s is not None)
        found = {}
        for width in (1, 2, 128):
            decisions = greedy_k_anonymous(X, order, k, label=y, beam_width=width)
            found[width] = _subset_score(X, y, [d.feature for d in decisions if d.kept], k)
            assert found[width] is not None  # k-anonymous whatever the width
            assert [d.feature for d in decisions] == list(order)  # every feature judged once
        assert found[128] == pytest.approx(best, rel=1e-12)
        assert found[1] >= best - 1e-12 and found[2] >= best - 1e-12


def test_the_beam_finds_the_pair_the_rollout_misses():
    """A ranked first predicts the label alone but leaves room for nothing at k = 10; B and C
    (ranked after it) together predict it better. The single rollout compares A kept with the
    completion without A, which starts with a decoy D that also blocks B and C; so it keeps A.
    Width 2 keeps the path without A alive past D and reaches B + C."""
    n = 40
    value = np.repeat([0, 1, 2, 3], 10)  # B = value in {1, 3}, C = value in {2, 3}
    y = np.array([0] * 10 + [1] * 10 + [1] * 10 + [1] * 7 + [0] * 3)
    a = (value >= 1).astype(np.uint8)
    a[[10, 20]] = 0  # A misclassifies a little
    a[[0]] = 1
    b, c = np.isin(value, [1, 3]).astype(np.uint8), np.isin(value, [2, 3]).astype(np.uint8)
    d = np.tile([1, 0], n // 2).astype(np.uint8)  # a balanced decoy, unrelated to y
    X = np.column_stack([a, d, b, c])
    order = np.array([0, 1, 2, 3])
    scores = {}
    for width in (1, 2):
        decisions = greedy_k_anonymous(X, order, 10, label=y, beam_width=width)
        kept = [x.feature for x in decisions if x.kept]
        scores[width] = (kept, _subset_score(X, y, kept, 10))
    assert scores[2][0] == [2, 3]
    assert scores[2][1] < scores[1][1]


# ------------------------------------------------------------------------- importance
def _planted(n: int = 800, noise: int = 10, seed: int = 3):
    rng = np.random.default_rng(seed)
    X = rng.integers(0, 2, size=(n, noise + 1)).astype(float)
    flip = rng.random(n) < 0.1
    y = (X[:, 4].astype(bool) ^ flip).astype(int)  # column 4 carries the label
    return X, y


def test_oob_importance_finds_the_planted_feature():
    X, y = _planted()
    model = OOBPermutationImportance(n_estimators=150, random_state=11).fit(X, y)
    imp = model.importances_
    assert np.argmax(imp) == 4
    # Permuting a balanced feature that decides 90% of labels costs about 0.4 of accuracy
    # in the trees that split on it first; noise features cost about nothing.
    assert imp[4] > 0.15
    noise = np.delete(imp, 4)
    assert np.abs(noise).max() < 0.02
    assert model.oob_accuracy_ > 0.85


def _naive_importance(X, y, n_estimators, seed):
    """Eq. 3 by brute force, drawing the same randomness as the vectorized estimator: every
    OOB row of every used feature is re-predicted, changed or not."""
    X = X.astype(np.float32)
    _, y = np.unique(y, return_inverse=True)
    y = y.astype(float)
    n, f = X.shape
    rng = np.random.default_rng(seed)
    drops = np.zeros(f)
    for _ in range(n_estimators):
        counts = np.bincount(rng.integers(n, size=n), minlength=n)
        tree = DecisionTreeClassifier(max_features="sqrt", random_state=int(rng.integers(2**31 - 1)))
        tree.fit(X, y, sample_weight=counts.astype(float))
        oob = np.flatnonzero(counts == 0)
        x_oob, y_oob = X[oob], y[oob]
        r_k = np.sum(tree.predict(x_oob) == y_oob)
        used = np.unique(tree.tree_.feature[tree.tree_.feature >= 0])
        perms = rng.permuted(np.broadcast_to(np.arange(len(oob)), (len(used), len(oob))), axis=1)
        for j, a in enumerate(used):
            shuffled = x_oob.copy()
            shuffled[:, a] = x_oob[perms[j], a]
            drops[a] += (r_k - np.sum(tree.predict(shuffled) == y_oob)) / len(oob)
    return drops / n_estimators


def test_oob_importance_equals_the_brute_force_formula():
    rng = np.random.default_rng(5)
    X = np.column_stack([rng.integers(0, 2, 300), rng.integers(0, 4, 300), rng.normal(size=300),
                         rng.integers(0, 2, 300)]).astype(float)
    y = ((X[:, 0] + (X[:, 2] > 0.3) + (rng.random(300) < 0.2)) >= 2).astype(int)
    fast = OOBPermutationImportance(n_estimators=25, random_state=9).fit(X, y).importances_
    np.testing.assert_allclose(fast, _naive_importance(X, y, 25, 9), atol=1e-12)


def test_rfka_ranks_the_planted_indicator_first():
    X, y = _planted(n=600)
    frame = pd.DataFrame(X.astype(int), columns=[f"f{i}" for i in range(X.shape[1])])
    frame["y"] = y
    columns = [ColumnInfo(c, "numeric", role="label" if c == "y" else "quasi_identifier")
               for c in frame.columns]
    release = run_rfka(MethodInput(columns, frame), RfkaParams(k=2, n_estimators=80), _ctx())
    meta = release.metadata["feature_selection"]
    assert meta["order"][0] == "f4=1"
    assert meta["decisions"][0]["decision"] == "kept"
    ranks = {d["feature"]: d["score"] for d in meta["decisions"]}
    assert max(v for name, v in ranks.items() if name != "f4=1") < 0.25 * ranks["f4=1"]


# ------------------------------------------------------------------------- hamdist
def _hand_made() -> MethodInput:
    frame = pd.DataFrame({
        "a": [0, 0, 0, 0, 1, 1, 1, 1],  # the label's complement: distance 0
        "b": [1, 1, 1, 0, 0, 0, 0, 0],  # one record off: distance 1
        "c": [1, 0, 1, 0, 1, 0, 1, 0],  # distance 4
        "d": [1, 1, 0, 0, 1, 1, 0, 0],  # distance 4 (ties with c; c comes first)
        "y": [1, 1, 1, 1, 0, 0, 0, 0],
    })
    columns = [ColumnInfo(c, "numeric", role="label" if c == "y" else "quasi_identifier")
               for c in frame.columns]
    return MethodInput(columns, frame)


def test_hamming_scores_by_hand():
    data = _hand_made()
    binary = data.frame[["a", "b", "c", "d"]].to_numpy()
    np.testing.assert_allclose(hamming_scores(binary, data.frame["y"].to_numpy()),
                               [0.0, 1 / 8, 4 / 8, 4 / 8])


def test_hamdist_greedy_by_hand():
    release = run_hamdist(_hand_made(), HamdistParams(k=2), _ctx())
    meta = release.metadata["feature_selection"]
    assert meta["order"] == ["a=1", "b=1", "c=1", "d=1"]
    # a splits 4|4: kept. b with a leaves a class of 1: dropped. c with a: four classes of 2:
    # kept. d with a, c: singletons: dropped.
    assert [d["decision"] for d in meta["decisions"]] == ["kept", "dropped", "kept", "dropped"]
    assert meta["selected"] == ["a=1", "c=1"]
    assert release.metrics["equivalence_classes"] == 4
    # Every class of two holds a single label value: the label is disclosed, and said so.
    assert release.metrics["label_homogeneous_share"] == 1.0
    assert any("single label value" in w for w in release.guarantees["warnings"])
    # k = 1 keeps everything; k = 5 keeps nothing (a's 4|4 split already fails).
    assert run_hamdist(_hand_made(), HamdistParams(k=1), _ctx()).metrics["selected_features"] == 4
    empty = run_hamdist(_hand_made(), HamdistParams(k=5), _ctx())
    assert list(empty.frame.columns) == ["y"] and empty.guarantees["warnings"]


@pytest.mark.parametrize("run, model", [(run_hamdist, HamdistParams), (run_rfka, RfkaParams)])
def test_k_one_is_released_as_no_protection(run, model):
    """k = 1 (the experiment's K = 0) requires nothing of the projection: the release must
    not claim k-anonymity. On the hand-made table every record is alone in its class."""
    extra = {"n_estimators": 5} if model is RfkaParams else {}
    release = run(_hand_made(), model(k=1, lookahead=False, **extra), _ctx())
    assert _independent_min_class(release.frame, "y") == 1  # nothing protects anyone
    g = release.guarantees
    assert g["notion"] == "none" and g["private"] is False and g["k"] == 1 == g["k_requested"]
    assert g["protected_columns"] == [] and g["unprotected_columns"] == [*release.frame.columns]
    assert "NO protection" in g["statements"][0] and g["warnings"][0].startswith("k = 1")
    protected = run(_hand_made(), model(k=2, lookahead=False, **extra), _ctx()).guarantees
    assert protected["notion"] == "k_anonymity" and protected["private"] is True


def test_a_single_class_label_is_refused_like_rfk_anonymity():
    """Refused at submit when the schema's profile shows one class, and when the data does."""
    data = _hand_made()
    one_class = [dataclasses.replace(c, distinct=1) if c.name == "y" else c for c in data.columns]
    for name in ("rfka", "hamdist", "rfk_anonymity"):
        spec = registry.get(name)
        with pytest.raises(MethodInputError, match=r"'y' has a single class.* at least two"):
            spec.validate_against(spec.params(label="y"), one_class, None)
    all_missing = [dataclasses.replace(c, distinct=0, missing=len(data.frame)) if c.name == "y" else c
                   for c in data.columns]
    for name in ("rfka", "hamdist", "rfk_anonymity"):
        spec = registry.get(name)
        with pytest.raises(MethodInputError, match=r"'y' is missing in every row: .*at least two"):
            spec.validate_against(spec.params(label="y"), all_missing, None)
    with_missing = [dataclasses.replace(c, missing=1) if c.name == "y" else c for c in data.columns]
    with pytest.raises(MethodInputError, match="'y' has missing"):
        registry.get("rfka").validate_against(RfkaParams(), with_missing, None)
    data.frame["y"] = 1
    with pytest.raises(MethodInputError, match="'y' has a single class.*at least two"):
        run_rfka(data, RfkaParams(k=2, n_estimators=5), _ctx())


def test_hamdist_needs_a_binary_label():
    data = _hand_made()
    data.frame.loc[0, "y"] = 2
    with pytest.raises(MethodInputError, match="binary label"):
        run_hamdist(data, HamdistParams(k=2), _ctx())


# ------------------------------------------------------------------------- encoding
def test_encoding_bins_values_and_missing():
    frame = pd.DataFrame({"x": [0.0, 1.0, 2.5, 9.9, 10.0, np.nan], "c": ["u", "v", "u", "w", None, "u"],
                          "s": [1, 2, 1, 2, 1, 2]})
    columns = [ColumnInfo("x", "numeric", bounds=(0.0, 10.0)), ColumnInfo("c", "categorical"),
               ColumnInfo("s", "numeric")]
    enc = encode(frame, columns, ["x", "c", "s"], bins=4)
    assert enc.encoding["x"]["edges"] == [0.0, 2.5, 5.0, 7.5, 10.0]
    assert enc.encoding["x"]["edges_from"] == "declared bounds"
    # Empty bin [5, 7.5) gives no indicator; missing is its own value; s has two values: one.
    assert enc.names == ["x=[0, 2.5)", "x=[2.5, 5)", "x=[7.5, 10]", "x=<missing>",
                         "c=u", "c=v", "c=w", "c=<missing>", "s=2"]
    table = pd.DataFrame(enc.matrix, columns=enc.names)
    assert table["x=[7.5, 10]"].tolist() == [0, 0, 0, 1, 1, 0]
    assert table["c=<missing>"].tolist() == [0, 0, 0, 0, 1, 0]
    assert (table.filter(like="x=").sum(axis=1) == 1).all()  # one bin per record


def test_indicators_of_one_name_name_their_columns():
    """A value spelled '<missing>' beside missing cells was refused with 'rename the columns so
    that no column name contains =' though none did (the #7 acceptance check)."""
    frame = pd.DataFrame({"c": ["<missing>", "u", None, "v"], "a": ["b=c", "x", "w", "x"], "a=b": ["c", "y", "z", "z"]})
    columns = [ColumnInfo("c", "categorical"), ColumnInfo("a", "categorical"), ColumnInfo("a=b", "categorical")]
    with pytest.raises(MethodInputError, match="column 'c' holds a value spelled '<missing>'"):
        encode(frame, columns, ["c"], bins=4)
    with pytest.raises(MethodInputError, match="columns 'a' and 'a=b' give indicators of the same name"):
        encode(frame, columns, ["a", "a=b"], bins=4)


def test_discrete_numeric_columns_keep_their_values():
    """Scores 1..8 are discrete (≤ discrete_values distinct values): one indicator per value,
    as seed 004 encodes Breast Cancer; with discrete_values = 0 they are binned like a
    continuous column."""
    frame = pd.DataFrame({"score": np.arange(1, 9).repeat(3), "x": np.linspace(0, 1, 24)})
    columns = [ColumnInfo("score", "numeric"), ColumnInfo("x", "numeric")]
    enc = encode(frame, columns, ["score", "x"], bins=4, discrete_max=10)
    assert [n for n in enc.names if n.startswith("score")] == [f"score={v}" for v in range(1, 9)]
    assert enc.encoding["score"]["binning"] == "values"
    assert enc.encoding["x"]["binning"] == "equal_width"  # 24 values: continuous
    binned = encode(frame, columns, ["score", "x"], bins=4, discrete_max=0)
    assert binned.encoding["score"]["binning"] == "equal_width"
    assert len([n for n in binned.names if n.startswith("score")]) == 4
    assert RfkaParams().discrete_values == 10 and HamdistParams().discrete_values == 10


# ------------------------------------------------------------------------- parameters
def test_bad_parameters(breast_cancer):
    spec = registry.get("rfka")
    with pytest.raises(ValidationError):
        RfkaParams(label="class", k=0)
    with pytest.raises(ValidationError):
        HamdistParams(label="class", k=-1)
    with pytest.raises(ValidationError):
        RfkaParams(label="class", bins=1)
    with pytest.raises(ValidationError):
        RfkaParams(label="class", n_estimators=0)
    with pytest.raises(ValidationError):
        RfkaParams(label="class", colour="blue")
    with pytest.raises(MethodInputError, match="unknown label column 'nope'"):
        spec.validate_against(RfkaParams(label="nope"), breast_cancer.columns, None)
    with pytest.raises(MethodInputError, match="unknown label column"):
        run_rfka(breast_cancer, RfkaParams(label="nope", n_estimators=5), _ctx())
    with pytest.raises(MethodInputError, match="unknown column 'zzz'"):
        spec.validate_against(RfkaParams(label="class", quasi_identifiers=["zzz"]),
                              breast_cancer.columns, None)
    with pytest.raises(MethodInputError, match="is the label"):
        spec.validate_against(RfkaParams(label="class", quasi_identifiers=["class"]),
                              breast_cancer.columns, None)
    with pytest.raises(MethodInputError, match="exceeds the number of records"):
        run_hamdist(breast_cancer, HamdistParams(label="class", k=10_000), _ctx())
    # The schema's label role is the default label; hamdist accepts rfka's parameters.
    spec.validate_against(RfkaParams(), breast_cancer.columns, None)
    registry.get("hamdist").validate_against(
        HamdistParams(label="class", k=5, n_estimators=100, bins=5), breast_cancer.columns, None)


def test_missing_labels_are_rejected():
    data = _hand_made()
    data.frame["y"] = data.frame["y"].astype(float)
    data.frame.loc[3, "y"] = np.nan
    with pytest.raises(MethodInputError, match="missing values"):
        run_rfka(data, RfkaParams(k=2, n_estimators=5), _ctx())


def test_cancellation_stops_the_forest(breast_cancer):
    ctx = RunContext(rng=SecureRandom(seed=1), should_stop=lambda: True)
    with pytest.raises(Cancelled):
        run_rfka(breast_cancer, RfkaParams(label="class", n_estimators=50), ctx)


def test_registered():
    assert registry.get("rfka").kind == "release"
    assert registry.get("hamdist").kind == "release"
    assert registry.get("experiment_rfka").kind == "experiment"


def test_seeded_runs_reproduce(breast_cancer):
    params = RfkaParams(label="class", k=5, bins=5, n_estimators=30)
    a = run_rfka(breast_cancer, params, _ctx(3)).metadata["feature_selection"]
    b = run_rfka(breast_cancer, params, _ctx(3)).metadata["feature_selection"]
    assert a["decisions"] == b["decisions"]


def test_the_label_keeps_the_facts_inferred_from_the_data():
    """The label is released as it is: what its schema says was inferred at upload stays inferred
    (it was dropped, so a DP release made from this one treated the label's integer flag as declared)."""
    data = _hand_made()
    columns = [dataclasses.replace(c, integer=True, inferred=("type", "integer")) for c in data.columns]
    release = run_hamdist(MethodInput(columns, data.frame), HamdistParams(k=2), _ctx())
    label = next(c for c in release.columns if c.name == "y")
    assert (label.integer, label.inferred) == (True, ("type", "integer"))


def test_the_importance_estimator_follows_scikit_learns_conventions():
    """get_params / clone work (it was a plain class: scikit-learn's tools could not copy it)."""
    from sklearn.base import clone

    est = OOBPermutationImportance(n_estimators=7, random_state=3)
    copy = clone(est)
    assert copy.get_params()["n_estimators"] == 7 and copy is not est
    assert not hasattr(copy, "importances_")
