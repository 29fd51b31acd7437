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

FAST = ["bench_anonymity", "bench_classification_metric", "bench_feature_selection", "bench_infogain_mondrian",
        "bench_itemsets", "bench_profitability", "bench_risk_thresholds", "bench_rr"]


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
    from app.privacy.experiments.dp_release import LABELS
    from app.privacy.experiments.dp_release_plots import plot_task

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
    # Veil's add/remove variants, like-for-like with smartnoise, are the page's rows of their own
    assert income.loc[("aim_add_remove", 1.0), ["mean", "se", "n"]].tolist() == [0.159, 0.002, 3]
    assert income.loc[("mst_add_remove", 0.5), "mean"] == 0.162
    # Veil's privbayes from its own section's table; DataSynthesizer's PrivBayes is a peer of
    # another key (both were "privbayes")
    assert income.loc[("privbayes", 2.0), ["mean", "se", "n"]].tolist() == [0.179, 0.014, 3]
    assert income.loc[("ds_privbayes", 1.0), "mean"] == 0.208
    for task in points:  # privbayes in every 10-repetition figure, both panels
        assert set(points[task][points[task]["method"] == "privbayes"]["column"]) == {
            "error_release_split", "error_raw_holdout"}, task
    fig = plot_task(points["coil_caravan"], "CoIL", LABELS)
    try:
        assert "(right panel only)" in fig.legends[0].get_title().get_text()
    finally:
        plt.close(fig)
    # the income figure's detail panel: the band of the marginal synthesizers, the rest named above it
    fig = plot_task(income.reset_index(), "Adult income", {**LABELS, "noprivacy": "NoPrivacy"}, detail=(0.145, 0.275))
    try:
        full, detail = fig.axes[:2]
        assert detail.get_ylim() == (0.145, 0.275) and full.get_ylim()[1] > 0.5
        assert "DPPro" in detail.get_title() and "PrivBayes (Veil" not in detail.get_title()
    finally:
        plt.close(fig)


def test_the_add_remove_rows_merge_beside_their_replace_one_rows(tmp_path, monkeypatch):
    """bench_dp --add-remove-rows --merge: mst's and aim's add/remove rows are measured alone
    (smartnoise's AIM takes minutes a release), their peer's figures read from the replace-one
    rows of the written table, and written right after those rows; a second merge replaces them."""
    import benchmarks.bench_dp as bench
    from benchmarks.common import Row

    def line(family, workload, peer="—", value="—", notes=""):
        return f"| {family} | {workload} | 1 | s | {peer} | {value} | — | — | {notes} |"

    sn_mst, sn_aim = (bench.SMARTNOISE_PEERS[k][0] for k in ("sn_mst", "sn_aim"))
    old = {m: bench._synthetic_workloads(m, m, 3) for m in ("mst", "aim")}
    doc = tmp_path / "benchmarks.md"
    doc.write_text("\n".join([
        "# Benchmarks", "", "| family | workload | Veil | unit | peer | peer value | ratio | target | notes |",
        "|---|---|---|---|---|---|---|---|---|",
        line("dp", "safe noise"),
        line("dp", old["mst"][0], sn_mst, "60.43"), line("dp", old["mst"][1], sn_mst, "0.205", "peer: 3 run(s)"),
        line("dp", old["aim"][0], sn_aim, "452"), line("dp", old["aim"][1], sn_aim, "0.159", "peer: 1 run(s)"),
        line("dp", "aim on CoIL"), line("rr", "randomized response")]) + "\n")
    calls = []

    def measured(method, key, reps, peer_reps, target, names, peer):
        calls.append((method, names, peer[:2]))
        timed, scored = bench._synthetic_workloads(method, names[0], reps)
        return [Row(timed, 12.0, "s", bench.SMARTNOISE_PEERS[key][0], peer[1], False, target, peer[2]),
                Row(scored, 0.16, "error", bench.SMARTNOISE_PEERS[key][0], peer[0], False, target, peer[2])]

    monkeypatch.setattr(bench, "synthetic_method_rows", measured)
    bench.add_remove_rows(doc, merge=True)
    assert calls == [("mst", ("mst_add_remove",), (0.205, 60.43)), ("aim", ("aim_add_remove",), (0.159, 452.0))]
    workloads = [row[1] for row in bench._doc_rows(doc)]
    new = {m: bench._synthetic_workloads(m, f"{m}_add_remove", 3) for m in ("mst", "aim")}
    assert new["mst"][0].startswith("mst, neighbouring add_remove, ε = 1")
    assert workloads == ["safe noise", old["mst"][0], new["mst"][0], old["mst"][1], new["mst"][1],
                         old["aim"][0], new["aim"][0], old["aim"][1], new["aim"][1], "aim on CoIL",
                         "randomized response"]
    assert "not re-run" in bench._doc_rows(doc)[2][8]
    bench.add_remove_rows(doc, merge=True)  # again: replaced, not added
    assert [row[1] for row in bench._doc_rows(doc)] == workloads


