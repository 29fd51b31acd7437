"""Re-draw docs/experiments/img/dp_*.png from the tables of docs/experiments/dp_release.md.

The page's runs drew their release noise from the CSPRNG and were not saved, so a re-run gives
other points; its tables are what the figures must show. This reads them — the means of both
evaluations, the standard errors of the train-on-release / test-on-raw means (the page kept none
for the 70/30 split), the majority-class errors, and the issue-8 ``adult_income`` table with its
± standard errors — and draws them with the report's own ``plot_task`` (styles, error bars,
titles as a report of ``experiment_dp_release`` draws them).

    python -m benchmarks.dp_figures_from_page [--out DIR]
"""

from __future__ import annotations

import argparse
import math
import re
from pathlib import Path

import matplotlib.pyplot as plt
import pandas as pd

from app.privacy.experiments.dp_release import LABELS, ExperimentDpReleaseParams
from app.privacy.experiments.dp_release_plots import plot_task
from app.privacy.experiments.dp_release_releasers import add_remove_note, debits
from app.privacy.experiments.dp_release_tasks import TASK_DESCRIPTIONS
from app.privacy.results import render_figure

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "experiments" / "dp_release.md"
MAJORITY_NAMES = {"Adult degree": "adult_degree", "Adult married": "adult_married", "Bank": "bank_y",
                  "CoIL caravan": "coil_caravan", "CoIL home": "coil_home"}
# the adult_income table's rows: page name -> (method key, legend label); peers in bench_dp's order
INCOME_ROWS = {
    "AIM (Veil, replace-one)": ("aim", "AIM (Veil, replace-one)"),
    "MST (Veil, replace-one)": ("mst", "MST (Veil, replace-one)"),
    "AIM (Veil, add/remove)": ("aim_add_remove", "AIM (Veil, add/remove)"),
    "MST (Veil, add/remove)": ("mst_add_remove", "MST (Veil, add/remove)"),
    "smartnoise AIM, sampling fixed (1 run; session 2's run)": ("sn_aim", "smartnoise AIM, sampling fixed (1 run)"),
    "smartnoise MST, sampling fixed": ("sn_mst", "smartnoise MST, sampling fixed"),
    "smartnoise MST as installed (1 run; session 2's run)": ("sn_mst_raw", "smartnoise MST as installed (1 run)"),
    "PrivBayes (DataSynthesizer, degree 1)": ("ds_privbayes", "PrivBayes (DataSynthesizer, degree 1)"),
    "ICAHDP strict": ("icahdp_strict", "ICAHDP strict"),
    "ICAHDP paper (not DP)": ("icahdp_paper", "ICAHDP paper (not DP)"),
    "DPPro": ("dppro", "DPPro"),
}
INCOME_PEERS = ["sn_aim", "sn_mst", "sn_mst_raw", "ds_privbayes"]
# Veil's privbayes (pure ε-DP) has its own section's table on the page; its row there
PRIVBAYES_HEADING = "### PrivBayes: pure ε-DP"
PRIVBAYES_ROW = "PrivBayes (Veil)"
# CoIL's 85-86 columns at degree 2 are refused (303,535-314,416 candidate parent sets, limit 50,000): its
# privbayes rows ran at degree 1
TASK_LABELS = {task: {"privbayes": "PrivBayes (Veil, pure ε; degree 1)"} for task in ("coil_caravan", "coil_home")}
# the marginal synthesizers lie within 0.15-0.27, under DPPro's and ICAHDP's 0.3-0.55: a second
# panel shows that band alone
INCOME_DETAIL = (0.145, 0.275)


def table_after(md: str, heading: str) -> pd.DataFrame:
    """The first markdown table after ``heading``, as strings."""
    lines = md[md.index(heading):].splitlines()[1:]
    rows = []
    for line in lines:
        if line.startswith("|"):
            rows.append([c.strip() for c in line.strip().strip("|").split("|")])
        elif rows:
            break
    return pd.DataFrame(rows[2:], columns=rows[0])


def _long(frame: pd.DataFrame, value: str) -> pd.DataFrame:
    out = []
    for row in frame.to_dict("records"):
        for key, cell in row.items():
            if key in ("task", "method") or cell in ("—", ""):
                continue
            eps = math.inf if key == "no privacy" else float(key.split("=")[1])
            out.append({"task": row["task"], "method": row["method"], "epsilon": eps, value: float(cell)})
    return pd.DataFrame(out)


