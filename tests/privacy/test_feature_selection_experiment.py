"""experiment_rfka on a small workload: the report's shape, its K = 0 baseline, the stratified
Adult sample and the plots."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from app.privacy.context import RunContext
from app.privacy.experiments.rfka import (
    ExperimentRfkaParams, _figure, _figures, load_adult_sample, lookup_auc, paired_cv_standard_error,
    run_experiment_rfka, svm_auc,
)
from sklearn.metrics import roc_auc_score
from pydantic import ValidationError

from tests.support.figures import assert_readable


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
    np.testing.assert_allclose(base.rfka_auc_converged, base.hamdist_auc_converged)
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
    measures = {c.get("measure") for c in report.data["claims"] if "AUC" in c["claim"]}
    assert len(measures) == 2  # the paper's default SVM and the converged one, judged apart
    json.dumps(report.data)


def test_plots_are_images(report):
    assert set(report.plots) == {"auc", "auc_converged", "lookup_auc", "runtime", "features"}
    for plot in report.plots.values():
        assert plot.png.startswith(b"\x89PNG") and b"<svg" in plot.svg


def test_figures_name_what_they_show_and_keep_a_style_per_variant(report):
    """Acceptance check: the figures had no title, the legend showed code names (rfka_greedy)
    and a variant's colour followed its place in ``variants``."""
    summary = report.tables["summary"]
    fig = _figure(summary, ["rfka", "rfka_greedy", "hamdist"], "auc", "SVM AUC", "AUC vs K")
    assert fig._suptitle.get_text() == "AUC vs K"
    assert_readable(fig)
    colours = {h.get_label(): h.lines[0].get_color() for h in fig.axes[0].containers}
    assert set(colours) == {"RFKA (lookahead, beam)", "RFKA, paper's loop", "Greedy_Hamdist"}
    swapped = _figure(summary, ["hamdist", "rfka"], "auc", "SVM AUC", "AUC vs K")
    assert all(colours[h.get_label()] == h.lines[0].get_color() for h in swapped.axes[0].containers)


def test_features_and_runtime_on_log_axes(report):
    """Docs acceptance check: the features plot's K = 0 point (every candidate: 118 on Adult) put
    the counts of K >= 2 (2-21), where the methods differ, on the bottom tenth of a linear axis."""
    figures = _figures(report.tables["summary"], ["rfka", "rfka_greedy", "hamdist"], ExperimentRfkaParams())
    assert set(figures) == set(report.plots)
    for name in ("features", "runtime"):
        ax = figures[name].axes[0]
        assert ax.get_yscale() == "log" and "log scale" in ax.get_ylabel()
        assert_readable(figures[name])
    assert figures["auc"].axes[0].get_yscale() == "linear"
    none_kept = report.tables["summary"].assign(hamdist_features=0)
    assert _figures(none_kept, ["rfka", "hamdist"], ExperimentRfkaParams())["features"].axes[0].get_yscale() == "linear"


def test_every_auc_figure_draws_the_fold_spread_names_its_data_and_plots_the_summary(report):
    """Plots review: the converged and lookup AUC figures drew no spread where the default SVM's
    drew ± fold std (the runs have every fold's AUC), nothing said the bars are one fold's spread
    rather than the standard error of a difference the page's ± give, the panels were titled
    'adult' and 'breast cancer' (not which sample, nor the bins), and no axis said which way is
    better."""
    summary = report.tables["summary"]
    runs = report.data["runs"]
    params = ExperimentRfkaParams(ks=[0, 20], n_estimators=15, adult_sample=300, cv_repeats=1)
    variants = ["rfka", "rfka_greedy", "hamdist"]
    figures = _figures(summary, variants, params)
    for name in ("auc", "auc_converged", "lookup_auc"):
        fig = figures[name]
        assert_readable(fig)
        assert [ax.get_title() for ax in fig.axes] == [
            "Adult (300-record sample, numeric in 5 bins)", "Breast Cancer (683 records, raw 1-10 scores)"]
        assert fig.axes[0].get_ylabel().endswith("(higher is better)"), name
        assert fig.legends[0].get_title().get_text().startswith("error bars: ± 1 sd of the AUC over the 5 folds")
        for ax, dataset in zip(fig.axes, ("adult", "breast_cancer")):
            part = summary[summary.dataset == dataset]
            for container in ax.containers:
                variant = {"RFKA (lookahead, beam)": "rfka", "RFKA, paper's loop": "rfka_greedy",
                           "Greedy_Hamdist": "hamdist"}[container.get_label()]
                line, _, (bars,) = container.lines
                assert np.allclose(line.get_ydata(), part[f"{variant}_{name}"])  # the summary's
                half = [(seg[1][1] - seg[0][1]) / 2 for seg in bars.get_segments()]
                folds = {"auc": "fold_auc", "auc_converged": "fold_auc_converged",
                         "lookup_auc": "fold_lookup_auc"}[name]
                expected = [np.std(r[folds]) for k in part.K for r in runs
                            if r["dataset"] == dataset and r["K"] == k and r["method"] == variant]
                assert np.allclose(half, expected)
    assert figures["runtime"].axes[0].get_ylabel() == "runtime (s, log scale; lower is better)"


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