def test_the_privbayes_rows_merge_after_aims_and_replace_themselves(tmp_path):
    """bench_dp --privbayes-rows --merge: the two rows go after the last aim row on Adult income
    (before the CoIL rows); a second merge replaces them."""
    import benchmarks.bench_dp as bench
    from benchmarks.common import Row

    def line(workload, peer="—"):
        return f"| dp | {workload} | 1 | s | {peer} | — | — | — |  |"

    doc = tmp_path / "benchmarks.md"
    doc.write_text("\n".join(["| family | workload | Veil | unit | peer | peer value | ratio | target | notes |",
                              "|---|---|---|---|---|---|---|---|---|", line("mst ε = 1 on Adult income"),
                              line("aim ε = 1 on Adult income", "sn"), line("aim on CoIL 2000")]) + "\n")
    peer = "PrivBayes (DataSynthesizer, degree 1)"
    rows = lambda: [Row("privbayes ε = 1 on Adult income, time", 0.2, "s", peer, 30.0, False),  # noqa: E731
                    Row("privbayes ε = 1 on Adult income, error", 0.17, "error", peer, 0.21, False)]
    bench.merge_privbayes_rows(doc, rows())
    expected = ["mst ε = 1 on Adult income", "aim ε = 1 on Adult income", "privbayes ε = 1 on Adult income, time",
                "privbayes ε = 1 on Adult income, error", "aim on CoIL 2000"]
    assert [r[1] for r in bench._doc_rows(doc)] == expected
    bench.merge_privbayes_rows(doc, rows())
    assert [r[1] for r in bench._doc_rows(doc)] == expected


def test_without_datasynthesizer_the_privbayes_rows_read_its_figures_from_the_doc(tmp_path):
    """bench_dp --privbayes-rows where DataSynthesizer does not install: the peer's misclassification
    and seconds come from the doc's replace-one rows (and say so), not a blank peer column."""
    import benchmarks.bench_dp as bench

    peer, work = bench.PRIVBAYES_PEER, bench.PRIVBAYES_WORKLOADS
    doc = tmp_path / "benchmarks.md"
    doc.write_text("\n".join([
        "| family | workload | Veil | unit | peer | peer value | ratio | target | notes |", "|---|---|---|---|---|---|---|---|---|",
        f"| dp | {work['time']} | 0.2 | s | {peer} | 18.98 | 90 | — |  |",
        f"| dp | {work['privbayes']} | 0.17 | error | {peer} | 0.235 | 1.4 | — |  |"]) + "\n")
    error, seconds, note = bench.privbayes_peer_from_doc(doc)
    assert (error, seconds) == (0.235, 18.98) and "not re-run" in note
    doc.write_text(doc.read_text().replace(peer, "someone else"))
    assert bench.privbayes_peer_from_doc(doc)[:2] == (None, None)
