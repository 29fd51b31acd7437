"""``experiment_rfk``: seed 003's evaluation (spec 04 §2) — RFK-anonymity against plain
k-anonymity, (p,α,k)-anonymity and label-aware k-anonymity on Adult and Bank Marketing.

Per dataset: drop-column random-forest sensitivities, k-means tiers (and their stability over
reruns, and their agreement with the paper's tiers), then for E = 1..5 the RFK table (tiers
1..E k-anonymized by Mondrian, the rest unchanged) with its information loss, forest accuracy
and re-identification risk over all attributes. Baselines, constant over E: plain k-anonymity
(every attribute a quasi-identifier: RFK's E = 5 table, as the paper notes),
(p,α,k)-anonymity (every attribute a quasi-identifier, the label as the sensitive attribute,
at least p distinct labels and no label above share α in every class), and InfoGain Mondrian
(not in the paper: every attribute a quasi-identifier, k-anonymous, each cut where the label's
information gain is greatest — LeFevre, DeWitt & Ramakrishnan 2006 — the label-aware way to
keep a classifier's accuracy without leaving attributes raw).

Also reported: "RFK, tiers only", the forest trained on the k-anonymized tiers alone (the other
attributes withheld). That reading reproduces the paper's accuracy pattern (below plain
k-anonymity at small E, above it later, equal at E = 5); the spec's reading, other attributes
released unchanged, is the main RFK curve. See docs/experiments/rfk.md.

The paper's datasets, tiers, claims and the params are in rfk_settings.py, the accuracies split
by split and their summary in rfk_accuracy.py, the figures in rfk_plots.py; this module holds the
run per dataset, the report and the registration.
"""

from __future__ import annotations

import time

import numpy as np
import pandas as pd
from sklearn.metrics import adjusted_rand_score

from app.privacy.anonymity.anonymize import Options, anonymize
from app.privacy.anonymity.models import Constraints
from app.privacy.anonymity.rfk import RfkConfig, rfk_pipeline, stratified_sample
from app.privacy.anonymity.risk import frame_risk
from app.privacy.context import RunContext
from app.privacy.data import MethodInput
from app.privacy.experiments.rfk_accuracy import accuracy_summary, eval_seeds, split_accuracies
from app.privacy.experiments.rfk_plots import rfk_figures
from app.privacy.experiments.rfk_settings import PAPER_CLAIMS, PAPER_TIERS, SEED_003, ExperimentRfkParams, load
from app.privacy.registry import MethodKind, MethodSpec, MethodSource, register
from app.privacy.results import ReportResult, render_figure


def _baseline(frame, infos, hierarchies, attributes, label, constraints, sensitive, cfg, sample_index,
              seeds, options: Options | None = None) -> dict:
    """A baseline anonymizing every attribute, measured on the same splits as RFK's tables."""
    started = time.perf_counter()
    result = anonymize(frame, infos, hierarchies, attributes, constraints, sensitive, options or Options())
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
    progress(0.95, "InfoGain Mondrian baseline")
    # label-aware k-anonymity of every attribute (LeFevre, DeWitt & Ramakrishnan 2006): Mondrian
    # cut where the label's information gain is greatest, k as every other table
    infogain = _baseline(frame, infos, hierarchies, attributes, label, Constraints(k=params.k), None, cfg,
                         sample_index, seeds, Options(metric="classification", label=label))
    plain = outcome.by_E[5]  # every attribute is in tiers 1..5: the E = 5 table is plain k-anonymity
    paper = PAPER_TIERS[name]
    names = [a for a in attributes if a in paper]
    rows, split_rows, run_rows = [], [], []
    for (run, E), (rfk, tiers_only) in by_run.items():
        per_split = {"rfk_accuracy": rfk, "rfk_tiers_only_accuracy": tiers_only,
                     "kanonymity_accuracy": by_run[0, 5][0], "pak_accuracy": pak["accuracy_splits"],
                     "infogain_accuracy": infogain["accuracy_splits"], "original_accuracy": original}
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
            "pak_ncp_sum": pak["ncp_sum"], "infogain_ncp_sum": infogain["ncp_sum"],
            "rfk_ncp_all": fig["ncp_all"],
            "rfk_risk_highest": risk["highest"], "rfk_sample_uniques_share": risk["sample_uniques_share"],
            "rfk_records_at_risk": risk["records_at_risk"],
            "kanonymity_sample_uniques_share": plain["risk_all_attributes"]["sample_uniques_share"],
            "pak_sample_uniques_share": pak["risk_all_attributes"]["sample_uniques_share"],
            "infogain_sample_uniques_share": infogain["risk_all_attributes"]["sample_uniques_share"],
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
        **{key: {k: v for k, v in b.items() if k not in ("risk_all_attributes", "accuracy_splits")}
           for key, b in (("pak", pak), ("infogain", infogain))},
        "seconds": {"rfk_pipeline": rfk_seconds, "accuracy_splits": accuracy_seconds,
                    "pak_anonymization": pak["seconds"], "infogain_anonymization": infogain["seconds"]},
        "rows": rows, "split_rows": split_rows, "run_rows": run_rows,
    }


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
             for name, fig in rfk_figures(table, r["dataset"], params, r["records"], tier_runs).items()}
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
            "RFK-anonymity for E = 1..5 on Adult and Bank, against plain k-anonymity, "
            "(p,α,k)-anonymity and InfoGain Mondrian (label-aware k-anonymity).",
    params=ExperimentRfkParams,
    guarantee="none: an evaluation report on public benchmark data",
    paper=SEED_003,
    run=run_experiment_rfk,
    sources=frozenset({MethodSource.none}),
    produces_randomness=False,
    docs="docs/methods/experiment_rfk.md",
    slow_params=('repeats', 'n_estimators', 'stability_runs', 'eval_repeats', 'sample_size'),
))