def test_mixed_cells_sit_on_the_svm_margin_whatever_the_tolerance():
    """Three mixed cells (positive shares 0.8, 0.3, 0.05): every cell is on the margin, so the
    SVM's decision values are ±1 up to libsvm's stopping tolerance; the AUC can then depend on
    the tolerance, and it must stay a valid AUC either way."""
    rng = np.random.default_rng(1)
    a, b = np.repeat([1, 0, 0], 150), np.repeat([0, 1, 0], 150)
    y = np.where(rng.random(450) < np.repeat([0.8, 0.3, 0.05], 150), "pos", "neg")
    release = pd.DataFrame({"a": a, "b": b, "label": y})
    for tol in (1e-3, 1e-9):
        folds = svm_auc(release, "label", 5, 0, tol=tol)
        assert len(folds) == 5 and ((folds >= 0) & (folds <= 1)).all()
    from sklearn.svm import SVC
    values = SVC().fit(release[["a", "b"]], release["label"]).decision_function(release[["a", "b"]])
    assert np.allclose(np.abs(values), 1.0, atol=0.01)  # all on the margin: ties up to tol


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


def test_a_step_reports_its_progress_and_stops_when_cancelled():
    """Each (dataset, K, variant) step ran under a bare context: a step on the whole Adult table
    showed 0 % for over five minutes and a cancel waited for its end (expe acceptance check). The
    forest's progress now shows inside the step's share, and a cancel stops the step."""
    from app.privacy.context import Cancelled
    from app.privacy.rng import SecureRandom

    seen: list[tuple[float, str]] = []
    params = ExperimentRfkaParams(datasets=["breast_cancer"], ks=[2, 5], variants=["rfka", "hamdist"],
                                 n_estimators=50)
    run_experiment_rfka(None, params, RunContext(SecureRandom(seed=1), on_progress=lambda f, s: seen.append((f, s))))
    inside = [(f, s) for f, s in seen if "OOB permutation importance" in s]
    assert inside and all(s.startswith("breast_cancer: rfka at K = ") for _, s in inside)
    fractions = [f for f, _ in seen]
    assert fractions == sorted(fractions) and 0 < inside[0][0] < 0.25  # the first of 4 steps
    asked = {"stop": False}

    def progress(fraction, stage):
        asked["stop"] = "OOB permutation importance" in stage  # cancel inside the first step

    with pytest.raises(Cancelled):
        run_experiment_rfka(None, params, RunContext(SecureRandom(seed=1), on_progress=progress,
                                                     should_stop=lambda: asked["stop"]))


def test_a_k_above_a_datasets_records_is_refused_naming_ks_and_the_dataset():
    """It failed the job as 'k = 1000 exceeds the number of records (683)' (expe acceptance check)."""
    from app.privacy.experiments.rfka import BREAST_CANCER_RECORDS, load_breast_cancer

    assert len(load_breast_cancer()[0]) == BREAST_CANCER_RECORDS
    with pytest.raises(ValidationError, match="ks holds 1000, more than the 683 records of breast_cancer"):
        ExperimentRfkaParams(datasets=["breast_cancer"], ks=[2, 1000])
    with pytest.raises(ValidationError, match=r"more than the 300 records of adult \(adult_sample\)"):
        ExperimentRfkaParams(datasets=["adult"], ks=[500], adult_sample=300)
    ExperimentRfkaParams(datasets=["breast_cancer", "adult"], ks=[683], adult_sample=700)


def test_the_paired_difference_standard_error_matches_its_spread_over_samples():
    """The fold-paired AUC difference's standard error was s/√J, as if the J folds of a 5 × 5
    CV were independent samples; they share training records. Over 300 samples of a population
    the mean difference spreads 2.6× wider than that (calib acceptance check); the corrected
    figure matches the spread. Two linear scorers (one feature or both), numpy only."""
    from scipy.stats import rankdata
    from sklearn.model_selection import RepeatedStratifiedKFold

    def auc(y, score):
        ranks, pos = rankdata(score), y == 1
        return (ranks[pos].sum() - pos.sum() * (pos.sum() + 1) / 2) / (pos.sum() * (~pos).sum())

    rng = np.random.default_rng(7)
    means, corrected, plain = [], [], []
    for _ in range(300):
        x = rng.normal(size=(120, 2))
        y = (x[:, 0] + 0.7 * x[:, 1] + rng.normal(size=120) > 0).astype(int)
        d = []
        for train, test in RepeatedStratifiedKFold(n_splits=5, n_repeats=5, random_state=0).split(x, y):
            w = x[train][y[train] == 1].mean(0) - x[train][y[train] == 0].mean(0)
            d.append(auc(y[test], x[test] @ w) - auc(y[test], x[test][:, 0] * w[0]))
        d = np.array(d)
        means.append(d.mean())
        corrected.append(paired_cv_standard_error(d, folds=5))
        plain.append(d.std(ddof=1) / np.sqrt(len(d)))
    spread = np.std(means, ddof=1)
    assert 0.85 < np.mean(corrected) / spread < 1.25  # 1.05 here
    assert np.mean(plain) / spread < 0.5  # 0.39: what was reported
