"""The registered ``kanonymity`` method (its refusals and release; its parameters are in
params.py, its guarantee's wording in kanonymity_guarantee.py) and the helpers the other
anonymity methods share (risk_method.py: ``risk``; rfk_method.py: ``rfk_anonymity``)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pandas as pd

from app.privacy.anonymity.anonymize import (
    Anonymized, anonymize, flat_warning, numeric_hierarchical_t,
)
from app.privacy.anonymity.kanonymity_guarantee import guarantees_of, population_statements
from app.privacy.anonymity.kmap_estimate import (
    estimate_figures, estimate_statements, estimate_warnings,
)
from app.privacy.anonymity.params import KAnonymityParams
from app.privacy.anonymity.profitability_wording import (
    profitability_figures, profitability_statements, profitability_warnings,
)
from app.privacy.anonymity.risk import prosecutor_risk
from app.privacy.anonymity.risk_thresholds import RiskThresholds, risk_statement
from app.privacy.anonymity.verify import equivalence_classes
from app.privacy.anonymity.verify_profitability import refuse_ambiguous_names
from app.privacy.anonymity.roles import MAX_SENSITIVE, resolve_label, resolve_quasi_identifiers, resolve_sensitive
from app.privacy.context import RunContext
from app.privacy.data import ColumnInfo, MethodInput, SourceRelease, columns_changed_by
from app.privacy.guarantees import raw_determinants
from app.privacy.registry import (
    MethodKind, MethodInputError, at_least_k_records, MethodSpec, register,
)
from app.privacy.results import ReleaseResult


def _roles(params: KAnonymityParams, columns: list[ColumnInfo]) -> tuple[list[str], str | list[str] | None]:
    """The quasi-identifiers and the sensitive column(s) the job's own models hold on (the
    columns of sensitive_models, with theirs, come on top: KAnonymityParams.column_models)."""
    qis = resolve_quasi_identifiers(columns, params.quasi_identifiers)
    own = list(params.sensitive_models or {})
    for name in own:  # known, neither a quasi-identifier nor an identifier
        try:
            resolve_sensitive(columns, name, qis, needed=True)
        except MethodInputError as exc:
            raise MethodInputError(f"sensitive_models: {exc}") from None
    asked = params.constraints().needs_sensitive
    sensitive = resolve_sensitive(columns, params.sensitive, qis, asked)
    named = [] if sensitive is None else [sensitive] if isinstance(sensitive, str) else sensitive
    if own and asked and all(name in own for name in named):
        # every sensitive column has models of its own: the job's would hold on none, unsaid
        raise MethodInputError(
            f"the job's models ({params.constraints().describe(with_k=False)}) hold on the sensitive "
            "columns without an entry in sensitive_models, and every one has its own ("
            + ", ".join(named) + "): name another column in sensitive, or move those models into the entries")
    every = list(dict.fromkeys([*named, *own]))
    if len(every) > MAX_SENSITIVE:
        raise MethodInputError(f"{len(every)} sensitive columns (sensitive and sensitive_models together: "
                               f"{', '.join(every)}); at most {MAX_SENSITIVE}")
    return qis, sensitive


SUBSET_MARKS = {"true": True, "false": False, "yes": True, "no": False, "1": True, "0": False,
                "1.0": True, "0.0": False}


def subset_column(name: str | None, columns: list[ColumnInfo], qis: list[str]) -> str | None:
    """The column marking the research subset: known, not a quasi-identifier, two values at most
    (as the schema's profile knows them), no missing cell."""
    if name is None:
        return None
    by_name = {c.name: c for c in columns}
    if name not in by_name:
        raise MethodInputError(f"unknown research_subset column {name!r}")
    info = by_name[name]
    if name in qis:
        raise MethodInputError(f"research_subset column {name!r} is also a quasi-identifier: it marks who is "
                               "released, and is itself never released")
    if info.role == "identifier":
        raise MethodInputError(f"research_subset column {name!r} is an identifier (dropped): give it another role")
    if info.distinct is not None and info.distinct > 2:
        raise MethodInputError(f"research_subset column {name!r} has {info.distinct} distinct values: it must "
                               "mark each record in or out (true/false, yes/no, 1/0)")
    if info.missing:
        raise MethodInputError(f"research_subset column {name!r} has {info.missing} missing cells: each record "
                               "must be marked in or out")
    return name


def subset_mask(series: pd.Series, name: str) -> np.ndarray:
    """Which records the column marks as in the research subset: a boolean column, the numbers
    1/0, or the texts true/false, yes/no, 1/0 (any case); anything else is refused, naming it."""
    if series.isna().any():
        raise MethodInputError(f"research_subset column {name!r} has {int(series.isna().sum())} missing "
                               "cells: each record must be marked in or out")
    if series.dtype == bool:
        return series.to_numpy(dtype=bool)
    text = series.astype(str).str.strip().str.lower()
    unknown = sorted(set(text.unique()) - set(SUBSET_MARKS))
    if unknown:
        shown = ", ".join(repr(v) for v in unknown[:5]) + (", …" if len(unknown) > 5 else "")
        raise MethodInputError(f"research_subset column {name!r} holds {shown}: it must mark each record "
                               "in or out with true/false, yes/no or 1/0")
    return text.map(SUBSET_MARKS).to_numpy(dtype=bool)


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


def read_through_unchanged(table, result: Anonymized, qis: list[str], released: list[str],
                           risk: RiskThresholds | None = None) -> tuple[dict[str, list[str]], dict | None, list[str]]:
    """The quasi-identifiers that a column released unchanged determines in the input (each of
    its values goes with one value of the QI: Adult's education-num is a code for education),
    and the prosecutor risk over the QIs once those are read through it — an attacker who knows a
    person's education finds it, exact, in education-num, whatever the release did to the
    education column. Returns ({qi: [columns]}, the risk figures or None, warnings); the
    figures are given only when some QI is determined, the warning only when reading it back
    splits the released classes."""
    unchanged = [c for c in released if c not in qis]
    determined = raw_determinants(table, unchanged, qis)
    if not determined:
        return {}, None, []
    through = result.frame.copy()
    for q in determined:  # the determinant's value stands for the QI's input value
        through[q] = table.loc[through.index, q].to_numpy()
    through_ids = equivalence_classes(through, qis)  # grouped once: the risk and the thresholds read it
    figures = prosecutor_risk(through_ids, result.metrics["risk"]["threshold"])
    figures["quasi_identifiers_read_through"] = determined
    if figures["classes"] == result.metrics["classes"]:
        return determined, figures, []
    named = "; ".join(f"{q!r} by {', '.join(map(repr, cols))}" for q, cols in determined.items())
    failed = []
    if risk is not None:  # the thresholds over the classes as read through those columns
        figures["risk_thresholds"] = risk.figures(np.bincount(through_ids))
        failed = risk.failures(figures["risk_thresholds"])
        figures["risk_thresholds_met"] = not failed
    return determined, figures, ([
        f"read through the columns released unchanged ({named}), the risk thresholds fail: "
        + "; ".join(failed) + " — the release is not stated private"] if failed else []) + [
        f"columns released unchanged determine quasi-identifiers in this table ({named}: each of "
        "their values goes with one value of the quasi-identifier), so an attacker who knows the "
        "quasi-identifier reads it back from them and the generalization does not hide it: over "
        f"the quasi-identifiers read that way the smallest class is {figures['smallest_class']} "
        f"(k = {result.achieved.k} without them) and {figures['sample_uniques']} records are "
        "alone in their class (metrics.risk_through_unchanged_columns) — declare those columns "
        "quasi-identifiers too, or leave them out"]


GENERALIZING = ("kanonymity", "rfk_anonymity")  # the methods whose releases hold generalized values


def usable_hierarchies(data: MethodInput) -> tuple[dict, set[str]]:
    """The dataset's hierarchies less those of columns an earlier step of the release's chain
    generalized (the quasi-identifiers of a kanonymity or rfk_anonymity step): they describe raw
    values, and the release holds '*', intervals and sets. Returns them and the generalized
    columns. (rfka and hamdist state k-anonymity too, but select 0/1 indicators: nothing generalized.)"""
    if data.source is None:
        return data.hierarchies, set()
    generalized = {c for step in data.source.steps() if step["method"] in GENERALIZING
                   and step["guarantees"].get("notion") == "k_anonymity"
                   for c in step["guarantees"].get("protected_columns", [])}
    return {c: h for c, h in data.hierarchies.items() if c not in generalized}, generalized


def chain_warnings(result: Anonymized, qis: list[str], generalized: set[str]) -> list[str]:
    """The warning naming the quasi-identifiers an earlier step generalized (anonymized over their
    released values, with or without a dataset hierarchy); the flat-hierarchy warning no longer
    names them: it tells to upload a hierarchy, which cannot help them."""
    named = [q for q in qis if q in generalized]
    if not named:
        return []
    flat = result.metadata.get("flat_hierarchies", [])
    rest = [c for c in flat if c not in named]
    if rest != flat:
        result.warnings = [w for w in result.warnings if w != flat_warning(flat)] + \
            ([flat_warning(rest)] if rest else [])
    return [f"{', '.join(named)}: generalized by an earlier step of this release's chain, so anonymized "
            "over their released values ('*', intervals, sets) without a hierarchy (the dataset's "
            "describe raw values and are not used); to generalize further along a hierarchy, "
            "anonymize the dataset itself with the stronger constraints"]


def changed_qi_warnings(data: MethodInput, qis: list[str]) -> list[str]:
    """The warning naming the quasi-identifiers an earlier step of the chain changed other than
    by generalizing them (randomized, transformed, synthesized: errph, trr, mst, …): the classes
    are counted over those published values, not over the people's true values."""
    if data.source is None:
        return []
    # a k-anonymity step generalized (chain_warnings names those) or selected exact indicators
    changed = columns_changed_by(data.source.steps(), qis,
                                 skip=lambda s: (s.get("guarantees") or {}).get("notion") == "k_anonymity")
    if not changed:
        return []
    named = list(changed)
    methods = sorted({m for q in named for m in changed[q]})
    return [f"{', '.join(named)}: changed by an earlier step of this release's chain "
            f"({', '.join(methods)}), so the classes are counted over the values that release holds "
            "(randomized, transformed or synthetic), not the people's true values: k says how many "
            "of the release's rows share a combination, not how many people do; what the dataset's "
            "people keep from those steps is in chain_guarantees"]


def run_kanonymity(data: MethodInput, params: KAnonymityParams, ctx: RunContext) -> ReleaseResult:
    frame = data.frame
    assert frame is not None
    qis, sensitive = _roles(params, data.columns)
    subset = subset_column(params.research_subset, data.columns, qis)
    population = params.population(subset_mask(frame[subset], subset)) if subset else None
    infos = {c.name: c for c in data.columns}
    identifiers = [c.name for c in data.columns if c.role == "identifier" and c.name in frame.columns]
    if subset:  # it marks who is released, and is not released itself
        frame = frame.drop(columns=[subset])
    refuse_impossible_risk(params, len(frame))
    ctx.progress(0.0, "preparing")
    hierarchies, generalized = usable_hierarchies(data)
    if params.profitability is not None:  # as at submission, for a hierarchy changed since
        refuse_ambiguous_names({q: hierarchies[q] for q in qis if q in hierarchies})
    # k-map estimated from the table as a sample: k-anonymity with the derived k (or k, if larger)
    estimated = params.k_map_estimate(len(frame))
    k = params.release_k(estimated)  # with the no-attack profitability's k = ⌈gain / cost⌉ too
    cost_benefit = params.profitability.cost_benefit() if params.profitability is not None else None
    constraints = replace(params.model_set(k), population=population, profitability=cost_benefit,
                          risk=params.risk_thresholds())
    label = reported_label(params, data.columns, qis)
    options = replace(params.options(), label=label if label in frame.columns else None)
    result = anonymize(frame.drop(columns=identifiers), infos, hierarchies, qis,
                       constraints, sensitive, options, ctx.progress,
                       models=params.column_models(k))
    warnings = chain_warnings(result, qis, generalized) + changed_qi_warnings(data, qis)
    if estimated is not None:
        warnings += estimate_warnings(estimated, params.k)
    if params.metric == "classification" and frame[options.label].nunique(dropna=False) < 2:
        # every class then predicts it perfectly: the metric weighs suppression alone
        warnings.append(f"the label {options.label!r} holds a single value (a missing value counts as one): "
                        "metric 'classification' cannot tell one generalization from another, so the release "
                        "is the first it found with the least suppression; choose another label or metric")
    labels = [c.name for c in data.columns if c.role == "label" and c.name in qis]
    if labels:  # allowed (a label can identify), but rarely what was meant
        warnings.append(f"the label {labels[0]!r} is a quasi-identifier here: it is generalized like "
                        "the others, so a model trained on the release learns the generalized classes")
    released = list(result.frame.columns)
    determined, through, through_warnings = read_through_unchanged(
        frame.drop(columns=identifiers), result, qis, released, constraints.risk)
    metrics = dict(result.metrics)
    if through is not None:
        metrics["risk_through_unchanged_columns"] = through
    metadata = dict(result.metadata)
    if identifiers:
        metadata["dropped_identifiers"] = identifiers
    population_warnings = []
    if estimated is not None:
        metadata["k_map_estimate"] = {**estimated.as_dict(), "release_k": k}
    if subset:
        metadata["population"] = {"research_subset_column": subset, **metadata["population"]}
        if params.delta_presence is not None and params.algorithm == "mondrian":
            metadata["population"]["categorical_release"] = "children"
        if determined:  # the population's counts were not recomputed through those columns
            population_warnings.append(
                "k_map and delta_presence were checked over the generalized quasi-identifiers, and columns "
                "released unchanged determine some of them (determined_by_unprotected): an attacker reads "
                "those exactly, which narrows the population a released class matches — the release is "
                "not stated private; declare those columns quasi-identifiers too, or leave them out")
    profitability = result.metadata.get("profitability")
    risk = result.metadata.get("risk_thresholds")
    ctx.progress(1.0, "done")
    return ReleaseResult(
        frame=result.frame.reset_index(drop=True),
        columns=release_columns(data.columns, released, qis),
        guarantees=guarantees_of(
            result, constraints, qis, released,
            # an estimate alone (derived k = 1, k = 1) leaves the release without k-anonymity
            # the payout model may keep classes where the attack pays: their records are not protected
            private=(through is None or through["smallest_class"] >= k) and not population_warnings
            and (through is None or through.get("risk_thresholds_met", True))
            and not (estimated is not None and k == 1)
            and not (profitability is not None and profitability["classes_attack_profitable"] > 0),
            extra_statements=(population_statements(result, constraints, subset) if subset else
                              estimate_statements(estimated, k) if estimated is not None else [])
            + (profitability_statements(profitability) if profitability is not None else [])
            + ([risk_statement(risk)] if risk is not None else []),
            extra_warnings=warnings + through_warnings + population_warnings
            + (profitability_warnings(profitability) if profitability is not None else []),
            determined=determined,
            extra_figures={**(estimate_figures(estimated) if estimated is not None else {}),
                           **(profitability_figures(profitability) if profitability is not None else {}),
                           **({"risk_thresholds": risk} if risk is not None else {})}),
        metrics=metrics,
        metadata=metadata,
        hierarchies_used=result.metadata.get("uploaded_hierarchies", []),
    )


def _check_kanonymity(params: KAnonymityParams, columns: list[ColumnInfo],
                      source: SourceRelease | None) -> None:
    qis, sensitive = _roles(params, columns)
    subset_column(params.research_subset, columns, qis)
    classification_label(params, columns, qis)
    by_name = {c.name: c for c in columns}
    own = params.column_models()
    for name in [sensitive] if isinstance(sensitive, str) else sensitive or []:
        if name not in own and params.t_distance == "hierarchical" and by_name[name].type == "numeric":
            raise MethodInputError(numeric_hierarchical_t(name))
    for name, models in own.items():
        if models.t_distance == "hierarchical" and by_name[name].type == "numeric":
            raise MethodInputError(f"sensitive_models[{name!r}]: {numeric_hierarchical_t(name)}")


def classification_label(params: KAnonymityParams, columns: list[ColumnInfo], qis: list[str]) -> str | None:
    """The label metric 'classification' reads (given, else the schema's one of role 'label'; a
    numeric one's values read as categories), or None for the other metrics."""
    if params.metric != "classification":
        return None
    return _label(params, columns, qis)


def reported_label(params: KAnonymityParams, columns: list[ColumnInfo], qis: list[str]) -> str | None:
    """The label metrics.classification is reported for: metric 'classification''s, else the
    schema's one column of role 'label' when it is released as is (not a quasi-identifier, not
    research_subset) — so any release shows what a majority-label classifier of it would get wrong."""
    if params.metric == "classification":
        return _label(params, columns, qis)
    declared = [c.name for c in columns if c.role == "label"]
    if len(declared) == 1 and declared[0] not in qis and declared[0] != params.research_subset:
        return declared[0]
    return None


def _label(params: KAnonymityParams, columns: list[ColumnInfo], qis: list[str]) -> str:
    name = resolve_label(columns, params.label, qis, numeric=True)
    if name == params.research_subset:
        raise MethodInputError(f"label: column {name!r} is research_subset, which marks the records released "
                               "and is not released itself; choose another label")
    return name


def refuse_impossible_risk(params: KAnonymityParams, rows: int) -> None:
    """A risk threshold only the empty release meets (at submission, and in the run for a direct
    library call): a MethodInputError, not a release of nothing."""
    risk = params.risk_thresholds()
    why = risk.impossible(rows) if risk is not None else None
    if why:
        raise MethodInputError(why)


def _kanonymity_rows(params: KAnonymityParams, rows: int, columns: list[ColumnInfo] | None = None) -> None:
    at_least_k_records(params, rows, columns)
    estimated = params.k_map_estimate(rows)
    if estimated is not None and estimated.derived_k > rows:
        raise MethodInputError(
            f"k_map = {params.k_map} estimated with {params.k_map_estimator} at significance "
            f"{params.significance:g} derives k = {estimated.derived_k}, above the table's {rows} records: no "
            "class can be that large; lower k_map or raise significance")
    if estimated is not None:
        params.check_l_against(max(params.k, estimated.derived_k))
    if estimated is None and params.k_map is not None and params.k_map > rows:
        raise MethodInputError(f"the population has {rows} records, fewer than k_map = {params.k_map}")
    refuse_impossible_risk(params, rows)
    model = params.profitability
    if model is not None and model.no_attack and model.cost_benefit().derived_k > rows:
        raise MethodInputError(
            f"profitability.no_attack needs classes of at least ⌈adversary_gain / adversary_cost⌉ = "
            f"{model.cost_benefit().derived_k} records ({model.adversary_gain:g} / {model.adversary_cost:g}), "
            f"above the table's {rows} records: lower adversary_gain or raise adversary_cost")


def _kanonymity_hierarchies(params: KAnonymityParams, columns: list[ColumnInfo], hierarchy) -> None:
    """profitability: no name of an uploaded QI hierarchy labels two levels' nodes covering different
    values (its check reads labels by name: verify_profitability.ambiguous_names)."""
    if params.profitability is not None:
        qis = resolve_quasi_identifiers(columns, params.quasi_identifiers)
        tables = {c.name: hierarchy(c.name) for c in columns if c.name in qis and c.has_hierarchy}
        refuse_ambiguous_names({q: t for q, t in tables.items() if t is not None})


register(MethodSpec(
    name="kanonymity",
    family="anonymity",
    kind=MethodKind.release,
    summary="k-anonymity by generalization (Mondrian multidimensional recoding or the optimal "
            "full-domain lattice search), with optional l-diversity (distinct, entropy, recursive), "
            "(α,k), t-closeness (ordered, equal or hierarchical distance), β-likeness and "
            "δ-disclosure privacy; or, releasing a research subset of the table as population, "
            "k-map and δ-presence; or k-map estimated from the table as a random sample (Poisson or "
            "zero-truncated Poisson, as ARX); or ARX's game-theoretic profitability (a class kept iff "
            "the publisher's expected payout is positive; no-attack: k = ⌈gain / cost⌉); ARX's risk "
            "thresholds (average re-identification risk, records at risk, sample uniqueness); every release "
            "is verified independently.",
    params=KAnonymityParams,
    guarantee="k-anonymity (+ l, α, t, β, δ, or k-map and δ-presence over a population, when asked; an "
              "estimated k-map is k-anonymity with the derived k, the k-map itself an estimate; the risk "
              "thresholds as asked) over the quasi-identifiers; profitability is an economic model, not a formal guarantee; not "
              "differential privacy",
    paper="LeFevre, DeWitt & Ramakrishnan, Mondrian multidimensional k-anonymity (ICDE 2006); "
          "Kohlmayer et al., Flash (2012); Machanavajjhala et al., l-diversity (2007); Li et al., "
          "t-closeness (2007); Cao & Karras, β-likeness (2012); Brickell & Shmatikov, δ-disclosure "
          "(2008); Nergiz, Atzori & Clifton, δ-presence (SIGMOD 2007); El Emam & Dankar, k-map (JAMIA "
          "2008); Wan et al., game-theoretic re-identification risk (PLOS ONE 2015); spec 04 §1",
    run=run_kanonymity,
    check=_check_kanonymity,
    check_rows=_kanonymity_rows,
    check_hierarchies=_kanonymity_hierarchies,
    produces_randomness=False,
    uses_hierarchies=True,
    docs="docs/methods/kanonymity.md",
    slow_params=('time_budget', 'max_lattice_nodes'),
))
