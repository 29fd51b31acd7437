"""One k-anonymization from a table to a verified release: axes, algorithm, labels, the
independent check, metrics. Used by the ``kanonymity`` method, by RFK-anonymity and by the
experiments."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Literal

import numpy as np
import pandas as pd

from app.privacy.anonymity.axes import NumericAxis, build_axes
from app.privacy.anonymity.hierarchies import MISSING_LEAF, build_tree, missing_spelled_as_a_value
from app.privacy.anonymity.interval_labels import released_outside_labels
from app.privacy.anonymity.label_modes import label_modes
from app.privacy.anonymity.lattice import lattice_search
from app.privacy.anonymity.metrics import anonymity_metrics
from app.privacy.anonymity.models import Constraints, Population, Sensitive, class_stats
from app.privacy.anonymity.mondrian import mondrian_partition
from app.privacy.anonymity.release import generalize, generalize_levels
from app.privacy.anonymity.risk import prosecutor_risk
from app.privacy.anonymity.risk_thresholds import RiskThresholds
from app.privacy.anonymity.verify import (
    Achieved, VerificationError, equivalence_classes, verify_release, worst_achieved,
)
from app.privacy.anonymity.verify_population import label_cover, verify_population
from app.privacy.anonymity.verify_profitability import verify_profitability
from app.privacy.anonymity.wording import below, rounded
from app.privacy.data import ColumnInfo
from app.privacy.registry import MethodInputError

T_DISTANCE = {"ordered": "EMD with ordered distance over the sorted distinct values (numeric column)",
              "equal": "EMD with equal distance, i.e. total variation (categorical column)",
              "hierarchical": "EMD with hierarchical distance over the sensitive column's hierarchy "
                              "(two values level(LCA)/H apart, H its height)"}


@dataclass
class Options:
    algorithm: Literal["mondrian", "lattice"] = "mondrian"
    suppression: float = 0.0
    time_budget: float = 30.0
    categorical_release: Literal["ancestor", "children"] = "ancestor"
    categorical_coding: Literal["hierarchy", "ordered"] = "hierarchy"
    numeric_generalization: Literal["interval", "hierarchy"] = "interval"
    auto_levels: int = 4
    max_lattice_nodes: int = 200_000
    metric: Literal["ncp", "entropy", "entropy_monotonic", "publisher_payout", "classification",
                    "discernibility"] = "ncp"
    risk_threshold: int = 5
    label: str | None = None  # the column the "classification" metric reads (not a quasi-identifier)


@dataclass
class Anonymized:
    frame: pd.DataFrame  # every input column; QIs generalized; suppressed records removed
    achieved: Achieved
    metrics: dict
    metadata: dict
    warnings: list[str] = field(default_factory=list)
    ncp: np.ndarray | None = None
    # the sensitive columns with models of their own: those models and what the check found
    own_models: dict[str, tuple[Constraints, Achieved]] = field(default_factory=dict)


def _feasible_population(pop: Population, k: int) -> None:
    """The whole population as one class must meet k, k-map and δ-presence: generalizing cannot
    do better (merging classes keeps a ratio between its parts', and the whole table's ratio
    |T| / |P| is where every generalization's classes average to)."""
    n, t = len(pop.in_subset), int(pop.in_subset.sum())
    if t == 0:
        raise MethodInputError("the research subset is empty: no record is marked as in it")
    if t < k:
        raise MethodInputError(f"the research subset has {t} records, fewer than k = {k}")
    if pop.k_map is not None and n < pop.k_map:
        raise MethodInputError(f"the population has {n} records, fewer than k_map = {pop.k_map}")
    if pop.presence:
        ratio = t / n
        if t == n and pop.delta_max < 1:
            raise MethodInputError(f"every record of the table is in the research subset: every class's "
                                   f"share is 1, above delta_max = {pop.delta_max:g}")
        if not pop.delta_min - 1e-12 <= ratio <= pop.delta_max + 1e-12:
            raise MethodInputError(
                f"the research subset holds {t} of the population's {n} records, a share of "
                f"{rounded(ratio, down=ratio < pop.delta_min, places=6)} outside delta_presence "
                f"[{pop.delta_min:g}, {pop.delta_max:g}]: the classes' shares average to it, so no "
                "generalization can meet the bounds")


def label_codes(values: pd.Series) -> np.ndarray:
    """A code per record of the label's values (a missing value is one value of its own)."""
    return pd.factorize(values, use_na_sentinel=False)[0].astype(np.int64)


def classification_figures(labels: pd.Series, released_ids: np.ndarray, n_input: int, suppressed: int) -> dict:
    """The classification metric of a release from its records: per class, the records whose label
    is not its most frequent one (what a majority-label classifier of the release gets wrong),
    plus the suppressed records, over the records that could have been released."""
    codes = label_codes(labels)
    n_classes = int(released_ids.max(initial=-1)) + 1
    off = len(codes) - int(label_modes(released_ids, n_classes, codes, None, int(codes.max(initial=-1)) + 1).sum())
    return {"label": str(labels.name), "records_off_majority": off, "suppressed": suppressed,
            "loss": (off + suppressed) / n_input if n_input else 0.0,
            "majority_accuracy": 1.0 - off / len(codes) if len(codes) else None}


def _feasible(constraints: Constraints, sensitive: Sensitive | None, n: int) -> None:
    """The whole table must meet l/α/t (generalizing cannot do better than one class)."""
    if constraints.population is not None:
        return _feasible_population(constraints.population, constraints.k)
    if n < constraints.k:
        raise MethodInputError(f"the table has {n} records, fewer than k = {constraints.k}")
    if not constraints.needs_sensitive:
        return
    stats = class_stats(np.zeros(n, dtype=np.int64), 1, constraints, sensitive)
    if constraints.l is not None and stats.distinct[0] < constraints.l:
        raise MethodInputError(f"sensitive column {sensitive.column!r} has {stats.distinct[0]} "
                               f"distinct values in the whole table: l = {constraints.l} is impossible")
    if constraints.alpha is not None and stats.max_share[0] > constraints.alpha + 1e-12:
        raise MethodInputError(f"a value of {sensitive.column!r} holds {rounded(stats.max_share[0], down=False)} of the "
                               f"whole table: alpha = {constraints.alpha} is impossible")
    if constraints.l_diversity == "entropy" and not stats.satisfied(constraints)[0]:
        raise MethodInputError(f"sensitive column {sensitive.column!r} has entropy {stats.entropy[0]:.4f} "
                               f"in the whole table (as diverse as {below(np.exp(stats.entropy[0]), constraints.l)} equally "
                               f"frequent values): entropy l = {constraints.l} is impossible")
    if constraints.l_diversity == "recursive" and not stats.satisfied(constraints)[0]:
        raise MethodInputError(f"the whole table's counts of {sensitive.column!r} give r1 / (r_l + … + r_m) "
                               f"= {stats.recursive_ratio[0]:.4f}, not below c = {constraints.c:g}: "
                               f"recursive (c,l)-diversity with l = {constraints.l} is impossible")


def _payout_feasible(result, options: Options, n: int) -> None:
    """The lattice found no node whose classes the payout model keeps within the suppression
    limit (the top node never passes: IL = 1 pays nothing): a MethodInputError saying why."""
    limit = int(np.floor(options.suppression * n + 1e-9))
    dropped = int(result.suppressed.sum())
    if dropped <= limit:
        return
    searched = ("before the time budget ran out (raise time_budget)" if result.timed_out else
                "along a greedy climb (the lattice exceeds max_lattice_nodes)"
                if result.lattice_size > options.max_lattice_nodes else
                f"over the {result.lattice_size} lattice nodes")
    raise MethodInputError(
        f"no generalization found {searched} keeps enough classes under the profitability model: "
        f"the greedy climb from the bottom ends suppressing {dropped} of {n} records, above the suppression limit of {limit} "
        f"({options.suppression:g}); raise suppression (up to 1), or change the payoffs (a higher "
        "publisher_benefit or adversary_cost, a lower publisher_loss or adversary_gain keep more classes)")


def _refuse_missing_spelled_as_a_value(column: str, series: pd.Series) -> None:
    """Every model counts a missing sensitive cell as the value '<missing>': a value spelled so
    beside missing cells would be one with them, where the download shows two (a blank and the
    text), and δ, β and t measured on one value are not the release's."""
    if missing_spelled_as_a_value(series):
        raise MethodInputError(f"sensitive column {column!r} holds a value spelled {MISSING_LEAF!r} beside "
                               "missing cells, which the privacy models count as that value: rename it")


def numeric_hierarchical_t(sensitive: str) -> str:
    return (f"t_distance 'hierarchical' needs a categorical sensitive column; {sensitive!r} is "
            "numeric, whose t-closeness uses the ordered distance")


def _sensitive_column(frame: pd.DataFrame, infos: dict[str, ColumnInfo], hierarchies: dict[str, pd.DataFrame],
                      name: str, constraints: Constraints) -> Sensitive:
    if constraints.needs_sensitive and infos[name].type != "numeric":
        _refuse_missing_spelled_as_a_value(name, frame[name])
    if constraints.t_distance == "hierarchical":
        return _sensitive_under_hierarchy(frame, infos, hierarchies, name)
    return Sensitive.from_series(name, frame[name], infos[name].type == "numeric")


def _sensitive_under_hierarchy(frame: pd.DataFrame, infos: dict[str, ColumnInfo],
                               hierarchies: dict[str, pd.DataFrame], sensitive: str) -> Sensitive:
    """The sensitive column for t-closeness by the hierarchical distance: its uploaded hierarchy
    must cover every value (the same validation as a quasi-identifier's)."""
    if infos[sensitive].type == "numeric":
        raise MethodInputError(numeric_hierarchical_t(sensitive))
    if sensitive not in hierarchies:
        raise MethodInputError(f"t_distance 'hierarchical' reads the hierarchy of the sensitive column "
                               f"{sensitive!r}, and the dataset has none: upload one "
                               f"(PUT /v1/datasets/{{id}}/hierarchies/{sensitive})")
    return Sensitive.from_tree(sensitive, build_tree(sensitive, frame[sensitive], hierarchies[sensitive]))


def flat_warning(columns: list[str]) -> str:
    return ("no hierarchy for " + ", ".join(columns) + ": each is flat (every value directly under '*', "
            "grouped in text order), which usually loses far more information than a hierarchy would; "
            "upload one per column (docs/hierarchies.md)")


def anonymize(frame: pd.DataFrame, infos: dict[str, ColumnInfo], hierarchies: dict[str, pd.DataFrame],
              quasi_identifiers: list[str], constraints: Constraints, sensitive: str | list[str] | None,
              options: Options, progress: Callable[[float, str], None] | None = None, *,
              models: Mapping[str, Constraints] | None = None) -> Anonymized:
    """``sensitive``: one column or several; every constraint then holds on each of them.
    ``models``: columns with a set of models of their own (their k is ``constraints.k``), which
    they meet instead of ``constraints``' — sensitive whether ``sensitive`` names them or not."""
    started = time.perf_counter()
    if options.metric == "classification" and options.label not in frame.columns:
        raise ValueError(f"metric 'classification' reads Options.label, the label column: {options.label!r} is not one")
    n = len(frame)
    qi_infos = [infos[q] for q in quasi_identifiers]
    names = [] if sensitive is None else [sensitive] if isinstance(sensitive, str) else list(sensitive)
    own = dict(models or {})
    names += [name for name in own if name not in names]
    model = {name: own.get(name, constraints) for name in names}
    # only a model that reads a sensitive column checks it (k alone reads none)
    sens = tuple(replace(_sensitive_column(frame, infos, hierarchies, name, model[name]), model=model[name])
                 for name in names if model[name].needs_sensitive)
    pop = constraints.population
    if pop is not None and sens:
        raise ValueError("the population's models (k_map, delta_presence) do not combine with "
                         "sensitive-column models")
    for one in sens or (None,):
        _feasible(constraints if one is None else one.model, one, n)
    lattice = options.algorithm == "lattice"
    axes, notes = build_axes(
        frame, qi_infos, hierarchies,
        numeric="hierarchy" if lattice else options.numeric_generalization,
        categorical="hierarchy" if lattice else options.categorical_coding,
        auto_levels=options.auto_levels)
    step = (lambda f, s: progress(0.1 + 0.7 * f, s)) if progress else None
    metadata: dict = {"algorithm": options.algorithm, "quasi_identifiers": quasi_identifiers,
                      "sensitive": names if own else sensitive,
                      "constraints": "; ".join([constraints.describe()] + [
                          f"on {name}: {m.describe(with_k=False)}" for name, m in own.items()])}
    warnings: list[str] = []
    suppressed = np.zeros(n, dtype=bool)
    splits = None  # Mondrian's cuts: the population check's certificate of disjoint classes
    model_suppressed = 0  # records the profitability model drops (Mondrian suppresses none)
    if lattice:
        labels = label_codes(frame[options.label]) if options.metric == "classification" else None
        result = lattice_search(axes, constraints, sens, options.suppression, options.time_budget,
                                options.max_lattice_nodes, step, options.metric, labels)
        suppressed = result.suppressed
        if constraints.payout_model:
            _payout_feasible(result, options, n if pop is None else int(pop.in_subset.sum()))
            model_suppressed = result.model_suppressed
        gen = generalize_levels(axes, result.levels)
        metadata["lattice"] = {
            "levels": dict(zip(quasi_identifiers, result.levels)), "optimal": result.optimal,
            "timed_out": result.timed_out, "heuristic": result.heuristic,
            "nodes_evaluated": result.evaluated, "greedy_climb_checks": result.climb_evaluated,
            "lattice_size": result.lattice_size,
            "nodes_pruned_by_projection": result.pruned_by_projection,
            "search_seconds": round(result.seconds, 4), "metric": options.metric, "loss": result.loss,
            "suppression_limit": options.suppression, "top_node_fallback": result.top_node_fallback,
        }
        checked = f"{result.evaluated} of {result.lattice_size} lattice nodes checked"
        if result.timed_out and result.heuristic:  # no node had passed: the greedy climb's
            top = (": it ended at the top, every quasi-identifier released at the top of its hierarchy"
                   if result.top_node_fallback else "")
            warnings.append(f"time budget of {options.time_budget:g} s reached before any generalization "
                            f"met the constraints ({checked}): a greedy climb from the bottom chose the "
                            f"levels, not proven optimal{top}; raise time_budget (up to 600 s) for the "
                            "optimum, or use algorithm mondrian")
        elif result.timed_out:
            warnings.append(f"time budget of {options.time_budget:g} s reached: the best generalization "
                            f"found so far is released and may not be optimal ({checked}); raise "
                            "time_budget (up to 600 s) for the optimum")
        elif result.heuristic and result.lattice_size <= options.max_lattice_nodes:  # none passed
            warnings.append(f"no node of the lattice met the constraints within the suppression limit "
                            f"(over the {result.lattice_size} lattice nodes): a greedy climb from the "
                            f"bottom chose the levels, suppressing {int(suppressed.sum())} record(s)")
        elif result.heuristic:
            warnings.append(f"lattice of {result.lattice_size} nodes exceeds max_lattice_nodes: a greedy "
                            "climb chose the levels; the result is not proven optimal")
    else:
        infogain = {}  # the default Mondrian's call is left as it was
        if options.metric == "classification":  # InfoGain Mondrian (LeFevre et al. 2006, mondrian_infogain.py)
            infogain = {"labels": label_codes(frame[options.label])}
            metadata["mondrian"] = {"split": f"information gain of {options.label}",
                                    "zero_gain": "the default cut (widest or least-loss axis, most balanced)"}
        if pop is not None:
            class_ids, splits = mondrian_partition(axes, constraints, sens, step, with_tree=True, **infogain)
        else:
            class_ids = mondrian_partition(axes, constraints, sens, step, **infogain)
        if progress:
            progress(0.85, "labelling")
        gen = generalize(axes, class_ids, int(class_ids.max()) + 1,
                         child_sets=options.categorical_release == "children")
    out = frame.copy()
    for q in quasi_identifiers:
        out[q] = pd.Series(gen.labels[q], index=frame.index, dtype=object).astype(str)
    keep = ~suppressed if pop is None else ~suppressed & pop.in_subset  # T's records only
    out = out[keep]
    ncp = gen.ncp[keep]
    for axis in axes:  # an uploaded hierarchy's interval labels that do not hold their values
        if axis.column in notes.given and getattr(axis, "value_range", None) is not None:
            warnings += released_outside_labels(axis.column, hierarchies[axis.column], out[axis.column].unique())
    if progress:
        progress(0.9, "verifying")
    generalized = time.perf_counter()
    each = [_verify(out, quasi_identifiers, constraints, one, hierarchies) for one in sens or (None,)]
    # the guarantee states the weakest of the columns that meet the job's models; a column with
    # models of its own is stated by itself
    shared = [a for one, a in zip(sens, each) if one.column not in own] if sens else each
    achieved = worst_achieved(shared) if shared else Achieved(k=each[0].k, classes=each[0].classes,
                                                                records=each[0].records)
    if len(sens) > 1 or own:  # each column's figures beside it, and which models they are
        metadata["sensitive_achieved"] = {one.column: {**({"models": one.model.describe(with_k=False)}
                                                          if own else {}), **a.as_dict()}
                                          for one, a in zip(sens, each)}
    if pop is not None:  # k-map and δ-presence from the released labels and the population
        found = verify_population(out, frame.index, pop.in_subset, quasi_identifiers,
                                  {axis.column: label_cover(axis) for axis in axes}, gen.labels,
                                  k_map=pop.k_map, delta_min=pop.delta_min, delta_max=pop.delta_max,
                                  splits=splits)
        achieved.k_map = found.k_map if pop.k_map is not None else None
        achieved.delta_presence_min = found.delta_presence_min
        achieved.delta_presence_max = found.delta_presence_max
        metadata["population"] = {"records": n, "research_subset": int(pop.in_subset.sum()),
                                  "released": len(out), "suppressed": int(suppressed.sum()),
                                  "smallest_population_class": found.k_map,
                                  "check": found.population_check}
    if constraints.profitability is not None:  # recomputed from the released labels alone
        cb = constraints.profitability
        found = verify_profitability(out, quasi_identifiers, {axis.column: label_cover(axis) for axis in axes}, cb)
        # no-attack is k (or k_map) = derived_k: its suppression is k's, counted with the others
        model = {"derived_k": cb.derived_k} if cb.no_attack else {"records_suppressed_by_model": model_suppressed}
        metadata["profitability"] = {**cb.as_dict(), "attack_threshold": cb.attack_threshold, **model, **found}
    released_ids = equivalence_classes(out, quasi_identifiers)
    if constraints.risk is not None:  # recomputed from the released classes alone
        metadata["risk_thresholds"] = _verify_risk(constraints.risk, released_ids)
    n_input = n if pop is None else int(pop.in_subset.sum())  # the records a release could hold
    metrics = anonymity_metrics(quasi_identifiers, ncp, n_input, int(suppressed.sum()), released_ids,
                                constraints.k)
    metrics["risk"] = prosecutor_risk(released_ids, options.risk_threshold)
    if options.label is not None:  # recomputed from the released records alone
        metrics["classification"] = classification_figures(out[options.label], released_ids, n_input,
                                                           int(suppressed.sum()))
    # what the benchmark's "time" row measures, checkable on any release (the job's own time adds
    # loading, the worker's child process and storing)
    metrics["seconds"] = {"generalization": round(generalized - started, 4),
                          "with_verification_and_metrics": round(time.perf_counter() - started, 4)}
    metadata["generalization"] = _describe_axes(axes, gen, options, lattice)
    if notes.range_from_data:
        metadata["range_from_data"] = notes.range_from_data
        warnings.append("numeric range read from the data (no declared bounds) for "
                        + ", ".join(notes.range_from_data) + ": NCP is relative to the observed range")
    if notes.flat:
        metadata["flat_hierarchies"] = notes.flat
        # not a privacy matter (k holds either way) but the commonest cause of a poor release:
        # said where a caller reads, not only in the metadata
        warnings.append(flat_warning(notes.flat))
    if notes.automatic:
        metadata["automatic_hierarchies"] = notes.automatic
    if notes.given:  # what the release was generalized with: its audit event names these only
        metadata["uploaded_hierarchies"] = notes.given
    with_t = [one for one in sens if one.model.t is not None]
    if with_t:
        metadata["t_distance"] = (T_DISTANCE[sens[0].distance_kind] if len(sens) == 1 else
                                  {one.column: T_DISTANCE[one.distance_kind] for one in with_t})
    return Anonymized(frame=out, achieved=achieved, metrics=metrics, metadata=metadata,
                      warnings=warnings, ncp=ncp,
                      own_models={one.column: (one.model, a) for one, a in zip(sens, each) if one.column in own})


def _verify(out: pd.DataFrame, quasi_identifiers: list[str], constraints: Constraints, one: Sensitive | None,
            hierarchies: dict[str, pd.DataFrame]) -> Achieved:
    """The independent check of the release on one sensitive column, for that column's models
    (or of k alone, with none)."""
    c = constraints if one is None else one.model
    return verify_release(
        out, quasi_identifiers, k=constraints.k, sensitive=one.column if one else None, l=c.l,
        alpha=c.alpha, t=c.t, l_diversity=c.l_diversity, c=c.c, beta=c.beta, beta_likeness=c.beta_likeness,
        delta_disclosure=c.delta_disclosure,
        t_hierarchy=hierarchies[one.column] if one is not None and one.hierarchy is not None else None,
        table_values=one.values if one is not None else None,
        table_dist=one.table_dist if one is not None else None,
        ordered=bool(one is not None and one.ordered))


def _verify_risk(risk: RiskThresholds, released_ids: np.ndarray) -> dict:
    """The risk thresholds' figures on the released classes; a VerificationError if one fails."""
    figures = risk.figures(np.bincount(released_ids) if len(released_ids) else np.zeros(0, dtype=np.int64))
    failures = risk.failures(figures)
    if failures:
        raise VerificationError("release failed its independent check: " + "; ".join(failures))
    smallest = {} if risk.smallest_size is None else {"smallest_size_not_at_risk": risk.smallest_size}
    return {"requested": risk.requested(), "achieved": figures, **smallest}


def _describe_axes(axes, gen, options: Options, lattice: bool) -> dict:
    """How each quasi-identifier was released, enough to recompute NCP from the labels."""
    described = {}
    for axis in axes:
        name = axis.column
        if isinstance(axis, NumericAxis):
            entry = {"kind": "ordered" if axis.categories is not None else "interval",
                     "range": [axis.lo, axis.hi]}
            if axis.categories is not None:
                entry["order"] = axis.categories
        else:
            entry = {"kind": "hierarchy", "leaves_in_data": int(axis.n_leaves),
                     "height": int(axis.height)}
            if axis.value_range is not None:
                entry["range_width"] = axis.value_range
            entry["label_leaves"] = gen.label_leaves.get(name, {})
        entry["label_ncp"] = gen.label_ncp[name]
        described[name] = entry
    return described
