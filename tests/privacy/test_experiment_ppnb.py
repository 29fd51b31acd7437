"""experiment_ppnb on a tiny grid: the report's tables, findings and figures."""

import pytest

from app.privacy.context import RunContext
from app.privacy.data import MethodInput
from app.privacy.experiments.ppnb import (
    ExperimentPPNBParams, choose_cut_points, load_split, plot_figure2, plot_figure3, plot_train_sizes,
    run_experiment_ppnb,
)
from app.privacy.registry import MethodKind, MethodSource, get
from tests.support.figures import assert_readable


@pytest.fixture(scope="module")
def report():
    params = ExperimentPPNBParams(datasets=["synthetic", "adult"], p0_grid=[0.3, 0.9], seeds=[0, 1],
                                  max_train_rows=1500, max_test_rows=800, train_sizes=[300])
    stages = []
    result = run_experiment_ppnb(MethodInput(columns=[]), params, RunContext(on_progress=lambda f, s: stages.append(f)))
    return result, stages


def test_registered_as_an_experiment_without_input():
    spec = get("experiment_ppnb")
    assert spec.kind == MethodKind.experiment and spec.sources == frozenset({MethodSource.none})


def test_report_tables_have_one_row_per_point(report):
    result, stages = report
    fig2, fig3, refs = result.tables["figure2"], result.tables["figure3"], result.tables["references"]
    # per dataset: full size (2 TRR settings + categorical) and size 300 (1 setting + categorical), 2 p0 each
    assert len(fig2) == 2 * (3 + 2) * 2
    assert set(fig2["train_rows"]) == {1500, 300}
    assert (fig2["seeds"] == 2).all() and fig2["mean"].between(0.3, 1.0).all()
    assert len(fig3) == 2 * 2 * 2 * 2  # datasets × methods × sizes × p
    assert set(fig3["method"]) == {"PPNB (ERRPH, k=2)", "DTPD (whole-record Warner)"}
    assert {"naive Bayes on raw data (all)", "ID3 on raw binarized data"} <= set(refs["model"])
    assert (fig2["min"] <= fig2["mean"]).all() and (fig2["mean"] <= fig2["max"]).all()
    assert stages == sorted(stages) and stages[-1] == 1.0


def test_report_has_both_figures_as_png_and_svg(report):
    result, _ = report
    assert {"figure2", "figure2_train_size", "figure3"} <= set(result.plots)
    for plot in result.plots.values():
        assert plot.png.startswith(b"\x89PNG") and b"<svg" in plot.svg[:500]
    assert set(result.data["findings"]) == {"synthetic", "adult"}
    assert set(result.data["cut_points"]["adult"]) == set(result.data["datasets"]["adult"]["numeric"]) | set(
        result.data["datasets"]["adult"]["categorical"])


def test_cut_points_separate_the_classes():
    split = load_split("synthetic", 3000, 500)
    cuts = choose_cut_points(split)
    assert isinstance(cuts["age"], float) and isinstance(cuts["income_level"], list)
    assert set(cuts["income_level"]) in ({"high", "upper_middle"}, {"high", "upper_middle", "middle"},
                                         {"low", "lower_middle"}, {"low", "lower_middle", "middle"}, {"high"}, {"low"})


def test_bad_grid_is_rejected():
    with pytest.raises(ValueError, match="not 0.5"):
        ExperimentPPNBParams(p0_grid=[0.5])


@pytest.mark.parametrize("field, value", [("seeds", [-1]), ("seeds", [2**40]), ("train_sizes", [10**12]),
                                          ("train_sizes", [49])])
def test_seeds_and_training_sizes_are_bounded(field, value):
    """Unbounded lists (#7 acceptance check): a negative seed reached numpy in the job, a
    training size of 10^12 was accepted. Both are 422s naming the field now."""
    from pydantic import ValidationError
    with pytest.raises(ValidationError, match=field):
        ExperimentPPNBParams(**{field: value})


def test_figures_tell_series_apart_without_colour(report):
    """Acceptance check: in grayscale the two TRR settings, PPNB and DTPD, and the training sizes
    were identical grey lines with the same markers; titles only said 'Figure 2 — adult'."""
    result, _ = report
    fig2, fig3, refs = result.tables["figure2"], result.tables["figure3"], result.tables["references"]
    full = {ds: int(fig2[fig2.dataset == ds].train_rows.max()) for ds in ("synthetic", "adult")}
    for fig in (plot_figure2(fig2, refs, full), plot_train_sizes(fig2, refs), plot_figure3(fig3, refs, full)):
        assert_readable(fig)
    legend = plot_train_sizes(fig2, refs).legends[0]
    # the full size has one label in every panel (it was 'n = 1,500' and 'n = 32,561' apart)
    assert [t.get_text() for t in legend.get_texts()] == ["n = 300", "all training records"]


def test_figures_say_which_way_is_better_and_plot_the_tables_means(report):
    """Plots review: no axis said that a higher accuracy is the better one. The lines are the
    figure2 / figure3 tables' means (checked here for every series of Figure 2)."""
    result, _ = report
    fig2, fig3, refs = result.tables["figure2"], result.tables["figure3"], result.tables["references"]
    full = {ds: int(fig2[fig2.dataset == ds].train_rows.max()) for ds in ("synthetic", "adult")}
    for fig in (plot_figure2(fig2, refs, full), plot_train_sizes(fig2, refs), plot_figure3(fig3, refs, full)):
        assert fig.axes[0].get_ylabel() == "accuracy on the test set (higher is better)"
    fig = plot_figure2(fig2, refs, full)
    for ax, ds in zip(fig.axes, ("synthetic", "adult")):
        table = fig2[(fig2.dataset == ds) & (fig2.train_rows == full[ds])]
        drawn = {line.get_label(): list(line.get_ydata()) for line in ax.get_lines() if line.get_marker() != "None"}
        expected = {(f"PPNB, TRR {trr}" if features == "all" else "PPNB, categorical attributes only"):
                    list(g.sort_values("p0")["mean"]) for (features, trr), g in table.groupby(["features", "trr"])}
        assert drawn == expected