def ten_repetition_points(md: str) -> dict[str, pd.DataFrame]:
    """Per task, ``plot_points``' frame from the page's 10-repetition tables."""
    raw = _long(table_after(md, "## Results: train on the release, test on raw records"), "mean")
    raw_se = _long(table_after(md, "Standard error of these means (10 repetitions)"), "se")
    split = _long(table_after(md, "## Results: the paper's evaluation"), "mean")
    raw = raw.merge(raw_se, on=["task", "method", "epsilon"], how="left").assign(column="error_raw_holdout")
    split = split.assign(se=float("nan"), column="error_release_split")
    line = re.search(r"Majority-class error of the holdout: (.*)\.", md).group(1)
    majority = {MAJORITY_NAMES[name]: float(value) for name, value in
                (part.rsplit(" ", 1) for part in line.split(", "))}
    points = pd.concat([split, raw], ignore_index=True).assign(n=10)
    out = {}
    for task, part in points.groupby("task", sort=False):
        rows = [{"column": c, "method": "majority", "epsilon": math.inf, "mean": majority[task],
                 "se": float("nan"), "n": 10} for c in ("error_release_split", "error_raw_holdout")]
        out[task] = pd.concat([part.drop(columns="task"), pd.DataFrame(rows)], ignore_index=True)
    return out


def income_points(md: str) -> pd.DataFrame:
    """adult_income's train-on-release / test-on-adult_test panel from the page's table (Veil's
    MST and AIM under each relation: the experiment's mst/aim and their add/remove variants)."""
    table = table_after(md, "### Misclassification (train on the release, test on adult_test)")
    rows = []
    for record in table.to_dict("records"):
        name = record["method"].replace("*", "")
        cells = [record[f"ε = {e:g}"].replace("*", "") for e in (0.5, 1.0, 2.0)]
        if name == "NoPrivacy":
            rows.append({"method": "noprivacy", "epsilon": math.inf, "mean": float(cells[0]), "se": float("nan"), "n": 3})
            continue
        method, _ = INCOME_ROWS[name]
        for eps, cell in zip((0.5, 1.0, 2.0), cells):
            mean, _, se = cell.partition(" ± ")
            rows.append({"method": method, "epsilon": eps, "mean": float(mean),
                         "se": float(se) if se else float("nan"), "n": 1 if "(1 run" in name else 3})
    veil = table_after(md, PRIVBAYES_HEADING)
    record = veil[veil["method"].str.replace("*", "") == PRIVBAYES_ROW].iloc[0]
    for eps in (0.5, 1.0, 2.0):
        mean, _, se = record[f"ε = {eps:g}"].partition(" ± ")
        rows.append({"method": "privbayes", "epsilon": eps, "mean": float(mean), "se": float(se), "n": 3})
    majority = float(re.search(r"the majority class ([0-9.]+)\.", md).group(1))
    rows.append({"method": "majority", "epsilon": math.inf, "mean": majority, "se": float("nan"), "n": 3})
    return pd.DataFrame(rows).assign(column="error_raw_holdout")


def main(out: Path) -> None:
    md = PAGE.read_text()
    out.mkdir(parents=True, exist_ok=True)
    for task, points in ten_repetition_points(md).items():
        fig = plot_task(points, TASK_DESCRIPTIONS[task].split(";")[0], {**LABELS, **TASK_LABELS.get(task, {})})
        (out / f"dp_{task}.png").write_bytes(render_figure(fig).png)
        plt.close(fig)
        print(out / f"dp_{task}.png")
    labels = {**LABELS, "noprivacy": "NoPrivacy (10,000 raw records)",
              **{key: label for key, label in INCOME_ROWS.values()}}
    points = income_points(md)
    variants = [m for m in ("mst_add_remove", "aim_add_remove") if m in set(points["method"])]
    note = add_remove_note(debits(ExperimentDpReleaseParams(tasks=["adult_income"], methods=variants,
                                                            epsilons=[0.5, 1.0, 2.0])), labels) if variants else None
    fig = plot_task(points, "Adult: income > 50K (issue 8 protocol)", labels,
                    peers=INCOME_PEERS, epsilon_note="δ = 10⁻⁹ for MST, AIM, smartnoise; 10⁻⁶ for DPPro",
                    legend_note=note and f"{note}; smartnoise's ε is add/remove", detail=INCOME_DETAIL)
    (out / "dp_adult_income.png").write_bytes(render_figure(fig).png)
    plt.close(fig)
    print(out / "dp_adult_income.png")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(prog="python -m benchmarks.dp_figures_from_page")
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "experiments" / "img")
    main(parser.parse_args().out)
