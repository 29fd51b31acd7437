"""experiment_rfka on a small workload: the report's shape, its K = 0 baseline, the stratified
Adult sample and the plots."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from app.privacy.context import RunContext
from app.privacy.experiments.rfka import (
    ExperimentRfkaParams, load_adult_sample, lookup_auc, run_experiment_rfka, svm_auc,
)
from sklearn.metrics import roc_auc_score
from pydantic import ValidationError


@pytest.fixture(scope="module")
def report():
    params = ExperimentRfkaParams(ks=[0, 20], n_estimators=15, adult_sample=300, cv_repeats=1)
    return run_experiment_rfka(None, params, RunContext())


def test_report_rows_and_baseline(report):
    summary = report.tables["summary"]
    assert sorted(zip(summary.dataset, summary.K)) == [("adult", 0), ("adult", 20),
                                                       ("breast_cancer", 0), ("breast_cancer", 20)]
    base = summary[summary.K == 0]
    # K = 0 keeps every candidate for both methods: the same table, the same folds, the same AUC.
    assert (base.rfka_features == base.hamdist_features).all()
    np.testing.assert_allclose(base.rfka_auc, base.hamdist_auc)
    assert (base.auc_difference == 0).all()
    for variant in ("rfka", "rfka_greedy"):  # every variant keeps everything at K = 0
        assert (base[f"{variant}_features"] == base.hamdist_features).all()
        assert (base[f"{variant}_minus_hamdist"] == 0).all()
    runs = report.tables["runs"]
    assert (runs.min_class_size >= runs.K.clip(lower=1)).all()
    assert set(runs.method) == {"rfka", "rfka_greedy", "hamdist"}
    # The lookahead only ever drops features that pass the k-test, and never at K = 0.
    assert (runs[runs.method != "rfka"].dropped_by_lookahead == 0).all()
    assert (runs[runs.K == 0].dropped_by_lookahead == 0).all()
    assert (summary.rfka_auc.between(0, 1) & summary.hamdist_auc.between(0, 1)).all()
    assert {c["dataset"] for c in report.data["claims"]} == {"adult", "breast_cancer"}
    json.dumps(report.data)


def test_plots_are_images(report):
    assert set(report.plots) == {"auc", "lookup_auc", "runtime", "features"}
    for plot in report.plots.values():
        assert plot.png.startswith(b"\x89PNG") and b"<svg" in plot.svg


def test_adult_sample_is_stratified():
    frame, columns, label = load_adult_sample(500, seed=1)
    full_share = 7508 / 30162  # >50K among the complete training records
    assert len(frame) == 500 and frame.notna().all().all()
    assert abs((frame[label] == ">50K").mean() - full_share) < 0.003
    assert sum(c.role == "quasi_identifier" for c in columns) == 14


def test_svm_auc_sees_a_perfect_feature():
    y = np.repeat(["a", "b"], 50)
    release = pd.DataFrame({"f": (y == "b").astype(int), "label": y})
    assert svm_auc(release, "label", 5, 0).min() == 1.0
    assert (svm_auc(release[["label"]], "label", 5, 0) == 0.5).all()
    assert lookup_auc(release, "label", 5, 0).min() == 1.0
    assert (lookup_auc(release[["label"]], "label", 5, 0) == 0.5).all()


def test_lookup_auc_ranks_classes_by_their_training_share():
    """Three classes with positive shares 0.9, 0.5, 0.1: the lookup ranks them so; its AUC is
    the AUC of those shares (0.82 here), which ties in the SVM's scores can miss."""
    rng = np.random.default_rng(0)
    a = np.repeat([1, 0, 0], 200)
    b = np.repeat([0, 1, 0], 200)
    share = np.repeat([0.9, 0.5, 0.1], 200)
    y = np.where(rng.random(600) < share, "pos", "neg")
    release = pd.DataFrame({"a": a, "b": b, "label": y})
    expected = roc_auc_score(y == "pos", share)
    np.testing.assert_allclose(lookup_auc(release, "label", 5, 0, 2).mean(), expected, atol=0.02)


def test_bad_experiment_parameters():
    with pytest.raises(ValidationError):
        ExperimentRfkaParams(ks=[2, 2])
    with pytest.raises(ValidationError):
        ExperimentRfkaParams(datasets=["iris"])
    with pytest.raises(ValidationError):
        ExperimentRfkaParams(variants=["rfka"])  # the baseline must run
