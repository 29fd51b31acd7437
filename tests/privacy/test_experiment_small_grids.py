"""The experiment_* report producers at the smallest and degenerate parameter grids the schemas
allow (expe acceptance check): one value per list, duplicated values, a value at each end of a
range. Each grid must be refused up front naming its parameter, or give a report whose tables
have one row per grid point and whose plots a reader can read."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from pydantic import ValidationError

from app.privacy.context import RunContext
from app.privacy.data import MethodInput
from app.privacy.experiments.dp_release import LABELS, ExperimentDpReleaseParams
from app.privacy.experiments.dp_release_plots import plot_runs
from app.privacy.experiments.itemsets import ExperimentItemsetsParams, run_experiment_itemsets
from app.privacy.experiments.ppnb import ExperimentPPNBParams
from app.privacy.experiments.rfk import ExperimentRfkParams
from app.privacy.experiments.rfk_settings import LABEL_MAJORITY, load
from app.privacy.experiments.rfka import ExperimentRfkaParams, _figure
from app.privacy.plotting import log_axis


def _labels_in_view(axis, low: float, high: float, renderer) -> list:
    ticks = [t for t in axis.get_majorticklabels() if t.get_text()]
    pos = 1 if axis.axis_name == "y" else 0
    return [t for t in ticks if low <= t.get_position()[pos] <= high and t.get_visible()]


def _overlapping(labels, renderer) -> list[tuple[str, str]]:
    boxes = [(t.get_text(), t.get_window_extent(renderer)) for t in labels]
    return [(a, b) for i, (a, box_a) in enumerate(boxes) for b, box_b in boxes[i + 1:]
            if box_a.overlaps(box_b)]


# ------------------------------------------------------------------------------ log axes
@pytest.mark.parametrize("low, high", [(0.0055, 0.016), (0.0021, 0.0099), (0.0096, 0.0104),
                                       (0.0011, 0.0019)])
def test_a_log_axis_over_a_narrow_range_labels_at_least_two_values(low, high):
    """experiment_itemsets' error vs p at one p (0.0055-0.016) and experiment_rfka's runtime at
    one K showed a single label, '0.01': the range held one of the 1-2-5 ticks, so a reader could
    not tell what the axis spans."""
    fig = Figure(figsize=(4.8, 3.4))
    ax = fig.subplots()
    ax.plot([0.9, 0.9], [low, high], "o")
    log_axis(ax)
    renderer = FigureCanvasAgg(fig).get_renderer()
    fig.draw(renderer)
    y_low, y_high = ax.get_ylim()
    labels = _labels_in_view(ax.yaxis, y_low, y_high, renderer)
    assert ax.get_yscale() == "log"
    assert len(labels) >= 2, [t.get_text() for t in labels]
    assert not _overlapping(labels, renderer)
    assert not [t.get_text() for t in ax.yaxis.get_minorticklabels() if t.get_text()]


# ------------------------------------------------------------------------------ experiment_rfka
@pytest.mark.parametrize("ks", [[0], [0, 20], [5, 10, 50]])
def test_rfka_points_sit_on_their_K_with_a_single_variant(ks):
    """variants ['hamdist'] (the baseline alone): every point sat 0.15 left of its K tick — the
    side-by-side shift of several variants applied to one — and with one K its tick '0' stood
    on the right edge of the panel, apart from the point."""
    summary = pd.DataFrame({"dataset": "breast_cancer", "K": ks,
                            "hamdist_auc": np.linspace(0.99, 0.9, len(ks))})
    fig = _figure(summary, ["hamdist"], "auc", "SVM AUC", "AUC vs K")
    ax = fig.axes[0]
    ticks = list(ax.get_xticks())
    xs = list(ax.lines[0].get_xdata())
    assert xs == pytest.approx(ticks)
    low, high = ax.get_xlim()
    assert all(low + 0.25 <= t <= high - 0.25 for t in ticks), (ticks, (low, high))


def test_rfka_several_variants_stay_within_their_K():
    summary = pd.DataFrame({"dataset": "adult", "K": [200], "hamdist_auc": [0.5], "rfka_auc": [0.5],
                            "rfka_greedy_auc": [0.5]})
    fig = _figure(summary, ["rfka", "rfka_greedy", "hamdist"], "auc", "SVM AUC", "AUC vs K")
    ax = fig.axes[0]
    low, high = ax.get_xlim()
    xs = [x for line in ax.lines for x in line.get_xdata()]
    assert low < min(xs) and max(xs) < high and high - low >= 1.0


# ------------------------------------------------------------------------------ experiment_dp_release
def test_dp_release_twelve_epsilons_keep_their_tick_labels_apart():
    """The schema allows 12 ε: at 0.01, 0.02, 0.05, …, 50, 100 the labels '0.01' and '0.02' ran
    into one another ('0.010.02')."""
    eps = [0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 50, 100]
    runs = pd.DataFrame([{"task": "bank_y", "method": "icahdp_paper", "epsilon": e, "repetition": 0,
                          "error_release_split": 0.1, "error_raw_holdout": 0.12, "majority_error": 0.15}
                         for e in eps])
    fig = plot_runs(runs, "bank_y", LABELS)
    renderer = fig.canvas.get_renderer()
    fig.draw(renderer)
    for ax in fig.axes:
        low, high = ax.get_xlim()
        labels = _labels_in_view(ax.xaxis, low, high, renderer)
        assert [t.get_text() for t in labels] == [f"{e:g}" for e in eps]
        assert not _overlapping(labels, renderer)


def test_dp_release_duplicated_grid_values_run_once():
    """epsilons [1, 1] released twice as 'repetition 0' (two rows, and with CSPRNG noise a
    summary averaging two draws at that ε only); tasks ['coil_caravan', 'coil_caravan'] ran the
    task twice."""
    params = ExperimentDpReleaseParams(tasks=["coil_caravan", "coil_home", "coil_caravan"],
                                       methods=["dppro", "noprivacy", "dppro"], epsilons=[1, 0.5, 1])
    assert params.tasks == ["coil_caravan", "coil_home"]
    assert params.methods == ["dppro", "noprivacy"]
    assert params.epsilons == [1, 0.5]


# ------------------------------------------------------------------------------ experiment_itemsets
def test_itemsets_duplicated_grid_values_run_once():
    """datasets ['mushroom', 'mushroom'] drew two identical panels and listed the dataset twice;
    ps [0.8, 0.8] averaged two runs of one seed into a '± 1 sd over the seeds'."""
    params = ExperimentItemsetsParams(datasets=["mushroom", "chess", "mushroom"], ps=[0.8, 0.6, 0.8],
                                      group_sizes=[2, "n/5", 2, "n/5"], grouping_ps=[0.9, 0.9])
    assert params.datasets == ["mushroom", "chess"]
    assert params.ps == [0.8, 0.6]
    assert params.group_sizes == [2, "n/5"]
    assert params.grouping_ps == [0.9]


def test_itemsets_grouping_plot_per_grouping_p_even_at_the_same_percent():
    """grouping_ps [0.801, 0.804] made one plot, 'itemsets_grouping_p80': the second overwrote
    the first. The documented names stay for whole percents."""
    params = ExperimentItemsetsParams(datasets=["mushroom"], ps=[0.9], seeds=1, max_len=1,
                                      group_sizes=[2], grouping_ps=[0.801, 0.804, 0.9],
                                      pruning_max_len=1)
    report = run_experiment_itemsets(MethodInput(columns=[]), params, RunContext())
    grouping = sorted(name for name in report.plots if name.startswith("itemsets_grouping"))
    assert grouping == ["itemsets_grouping_p801", "itemsets_grouping_p804", "itemsets_grouping_p90"]


# ------------------------------------------------------------------------------ experiment_ppnb
@pytest.mark.parametrize("p0", [0.5000000001, 0.4999999999, 1e-12])
def test_ppnb_refuses_a_p0_the_randomizers_realize_as_pure_noise(p0):
    """p0 = 0.5000000001 passed the grid's check (only 0.5 itself was refused) and the job failed
    'internal' at Figure 3 (warner refuses p within 2^-33 of 0.5); p0 = 1e-12 failed the job at
    its first ERRPH release. Both are 422s naming p0_grid now."""
    with pytest.raises(ValidationError, match="p0_grid"):
        ExperimentPPNBParams(p0_grid=[0.3, p0])


def test_ppnb_duplicated_seeds_and_datasets_run_once():
    """seeds [0, 0] and datasets ['synthetic', 'synthetic'] reported 'seeds: 4' with a standard
    deviation, for one seed on one dataset."""
    params = ExperimentPPNBParams(datasets=["synthetic", "synthetic"], seeds=[3, 0, 3])
    assert params.datasets == ["synthetic"]
    assert params.seeds == [3, 0]


# ------------------------------------------------------------------------------ experiment_rfk
def test_rfk_p_beyond_the_binary_labels_is_refused_at_submission():
    """Both datasets' labels are binary: p = 3..10 ran the whole RFK pipeline, then failed
    saying 'l = 3 is impossible' — a name the request does not use."""
    ExperimentRfkParams(p=2)
    with pytest.raises(ValidationError, match="p"):
        ExperimentRfkParams(p=3)


@pytest.mark.parametrize("datasets, alpha, ok", [(["bank"], 0.8, False), (["adult", "bank"], 0.85, False),
                                                 (["adult"], 0.8, True), (["bank"], 0.9, True)])
def test_rfk_alpha_below_a_labels_share_is_refused_at_submission(datasets, alpha, ok):
    """alpha = 0.8 on Bank (88.3% 'no') ran the whole RFK pipeline before failing."""
    if ok:
        ExperimentRfkParams(datasets=datasets, alpha=alpha)
        return
    with pytest.raises(ValidationError, match="alpha"):
        ExperimentRfkParams(datasets=datasets, alpha=alpha)


def test_rfk_label_shares_are_those_of_the_datasets():
    for name, (label, count, total) in LABEL_MAJORITY.items():
        frame, _, _, column = load(name)
        assert column == label and len(frame) == total
        assert int(frame[label].value_counts().max()) == count


def test_rfk_duplicated_datasets_run_once():
    """datasets ['adult', 'adult'] gave ten rows in by_E and a plot whose lines ran from E = 5
    back to E = 1."""
    assert ExperimentRfkParams(datasets=["adult", "adult"]).datasets == ["adult"]


def test_rfka_duplicated_datasets_run_once():
    assert ExperimentRfkaParams(datasets=["adult", "breast_cancer", "adult"]).datasets == \
        ["adult", "breast_cancer"]


@pytest.mark.parametrize("std, titled", [(None, False), (0.01, True)])
def test_a_legend_speaks_of_error_bars_and_bands_only_where_they_are_drawn(std, titled):
    """One seed draws no error bars (itemsets: std null) and bands of no width (ppnb: std 0), yet
    the legend's title said '± 1 sd over the seeds' (expe acceptance check)."""
    from app.privacy.experiments.itemsets import ERROR_BARS, _plot_vs_p
    from app.privacy.experiments.ppnb import BANDS, _bands_title

    table = pd.DataFrame({"dataset": "mushroom", "scheme": "MASK", "estimator": "pooled", "p": [0.8, 0.9],
                          "error": [0.02, 0.01], "error_std": [np.nan if std is None else std] * 2})
    fig = _plot_vs_p(table, "error", "error", ["mushroom"], {})
    title = fig.legends[0].get_title().get_text()
    assert (title == ERROR_BARS) if titled else (title == "")
    bands = pd.DataFrame({"std": [0.0 if std is None else std] * 2})
    assert _bands_title(bands) == (BANDS if titled else None)
    assert _bands_title(bands, "dotted: raw") == (f"{BANDS}; dotted: raw" if titled else "dotted: raw")
