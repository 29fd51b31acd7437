"""experiment_dp_release's figures: per task, the SVM misclassification rate of each release
against ε in two panels (70/30 split of the release; train on the release, test on raw records),
one style per method, error bars over the repetitions. Separate from dp_release.py because the
benchmarks re-draw the documentation's figures from its pages' tables with the same plot_task.
"""

from __future__ import annotations

import itertools
import math

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402

from app.privacy.experiments.dp_release_evaluation import standard_error  # noqa: E402
from app.privacy.experiments.dp_release_releasers import add_remove_note  # noqa: E402
from app.privacy.experiments.dp_release_tasks import TASK_DESCRIPTIONS  # noqa: E402
from app.privacy.plotting import (  # noqa: E402
    LOWER_IS_BETTER, legend_below, suptitle_within, tilt_crowded_tick_labels,
)


# One style per method, the same in every task's figure and told apart without colour (markers
# and lines); NoPrivacy and the majority class are the unmarked black dashed / grey dotted lines.
_STYLES = {"icahdp_strict": dict(color="C2", marker="o", linestyle="-"),
           "icahdp_paper": dict(color="C1", marker="^", linestyle="-."),
           "dppro": dict(color="C0", marker="s", linestyle="--"),
           "mst": dict(color="C5", marker="D", linestyle=":"),
           "aim": dict(color="C4", marker="v", linestyle="-"),
           # add/remove variants: their replace-one method's colour and marker, hollow, other line
           "mst_add_remove": dict(color="C5", marker="D", linestyle="--", markerfacecolor="none"),
           "aim_add_remove": dict(color="C4", marker="v", linestyle="--", markerfacecolor="none"),
           "privbayes": dict(color="C9", marker="p", linestyle="-"),
           "privbayes_add_remove": dict(color="C9", marker="p", linestyle="--", markerfacecolor="none")}
# peers injected by the benchmarks (run_protocol's ``extra``), in the order they come
_PEER_STYLES = [dict(color=f"C{i}", marker=m, linestyle=ls) for i, m, ls in
                [(3, "P", "--"), (6, "X", "-."), (7, "*", ":"), (8, "h", "--"), (9, "<", "-.")]]
PANELS = {"error_release_split": "70/30 split of the release (the paper's evaluation)",
          "error_raw_holdout": "train on the release, test on raw records"}


def plot_points(runs: pd.DataFrame, task: str) -> pd.DataFrame:
    """What a task's figure draws: per panel (``column``), method and ε the mean over the
    repetitions, its standard error and the number of repetitions; the majority-class error
    is the row of method ``majority``."""
    sub = runs[runs["task"] == task]
    rows = []
    for column in PANELS:
        for (method, eps), values in sub.groupby(["method", "epsilon"])[column]:
            rows.append({"column": column, "method": method, "epsilon": eps, "mean": float(values.mean()),
                         "se": standard_error(values), "n": len(values)})
        rows.append({"column": column, "method": "majority", "epsilon": math.inf,
                     "mean": float(sub["majority_error"].mean()), "se": float("nan"), "n": len(sub)})
    return pd.DataFrame(rows)


def task_title(task: str) -> str:
    """The data a task's figure is about, in words (its description up to the first ';')."""
    return TASK_DESCRIPTIONS.get(task, task).split(";")[0]


def plot_runs(runs: pd.DataFrame, task: str, labels: dict[str, str], debited: pd.DataFrame | None = None):
    note = None if debited is None else add_remove_note(debited[debited["task"] == task], labels)
    return plot_task(plot_points(runs, task), task_title(task), labels,
                     peers=[m for m in dict.fromkeys(runs["method"]) if m not in _STYLES and m != "noprivacy"],
                     legend_note=note)


