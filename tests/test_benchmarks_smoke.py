"""The benchmark runner's modules still run (`python -m benchmarks --quick`): nothing in the
suite ran them, so a refactor could break `make bench` unseen. Figures are not asserted (speed
is measured by the runner, not by tests): only that every row of the fast families is a
finite measurement with a unit, and that the slow families import and expose `cases`."""

from __future__ import annotations

import importlib
import math
import pkgutil

import pytest

import benchmarks
from benchmarks.__main__ import table

FAST = ["bench_anonymity", "bench_feature_selection", "bench_itemsets", "bench_rr"]


def test_every_benchmark_module_exposes_cases():
    modules = [m.name for m in pkgutil.iter_modules(benchmarks.__path__) if m.name.startswith("bench_")]
    assert set(FAST) <= set(modules)
    for name in modules:
        assert callable(importlib.import_module(f"benchmarks.{name}").cases), name


@pytest.mark.parametrize("name", FAST)
def test_fast_families_run_in_quick_mode(name):
    rows = importlib.import_module(f"benchmarks.{name}").cases(quick=True)
    assert rows
    for row in rows:
        assert row.unit and row.veil is not None and math.isfinite(row.veil) and row.veil > 0, row
    assert table([(name, r) for r in rows]).count("\n") == len(rows) + 1


def test_the_dp_figures_are_drawn_from_the_pages_tables():
    """docs/experiments/img/dp_*.png are re-drawn from dp_release.md's tables (its runs were not
    saved): the points read are the page's, standard errors where it gives them, and a figure
    draws them (plots review: the figures showed bare means of 10 repetitions)."""
    import matplotlib.pyplot as plt

    from benchmarks.dp_figures_from_page import PAGE, income_points, ten_repetition_points
    from app.privacy.experiments.dp_release import LABELS, plot_task

    md = PAGE.read_text()
    points = ten_repetition_points(md)
    assert set(points) == {"adult_degree", "adult_married", "bank_y", "coil_caravan", "coil_home"}
    caravan = points["coil_caravan"].set_index(["column", "method", "epsilon"])
    assert caravan.loc[("error_raw_holdout", "dppro", 0.1), ["mean", "se"]].tolist() == [0.763, 0.114]
    assert caravan.loc[("error_release_split", "icahdp_paper", 5.0), "mean"] == 0.176
    assert math.isnan(caravan.loc[("error_release_split", "icahdp_paper", 5.0), "se"])
    assert caravan.loc[("error_raw_holdout", "majority", math.inf), "mean"] == 0.061
    income = income_points(md).set_index(["method", "epsilon"])
    assert income.loc[("aim", 1.0), ["mean", "se", "n"]].tolist() == [0.158, 0.001, 3]
    assert income.loc[("sn_aim", 1.0), "n"] == 1 and math.isnan(income.loc[("sn_aim", 1.0), "se"])
    fig = plot_task(points["coil_caravan"], "CoIL", LABELS)
    try:
        assert "(right panel only)" in fig.legends[0].get_title().get_text()
    finally:
        plt.close(fig)
