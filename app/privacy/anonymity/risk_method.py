"""The registered ``risk`` method: re-identification risk of a dataset or a release (prosecutor,
and with a sampling fraction the population estimates and the estimated k-map level), the attribute-disclosure levels it
meets, and over a research subset its k-map and δ-presence figures."""

from __future__ import annotations

import numpy as np
import pandas as pd
from matplotlib.figure import Figure  # no pyplot: no global state, no GUI backend
from pydantic import Field, model_validator

from app.privacy.anonymity.methods import subset_column, subset_mask
from app.privacy.anonymity.kmap_estimate import DEFAULT_SIGNIFICANCE, significance_field
from app.privacy.anonymity.risk import (
    class_size_table, estimated_k_map, k_map_table, population_risk, population_table, prosecutor_risk,
)
from app.privacy.anonymity.roles import MAX_SENSITIVE, resolve_quasi_identifiers, resolve_sensitive
from app.privacy.anonymity.verify import disclosure_levels, equivalence_classes
from app.privacy.context import RunContext
from app.privacy.data import ColumnInfo, MethodInput, SourceRelease
from app.privacy.registry import (
    MethodInputError, MethodKind, MethodSpec, Params, MethodSource, register,
)
from app.privacy.results import ReportResult, render_figure


class RiskParams(Params):
    quasi_identifiers: list[str] | None = Field(
        None, max_length=32, description="columns an attacker knows; default: the release's or the "
        "schema's quasi-identifiers")
    threshold: int = Field(5, ge=2, le=1_000_000, description="records in classes smaller than this "
                           "count as at risk (individual risk above 1/threshold)")
    sampling_fraction: float | None = Field(
        None, gt=0.0, le=1.0, description="the table is a sample holding this share of its "
        "population: adds marketer risk and population uniqueness (Zayatz, Pitman, SNB, Dankar's "
        "rule) and the estimated k-map level (the largest k_map kanonymity's k_map_estimator would "
        "find the table meets, per estimator); or give population_size; neither: prosecutor risk only")
    population_size: int | None = Field(
        None, ge=1, le=10_000_000_000, description="the table is a sample of a population of this many "
        "people (at least the table's records): the same figures as sampling_fraction = records / "
        "population_size; or give sampling_fraction")
    significance: float = significance_field(
        "with sampling_fraction: the significance of the estimated k-map level, as kanonymity's (the largest "
        "probability that a population class of at most k_map people shows the derived k records or more; "
        "ARX's default 0.01)")
    sensitive: str | list[str] | None = Field(
        None, description="a sensitive column: adds the attribute-disclosure levels the table meets "
        "over the quasi-identifiers (distinct and entropy l, recursive c, α, t, β, δ-disclosure), "
        "against its own distribution of the column; or a list of columns (at most 8): the levels "
        "of each, by column")
    recursive_l: int = Field(2, ge=2, le=10_000, description="the l at which recursive (c,l)-diversity's "
                             "c is reported (with sensitive)")
    research_subset: str | None = Field(
        None, description="a column marking a research subset of the table, which is then the population "
        "(true/false, yes/no, 1/0, or a boolean column): adds the k-map figure (the smallest population "
        "class holding a research record) and the δ-presence range (the smallest and largest share of "
        "research records over every class) the table meets over the quasi-identifiers")

    @model_validator(mode="after")
    def _significance_with_a_sample(self):
        if self.sampling_fraction is not None and self.population_size is not None:
            raise ValueError("sampling_fraction and population_size both give the population: give one "
                             "(sampling_fraction = records / population_size)")
        if not self.sampled and self.significance != DEFAULT_SIGNIFICANCE:
            raise ValueError("significance is read with sampling_fraction or population_size only (the "
                             "estimated k-map level of the table as a sample of a population): give one of "
                             "them too, or drop it")
        return self

    @property
    def sampled(self) -> bool:
        """Whether the table is read as a sample of a population."""
        return self.sampling_fraction is not None or self.population_size is not None

    def fraction(self, records: int) -> float:
        """The sampling fraction: given, or the table's share of population_size (a
        MethodInputError when the population is smaller than the table)."""
        if self.population_size is None:
            return float(self.sampling_fraction)
        if self.population_size < records:
            raise MethodInputError(f"population_size = {self.population_size} is below the table's {records} "
                                   "records: the table is a sample of the population, so the population "
                                   "holds at least as many")
        return records / self.population_size

    @model_validator(mode="after")
    def _few_sensitive(self):
        if isinstance(self.sensitive, list) and len(self.sensitive) > MAX_SENSITIVE:
            raise ValueError(f"{len(self.sensitive)} sensitive columns; at most {MAX_SENSITIVE}")
        return self