def plot_task(points: pd.DataFrame, title: str, labels: dict[str, str], peers: list[str] = (),
              epsilon_note: str | None = None, legend_note: str | None = None,
              detail: tuple[float, float] | None = None):
    """A task's panels from ``plot_points``' frame, one per ``column`` it holds (the docs re-draw
    theirs from a page's tables: a 70/30 panel without standard errors, NaN, draws no bar, and
    the legend says which panel has them; adult_income's page kept the right panel only).
    Error bars: ± 1 standard error of the mean over the repetitions, where more than one ran; the
    methods' points are then set a little apart along ε so the bars do not hide each other.
    ``epsilon_note`` joins the x label (the δ of each method, say); ``legend_note`` the legend's
    title (``add_remove_note``: what ε means for the add/remove variants). ``detail`` (low, high)
    adds a panel beside the last one showing it again between those rates only, where lines
    that crowd together at full scale come apart (the series above it are then named)."""
    columns = [c for c in PANELS if c in set(points["column"])]
    limits: list[tuple[float, float] | None] = [None] * len(columns)
    if detail is not None:
        columns, limits = [*columns, columns[-1]], [*limits, detail]
    fig, axes = plt.subplots(1, len(columns), figsize=(10, 3.8) if len(columns) > 1 else (6.4, 4.2),
                             sharey=detail is None, squeeze=False)
    axes = list(axes[0])
    methods = [m for m in dict.fromkeys(points["method"]) if m not in ("noprivacy", "majority")]
    styles = {**_STYLES, **dict(zip(peers, itertools.cycle(_PEER_STYLES)))}
    compared = points[points["method"].isin(methods)]
    with_bars = [c for c in columns if compared[compared["column"] == c]["se"].fillna(0).gt(0).any()]
    eps = sorted(e for e in points["epsilon"].unique() if not math.isinf(e))
    for ax, column, limit in zip(axes, columns, limits):
        part = points[points["column"] == column]
        for i, method in enumerate(methods):
            line = part[part["method"] == method].sort_values("epsilon")
            shift = 10 ** ((i - (len(methods) - 1) / 2) * 0.012) if with_bars else 1.0
            ax.errorbar(line["epsilon"] * shift, line["mean"], yerr=line["se"] if column in with_bars else None,
                        capsize=3, label=labels.get(method, method), **styles.get(method, _PEER_STYLES[0]))
        noprivacy = part[part["method"] == "noprivacy"]["mean"]
        if len(noprivacy):
            ax.axhline(float(noprivacy.iloc[0]), color="k", linestyle="--", linewidth=1.2, zorder=2.1,
                       label=labels["noprivacy"])
        # wide and underneath: where the majority class scores as NoPrivacy (CoIL caravan, 0.06)
        # the thin black dashes run through it and both lines stay visible
        ax.axhline(float(part[part["method"] == "majority"]["mean"].iloc[0]), color="0.6", linestyle=":",
                   linewidth=3.5, zorder=1.9, label="majority class")
        ax.set_xscale("log")
        ax.minorticks_off()  # only the grid's ε are labelled
        ax.set_xticks(eps, [f"{e:g}" for e in eps])
        ax.set_xlabel("ε (log scale" + (f"; {epsilon_note})" if epsilon_note else ")"))
        ax.set_title(PANELS[column], fontsize=10)
        if limit is not None:
            ax.set_ylim(*limit)
            above = [labels.get(m, m) for m in methods
                     if (part[part["method"] == m]["mean"] > limit[1]).all()]
            ax.set_title(f"detail: {limit[0]:g}–{limit[1]:g}" + (f" ({', '.join(above)} above it)" if above else ""),
                         fontsize=9, wrap=True)
    axes[0].set_ylabel(f"misclassification rate ({LOWER_IS_BETTER})")
    # one panel is narrow: the data on a line of their own
    suptitle_within(fig, f"SVM misclassification rate of each release vs ε{' — ' if len(columns) > 1 else chr(10)}{title}")
    tilt_crowded_tick_labels(fig, axes)
    n = int(compared["n"].max()) if methods else 1
    legend = f"mean of {n} repetitions" if n > 1 else "one repetition"
    if with_bars:
        legend += "; error bars: ± 1 standard error of the mean"
        if len(with_bars) < len(columns):
            legend += " (" + " and ".join(("left", "right")[columns.index(c)] for c in with_bars) + " panel only)"
    if legend_note:
        legend += f". {legend_note}"
    legend_below(fig, axes, fontsize=8, title=legend)
    return fig
