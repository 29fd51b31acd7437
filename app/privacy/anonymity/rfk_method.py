"""The registered ``rfk_anonymity`` method (seed 003): the random-forest sensitivity tiers and
their k-anonymized releases."""

from __future__ import annotations

from pydantic import Field, model_validator

from app.privacy.anonymity.methods import (
    chain_warnings, changed_qi_warnings, read_through_unchanged, release_columns, usable_hierarchies,
)
from app.privacy.anonymity.kanonymity_guarantee import guarantees_of
from app.privacy.anonymity.models import Constraints
from app.privacy.anonymity.rfk import RfkConfig, rfk_pipeline
from app.privacy.context import RunContext
from app.privacy.data import ColumnInfo, MethodInput, SourceRelease
from app.privacy.registry import (
    MethodKind, MethodInputError, at_least_k_records, MethodSpec, Params, register, require_declared_classes,
)
from app.privacy.results import ReleaseResult


class RfkParams(Params):
    label: str | None = Field(None, description="class column of the random forests; default: the "
                              "schema's label column")
    k: int = Field(5, ge=3, le=10_000, description="k of the k-anonymized tiers (the paper: K > 2, small)")
    E: int | list[int] = Field(3, description="threshold: tiers 1..E are k-anonymized, the others "
                               "released unchanged. A list computes every listed table's figures; "
                               "the release is the first one listed")
    report_E: list[int] | None = Field(None, description="further thresholds whose figures go into "
                                       "metrics.by_E (default: 1..tiers)")
    attributes: list[str] | None = Field(None, max_length=32, description="attributes ranked and "
                                         "tiered; default: every column but the label and identifiers")
    repeats: int = Field(5, ge=1, le=50, description="random 70/30 splits the drop-column "
                         "sensitivity is averaged over (paper: 20)")
    n_estimators: int = Field(50, ge=5, le=500, description="trees per random forest")
    tiers: int = Field(5, ge=2, le=10, description="k-means clusters of the sensitivities (paper: 5)")
    stability_runs: int = Field(1, ge=0, le=10, description="reruns of sensitivity and tiers with "
                                "fresh splits, to report tier stability")
    sample_size: int = Field(10_000, ge=200, le=200_000, description="stratified sample the forests "
                             "are trained on (sensitivity and accuracy); the release covers every record")
    eval_repeats: int = Field(2, ge=1, le=10, description="splits the release's forest accuracy is "
                              "averaged over")
    risk_threshold: int = Field(5, ge=2, le=1_000_000, description="class size below which records "
                                "count as at risk")
    seed: int = Field(0, ge=0, description="seeds the forests and splits (analysis randomness only: "
                      "the k-anonymization itself is deterministic)")

    def thresholds(self) -> tuple[int, list[int]]:
        asked = [self.E] if isinstance(self.E, int) else list(self.E)
        more = self.report_E if self.report_E is not None else list(range(1, self.tiers + 1))
        every = list(dict.fromkeys([*asked, *more]))
        return asked[0], sorted(every)

    @model_validator(mode="after")
    def _thresholds(self):
        asked = [self.E] if isinstance(self.E, int) else list(self.E)
        if not asked:
            raise ValueError("E must name at least one threshold")
        if any(not 1 <= e <= self.tiers for e in [*asked, *(self.report_E or [])]):
            raise ValueError(f"thresholds E must lie in 1..{self.tiers} (the number of tiers)")
        return self


def _rfk_roles(params: RfkParams, columns: list[ColumnInfo]) -> tuple[str, list[str]]:
    by_name = {c.name: c for c in columns}
    if params.label is not None:
        label = params.label
    else:
        labels = [c.name for c in columns if c.role == "label"]
        if len(labels) != 1:
            raise MethodInputError("rfk_anonymity needs a label column: pass label")
        label = labels[0]
    if label not in by_name:
        raise MethodInputError(f"unknown label column {label!r}")
    if params.attributes is not None:
        attributes = params.attributes
        for name in attributes:
            if name not in by_name:
                raise MethodInputError(f"unknown column {name!r} in attributes")
            if name == label or by_name[name].role == "identifier":
                raise MethodInputError(f"column {name!r} cannot be ranked (label or identifier)")
    else:
        attributes = [c.name for c in columns if c.name != label and c.role != "identifier"]
    if len(attributes) < 2:
        raise MethodInputError("rfk_anonymity needs at least two attributes besides the label")
    return label, attributes