def _risk_sensitive(params: RiskParams, columns: list[ColumnInfo], qis: list[str]) -> str | list[str] | None:
    return resolve_sensitive(columns, params.sensitive, qis, needed=False)


def _disclosure_table(levels: dict) -> pd.DataFrame:
    """One row per model: the level the table meets and what it means."""
    def figure(entry):
        return entry["level"] if isinstance(entry, dict) else entry
    rows = [
        ("distinct l-diversity", levels["l_distinct"], "met for every l up to this"),
        ("entropy l-diversity", levels["entropy_l"], "met for every l up to this (e^entropy of the least diverse class)"),
        (f"recursive (c,l)-diversity, l = {levels['recursive']['l']}", figure(levels["recursive"]),
         "met for every c above this" if levels["recursive"]["level"] is not None else levels["recursive"]["reason"]),
        ("(α,k)-anonymity", levels["alpha"], "met for every α from this (the largest share of a value in a class)"),
        (f"t-closeness ({levels['distance']} distance)", levels["t"], "met for every t from this"),
        ("basic β-likeness", levels["beta_basic"], "met for every β from this (the largest relative gain)"),
        ("enhanced β-likeness", figure(levels["beta_enhanced"]),
         "met for every β from this" if levels["beta_enhanced"]["level"] is not None else levels["beta_enhanced"]["reason"]),
        ("δ-disclosure privacy", figure(levels["delta_disclosure"]),
         "met for every δ above this" if levels["delta_disclosure"]["level"] is not None
         else levels["delta_disclosure"]["reason"]),
    ]
    return pd.DataFrame(rows, columns=["model", "level", "meaning"])


def _risk_qis(params: RiskParams, columns: list[ColumnInfo], source: SourceRelease | None) -> list[str]:
    declared = source.metadata.get("quasi_identifiers") if source is not None else None
    return resolve_quasi_identifiers(columns, params.quasi_identifiers, declared)


def _risk_plot(table) -> object:
    fig = Figure(figsize=(6, 3.5))
    ax = fig.subplots()
    share = np.cumsum(table["records"].to_numpy()) / max(table["records"].sum(), 1)
    ax.step(table["class_size"], share, where="post")
    ax.set_xscale("log")
    ax.set_xlabel("equivalence class size")
    ax.set_ylabel("share of records in classes ≤ size")
    ax.set_ylim(0, 1.02)
    ax.grid(alpha=0.3)
    ax.set_title("Prosecutor risk: records by class size")
    return render_figure(fig)


