"""Feature selection (spec 04 §3): rfka and hamdist runtimes on Breast Cancer and the
2,000-record stratified Adult sample (the experiment's workload), and Veil's OOB permutation
importance beside scikit-learn's forest + ``permutation_importance`` on the same one-hot data.

The peer is scikit-learn's recipe for permutation importance: fit the forest on 70% of the
rows, permute each feature through the whole forest on the held-out 30%. It estimates a
related but different quantity (Veil permutes among each tree's own out-of-bag rows, seed 004
eq. 3, and uses every row for both); the rank agreement of the two is in the notes.
"""

from __future__ import annotations

import time

import numpy as np
import pandas as pd
from scipy.stats import spearmanr
from sklearn.ensemble import RandomForestClassifier
from sklearn.inspection import permutation_importance
from sklearn.model_selection import train_test_split

from app.privacy.context import RunContext
from app.privacy.data import MethodInput
from app.privacy.experiments.rfka import load_adult_sample, load_breast_cancer
from app.privacy.feature_selection import HamdistParams, RfkaParams, run_hamdist, run_rfka
from app.privacy.feature_selection.encoding import encode
from app.privacy.feature_selection.importance import OOBPermutationImportance
from app.privacy.rng import SecureRandom
from benchmarks.common import Row, best_time

SKLEARN_PEER = "scikit-learn RandomForestClassifier + inspection.permutation_importance"


def _datasets(quick: bool):
    bc = load_breast_cancer()
    yield "Breast Cancer (683, raw scores)", bc, 10
    yield "Adult sample (2,000, 5 bins)", load_adult_sample(2000, seed=0), 5
    if not quick:
        yield "Adult complete (30,162, 5 bins)", load_adult_sample(30162, seed=0), 5


def _selection_rows(name, dataset, bins, trees: int, quick: bool) -> list[Row]:
    frame, columns, label = dataset
    data = MethodInput(columns=columns, frame=frame)
    rows = []
    for method, run, params in (
        ("rfka", run_rfka, RfkaParams(label=label, k=10, bins=bins, n_estimators=trees)),
        ("hamdist", run_hamdist, HamdistParams(label=label, k=10, bins=bins)),
    ):
        repeat = 1 if method == "rfka" and not quick else 3
        result = {}

        def once():
            result["r"] = run(data, params, RunContext(rng=SecureRandom(seed=1)))

        seconds = best_time(once, repeat=repeat)
        metrics = result["r"].metrics
        rows.append(Row(
            workload=f"{method}, k = 10, {name}" + (f", {trees} trees" if method == "rfka" else ""),
            veil=seconds, unit="s", higher_is_better=False,
            notes=f"{metrics['candidate_features']} one-hot candidates, "
                  f"{metrics['selected_features']} kept; ranking {metrics['seconds']['ranking']:.3f} s, "
                  f"greedy loop + verification {metrics['seconds']['selection']:.4f} s"))
    return rows


def _importance_rows(name, dataset, bins, trees: int) -> list[Row]:
    frame, columns, label = dataset
    features = encode(frame, columns, [c.name for c in columns if c.name != label], bins)
    X = features.matrix.astype(np.float32)
    y = pd.factorize(frame[label], sort=True)[0]
    start = time.perf_counter()
    ours = OOBPermutationImportance(n_estimators=trees, max_oob_rows=2000, random_state=0).fit(X, y)
    veil = time.perf_counter() - start

    train, test = train_test_split(np.arange(len(X)), test_size=0.3, stratify=y, random_state=0)
    start = time.perf_counter()
    forest = RandomForestClassifier(n_estimators=trees, oob_score=True, random_state=0)
    forest.fit(X[train], y[train])
    forest_only = time.perf_counter() - start
    theirs = permutation_importance(forest, X[test], y[test], n_repeats=1,
                                    random_state=0).importances_mean
    peer = time.perf_counter() - start
    rho = spearmanr(ours.importances_, theirs).statistic
    top = set(np.argsort(-ours.importances_)[:10]) & set(np.argsort(-theirs)[:10])
    return [
        Row(workload=f"OOB permutation importance, {name}, {trees} trees, {X.shape[1]} features",
            veil=veil, unit="s", peer=SKLEARN_PEER, peer_value=peer, higher_is_better=False,
            notes=f"peer: forest on 70%, permutation through it on the held-out 30% (a different "
                  f"estimate); Spearman ρ between the two = {rho:.2f}, top-10 overlap {len(top)}/10"),
        Row(workload=f"forest fit only, {name}, {trees} trees (what bagging costs)",
            veil=veil, unit="s", peer="scikit-learn RandomForestClassifier(oob_score=True).fit",
            peer_value=forest_only, higher_is_better=False,
            notes="Veil's figure includes the importance; the peer's is the forest alone, on 70% "
                  f"(OOB accuracy: Veil {ours.oob_accuracy_:.3f}, scikit-learn {forest.oob_score_:.3f})"),
    ]


def cases(quick: bool) -> list[Row]:
    """quick: 20 trees, the peer rows on Breast Cancer only; full: the paper's 1000 trees, and
    rfka with 200 trees on all 30,162 complete Adult records."""
    trees = 20 if quick else 1000
    rows: list[Row] = []
    for name, dataset, bins in _datasets(quick):
        forest = 200 if "complete" in name else trees
        rows += _selection_rows(name, dataset, bins, forest, quick)
        if "complete" not in name and not (quick and "Adult" in name):
            rows += _importance_rows(name, dataset, bins, trees)
    return rows


if __name__ == "__main__":
    import sys

    for row in cases(quick="--full" not in sys.argv):
        print(row)