def run_rfk(data: MethodInput, params: RfkParams, ctx: RunContext) -> ReleaseResult:
    frame = data.frame
    assert frame is not None
    label, attributes = _rfk_roles(params, data.columns)
    identifiers = [c.name for c in data.columns if c.role == "identifier" and c.name in frame.columns]
    table = frame.drop(columns=identifiers)
    if table[label].isna().any():
        raise MethodInputError(f"label column {label!r} has missing cells")
    release_E, thresholds = params.thresholds()
    cfg = RfkConfig(k=params.k, tiers=params.tiers, repeats=params.repeats,
                    n_estimators=params.n_estimators, stability_runs=params.stability_runs,
                    sample_size=params.sample_size, eval_repeats=params.eval_repeats,
                    risk_threshold=params.risk_threshold, seed=params.seed)
    infos = {c.name: c for c in data.columns}
    hierarchies, generalized = usable_hierarchies(data)
    outcome = rfk_pipeline(table, infos, hierarchies, attributes, label, thresholds, cfg,
                           ctx.progress, keep_releases=(release_E,))
    result = outcome.releases[release_E]
    figures = outcome.by_E[release_E]
    released = list(result.frame.columns)
    risk_all = figures["risk_all_attributes"]
    unchanged = figures["unchanged"]
    warnings = chain_warnings(result, figures["anonymized"], generalized) + \
        changed_qi_warnings(data, figures["anonymized"])
    if unchanged:
        warnings.append(
            f"attributes released unchanged still identify people: over all {len(attributes)} "
            f"attributes the highest re-identification risk is {risk_all['highest']:.3g}, "
            f"{risk_all['sample_uniques_share']:.1%} of records are unique and "
            f"{risk_all['records_at_risk']:.1%} are in classes smaller than {params.risk_threshold}")
    determined, through, through_warnings = read_through_unchanged(
        table, result, figures["anonymized"], released)
    warnings += through_warnings
    metrics = {
        **result.metrics, "E": release_E, "k": params.k,
        **({"risk_through_unchanged_columns": through} if through is not None else {}),
        "information_loss": {key: figures[key] for key in
                             ("ncp_anonymized", "ncp_all", "ncp_sum", "ncp_per_attribute")},
        "accuracy": {"release": figures["accuracy"], "original": outcome.original_accuracy,
                     "release_tiers_only": figures["accuracy_tiers_only"]},
        "risk_all_attributes": risk_all,
        "by_E": [outcome.by_E[e] for e in thresholds],
        "sensitivity": outcome.sensitivity.as_dict(),
        "tiers": outcome.tiers,
        "tier_stability": outcome.stability,
    }
    metadata = {**result.metadata, "E": release_E, "tiers": outcome.tiers, "label": label,
                "sensitivity": outcome.sensitivity.as_dict(),
                "sensitivity_spread": dict(zip(attributes, map(float, outcome.sensitivity.spread))),
                "base_accuracy": outcome.sensitivity.base_accuracy,
                "anonymized_attributes": figures["anonymized"], "unchanged_attributes": unchanged}
    if identifiers:
        metadata["dropped_identifiers"] = identifiers
    ctx.progress(1.0, "done")
    return ReleaseResult(
        frame=result.frame.reset_index(drop=True),
        columns=release_columns(data.columns, released, figures["anonymized"]),
        guarantees=guarantees_of(
            result, Constraints(k=params.k), figures["anonymized"], released,
            private=not unchanged,
            extra_statements=[f"RFK-anonymity table E = {release_E}: tiers 1..{release_E} of the "
                              "random-forest sensitivity ranking are k-anonymized together"],
            extra_warnings=warnings, determined=determined),
        metrics=metrics,
        metadata=metadata,
        hierarchies_used=result.metadata.get("uploaded_hierarchies", []),
    )


def _check_rfk(params: RfkParams, columns: list[ColumnInfo], source: SourceRelease | None) -> None:
    label, _ = _rfk_roles(params, columns)
    info = next(c for c in columns if c.name == label)
    # The schema's profile (when known) settles a single-class label before any ε or time is
    # spent; class sizes and the record count are checked when the data is read (rfk.py).
    require_declared_classes(info, "label column", "the random forests' sensitivities need at "
                             "least two classes")
    if info.missing:
        raise MethodInputError(f"label column {label!r} has missing cells")


register(MethodSpec(
    name="rfk_anonymity",
    family="anonymity",
    kind=MethodKind.release,
    summary="RFK-anonymity: rank attributes by random-forest drop-column sensitivity, cluster them "
            "into tiers with k-means, k-anonymize tiers 1..E and release the rest unchanged; "
            "reports information loss, forest accuracy and re-identification risk for every E.",
    params=RfkParams,
    guarantee="k-anonymity over the attributes of tiers 1..E only; attributes left unchanged are "
              "not protected (their risk is reported); not differential privacy",
    paper="Zhai, Chen, Zhang, Pei & Ma, RFK-anonymity (seed 003); spec 04 §2",
    run=run_rfk,
    check=_check_rfk,
    check_rows=at_least_k_records,
    produces_randomness=False,
    uses_hierarchies=True,
    docs="docs/methods/rfk_anonymity.md",
    slow_params=('repeats', 'n_estimators', 'stability_runs', 'eval_repeats', 'sample_size'),
))
