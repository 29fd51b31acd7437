"""``experiment_rfk``: seed 003's evaluation (spec 04 §2) — RFK-anonymity against plain
k-anonymity and (p,α,k)-anonymity on Adult and Bank Marketing.

Per dataset: drop-column random-forest sensitivities, k-means tiers (and their stability over
reruns, and their agreement with the paper's tiers), then for E = 1..5 the RFK table (tiers
1..E k-anonymized by Mondrian, the rest unchanged) with its information loss, forest accuracy
and re-identification risk over all attributes. Baselines, constant over E: plain k-anonymity
(every attribute a quasi-identifier: RFK's E = 5 table, as the paper notes), and
(p,α,k)-anonymity (every attribute a quasi-identifier, the label as the sensitive attribute,
at least p distinct labels and no label above share α in every class).

Also reported: "RFK, tiers only", the forest trained on the k-anonymized tiers alone (the other
attributes withheld). That reading reproduces the paper's accuracy pattern (below plain
k-anonymity at small E, above it later, equal at E = 5); the spec's reading, other attributes
released unchanged, is the main RFK curve. See docs/experiments/rfk.md.
"""

from __future__ import annotations

import time
from typing import Literal

import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from pydantic import Field, field_validator, model_validator
from sklearn.metrics import adjusted_rand_score

from app.privacy.anonymity.anonymize import Options, anonymize
from app.privacy.anonymity.hierarchies import parse_arx_hierarchy
from app.privacy.anonymity.models import Constraints
from app.privacy.anonymity.rfk import (
    TEST_SHARE, RfkConfig, encode_features, forest_accuracy, rfk_pipeline, stratified_sample,
)
from app.privacy.anonymity.risk import frame_risk
from app.privacy.context import RunContext
from app.privacy.data import ColumnInfo, MethodInput
from app.privacy.experiments import dataset_file, distinct, resampled_standard_error
from app.privacy.plotting import (
    HIGHER_IS_BETTER, LOWER_IS_BETTER, legend_below, log_axis, spans_a_decade, value_label,
)
from app.privacy.registry import MethodKind, MethodSpec, Params, MethodSource, register
from app.privacy.results import ReportResult, render_figure

SEED_003 = ("Zhai, Chen, Zhang, Pei & Ma, RFK-anonymity privacy protection based on random forest "
            "(seed 003)")
DatasetName = Literal["adult", "bank"]
ADULT_NUMERIC = ("age", "fnlwgt", "education-num", "capital-gain", "capital-loss", "hours-per-week")
BANK_NUMERIC = ("age", "balance", "day", "duration", "campaign", "pdays", "previous")
ADULT_HIERARCHIES = ("education", "marital-status", "native-country", "occupation", "race", "sex",
                     "workclass")
PAPER_TIERS = {
    "adult": {"capital-gain": 1, "age": 2, "capital-loss": 2, "workclass": 3, "occupation": 3,
              "hours-per-week": 3, "education-num": 3, "marital-status": 4, "relationship": 4,
              "native-country": 4, "fnlwgt": 4, "race": 4, "sex": 5, "education": 5},
    "bank": {"poutcome": 1, "duration": 2, "day": 2, "contact": 2, "default": 3, "marital": 3,
             "age": 3, "balance": 4, "job": 4, "campaign": 4, "pdays": 4, "month": 4,
             "housing": 4, "previous": 4, "loan": 4, "education": 5},
}
# The label of each dataset: its most common value's count and the records (the (p,α,k) baseline
# needs alpha at least that share; tests check these against the files).
LABEL_MAJORITY = {"adult": ("income", 24720, 32561), "bank": ("y", 39922, 45211)}
# The paper's claims (Fig. 1 and 3), in accuracy points: RFK minus the baseline at E.
PAPER_CLAIMS = {
    "adult": {"vs_kanonymity": {3: 0.5, 4: 1.6}, "vs_pak": {4: 0.4, 5: 1.9}},
    "bank": {"vs_kanonymity": {3: 0.4, 4: 0.9}},
}


