"""experiment_rfk's figures, per dataset: accuracy, information loss and re-identification
risk against E, and RFK's accuracy lead over the baselines with the paper's reported leads —
one style per series across every figure. Separate from rfk.py: drawing is read and reviewed
apart from the experiment's protocol.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from app.privacy.anonymity.rfk import RfkConfig
from app.privacy.experiments.rfk_accuracy import DIFFERENCES
from app.privacy.experiments.rfk_settings import PAPER_CLAIMS, ExperimentRfkParams
from app.privacy.plotting import (
    HIGHER_IS_BETTER, LOWER_IS_BETTER, legend_below, log_axis, spans_a_decade, value_label,
)


# One style per series, the same in every figure of the report (a baseline keeps its colour,
# marker and line from the accuracy plot to the loss plot), told apart without colour too.
# The two RFK risk series coincide at most E: the second is drawn as large hollow squares so
# the filled circles of the first stay visible inside them. The paper's reported leads are
# hollow markers without a line, in the colour of the baseline they are measured from.
_STYLES = {
    "rfk": dict(color="C0", marker="o", linestyle="-", zorder=3),
    "rfk_tiers_only": dict(color="C1", marker="s", linestyle="--"),
    "kanonymity": dict(color="C2", marker="^", linestyle="-."),
    "pak": dict(color="C3", marker="d", linestyle=":"),
    # InfoGain Mondrian: a dash-dot-dot line, unlike the four named ones
    "infogain": dict(color="C6", marker="v", linestyle=(0, (6, 2, 1.5, 2, 1.5, 2))),
    "original": dict(color="C4", marker="x", linestyle="-"),
    "rfk_at_risk": dict(color="C5", marker="s", linestyle="--", markersize=10, fillstyle="none"),
    "paper_vs_kanonymity": dict(color="C2", marker="*", linestyle="none", markersize=13, fillstyle="none",
                                markeredgewidth=1.3, zorder=4),
    "paper_vs_pak": dict(color="C3", marker="p", linestyle="none", markersize=11, fillstyle="none",
                         markeredgewidth=1.3, zorder=4),
    # the lead figure: a difference in the colour and line of its baseline, the marker of its
    # RFK series (filled circles RFK, squares tiers only)
    "rfk_minus_kanonymity": dict(color="C2", marker="o", linestyle="-."),
    "rfk_tiers_only_minus_kanonymity": dict(color="C2", marker="s", linestyle="-.", fillstyle="none"),
    "rfk_minus_pak": dict(color="C3", marker="o", linestyle=":"),
    "rfk_tiers_only_minus_pak": dict(color="C3", marker="s", linestyle=":", fillstyle="none"),
    "rfk_minus_infogain": dict(color="C6", marker="o", linestyle=(0, (6, 2, 1.5, 2, 1.5, 2))),
    "rfk_tiers_only_minus_infogain": dict(color="C6", marker="s", linestyle=(0, (6, 2, 1.5, 2, 1.5, 2)),
                                          fillstyle="none"),
    # the reruns' tierings: their own RFK tables' leads over plain k-anonymity, marks only
    "rerun_rfk_minus_kanonymity": dict(color="0.35", marker="x", linestyle="none", markersize=6, zorder=4),
    "rerun_rfk_tiers_only_minus_kanonymity": dict(color="0.35", marker="+", linestyle="none",
                                                  markersize=8, zorder=4),
}
_DIFFERENCE_LABELS = {"rfk_minus_kanonymity": "RFK − plain k-anonymity",
                      "rfk_tiers_only_minus_kanonymity": "RFK tiers only − plain k-anonymity",
                      "rfk_minus_pak": "RFK − (p,α,k)-anonymity",
                      "rfk_tiers_only_minus_pak": "RFK tiers only − (p,α,k)-anonymity",
                      "rfk_minus_infogain": "RFK − InfoGain Mondrian",
                      "rfk_tiers_only_minus_infogain": "RFK tiers only − InfoGain Mondrian"}
DISPLAY_NAMES = {"adult": "Adult", "bank": "Bank Marketing"}


def _standard_errors(part: pd.DataFrame, column: str) -> np.ndarray | None:
    """The ``<column>_se`` values, or None where the table has none or none is finite (one split)."""
    se = part.get(f"{column}_se")
    if se is None or not np.isfinite(se.to_numpy(dtype=float)).any():
        return None
    return se.to_numpy(dtype=float)


def _figure(table: pd.DataFrame, dataset: str, series: dict[str, tuple[str, str]], ylabel: str,
            title: str, log_if_spread: bool = False, better: str = LOWER_IS_BETTER, unit: str | None = None,
            claims: dict[str, tuple[str, str, dict]] | None = None, legend_title: str | None = None) -> Figure:
    """``series``: table column → (style key of ``_STYLES``, legend label). ``log_if_spread``: a
    log axis when the values span more than a decade (the information loss: RFK's 0.0016 at E = 1
    sat on the zero line under (p,α,k)'s 5.46, so its growth with E was invisible). ``claims``:
    baseline column → (style key, legend label, {E: the paper's lead in accuracy points}), drawn
    at this run's baseline plus the lead: where RFK would sit if the paper's lead held here.
    Where the table has a column's standard errors (``<column>_se``), ± 1 of them is drawn: a
    band around a series constant over E (a baseline), error bars on one that varies (RFK's), the
    varying series moved apart sideways so their bars do not overlap."""
    fig = Figure(figsize=(6.4, 4))
    ax = fig.subplots()
    part = table[table.dataset == dataset]
    E = part["E"].to_numpy(dtype=float)
    varying = [c for c in series if _standard_errors(part, c) is not None and part[c].nunique() > 1]
    shifts = dict(zip(varying, np.linspace(-0.06, 0.06, len(varying)) if len(varying) > 1 else [0.0]))
    for column, (style, name) in series.items():
        x = E + shifts.get(column, 0.0)
        ax.plot(x, part[column], label=name, **_STYLES[style])
        se = _standard_errors(part, column)
        if se is None:
            continue
        if column in shifts:
            ax.errorbar(x, part[column], yerr=se, fmt="none", ecolor=_STYLES[style]["color"],
                        elinewidth=1, capsize=3, zorder=_STYLES[style].get("zorder", 2))
        else:
            ax.fill_between([E.min() - 0.2, E.max() + 0.2], part[column].iloc[0] - se[0],
                            part[column].iloc[0] + se[0], color=_STYLES[style]["color"], alpha=0.13,
                            linewidth=0)
    for column, (style, name, leads) in (claims or {}).items():
        base = part.set_index("E")[column]
        at = [E for E in sorted(leads) if E in base.index]
        if at:
            ax.plot(at, [base[E] + leads[E] / 100 for E in at], label=name, **_STYLES[style])
    ax.set_xticks([1, 2, 3, 4, 5])
    ax.set_xlabel("threshold E (tiers 1..E k-anonymized)")
    notes = [unit] if unit else []
    if log_if_spread and spans_a_decade(part[list(series)]):
        log_axis(ax)
        notes.append("log scale")
    ax.set_ylabel(value_label(ylabel, *notes, better, width=45))
    ax.set_title(title, fontsize=10)
    ax.grid(alpha=0.3)
    legend_below(fig, [ax], fontsize=8, title=legend_title)
    return fig


def rfk_figures(table: pd.DataFrame, dataset: str, params: ExperimentRfkParams | None = None,
             records: int | None = None, tier_runs: pd.DataFrame | None = None) -> dict[str, Figure]:
    params = params or ExperimentRfkParams()
    data = f"{DISPLAY_NAMES.get(dataset, dataset)} ({f'{records:,} records, ' if records else ''}k = {params.k})"
    paper = PAPER_CLAIMS.get(dataset, {})
    claims = {column: (style, label, paper[key]) for key, column, style, label in (
        ("vs_kanonymity", "kanonymity_accuracy", "paper_vs_kanonymity",
         "paper: plain k-anonymity + its reported RFK lead"),
        ("vs_pak", "pak_accuracy", "paper_vs_pak", "paper: (p,α,k)-anonymity + its reported RFK lead"))
        if key in paper}
    splits = "one train/test split" if params.eval_repeats == 1 else f"mean of {params.eval_repeats} train/test splits"
    accuracy_note = f"accuracy: {splits} of a {params.sample_size:,}-record stratified sample"
    if _standard_errors(table[table.dataset == dataset], "rfk_accuracy") is not None:
        accuracy_note += ("; bars and bands ± 1 standard error (Nadeau–Bengio corrected: the splits "
                          "share records); whether a gap is resolved: the lead figure")
    leads = ({f"rfk_accuracy_lead_{dataset}": _lead_figure(table, dataset, data, params, tier_runs)}
             if all(prefix in table for prefix, _, _ in DIFFERENCES) else {})
    return {
        f"rfk_accuracy_{dataset}": _figure(table, dataset, {
            "rfk_accuracy": ("rfk", "RFK (others unchanged)"),
            "rfk_tiers_only_accuracy": ("rfk_tiers_only", "RFK, tiers only"),
            "kanonymity_accuracy": ("kanonymity", "plain k-anonymity"),
            "pak_accuracy": ("pak", "(p,α,k)-anonymity"),
            "infogain_accuracy": ("infogain", "InfoGain Mondrian (label-aware k-anonymity)"),
            "original_accuracy": ("original", "original data")},
            "random-forest accuracy", f"Random-forest accuracy vs E — {data}",
            better=HIGHER_IS_BETTER, claims=claims, legend_title=accuracy_note),
        f"rfk_information_loss_{dataset}": _figure(table, dataset, {
            "rfk_ncp_sum": ("rfk", "RFK"), "kanonymity_ncp_sum": ("kanonymity", "plain k-anonymity"),
            "pak_ncp_sum": ("pak", "(p,α,k)-anonymity"),
            "infogain_ncp_sum": ("infogain", "InfoGain Mondrian (label-aware k-anonymity)")},
            "information loss", f"Information loss vs E — {data}", log_if_spread=True,
            unit="Σ NCP over attributes"),
        f"rfk_risk_{dataset}": _figure(table, dataset, {
            "rfk_sample_uniques_share": ("rfk", "RFK: sample uniques (all attributes)"),
            "rfk_records_at_risk": ("rfk_at_risk", f"RFK: records in classes < {RfkConfig.risk_threshold}"),
            "kanonymity_sample_uniques_share": ("kanonymity", "plain k-anonymity: sample uniques"),
            **({"pak_sample_uniques_share": ("pak", "(p,α,k)-anonymity: sample uniques")}
               if "pak_sample_uniques_share" in table else {}),
            "infogain_sample_uniques_share": ("infogain", "InfoGain Mondrian: sample uniques")},
            "share of records", f"Re-identification risk over all attributes vs E — {data}"),
        **leads,
    }


def _lead_figure(table: pd.DataFrame, dataset: str, data: str, params: ExperimentRfkParams,
                 tier_runs: pd.DataFrame | None = None) -> Figure:
    """RFK's accuracy minus each baseline's, split by split, in points: the mean of the paired
    differences with ± 2 of their standard errors (a bar clear of 0 is a lead more than two
    standard errors from zero), and the paper's reported leads as hollow markers beside the
    difference they are reported for. ``tier_runs`` (by_E_tier_runs): the leads over plain
    k-anonymity of the reruns' tierings (their own RFK tables) as grey marks beside the main
    run's, without bars: how far another tiering moves the lead."""
    fig = Figure(figsize=(6.4, 4))
    ax = fig.subplots()
    part = table[table.dataset == dataset]
    E = part["E"].to_numpy(dtype=float)
    ax.axhline(0.0, color="0.4", linewidth=0.8, zorder=1)
    # six differences side by side at each E, 0.1 apart: their ± 2 SE bars do not overlap
    shifts = dict(zip([p for p, _, _ in DIFFERENCES], np.linspace(-0.25, 0.25, len(DIFFERENCES))))
    for prefix, _, _ in DIFFERENCES:
        se = _standard_errors(part, prefix)
        ax.errorbar(E + shifts[prefix], 100 * part[prefix], yerr=None if se is None else 200 * se,
                    capsize=3, label=_DIFFERENCE_LABELS[prefix], **_STYLES[prefix])
    reruns = (tier_runs[(tier_runs.dataset == dataset) & (tier_runs.tier_run > 0)]
              if tier_runs is not None and "tier_run" in tier_runs else None)
    if reruns is not None:
        reruns = reruns[reruns.E < 5]  # at E = 5 every run's table is plain k-anonymity: lead 0
    if reruns is not None and len(reruns):
        for prefix, label in (("rfk_minus_kanonymity", "RFK − plain k-anonymity, a rerun's tiers"),
                              ("rfk_tiers_only_minus_kanonymity",
                               "RFK tiers only − plain k-anonymity, a rerun's tiers")):
            ax.errorbar(reruns["E"] + shifts[prefix], 100 * reruns[prefix], label=label,
                        **_STYLES[f"rerun_{prefix}"])  # no bars: listed after the main run's leads
    paper = PAPER_CLAIMS.get(dataset, {})
    for key, prefix, style, label in (
            ("vs_kanonymity", "rfk_minus_kanonymity", "paper_vs_kanonymity",
             "paper: RFK's reported lead over plain k-anonymity"),
            ("vs_pak", "rfk_minus_pak", "paper_vs_pak", "paper: RFK's reported lead over (p,α,k)")):
        at = sorted(E_ for E_ in paper.get(key, {}) if E_ in set(part["E"]))
        if at:  # an errorbar without bars: the legend lists it after the differences, not first
            ax.errorbar([E_ + shifts[prefix] for E_ in at], [paper[key][E_] for E_ in at], label=label,
                        **_STYLES[style])
    ax.set_xticks([1, 2, 3, 4, 5])
    ax.set_xlabel("threshold E (tiers 1..E k-anonymized)")
    ax.set_ylabel(value_label("RFK's accuracy lead", "points", "above 0: RFK more accurate", width=45))
    ax.set_title(f"RFK's accuracy lead over the baselines vs E — {data}", fontsize=10)
    ax.grid(alpha=0.3)
    bars = ("" if _standard_errors(part, "rfk_minus_kanonymity") is None else
            "; bars ± 2 standard errors (Nadeau–Bengio corrected): a bar clear of 0 is a resolved lead")
    legend_below(fig, [ax], fontsize=8,
                 title=f"differences paired split by split over {params.eval_repeats} train/test splits{bars}")
    return fig
