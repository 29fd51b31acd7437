"""The registered anonymity methods: ``kanonymity`` (release) and ``risk`` (analysis).
``rfk_anonymity`` is registered in :mod:`app.privacy.anonymity.rfk`."""

from __future__ import annotations

from typing import Literal

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from pydantic import Field, model_validator  # noqa: E402

from app.privacy.anonymity.anonymize import Anonymized, Options, anonymize  # noqa: E402
from app.privacy.anonymity.models import Constraints  # noqa: E402
from app.privacy.anonymity.risk import class_size_table, prosecutor_risk  # noqa: E402
from app.privacy.anonymity.roles import resolve_quasi_identifiers, resolve_sensitive  # noqa: E402
from app.privacy.anonymity.verify import equivalence_classes  # noqa: E402
from app.privacy.context import RunContext  # noqa: E402
from app.privacy.data import ColumnInfo, MethodInput, SourceRelease  # noqa: E402
from app.privacy.guarantees import guarantee  # noqa: E402
from app.privacy.registry import (  # noqa: E402
    Kind, MethodSpec, Params, Source, register,
)
from app.privacy.results import ReleaseResult, ReportResult, render_figure  # noqa: E402

NO_RANDOMNESS = "none: deterministic generalization (no randomness drawn)"
NOT_DP = ("k-anonymity is not differential privacy: it limits linkage through the declared "
          "quasi-identifiers only; an attacker with other background knowledge, or with several "
          "releases of the same data, is not covered")


class KAnonymityParams(Params):
    k: int = Field(5, ge=2, le=100_000, description="every equivalence class has at least k records")
    algorithm: Literal["mondrian", "lattice"] = Field(
        "mondrian", description="'mondrian': strict multidimensional local recoding; 'lattice': "
        "optimal full-domain generalization over the hierarchy levels")
    quasi_identifiers: list[str] | None = Field(
        None, max_length=32, description="columns to generalize; default: the schema's quasi-identifiers")
    sensitive: str | None = Field(
        None, description="sensitive column for l, alpha and t; default: the schema's single sensitive column")
    l: int | None = Field(None, ge=2, le=10_000, description="distinct l-diversity (p-sensitivity): "
                          "at least l distinct sensitive values per class")
    alpha: float | None = Field(None, gt=0.0, le=1.0, description="(α,k)-anonymity: no sensitive "
                                "value above this share of a class")
    t: float | None = Field(None, ge=0.0, le=1.0, description="t-closeness: EMD between each class's "
                            "sensitive distribution and the table's at most t (ordered distance for "
                            "a numeric sensitive column, equal distance for a categorical one)")
    suppression: float = Field(0.0, ge=0.0, le=0.5, description="lattice: largest share of records "
                               "that may be suppressed (removed), e.g. 0.04 for 4%")
    time_budget: float = Field(30.0, gt=0.0, le=600.0, description="lattice: seconds of search after "
                               "which the best generalization found so far is released, flagged")
    max_lattice_nodes: int = Field(200_000, ge=1, le=2_000_000, description="lattice: above this many "
                                   "nodes a greedy climb replaces the optimal search (flagged)")
    categorical_release: Literal["ancestor", "children"] = Field(
        "ancestor", description="mondrian: release a class's lowest common ancestor in the "
        "hierarchy, or the set of its children the class holds ('{a|b}', lower NCP)")
    categorical_coding: Literal["hierarchy", "ordered"] = Field(
        "hierarchy", description="mondrian: categorical columns over their hierarchy (flat when "
        "none is given), or as codes in sorted order without hierarchy (for comparison)")
    numeric_generalization: Literal["interval", "hierarchy"] = Field(
        "interval", description="mondrian: numeric columns as class intervals [min, max], or over "
        "their hierarchy; the lattice always uses hierarchies")
    auto_levels: int = Field(4, ge=1, le=10, description="levels of the automatic interval "
                             "hierarchy of a numeric column without one (widths doubling per level)")

    @model_validator(mode="after")
    def _combination(self):
        if self.l is not None and self.l > self.k:
            raise ValueError("l cannot exceed k: a class of k records holds at most k distinct values")
        return self

    def constraints(self) -> Constraints:
        return Constraints(k=self.k, l=self.l, alpha=self.alpha, t=self.t)

    def options(self) -> Options:
        return Options(algorithm=self.algorithm, suppression=self.suppression,
                       time_budget=self.time_budget, categorical_release=self.categorical_release,
                       categorical_coding=self.categorical_coding,
                       numeric_generalization=self.numeric_generalization,
                       auto_levels=self.auto_levels, max_lattice_nodes=self.max_lattice_nodes)