class ExperimentRfkParams(Params):
    datasets: list[DatasetName] = Field(["adult", "bank"], min_length=1, max_length=2,
                                        description="the paper's datasets to run")
    k: int = Field(5, ge=3, le=1000, description="k of every anonymization (paper: K > 2)")
    # both labels are binary: a larger p failed the job after the whole RFK pipeline
    p: int = Field(2, ge=2, le=2, description="(p,α,k) baseline: distinct labels per class (both "
                   "datasets' labels are binary, so 2 is the only value)")
    alpha: float = Field(0.9, gt=0.0, le=1.0, description="(p,α,k) baseline: largest share of a "
                         "label in a class")
    repeats: int = Field(4, ge=1, le=50, description="splits per sensitivity estimate (paper: 20)")
    n_estimators: int = Field(40, ge=5, le=500, description="trees per forest (paper: scikit-learn's 100)")
    stability_runs: int = Field(2, ge=0, le=10, description="reruns of the tiers for stability; "
                                "each rerun's tiers also get their own RFK tables, measured like the "
                                "main run's")
    sample_size: int = Field(5000, ge=500, le=50_000, description="stratified sample the forests "
                             "train and test on; the anonymizations cover the whole dataset")
    eval_repeats: int = Field(20, ge=1, le=50, description="train/test splits each accuracy is "
                              "averaged over; its standard error (and that of the paired differences "
                              "to the baselines) needs at least 2")
    seed: int = Field(0, ge=0, description="seeds samples, splits and forests")

    _distinct = field_validator("datasets")(classmethod(lambda cls, v: distinct(v)))

    @model_validator(mode="after")
    def _alpha_feasible(self):
        # no class can hold a label at a lower share than the whole table does: the (p,α,k)
        # baseline then failed the job after the whole RFK pipeline had run
        for name in self.datasets:
            label, count, total = LABEL_MAJORITY[name]
            if count / total > self.alpha + 1e-12:
                raise ValueError(f"alpha = {self.alpha:g} is impossible on {name}: its most common "
                                 f"{label} holds {count:,} of {total:,} records "
                                 f"({count / total:.4f}), and no class can hold it at a lower share; "
                                 f"alpha must be ≥ {count / total:.4f}")
        return self


def load(name: str) -> tuple[pd.DataFrame, list[ColumnInfo], dict[str, pd.DataFrame], str]:
    if name == "adult":
        frame = pd.read_csv(dataset_file("adult", "adult_train.csv"), na_values="?", skipinitialspace=True)
        numeric, label = ADULT_NUMERIC, "income"
        hierarchies = {c: parse_arx_hierarchy(dataset_file("adult", "hierarchies", f"{c}.csv").read_text())
                       for c in ADULT_HIERARCHIES}
    else:
        frame = pd.read_csv(dataset_file("bank", "bank_full.csv"))
        numeric, label, hierarchies = BANK_NUMERIC, "y", {}
    columns = [ColumnInfo(c, "numeric" if c in numeric else "categorical",
                          role="label" if c == label else "quasi_identifier") for c in frame.columns]
    return frame, columns, hierarchies, label


# The accuracy series of the by_E table, each kept per split: (table column, what it is)
ACCURACY_SERIES = ("rfk_accuracy", "rfk_tiers_only_accuracy", "kanonymity_accuracy", "pak_accuracy",
                   "original_accuracy")
# The paired differences reported: (column prefix, RFK's series, the baseline's series)
DIFFERENCES = (("rfk_minus_kanonymity", "rfk_accuracy", "kanonymity_accuracy"),
               ("rfk_tiers_only_minus_kanonymity", "rfk_tiers_only_accuracy", "kanonymity_accuracy"),
               ("rfk_minus_pak", "rfk_accuracy", "pak_accuracy"),
               ("rfk_tiers_only_minus_pak", "rfk_tiers_only_accuracy", "pak_accuracy"))
# n_test/n_train of the forests' 70/30 splits, for the corrected standard error
TEST_TO_TRAIN = TEST_SHARE / (1 - TEST_SHARE)


def eval_seeds(params: ExperimentRfkParams) -> list[int]:
    """The accuracy splits' seeds (the same as rfk_pipeline's: the first splits of a larger
    eval_repeats are those of a smaller one)."""
    return [params.seed + 7 * (i + 1) for i in range(params.eval_repeats)]


def split_accuracies(frame: pd.DataFrame, attributes: list[str], label: str, seeds: list[int],
                     n_estimators: int) -> list[float]:
    """The forest's accuracy on each split (one per seed). Every table is the same sample's
    records and labels, so a seed makes the same split and forest seed for every method: the
    values are paired across methods."""
    X = encode_features(frame, attributes)
    y = frame[label].astype(str).to_numpy()
    return [forest_accuracy(X, y, s, n_estimators) for s in seeds]