def run_risk(data: MethodInput, params: RiskParams, ctx: RunContext) -> ReportResult:
    frame = data.frame
    assert frame is not None
    qis = _risk_qis(params, data.columns, data.source)
    ctx.progress(0.1, "grouping records")
    ids = equivalence_classes(frame, qis)
    figures = prosecutor_risk(ids, params.threshold)
    table = class_size_table(ids)
    tables = {"class_sizes": table}
    if params.sampled:
        ctx.progress(0.5, "estimating population uniqueness")
        fraction = params.fraction(len(frame))
        figures["population"] = population_risk(ids, fraction)
        if params.population_size is not None:  # as given, not n / (n / N) rounded
            figures["population"]["population_size"] = params.population_size
        tables["population_uniqueness"] = population_table(figures["population"])
        figures["population"]["k_map_estimate"] = estimated_k_map(ids, fraction, params.significance)
        tables["k_map_estimate"] = k_map_table(figures["population"]["k_map_estimate"])
    sensitive = _risk_sensitive(params, data.columns, qis)
    if sensitive is not None:
        ctx.progress(0.7, "measuring attribute disclosure")
        types = {c.name: c.type for c in data.columns}
        levels = {name: disclosure_levels(frame, qis, name, numeric=types[name] == "numeric",
                                          recursive_l=params.recursive_l)
                  for name in ([sensitive] if isinstance(sensitive, str) else sensitive)}
        if isinstance(sensitive, str):
            figures["attribute_disclosure"] = levels[sensitive]
            tables["attribute_disclosure"] = _disclosure_table(levels[sensitive])
        else:  # several columns: each one's levels, by column (a table row per column and model)
            figures["attribute_disclosure"] = levels
            tables["attribute_disclosure"] = pd.concat(
                [_disclosure_table(one).assign(column=name) for name, one in levels.items()],
                ignore_index=True)[["column", "model", "level", "meaning"]]
    if params.research_subset is not None:
        figures["population_models"] = population_figures(
            ids, subset_mask(frame[params.research_subset], params.research_subset), params.research_subset)
    ctx.progress(0.9, "plotting")
    return ReportResult(
        kind="risk",
        data={"model": "prosecutor", "quasi_identifiers": qis,
              "input": "release" if data.source is not None else "dataset", **figures},
        tables=tables,
        plots={"class_sizes": _risk_plot(table)},
    )


def population_figures(ids: np.ndarray, in_subset: np.ndarray, column: str) -> dict:
    """The k-map and δ-presence levels a table meets as a population with a research subset:
    per class t research and p population records; k-map the smallest p of a class with t > 0,
    δ-presence the range of t / p over every class (a class without research records is 0)."""
    t = np.bincount(ids[in_subset], minlength=int(ids.max()) + 1 if len(ids) else 0)
    p = np.bincount(ids, minlength=len(t))
    share = t / np.maximum(p, 1)
    return {"research_subset": column, "records": int(len(ids)), "research_records": int(in_subset.sum()),
            "classes": int(len(p)), "classes_without_research_records": int((t == 0).sum()),
            "k_map": int(p[t > 0].min()) if (t > 0).any() else None,
            "delta_presence": [float(share.min()), float(share.max())] if len(p) else None}


def _risk_rows(params: RiskParams, rows: int, columns: list[ColumnInfo] | None = None) -> None:
    if params.sampled:
        params.fraction(rows)


def _check_risk(params: RiskParams, columns: list[ColumnInfo], source: SourceRelease | None) -> None:
    qis = _risk_qis(params, columns, source)
    _risk_sensitive(params, columns, qis)
    if params.research_subset is not None:
        subset_column(params.research_subset, columns, qis)


register(MethodSpec(
    name="risk",
    family="anonymity",
    kind=MethodKind.analysis,
    summary="Re-identification risk of a dataset or a release under the prosecutor model: highest "
            "and average risk, records in small classes, sample uniques; with a sampling fraction, "
            "marketer risk, population uniqueness and the estimated k-map level too; with a sensitive column, the attribute-"
            "disclosure levels the table meets (l, α, t, β, δ).",
    params=RiskParams,
    guarantee="an assessment: no privacy cost, no protection",
    paper="Prosecutor and marketer risk, population uniqueness (ARX; Dankar et al. 2012); the estimated "
          "k-map level (El Emam & Dankar 2008, as kanonymity's k_map_estimator); spec 04 §1",
    run=run_risk,
    sources=frozenset({MethodSource.dataset, MethodSource.release}),
    check=_check_risk,
    check_rows=_risk_rows,
    produces_randomness=False,
    docs="docs/methods/risk.md",
))
