"""The ``rfka`` and ``hamdist`` release methods: k-anonymous feature subset selection.

Both one-hot encode the candidate attributes (numeric ones binned, see encoding.py), rank the
indicators (RFKA: out-of-bag permutation importance of a random forest; Greedy_Hamdist: Hamming
distance to the label), walk the ranking keeping an indicator while the projection stays
k-anonymous, and release the projection on the kept indicators plus the label.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from pydantic import Field, field_validator

from app.privacy.context import RunContext
from app.privacy.data import ColumnInfo, MethodInput, SourceRelease
from app.privacy.feature_selection.encoding import MAX_INDICATORS, BinaryFeatures, encode
from app.privacy.feature_selection.importance import OOBPermutationImportance
from app.privacy.feature_selection.selection import (
    Decision, class_ids, class_sizes, greedy_k_anonymous, hamming_scores, jackknife_gini,
    label_homogeneous_share,
)
from app.privacy.guarantees import guarantee
from app.privacy.registry import (
    MethodKind, MethodInputError, at_least_k_records, MethodSpec, Params, register, no_repeats, require_declared_classes,
)
from app.privacy.results import ReleaseResult

SEED_004 = ("Huang Mei & Zhu Yan, K-anonymous feature selection based on random forest feature "
            "importance, Computer Applications and Software 37(3), 2020 (seed 004)")
GREEDY_HAMDIST = ("Zhang, Mohammed, Dave & Al Hasan, Feature selection for classification under "
                  "anonymity constraint, Transactions on Data Privacy 10, 2017 — as spec 04 §3 reads it")


# ------------------------------------------------------------------------------ parameters
class FeatureSelectionParams(Params):
    label: str | None = Field(
        None, description="the class column (RFKA's forest target; the released sensitive "
        "column); default: the column whose role is label")
    k: int = Field(5, ge=1, le=1_000_000, description="every combination of released feature "
                   "values is shared by at least k records; k = 1 protects nothing (the release "
                   "then says so: notion none, private false)")
    bins: int = Field(5, ge=2, le=100, description="continuous numeric columns (more distinct "
                      "values than `discrete_values` and `bins`) are cut into `bins` equal-width "
                      "bins (over the declared bounds, else the data's min..max) before one-hot "
                      "encoding")
    discrete_values: int = Field(10, ge=0, le=100, description="a numeric column with at most "
                                 "this many distinct values is discrete: one indicator per value, "
                                 "never binned (seed 004 one-hot encodes Breast Cancer's 1..10 "
                                 "scores as they are and bins only continuous attributes); 0 = "
                                 "bin every column with more than `bins` values")
    quasi_identifiers: list[str] | None = Field(
        None, min_length=1, description="candidate attributes; default: the columns whose role "
        "is quasi_identifier, else every column that is not the label, an identifier or sensitive")
    beam_width: int = Field(4, ge=1, le=64, description="with the lookahead: how many partial "
                            "walks the search keeps at each feature (1 = a single keep-or-drop "
                            "rollout per feature); cost grows linearly")

    @field_validator("quasi_identifiers")
    @classmethod
    def _distinct(cls, v):
        return no_repeats(v, "quasi_identifiers")


_LOOKAHEAD = ("decide each feature that passes the k-test by a lookahead: complete the walk "
              "with and without it (the paper's rule for the rest), keep the `beam_width` best "
              "partial walks by the release they complete to (lower leave-one-out Brier score of "
              "the classes' label frequencies = the label better predicted) and release the best; "
              "false = the paper's Algorithm 1, keep whatever passes")


class RfkaParams(FeatureSelectionParams):
    lookahead: bool = Field(True, description=_LOOKAHEAD)
    n_estimators: int = Field(1000, ge=1, le=5000, description="trees of the random forest "
                              "(paper: 1000)")
    max_oob_rows: int = Field(2000, ge=50, le=1_000_000, description="OOB rows evaluated per "
                              "tree (a uniform subset when a tree has more); bounds the cost "
                              "on large tables")


class HamdistParams(FeatureSelectionParams):
    lookahead: bool = Field(False, description=_LOOKAHEAD + ". Default false: Greedy_Hamdist as "
                            "spec 04 reads it; true is for comparisons only")
    n_estimators: int | None = Field(
        None, ge=1, le=5000, description="not used: Greedy_Hamdist grows no forest; accepted so "
        "that rfka and hamdist take the same parameters")


# ------------------------------------------------------------------------------ validation
def _roles(params: FeatureSelectionParams, columns: list[ColumnInfo]) -> tuple[str, list[str]]:
    """The label and the candidate attributes, or MethodInputError naming the problem."""
    by_name = {c.name: c for c in columns}
    if params.label is not None:
        if params.label not in by_name:
            raise MethodInputError(f"unknown label column {params.label!r}")
        label = params.label
    else:
        labels = [c.name for c in columns if c.role == "label"]
        if len(labels) != 1:
            raise MethodInputError("no label given and the schema declares "
                                   f"{len(labels)} label columns; set 'label'")
        label = labels[0]
    if params.quasi_identifiers is not None:
        candidates = list(params.quasi_identifiers)
        for name in candidates:
            if name not in by_name:
                raise MethodInputError(f"unknown column {name!r} in quasi_identifiers")
            if name == label:
                raise MethodInputError(f"column {name!r} is the label; it cannot also be a "
                                       "quasi-identifier")
            if by_name[name].role == "identifier":
                raise MethodInputError(f"column {name!r} is an identifier; identifiers are "
                                       "never released")
    else:
        candidates = [c.name for c in columns if c.role == "quasi_identifier" and c.name != label]
        if not candidates:
            candidates = [c.name for c in columns if c.name != label
                          and c.role not in ("identifier", "sensitive", "label")]
    if not candidates:
        raise MethodInputError("no candidate attribute: declare quasi-identifiers or pass "
                               "quasi_identifiers")
    return label, candidates


def _check(params: FeatureSelectionParams, columns: list[ColumnInfo],
           source: SourceRelease | None) -> None:
    label, candidates = _roles(params, columns)
    by_name = {c.name: c for c in columns}
    # The schema's profile (when known) settles the label before the job is accepted; the
    # run checks the same on the data.
    require_declared_classes(by_name[label], "label column",
                             "feature selection for a classifier needs at least two")
    if by_name[label].missing:
        raise MethodInputError(f"label column {label!r} has missing values")
    # Indicators per attribute are at most its distinct values (continuous numeric: bins).
    def indicators(info: ColumnInfo) -> int:
        distinct = info.distinct or 0
        if info.type == "numeric" and distinct > max(params.bins, params.discrete_values):
            return params.bins
        return distinct
    bound = sum(indicators(by_name[c]) for c in candidates)
    if bound > MAX_INDICATORS + len(candidates):
        raise MethodInputError(f"the candidates have about {bound} distinct values in all; the "
                               f"one-hot encoding allows {MAX_INDICATORS} indicators")


def _check_hamdist(params: HamdistParams, columns: list[ColumnInfo],
                   source: SourceRelease | None) -> None:
    _check(params, columns, source)
    label, _ = _roles(params, columns)
    info = next(c for c in columns if c.name == label)
    if info.distinct is not None and info.distinct != 2:
        raise MethodInputError(f"hamdist needs a binary label; column {label!r} has "
                               f"{info.distinct} values")


# ------------------------------------------------------------------------------ the runs
# A ranker returns the visiting order, the score of every feature and how it scored them.
Ranker = Callable[[BinaryFeatures, np.ndarray, RunContext],
                  tuple[np.ndarray, np.ndarray, dict[str, Any]]]


def _rank_by_importance(params: RfkaParams) -> Ranker:
    def rank(features: BinaryFeatures, y: np.ndarray, ctx: RunContext):
        # The forest's randomness protects nobody (k-anonymity is checked on the output,
        # whatever was drawn); it is seeded from ctx.rng so the seeded test mode reproduces.
        seed = int(ctx.rng.uint64(1)[0])
        model = OOBPermutationImportance(
            n_estimators=params.n_estimators, max_oob_rows=params.max_oob_rows, random_state=seed,
            progress=lambda f: ctx.progress(0.1 + 0.8 * f, "OOB permutation importance"))
        model.fit(features.matrix, y)
        scores = model.importances_
        order = np.argsort(-scores, kind="stable")  # descending; ties keep column order
        return order, scores, {
            "criterion": "out-of-bag permutation importance (seed 004 eq. 3): mean over trees "
                         "of (R_k - R_k^a) / |OOB_k|; higher = more important",
            "n_estimators": params.n_estimators, "max_oob_rows": params.max_oob_rows,
            "max_features": "sqrt", "oob_accuracy": model.oob_accuracy_,
            "trees_splitting_on": dict(zip(features.names, model.used_by_trees_.tolist())),
        }
    return rank


def _rank_by_hamming(features: BinaryFeatures, y: np.ndarray, ctx: RunContext):
    if len(np.unique(y)) != 2:
        raise MethodInputError("hamdist needs a binary label; the label column has "
                               f"{len(np.unique(y))} classes")
    scores = hamming_scores(features.matrix, y)
    order = np.argsort(scores, kind="stable")  # ascending; ties keep column order
    return order, scores, {
        "criterion": "Hamming distance to the label, min(d(f,y), d(not f,y)) / n; lower = "
                     "closer to the label (Greedy_Hamdist as spec 04 reads it)"}


@dataclass
class _Selection:
    """Everything one run decided, from which the release is assembled."""

    method: str
    label: str
    candidates: list[str]
    features: BinaryFeatures
    order: np.ndarray
    scores: np.ndarray
    ranking: dict[str, Any]
    decisions: list[Decision]
    out: pd.DataFrame
    sizes: np.ndarray
    seconds: dict[str, float]
    label_brier: tuple[float, float]  # leave-one-out Brier: the release's, the label alone's

    @property
    def selected(self) -> list[str]:
        return [c for c in self.out.columns if c != self.label]


def _select(method: str, data: MethodInput, params: FeatureSelectionParams, ctx: RunContext,
            rank: Ranker) -> ReleaseResult:
    frame = data.frame
    if frame is None:
        raise MethodInputError(f"{method} needs a table")
    label, candidates = _roles(params, data.columns)
    n = len(frame)
    if frame[label].isna().any():
        raise MethodInputError(f"label column {label!r} has missing values")
    if params.k > n:
        raise MethodInputError(f"k = {params.k} exceeds the number of records ({n})")
    ctx.progress(0.0, "encoding")
    started = time.perf_counter()
    features = encode(frame, data.columns, candidates, params.bins, params.discrete_values)
    if label in features.names:
        raise MethodInputError(f"an indicator is named like the label column {label!r}")
    y = pd.factorize(frame[label], sort=True)[0]
    if len(np.unique(y)) < 2:
        raise MethodInputError(f"label column {label!r} has a single class: feature selection "
                               "for a classifier needs at least two")
    ctx.progress(0.1, "ranking")
    order, scores, ranking = rank(features, y, ctx)
    ranked = time.perf_counter()
    ctx.progress(0.9, "greedy k-anonymity test")
    decisions = greedy_k_anonymous(features.matrix, order, params.k,
                                   label=y if params.lookahead else None,
                                   beam_width=params.beam_width)
    kept = [d.feature for d in decisions if d.kept]
    out = pd.DataFrame(features.matrix[:, kept], columns=[features.names[j] for j in kept],
                       index=frame.index)
    out[label] = frame[label]
    sizes = class_sizes(out, list(out.columns[:-1]))
    if sizes.min() < params.k:  # an independent group-by, not the greedy loop's bookkeeping
        raise RuntimeError(f"{method}: the projection failed its k-anonymity verification")
    finished = time.perf_counter()
    ctx.progress(1.0, "done")
    brier = (jackknife_gini(class_ids(out, list(out.columns[:-1])), y),
             jackknife_gini(np.zeros(n, dtype=np.int64), y))
    selection = _Selection(method, label, candidates, features, order, scores, ranking, decisions,
                           out, sizes, {"ranking": ranked - started, "selection": finished - ranked},
                           brier)
    return _release(selection, params, data.columns)


def _decision_log(sel: _Selection) -> list[dict[str, Any]]:
    names, owners = sel.features.names, sel.features.attributes
    return [{"rank": r + 1, "feature": names[d.feature], "attribute": owners[d.feature],
             "score": float(sel.scores[d.feature]), "decision": "kept" if d.kept else "dropped",
             "reason": d.reason,
             # A dropped feature's class sizes are not published: they describe a projection
             # the release keeps hidden (e.g. "adding X leaves a class of 1").
             "classes_after": d.classes if d.kept else None,
             "min_class_size_after": d.min_class_size if d.kept else None}
            for r, d in enumerate(sel.decisions)]


def _lookahead_note(params: FeatureSelectionParams) -> dict[str, Any]:
    used = params.lookahead and params.k >= 2
    return {"used": used, "beam_width": params.beam_width if used else None,
            "rule": ("a beam search over keep/drop decisions along the ranking: at a feature that "
                     "passes the k-test each kept walk forks (with it, without it), every walk is "
                     "valued by the release the paper's rule completes it to (the rest of the "
                     "ranking, keeping what passes), scored by the leave-one-out Brier score of "
                     "the classes' label frequencies; the beam_width best walks go on (ties keep "
                     "the feature) and the best release is published") if used else
                    ("none: every feature that passes the k-test is kept (seed 004 Algorithm 1)"
                     + (" — at k = 1 every feature passes and is kept" if params.lookahead else ""))}


def _warnings(sel: _Selection, homogeneous: float) -> list[str]:
    warnings = []
    edges_from_data = [a for a, e in sel.features.encoding.items()
                       if e.get("edges_from") == "data min and max"]
    if edges_from_data:
        warnings.append("bin edges read from the data (no declared bounds) disclose the min and "
                        "max of: " + ", ".join(edges_from_data))
    if not sel.selected:
        warnings.append("no feature could be kept at this k: the release holds the label only")
    if homogeneous > 0:
        warnings.append(f"{homogeneous:.1%} of records are in classes with a single label value: "
                        "their label is disclosed to anyone who can place them in their class")
    return warnings


def _guarantees(sel: _Selection, params: FeatureSelectionParams, homogeneous: float) -> dict:
    """k-anonymity of the projection for k ≥ 2. k = 1 (which the rfka experiment runs as its
    K = 0, "no protection") asks for nothing: any record may be alone in its class, so the
    release says it is no protection (notion none, private false) instead of claiming one."""
    selected, label, smallest = sel.selected, sel.label, int(sel.sizes.min())
    common = [
        "feature selection only: released cells are exact one-hot indicators of the (binned) "
        "attributes; nothing is perturbed",
        "the selection read every record and the label; the ranking and each keep/drop "
        "decision are published in the metadata",
    ]
    warnings = _warnings(sel, homogeneous)
    if params.k < 2:
        warnings.insert(0, "k = 1: no protection — a record may be the only one with its "
                        "released feature values, so it can be singled out and its label read")
        return guarantee(
            "none", rng="none: nothing is randomized", private=False,
            protected_columns=[], unprotected_columns=[*selected, label],
            statements=[
                f"NO protection: k = 1 requires nothing of the projection (smallest class: "
                f"{smallest}); it is not k-anonymity and not differential privacy",
                *common, f"the label {label!r} is released as is"],
            warnings=warnings, k=smallest, k_requested=params.k)
    return guarantee(
        "k_anonymity", rng="none: the guarantee does not depend on randomness", private=True,
        protected_columns=selected, unprotected_columns=[label],
        statements=[
            f"k-anonymity on the projection: every combination of the released feature values "
            f"is shared by at least k = {params.k} records (smallest class: {smallest}), "
            "verified on the output by an independent group-by",
            "this is a syntactic guarantee, not differential privacy, and it assumes the "
            "attacker's background knowledge is limited to the candidate attributes",
            f"the label {label!r} is released as is (the sensitive attribute): k-anonymity does "
            "not stop attribute disclosure in classes whose records share one label",
            *common],
        warnings=warnings, k=smallest, k_requested=params.k)


def _release(sel: _Selection, params: FeatureSelectionParams,
             columns: list[ColumnInfo]) -> ReleaseResult:
    selected, label, sizes = sel.selected, sel.label, sel.sizes
    kept_attrs = sorted({sel.features.attributes[d.feature] for d in sel.decisions if d.kept})
    removed = [a for a in sel.candidates if a not in kept_attrs]
    homogeneous = label_homogeneous_share(sel.out, selected, label)
    label_info = next(c for c in columns if c.name == label)
    out_columns = [ColumnInfo(name=s, type="numeric", role="quasi_identifier", bounds=(0.0, 1.0),
                              integer=True) for s in selected]
    out_columns.append(ColumnInfo(name=label, type=label_info.type, role="label",
                                  categories=label_info.categories, integer=label_info.integer,
                                  inferred=label_info.inferred))
    return ReleaseResult(
        frame=sel.out,
        columns=out_columns,
        guarantees=_guarantees(sel, params, homogeneous),
        metrics={"records": int(len(sel.out)), "candidate_attributes": len(sel.candidates),
                 "candidate_features": len(sel.features.names), "selected_features": len(selected),
                 "removed_attributes": len(removed), "equivalence_classes": int(len(sizes)),
                 "min_class_size": int(sizes.min()), "average_class_size": float(sizes.mean()),
                 "discernibility": float(np.sum(sizes.astype(float) ** 2)),
                 # How well the label can be predicted from the release's classes (lower =
                 # better); the second is with no feature at all, for scale.
                 "label_loo_brier": sel.label_brier[0],
                 "label_loo_brier_no_features": sel.label_brier[1],
                 "label_homogeneous_share": homogeneous,
                 "seconds": {key: float(v) for key, v in sel.seconds.items()},
                 **({"oob_accuracy": sel.ranking["oob_accuracy"]}
                    if "oob_accuracy" in sel.ranking else {})},
        metadata={"feature_selection": {
            "method": sel.method, "label": label, "k": params.k, "bins": params.bins,
            "discrete_values": params.discrete_values,
            "lookahead": _lookahead_note(params),
            "candidates": sel.candidates,
            "encoding": {"kind": "one-hot of the attributes, numeric ones binned first; an "
                                 "attribute with two values gives one indicator; missing is a "
                                 "value of its own", "attributes": sel.features.encoding},
            "ranking": sel.ranking,
            "order": [sel.features.names[j] for j in sel.order],
            "decisions": _decision_log(sel),
            "selected": selected,
            "attributes_kept": kept_attrs,
            "attributes_removed": removed,
        }},
    )


def run_rfka(data: MethodInput, params: RfkaParams, ctx: RunContext) -> ReleaseResult:
    return _select("rfka", data, params, ctx, _rank_by_importance(params))


def run_hamdist(data: MethodInput, params: HamdistParams, ctx: RunContext) -> ReleaseResult:
    return _select("hamdist", data, params, ctx, _rank_by_hamming)


_GUARANTEE = "k-anonymity of the projection on the selected features (not differential privacy)"

register(MethodSpec(
    name="rfka",
    family="feature_selection",
    kind=MethodKind.release,
    summary="k-anonymous feature subset selection: rank one-hot features by random-forest "
            "out-of-bag permutation importance, keep each in turn while the projection stays "
            "k-anonymous, release the projection and the label.",
    params=RfkaParams,
    guarantee=_GUARANTEE,
    paper=SEED_004,
    run=run_rfka,
    check=_check,
    check_rows=at_least_k_records,
    produces_randomness=False,  # the forest's randomness is not what protects anyone
    docs="docs/methods/rfka.md",
    slow_params=('n_estimators', 'beam_width', 'max_oob_rows'),
))

register(MethodSpec(
    name="hamdist",
    family="feature_selection",
    kind=MethodKind.release,
    summary="Baseline of RFKA (Greedy_Hamdist as spec 04 reads it): rank one-hot features by "
            "Hamming distance to a binary label, keep each in turn while the projection stays "
            "k-anonymous.",
    params=HamdistParams,
    guarantee=_GUARANTEE,
    paper=GREEDY_HAMDIST,
    run=run_hamdist,
    check=_check_hamdist,
    check_rows=at_least_k_records,
    produces_randomness=False,
    docs="docs/methods/hamdist.md",
    slow_params=('beam_width',),
))