def _roles(params: KAnonymityParams, columns: list[ColumnInfo]) -> tuple[list[str], str | None]:
    qis = resolve_quasi_identifiers(columns, params.quasi_identifiers)
    sensitive = resolve_sensitive(columns, params.sensitive, qis, params.constraints().needs_sensitive)
    return qis, sensitive


def release_columns(columns: list[ColumnInfo], frame_columns, generalized: list[str]) -> list[ColumnInfo]:
    """Schema of a release: generalized columns become categorical text, identifiers are gone."""
    out = []
    for c in columns:
        if c.name not in frame_columns:
            continue
        if c.name in generalized:
            out.append(ColumnInfo(name=c.name, type="categorical", role=c.role if c.role != "insensitive"
                                  else "quasi_identifier"))
        else:
            out.append(c)
    return out


def guarantees_of(result: Anonymized, constraints: Constraints, qis: list[str], released: list[str],
                  *, private: bool, extra_statements: list[str] | None = None,
                  extra_warnings: list[str] | None = None) -> dict:
    achieved = result.achieved.as_dict()
    statements = [
        f"verified independently on the released table: every class of the quasi-identifiers "
        f"({', '.join(qis)}) has at least {achieved['k']} records (k requested: {constraints.k})",
        NOT_DP,
    ]
    if constraints.l is not None:
        statements.append(f"distinct l-diversity: every class has at least {achieved['l']} distinct "
                          "sensitive values")
    if constraints.alpha is not None:
        statements.append(f"(α,k)-anonymity: no sensitive value exceeds a share {achieved['alpha']:.4f} "
                          "of its class")
    if constraints.t is not None:
        statements.append(f"t-closeness: largest class distance {achieved['t']:.4f} "
                          f"({result.metadata.get('t_distance')})")
    others = [c for c in released if c not in qis]
    if others:
        statements.append("columns released unchanged (not generalized): " + ", ".join(others))
    statements += extra_statements or []
    return guarantee(
        "k_anonymity", rng=NO_RANDOMNESS, private=private, protected_columns=qis,
        unprotected_columns=others, statements=statements,
        warnings=[*result.warnings, *(extra_warnings or [])],
        k=achieved["k"], k_requested=constraints.k, l=achieved.get("l"), alpha=achieved.get("alpha"),
        t=achieved.get("t"), t_distance=result.metadata.get("t_distance"),
        suppressed=result.metrics["suppressed"], verified=True,
    )


def run_kanonymity(data: MethodInput, params: KAnonymityParams, ctx: RunContext) -> ReleaseResult:
    frame = data.frame
    assert frame is not None
    qis, sensitive = _roles(params, data.columns)
    infos = {c.name: c for c in data.columns}
    identifiers = [c.name for c in data.columns if c.role == "identifier" and c.name in frame.columns]
    ctx.progress(0.0, "preparing")
    result = anonymize(frame.drop(columns=identifiers), infos, data.hierarchies, qis,
                       params.constraints(), sensitive, params.options(), ctx.progress)
    released = list(result.frame.columns)
    metadata = dict(result.metadata)
    if identifiers:
        metadata["dropped_identifiers"] = identifiers
    ctx.progress(1.0, "done")
    return ReleaseResult(
        frame=result.frame.reset_index(drop=True),
        columns=release_columns(data.columns, released, qis),
        guarantees=guarantees_of(result, params.constraints(), qis, released, private=True),
        metrics=result.metrics,
        metadata=metadata,
    )


