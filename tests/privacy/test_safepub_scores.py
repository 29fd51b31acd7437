"""safepub's other quality models (safepub_scores.py): entropy, group_size and classification —
each score against a recount of the generalized table, each sensitivity by brute force over every
add/remove neighbour of small tables and reached (or nearly) by a constructed pair, η = ε/(2Δ) in
the runs, and the classification release (the label released as is, classes over the
quasi-identifiers and the label, the label's refusals)."""

from __future__ import annotations

import itertools
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest

from app.privacy.anonymity.safepub import run_safepub
from app.privacy.anonymity.safepub_params import SafePubParams, beta_of
from app.privacy.anonymity.safepub_scores import sensitivity
from app.privacy.anonymity.safepub_search import Scorer, lattice_nodes, score_threshold
from app.privacy.context import RunContext
from app.privacy.data import ColumnInfo, MethodInput
from app.privacy.registry import MethodInputError
from app.privacy.rng import SecureRandom
from tests.privacy.test_anonymity_safepub import DOMAIN, HIER, INFOS, _parts

NEW = ("entropy", "group_size", "classification")
LABELS = ("no", "yes")
COLUMNS = ["a", "b", "x", "y"]


def _scorers(frame: pd.DataFrame, k_score: int) -> tuple[dict[str, Scorer], tuple[int, ...]]:
    """A scorer per new metric on ``frame`` (columns a, b, x and the label y)."""
    cols, costs, rows, top = _parts(frame)
    codes = np.zeros(len(rows), dtype=np.int64)  # the domain rows appended by _parts: never scored
    codes[:len(frame)] = [LABELS.index(v) for v in frame["y"]]
    return {m: Scorer(cols, costs, m, k_score, rows, codes) for m in NEW}, top


def _table(rows) -> pd.DataFrame:
    return pd.DataFrame(list(rows), columns=COLUMNS)


LABELLED = [(*r, y) for r in DOMAIN for y in LABELS]


def _recount(frame: pd.DataFrame, node, k_score: int, metric: str) -> Fraction:
    """The score from the generalized table itself, one record at a time (pandas groupby), not
    the scorer's one-member-per-class shortcut."""
    cols, _, rows, _ = _parts(frame)
    n = len(frame)
    gen = pd.DataFrame({q: cols.codes[i][level][np.flatnonzero(rows)] for i, (q, level) in enumerate(zip("abx", node))})
    size = gen.groupby(list("abx"))["a"].transform("size").to_numpy()
    kept = size >= k_score
    if metric == "group_size":
        return Fraction(len(gen[kept].drop_duplicates()) + int((~kept).any()))
    if metric == "classification":
        if all(level == tree.height for level, tree in zip(node, cols.trees)):
            return Fraction(0)
        groups = gen.assign(y=frame["y"].to_numpy()).groupby(list("abxy")).size()
        mode = groups.groupby(level=[0, 1, 2]).max()
        return Fraction(int(mode[mode >= k_score].sum()))
    loss = Fraction(0)
    for i, q in enumerate("abx"):
        if node[i] == cols.trees[i].height:
            loss += n  # every cell at the root
            continue
        counts = gen[q][kept].value_counts().to_numpy()
        loss += Fraction(int((counts * counts).sum()), n) + int((~kept).sum())
    return -loss / 3


@pytest.mark.parametrize("k_score", [1, 3, 6])
def test_the_scores_equal_a_recount_of_the_generalized_table(k_score):
    rng = np.random.default_rng(5 + k_score)
    frame = _table(LABELLED[i] for i in rng.integers(0, len(LABELLED), 60))
    scorers, top = _scorers(frame, k_score)
    for node in lattice_nodes(top):
        for metric, scorer in scorers.items():
            assert scorer.score(node) == _recount(frame, node, k_score, metric), (metric, node)