def _baseline(frame, infos, hierarchies, attributes, label, constraints, sensitive, cfg, sample_index,
              seeds) -> dict:
    started = time.perf_counter()
    result = anonymize(frame, infos, hierarchies, attributes, constraints, sensitive, Options())
    seconds = time.perf_counter() - started
    per = result.metrics["ncp_per_qi"]
    return {"accuracy_splits": split_accuracies(result.frame.loc[sample_index], attributes, label, seeds,
                                                cfg.n_estimators),
            "ncp_all": float(np.mean([per[a] for a in attributes])),
            "ncp_sum": float(sum(per[a] for a in attributes)),
            "risk_all_attributes": frame_risk(result.frame, attributes, cfg.risk_threshold),
            "k_achieved": result.achieved.k, "seconds": seconds}


def run_dataset(name: str, params: ExperimentRfkParams, progress) -> dict:
    frame, columns, hierarchies, label = load(name)
    infos = {c.name: c for c in columns}
    attributes = [c.name for c in columns if c.name != label]
    # The pipeline's own accuracies (means over its eval_repeats splits) are not used: the
    # experiment keeps every split's value (below), so the pipeline measures one split only.
    cfg = RfkConfig(k=params.k, repeats=params.repeats, n_estimators=params.n_estimators,
                    stability_runs=params.stability_runs, sample_size=params.sample_size,
                    eval_repeats=1, seed=params.seed)
    thresholds = [1, 2, 3, 4, 5]
    started = time.perf_counter()
    outcome = rfk_pipeline(frame, infos, hierarchies, attributes, label, thresholds, cfg,
                           lambda f, s: progress(0.7 * f, s), keep_releases=tuple(thresholds))
    rfk_seconds = time.perf_counter() - started
    sample_index = stratified_sample(frame, label, cfg.sample_size, cfg.seed).index
    seeds = eval_seeds(params)
    started = time.perf_counter()
    original = split_accuracies(frame.loc[sample_index], attributes, label, seeds, params.n_estimators)
    # RFK's per-split accuracies of the table whose anonymized attributes are a given set: the
    # main run's tables come from the pipeline, a rerun's tiers (their own RFK tables: the
    # method's randomness is its tiering) are anonymized here; a set already measured is not
    # measured again (E = 5 is every attribute in every run)
    measured: dict[tuple[str, ...], tuple[list[float], list[float]]] = {}

    def rfk_splits(qis: list[str], release=None) -> tuple[list[float], list[float]]:
        key = tuple(a for a in attributes if a in qis)
        if key not in measured:
            if release is None:
                release = anonymize(frame, infos, hierarchies, list(key), Constraints(k=cfg.k), None,
                                    Options(risk_threshold=cfg.risk_threshold))
            released = release.frame.loc[sample_index]
            measured[key] = (split_accuracies(released, attributes, label, seeds, params.n_estimators),
                             split_accuracies(released, list(key), label, seeds, params.n_estimators))
        return measured[key]

    tier_runs = outcome.stability.get("tiers_by_run", [outcome.tiers])
    by_run = {}
    for run, tiers in enumerate(tier_runs):
        for i, E in enumerate(thresholds):
            progress(0.7 + 0.2 * (run * len(thresholds) + i) / (len(tier_runs) * len(thresholds)),
                     f"accuracy of {'' if run == 0 else f'tier run {run}: '}table E = {E} "
                     f"over {len(seeds)} splits")
            qis = outcome.by_E[E]["anonymized"] if run == 0 else [a for a in attributes if tiers[a] <= E]
            by_run[run, E] = rfk_splits(qis, outcome.releases[E] if run == 0 else None)
    accuracy_seconds = time.perf_counter() - started
    progress(0.9, "(p,α,k) baseline")
    pak = _baseline(frame, infos, hierarchies, attributes, label,
                    Constraints(k=params.k, l=params.p, alpha=params.alpha), label, cfg,
                    sample_index, seeds)
    plain = outcome.by_E[5]  # every attribute is in tiers 1..5: the E = 5 table is plain k-anonymity
    paper = PAPER_TIERS[name]
    names = [a for a in attributes if a in paper]
    rows, split_rows, run_rows = [], [], []
    for (run, E), (rfk, tiers_only) in by_run.items():
        per_split = {"rfk_accuracy": rfk, "rfk_tiers_only_accuracy": tiers_only,
                     "kanonymity_accuracy": by_run[0, 5][0], "pak_accuracy": pak["accuracy_splits"],
                     "original_accuracy": original}
        split_rows += [{"dataset": name, "tier_run": run, "E": E, "split": j + 1, "split_seed": seed,
                        **{column: values[j] for column, values in per_split.items()}}
                       for j, seed in enumerate(seeds)]
        summary = accuracy_summary(per_split)
        run_rows.append({"dataset": name, "tier_run": run, "E": E,
                         "attributes_anonymized": sum(t <= E for t in tier_runs[run].values()),
                         **{c: v for c, v in summary.items() if c.startswith("rfk_")}})
        if run > 0:
            continue
        fig = outcome.by_E[E]
        risk = fig["risk_all_attributes"]
        rows.append({
            "dataset": name, "E": E, "attributes_anonymized": len(fig["anonymized"]),
            **summary,
            "rfk_ncp_sum": fig["ncp_sum"], "kanonymity_ncp_sum": plain["ncp_sum"],
            "pak_ncp_sum": pak["ncp_sum"], "rfk_ncp_all": fig["ncp_all"],
            "rfk_risk_highest": risk["highest"], "rfk_sample_uniques_share": risk["sample_uniques_share"],
            "rfk_records_at_risk": risk["records_at_risk"],
            "kanonymity_sample_uniques_share": plain["risk_all_attributes"]["sample_uniques_share"],
            "pak_sample_uniques_share": pak["risk_all_attributes"]["sample_uniques_share"],
        })
    return {
        "dataset": name, "records": len(frame), "attributes": attributes, "label": label,
        "sensitivity": outcome.sensitivity.as_dict(), "base_accuracy": outcome.sensitivity.base_accuracy,
        "tiers": outcome.tiers, "paper_tiers": paper,
        "tier_agreement_with_paper": {
            "same_tier_share": float(np.mean([outcome.tiers[a] == paper[a] for a in names])),
            "adjusted_rand_index": float(adjusted_rand_score([paper[a] for a in names],
                                                             [outcome.tiers[a] for a in names]))},
        "tier_stability": {k: v for k, v in outcome.stability.items() if k != "tiers_by_run"},
        "tiers_by_run": tier_runs,
        "pak": {k: v for k, v in pak.items() if k not in ("risk_all_attributes", "accuracy_splits")},
        "seconds": {"rfk_pipeline": rfk_seconds, "accuracy_splits": accuracy_seconds,
                    "pak_anonymization": pak["seconds"]},
        "rows": rows, "split_rows": split_rows, "run_rows": run_rows,
    }


