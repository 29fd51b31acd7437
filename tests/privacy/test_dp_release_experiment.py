"""experiment_dp_release runs the protocol end to end on a small setting and reports both
evaluation styles, the majority baseline, tables and one plot per task."""

from __future__ import annotations

import math

import numpy as np

from app.privacy import registry
from app.privacy.context import RunContext
from app.privacy.experiments.dp_release import (
    ExperimentDpReleaseParams, TARGET, load_task, run_protocol, svm_error,
)
from app.privacy.rng import SecureRandom


def test_small_protocol_reports_both_styles_per_method_and_epsilon():
    params = ExperimentDpReleaseParams(tasks=["coil_caravan"], methods=["icahdp_strict", "dppro",
                                       "noprivacy"], epsilons=[0.5, 5.0], repetitions=2,
                                       train_rows=300, test_rows=300, seed=4)
    report = run_protocol(params, RunContext(SecureRandom(seed=4)))
    runs = report.tables["runs"]
    assert len(runs) == 2 * (1 + 2 * 2)  # per repetition: noprivacy once, 2 methods × 2 ε
    assert set(runs["method"]) == {"icahdp_strict", "dppro", "noprivacy"}
    assert runs["error_raw_holdout"].between(0, 1).all() and runs["error_release_split"].between(0, 1).all()
    assert math.isinf(runs.loc[runs["method"] == "noprivacy", "epsilon"].iloc[0])
    assert set(report.plots) == {"coil_caravan"} and report.plots["coil_caravan"].png[:4] == b"\x89PNG"
    summary = report.tables["summary_raw_holdout"]
    assert {"eps=0.5", "eps=5", "no privacy"} <= set(summary.columns)
    # the raw data beats nothing: its SVM is at least as good as always answering "no"
    raw = runs[runs["method"] == "noprivacy"]
    assert (raw["error_raw_holdout"] <= raw["majority_error"] + 0.01).all()
    assert registry.get("experiment_dp_release").kind == "experiment"


def test_svm_error_is_the_misclassification_rate():
    task = load_task("adult_degree")
    frame = task.data.frame.iloc[:1500]
    train, test = frame.iloc[:1000], frame.iloc[1000:]
    err, flipped = svm_error(train, [test, test.assign(**{TARGET: np.where(
        test[TARGET] == "yes", "no", "yes")})], task.data.columns, 1000, np.random.default_rng(0))
    assert 0 < err < 0.3
    assert err + flipped == 1.0  # every prediction is either right or wrong