@pytest.mark.parametrize("k_score", [1, 2, 3, 5])
def test_every_add_remove_neighbour_moves_every_new_score_within_its_sensitivity(k_score):
    """Every node of small random tables against every neighbour (each labelled domain record
    added, each record removed): no score moves by more than its sensitivity. A neighbour is the
    same trees with another set of scored rows (a record's codes are its own: the trees cover the
    whole domain), the rows _parts appends after the table standing for the added records."""
    rng = np.random.default_rng(11 * k_score)
    bounds = {m: sensitivity(m, 3, k_score) for m in NEW}
    worst = dict.fromkeys(NEW, Fraction(0))
    for _ in range(4):
        n = int(rng.integers(1, 10))
        # few distinct records, so that classes reach k_score and cross it
        base = _table(LABELLED[i] for i in rng.integers(0, 12, n))
        ours, top = _scorers(base, k_score)
        cols, costs, rows, codes = ours["entropy"].cols, ours["entropy"].costs, ours["entropy"].rows, ours["entropy"].labels
        neighbours = []
        for d, y in itertools.product(range(len(DOMAIN)), range(len(LABELS))):  # t = (DOMAIN[d], y) added
            added, labelled = rows.copy(), codes.copy()
            added[n + d], labelled[n + d] = True, y
            neighbours.append((added, labelled))
        for i in range(n if n > 1 else 0):  # record i removed
            removed = rows.copy()
            removed[i] = False
            neighbours.append((removed, codes))
        nodes = lattice_nodes(top)
        before = {m: {v: ours[m].score(v) for v in nodes} for m in NEW}
        for scored, labels in neighbours:
            for m in NEW:
                theirs = Scorer(cols, costs, m, k_score, scored, labels)
                for node in nodes:
                    move = abs(theirs.score(node) - before[m][node])
                    assert move <= bounds[m], (m, k_score, node, move, bounds[m])
                    worst[m] = max(worst[m], move)
    assert worst["group_size"] == 1  # a new class (k_score 1) or a class crossing k_score
    assert all(w > 0 for w in worst.values())


@pytest.mark.parametrize("k_score", [3, 5])
def test_entropy_nearly_reaches_k_when_a_class_unlike_the_others_crosses(k_score):
    """k_score − 1 records differing on every quasi-identifier from one large class, then one
    more: each quasi-identifier's loss moves by k − 1 + N²/(n(n + 1)) − k²/(n + 1) ≈ k."""
    big, small = (*DOMAIN[0], "no"), (*DOMAIN[-1], "no")
    n = 8 * k_score * k_score
    base = _table([big] * (n - k_score + 1) + [small] * (k_score - 1))
    added = pd.concat([base, _table([small])], ignore_index=True)
    bottom = (0, 0, 0)
    move = abs(_scorers(added, k_score)[0]["entropy"].score(bottom) - _scorers(base, k_score)[0]["entropy"].score(bottom))
    assert k_score - 1 < move <= sensitivity("entropy", 3, k_score) == k_score


@pytest.mark.parametrize("k_score", [1, 4])
def test_classification_reaches_k_when_a_one_label_group_crosses(k_score):
    other = (*DOMAIN[0], "yes")
    group = (*DOMAIN[5], "no")
    base = _table([other] * 7 + [group] * (k_score - 1))
    added = pd.concat([base, _table([group])], ignore_index=True)
    bottom = (0, 0, 0)
    move = _scorers(added, k_score)[0]["classification"].score(bottom) - _scorers(base, k_score)[0]["classification"].score(bottom)
    assert move == sensitivity("classification", 3, k_score) == k_score


# ---------------------------------------------------------------------------------- runs
def _labelled_input(n: int = 6000, seed: int = 3, label_role: str = "label") -> MethodInput:
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame({"a": rng.choice(["a1", "a2", "a3", "a4"], n), "b": rng.choice(["b1", "b2", "b3"], n),
                          "x": rng.choice([0, 5, 10], n)})
    frame["y"] = np.where((frame["a"] == "a1") ^ (rng.random(n) < 0.1), "yes", "no")
    frame.loc[:5, "y"] = None  # a missing label is a label of its own
    infos = INFOS + [ColumnInfo(name="y", type="categorical", role=label_role)]
    return MethodInput(columns=infos, frame=frame, hierarchies=dict(HIER))