def accuracy_summary(per_split: dict[str, list[float]]) -> dict[str, float]:
    """The by_E row's accuracies from their per-split values (``ACCURACY_SERIES`` → one value
    per split, the splits in the same order for every series): each series' mean and its
    standard error, and the paired differences ``DIFFERENCES`` (RFK minus a baseline, split by
    split) with theirs. Standard errors are Nadeau and Bengio's corrected ones
    (``resampled_standard_error``: the splits share their records), as experiment_rfka's; NaN
    with a single split."""
    out: dict[str, float] = {}
    for column in ACCURACY_SERIES:
        values = np.asarray(per_split[column], dtype=float)
        out[column] = float(values.mean())
        out[f"{column}_se"] = resampled_standard_error(values, TEST_TO_TRAIN)
    for prefix, method, baseline in DIFFERENCES:
        d = np.asarray(per_split[method], dtype=float) - np.asarray(per_split[baseline], dtype=float)
        out[prefix] = float(d.mean())
        out[f"{prefix}_se"] = resampled_standard_error(d, TEST_TO_TRAIN)
    return out


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
    # the reruns' tierings: their own RFK tables' leads over plain k-anonymity, marks only
    "rerun_rfk_minus_kanonymity": dict(color="0.35", marker="x", linestyle="none", markersize=6, zorder=4),
    "rerun_rfk_tiers_only_minus_kanonymity": dict(color="0.35", marker="+", linestyle="none",
                                                  markersize=8, zorder=4),
}
_DIFFERENCE_LABELS = {"rfk_minus_kanonymity": "RFK − plain k-anonymity",
                      "rfk_tiers_only_minus_kanonymity": "RFK tiers only − plain k-anonymity",
                      "rfk_minus_pak": "RFK − (p,α,k)-anonymity",
                      "rfk_tiers_only_minus_pak": "RFK tiers only − (p,α,k)-anonymity"}
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