def _check_kanonymity(params: KAnonymityParams, columns: list[ColumnInfo],
                      source: SourceRelease | None) -> None:
    _roles(params, columns)


register(MethodSpec(
    name="kanonymity",
    family="anonymity",
    kind=Kind.release,
    summary="k-anonymity by generalization (Mondrian multidimensional recoding or the optimal "
            "full-domain lattice search), with optional distinct l-diversity, (α,k) and t-closeness; "
            "every release is verified independently.",
    params=KAnonymityParams,
    guarantee="k-anonymity (+ l, α, t when asked) over the quasi-identifiers; not differential privacy",
    paper="LeFevre, DeWitt & Ramakrishnan, Mondrian multidimensional k-anonymity (ICDE 2006); "
          "Kohlmayer et al., Flash (2012); spec 04 §1",
    run=run_kanonymity,
    check=_check_kanonymity,
    produces_randomness=False,
    docs="docs/methods/kanonymity.md",
))


# ------------------------------------------------------------------------------------ risk
class RiskParams(Params):
    quasi_identifiers: list[str] | None = Field(
        None, max_length=32, description="columns an attacker knows; default: the release's or the "
        "schema's quasi-identifiers")
    threshold: int = Field(5, ge=2, le=1_000_000, description="records in classes smaller than this "
                           "count as at risk (individual risk above 1/threshold)")


def _risk_qis(params: RiskParams, columns: list[ColumnInfo], source: SourceRelease | None) -> list[str]:
    declared = source.metadata.get("quasi_identifiers") if source is not None else None
    return resolve_quasi_identifiers(columns, params.quasi_identifiers, declared)


def _risk_plot(table) -> object:
    fig, ax = plt.subplots(figsize=(6, 3.5))
    share = np.cumsum(table["records"].to_numpy()) / max(table["records"].sum(), 1)
    ax.step(table["class_size"], share, where="post")
    ax.set_xscale("log")
    ax.set_xlabel("equivalence class size")
    ax.set_ylabel("share of records in classes ≤ size")
    ax.set_ylim(0, 1.02)
    ax.grid(alpha=0.3)
    ax.set_title("Prosecutor risk: records by class size")
    plot = render_figure(fig)
    plt.close(fig)
    return plot


def run_risk(data: MethodInput, params: RiskParams, ctx: RunContext) -> ReportResult:
    frame = data.frame
    assert frame is not None
    qis = _risk_qis(params, data.columns, data.source)
    ctx.progress(0.1, "grouping records")
    ids = equivalence_classes(frame, qis)
    figures = prosecutor_risk(ids, params.threshold)
    table = class_size_table(ids)
    ctx.progress(0.9, "plotting")
    return ReportResult(
        kind="risk",
        data={"model": "prosecutor", "quasi_identifiers": qis,
              "input": "release" if data.source is not None else "dataset", **figures},
        tables={"class_sizes": table},
        plots={"class_sizes": _risk_plot(table)},
    )


def _check_risk(params: RiskParams, columns: list[ColumnInfo], source: SourceRelease | None) -> None:
    _risk_qis(params, columns, source)


register(MethodSpec(
    name="risk",
    family="anonymity",
    kind=Kind.analysis,
    summary="Re-identification risk of a dataset or a release under the prosecutor model: highest "
            "and average risk, records in small classes, sample uniques.",
    params=RiskParams,
    guarantee="an assessment: no privacy cost, no protection",
    paper="Prosecutor risk (El Emam & Dankar 2008; ARX's risk analysis); spec 04 §1",
    run=run_risk,
    sources=frozenset({Source.dataset, Source.release}),
    check=_check_risk,
    produces_randomness=False,
    docs="docs/methods/risk.md",
))