@pytest.mark.parametrize("metric", NEW)
def test_each_new_metric_draws_at_eta_epsilon_over_twice_its_sensitivity(metric):
    data = _labelled_input(2000)
    for params in (SafePubParams(epsilon=1.0, delta=1e-4, metric=metric),
                   SafePubParams(epsilon=1.0, delta=1e-4, metric=metric, steps=5)):
        result = run_safepub(data, params, RunContext(rng=SecureRandom(seed=4)))
        meta = result.metadata["safepub"]
        search = meta["search"]
        k_score = score_threshold(meta["k"], beta_of(float(params.epsilon_anon)))
        delta_score = sensitivity(metric, 3, k_score)
        assert search["metric"] == metric and search["sensitivity"] == delta_score
        draws = 1 if search["strategy"] == "exhaustive" else 5
        assert Fraction(search["eta"]) == params.epsilon_search / draws / (2 * delta_score)
        released = ["a", "b", "x"] + (["y"] if metric == "classification" else [])
        assert list(result.frame.columns) == released
        assert result.frame.groupby(released).size().min() >= meta["k"]


def test_a_classification_release_carries_the_label_as_is_in_classes_of_k():
    data = _labelled_input()
    result = run_safepub(data, SafePubParams(epsilon=2.0, delta=1e-5, metric="classification"),
                         RunContext(rng=SecureRandom(seed=6)))
    out, meta, g = result.frame, result.metadata["safepub"], result.guarantees
    assert meta["search"]["label"] == "y"
    assert set(out["y"]) <= {"yes", "no", "<missing>"} and {"yes", "no"} <= set(out["y"])
    sizes = out.groupby(["a", "b", "x", "y"]).size()
    assert sizes.min() >= meta["k"]  # classes over the quasi-identifiers and the label
    assert any("the label 'y' as is" in s for s in g["statements"])
    assert g["protected_columns"] == ["a", "b", "x", "y"]
    assert [c.role for c in result.columns] == ["quasi_identifier"] * 3 + ["label"]
    # the label is the records' own: every released (class, label) pair exists in the input
    levels = meta["levels"]
    if levels["a"] == 0:
        pairs = set(map(tuple, data.frame[["a", "y"]].fillna("<missing>").to_numpy()))
        assert set(map(tuple, out[["a", "y"]].to_numpy())) <= pairs


def test_the_label_is_required_for_classification_only_and_never_a_quasi_identifier():
    from app.privacy.anonymity.safepub import resolve_label

    with pytest.raises(ValueError, match="label applies to metric 'classification' only"):
        SafePubParams(epsilon=1.0, metric="entropy", label="y")
    qis = ["a", "b", "x"]
    declared = _labelled_input(60).columns
    undeclared = _labelled_input(60, label_role="insensitive").columns
    assert resolve_label(declared, SafePubParams(epsilon=1.0, metric="classification"), qis) == "y"
    assert resolve_label(declared, SafePubParams(epsilon=1.0), qis) is None
    refusals = [
        (undeclared, {}, qis, "needs one label column; the schema declares none: pass label"),
        (undeclared, {"label": "nope"}, qis, "unknown column 'nope'"),
        (undeclared, {"label": "a"}, qis, "is a quasi-identifier"),
        (undeclared, {"label": "x"}, ["a", "b"], "is numeric"),
    ]
    for columns, extra, chosen, fragment in refusals:
        params = SafePubParams(epsilon=1.0, metric="classification", **extra)
        with pytest.raises(MethodInputError, match="label") as caught:
            resolve_label(columns, params, chosen)
        assert fragment in str(caught.value)