def _figures(table: pd.DataFrame, dataset: str, params: ExperimentRfkParams | None = None,
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
            "original_accuracy": ("original", "original data")},
            "random-forest accuracy", f"Random-forest accuracy vs E — {data}",
            better=HIGHER_IS_BETTER, claims=claims, legend_title=accuracy_note),
        f"rfk_information_loss_{dataset}": _figure(table, dataset, {
            "rfk_ncp_sum": ("rfk", "RFK"), "kanonymity_ncp_sum": ("kanonymity", "plain k-anonymity"),
            "pak_ncp_sum": ("pak", "(p,α,k)-anonymity")},
            "information loss", f"Information loss vs E — {data}", log_if_spread=True,
            unit="Σ NCP over attributes"),
        f"rfk_risk_{dataset}": _figure(table, dataset, {
            "rfk_sample_uniques_share": ("rfk", "RFK: sample uniques (all attributes)"),
            "rfk_records_at_risk": ("rfk_at_risk", f"RFK: records in classes < {RfkConfig.risk_threshold}"),
            "kanonymity_sample_uniques_share": ("kanonymity", "plain k-anonymity: sample uniques"),
            **({"pak_sample_uniques_share": ("pak", "(p,α,k)-anonymity: sample uniques")}
               if "pak_sample_uniques_share" in table else {})},
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
    shifts = dict(zip([p for p, _, _ in DIFFERENCES], np.linspace(-0.18, 0.18, len(DIFFERENCES))))
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


SPREAD_NOTE = (
    "by_E's accuracies are means over {splits} stratified 70/30 train/test splits of the sample (the "
    "same splits and forest seeds for every table; each split's values in the accuracy_splits "
    "table). <column>_se: the standard error of the mean, Nadeau and Bengio's corrected "
    "s·√(1/J + n_test/n_train) with n_test/n_train = 3/7 (the splits share records, so s/√J would be "
    "too small). <rfk series>_minus_<baseline>: the mean of the split-by-split differences, with "
    "their standard error by the same formula. These cover the forest's train/test noise on this "
    "sample with the main run's tiers. by_E_tier_runs: RFK's figures as by_E's for the tables of "
    "every tier run (0: the main run, as by_E; 1..stability_runs: the reruns' tiers, each with its "
    "own RFK tables) against the same baselines and splits: how much RFK's accuracy and leads "
    "depend on its tiering, the method's own randomness. Not covered: another sample.")


def run_experiment_rfk(data: MethodInput, params: ExperimentRfkParams, ctx: RunContext) -> ReportResult:
    results = []
    for i, name in enumerate(params.datasets):
        share = 1.0 / len(params.datasets)
        results.append(run_dataset(name, params, lambda f, s, i=i: ctx.progress(
            (i + f) * share, f"{name}: {s}")))  # noqa: B023 (run before the loop moves on)
    table = pd.DataFrame([row for r in results for row in r["rows"]])
    splits = pd.DataFrame([row for r in results for row in r["split_rows"]])
    tier_runs = pd.DataFrame([row for r in results for row in r["run_rows"]])
    tiers = pd.DataFrame([{"dataset": r["dataset"], "attribute": a, "sensitivity": r["sensitivity"][a],
                           "tier": r["tiers"][a], "paper_tier": r["paper_tiers"].get(a),
                           **{f"tier_run_{j}": run[a] for j, run in enumerate(r["tiers_by_run"][1:], 1)}}
                          for r in results for a in r["attributes"]])
    plots = {name: render_figure(fig) for r in results
             for name, fig in _figures(table, r["dataset"], params, r["records"], tier_runs).items()}
    ctx.progress(1.0, "done")
    return ReportResult(
        kind="experiment_rfk",
        data={"params": params.model_dump(), "paper_claims": PAPER_CLAIMS,
              "accuracy_spread": SPREAD_NOTE.format(splits=params.eval_repeats),
              "datasets": [{k: v for k, v in r.items() if k not in ("rows", "split_rows", "run_rows")}
                           for r in results]},
        tables={"by_E": table, "tiers": tiers, "accuracy_splits": splits, "by_E_tier_runs": tier_runs},
        plots=plots,
    )


register(MethodSpec(
    name="experiment_rfk",
    family="anonymity",
    kind=MethodKind.experiment,
    summary="Seed 003's evaluation: accuracy, information loss and re-identification risk of "
            "RFK-anonymity for E = 1..5 on Adult and Bank, against plain k-anonymity and "
            "(p,α,k)-anonymity.",
    params=ExperimentRfkParams,
    guarantee="none: an evaluation report on public benchmark data",
    paper=SEED_003,
    run=run_experiment_rfk,
    sources=frozenset({MethodSource.none}),
    produces_randomness=False,
    docs="docs/methods/experiment_rfk.md",
    slow_params=('repeats', 'n_estimators', 'stability_runs', 'eval_repeats', 'sample_size'),
))
