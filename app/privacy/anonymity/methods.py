"""The registered ``kanonymity`` method (its parameters, refusals, guarantee and release) and the
helpers the other anonymity methods share (risk_method.py: ``risk``; rfk_method.py:
``rfk_anonymity``)."""

from __future__ import annotations

from dataclasses import replace
from typing import Annotated, Literal

import numpy as np
import pandas as pd
from pydantic import Field, model_validator

from app.privacy.anonymity.anonymize import (
    Anonymized, Options, anonymize, flat_warning, numeric_hierarchical_t,
)
from app.privacy.anonymity.kmap_estimate import (
    DEFAULT_SIGNIFICANCE, KMapEstimate, estimate, estimate_figures, estimate_statements, estimate_warnings,
    significance_field,
)
from app.privacy.anonymity.models import Constraints, Population
from app.privacy.anonymity.risk import (
    frame_risk,
)
from app.privacy.anonymity.roles import MAX_SENSITIVE, resolve_quasi_identifiers, resolve_sensitive
from app.privacy.anonymity.wording import as_given, below, rounded
from app.privacy.context import RunContext
from app.privacy.data import ColumnInfo, MethodInput, SourceRelease, columns_changed_by
from app.privacy.guarantees import guarantee, raw_determinants
from app.privacy.registry import (
    MethodKind, MethodInputError, at_least_k_records, MethodSpec, Params, register,
)
from app.privacy.results import ReleaseResult

NO_RANDOMNESS = "none: deterministic generalization (no randomness drawn)"
NOT_DP = ("k-anonymity is not differential privacy: it limits linkage through the declared "
          "quasi-identifiers only; an attacker with other background knowledge, or with several "
          "releases of the same data, is not covered")


class AttributeModels(Params):
    """The attribute-disclosure models, which read a sensitive column: the job's set (these
    fields on kanonymity's parameters) and a column's own (an entry of sensitive_models)."""

    l: int | None = Field(None, ge=2, le=10_000, description="l-diversity, read as l_diversity says "
                          "(by default distinct l-diversity = p-sensitivity: at least l distinct "
                          "sensitive values per class)")
    l_diversity: Literal["distinct", "entropy", "recursive"] = Field(
        "distinct", description="how l is read: 'distinct' (at least l distinct values), 'entropy' "
        "(every class's sensitive entropy −Σ p ln p at least ln l), 'recursive' (recursive "
        "(c,l)-diversity: the commonest value's count r1 below c times the sum of the l-th "
        "commonest and rarer, r1 < c (r_l + … + r_m); needs c)")
    c: float | None = Field(None, gt=0.0, le=10_000.0, description="recursive (c,l)-diversity's c "
                            "(with l_diversity 'recursive' only)")
    alpha: float | None = Field(None, gt=0.0, le=1.0, description="(α,k)-anonymity: no sensitive "
                                "value above this share of a class")
    t: float | None = Field(None, ge=0.0, le=1.0, description="t-closeness: EMD between each class's "
                            "sensitive distribution and the table's at most t (ordered distance for "
                            "a numeric sensitive column, equal distance for a categorical one, or "
                            "as t_distance says)")
    t_distance: Literal["auto", "hierarchical"] = Field(
        "auto", description="t-closeness's ground distance: 'auto' (ordered for a numeric sensitive "
        "column, equal for a categorical one) or 'hierarchical' (a categorical column's uploaded "
        "hierarchy: two values level(LCA)/H apart, H its height)")
    beta: float | None = Field(None, gt=0.0, le=1_000_000.0, description="β-likeness: no sensitive "
                               "value's share in a class exceeds its share q in the whole table by a "
                               "relative gain (p − q)/q above beta (or, enhanced, above min(beta, −ln q))")
    beta_likeness: Literal["basic", "enhanced"] = Field(
        "enhanced", description="which β-likeness (Cao & Karras 2012): 'enhanced' also caps each "
        "value's gain at −ln q, which binds for common values (a class's share stays below "
        "q (1 − ln q) < 1); 'basic' caps every gain at beta")
    delta_disclosure: float | None = Field(
        None, gt=0.0, le=100.0, description="δ-disclosure privacy (Brickell & Shmatikov 2008): "
        "|ln(p/q)| below this for every class and every sensitive value of the table (p the class's "
        "share, q the table's), so every class holds every value")

    @property
    def asks_a_model(self) -> bool:
        return any(v is not None for v in (self.l, self.alpha, self.t, self.beta, self.delta_disclosure))

    def check_models(self, k: int, where: str = "") -> None:
        """A model half given, or l above k: a ValueError, its message after ``where``."""
        problem = None
        if self.l is not None and self.l > k:
            problem = "l cannot exceed k: a class of k records holds at most k distinct values"
        elif self.l is None and self.l_diversity != "distinct":
            problem = f"l_diversity = '{self.l_diversity}' reads l, and l is not given"
        elif (self.l_diversity == "recursive") != (self.c is not None):
            problem = ("c is recursive (c,l)-diversity's: give l, l_diversity = 'recursive' and c "
                       "together" if self.c is not None else
                       "l_diversity = 'recursive' needs c (r1 < c (r_l + … + r_m))")
        elif self.t is None and self.t_distance != "auto":
            problem = "t_distance chooses t-closeness's distance, and t is not given"
        elif self.beta is None and self.beta_likeness != "enhanced":
            problem = "beta_likeness chooses how beta is read, and beta is not given"
        if problem is not None:
            raise ValueError(where + problem)

    def model_set(self, k: int) -> Constraints:
        return Constraints(k=k, l=self.l, alpha=self.alpha, t=self.t, l_diversity=self.l_diversity,
                           c=self.c, beta=self.beta, beta_likeness=self.beta_likeness,
                           delta_disclosure=self.delta_disclosure, t_distance=self.t_distance)


class SensitiveModels(AttributeModels):
    """One sensitive column's own models (an entry of kanonymity's sensitive_models): the same
    fields, bounds and readings as the job's set."""


Share = Annotated[float, Field(ge=0.0, le=1.0)]  # a bound of δ-presence


class KAnonymityParams(AttributeModels):
    k: int = Field(5, ge=1, le=100_000, description="every equivalence class has at least k records "
                   "(1, no k-anonymity of the released records, only with k_map or delta_presence)")
    research_subset: str | None = Field(
        None, description="ARX's population setting: the table is the population, and this column "
        "marks the research subset released (true/false, yes/no, 1/0, or a boolean column); the "
        "classes are formed over the whole population and only the subset's records are released, "
        "without this column. Read by k_map and delta_presence")
    k_map: int | None = Field(
        None, ge=1, le=1_000_000, description="k-map: every released class's generalized "
        "quasi-identifiers match at least k_map records of the population — counted over the table "
        "with research_subset, or estimated from the table as a sample with k_map_estimator")
    k_map_estimator: Literal["poisson", "zero_truncated_poisson"] | None = Field(
        None, description="k-map estimated without a population table (El Emam & Dankar 2008; ARX's "
        "KMap with a population model): the table is a random sample of a population given by "
        "sampling_fraction or population_size, and the release is k-anonymous with the smallest k whose "
        "classes would come from a population class of at most k_map records with probability at most "
        "significance: 'poisson' (D3, P(f ≥ k) under Poisson(π·k_map)) or 'zero_truncated_poisson' (D4, "
        "the same given the class shows in the sample). An estimate under a random-sampling model, not "
        "a count; not with research_subset")
    sampling_fraction: float | None = Field(
        None, gt=0.0, le=1.0, description="with k_map_estimator: the table holds this share of its "
        "population (as risk's sampling_fraction); or give population_size")
    population_size: int | None = Field(
        None, ge=1, le=10_000_000_000, description="with k_map_estimator: the population the table was "
        "sampled from has this many people (at least the table's records; the sampling fraction is "
        "records / population_size); or give sampling_fraction")
    significance: float = significance_field(
        "with k_map_estimator: the largest probability that a population class of at most k_map records "
        "shows in the sample with the derived k records or more (the test's type I error; ARX's default 0.01)")
    delta_presence: tuple[Share, Share] | None = Field(
        None, description="δ-presence [delta_min, delta_max] (with research_subset; Nergiz et al. 2007): in "
        "every class of the population — those with no research record too — the share of records in "
        "the research subset lies between the two, so whoever holds the population cannot tell "
        "whether a person is in the subset with more or less confidence than that")
    algorithm: Literal["mondrian", "lattice"] = Field(
        "mondrian", description="'mondrian': strict multidimensional local recoding; 'lattice': "
        "optimal full-domain generalization over the hierarchy levels")
    quasi_identifiers: list[str] | None = Field(
        None, max_length=32, description="columns to generalize; default: the schema's quasi-identifiers")
    sensitive: str | list[str] | None = Field(
        None, description="sensitive column for l, alpha, t, beta and delta_disclosure, or a list of "
        "columns (at most 8), each of which must then meet every one of them; default: the schema's "
        "sensitive column, or all of them when it declares several")
    sensitive_models: dict[str, SensitiveModels] | None = Field(
        None, description="models of a column's own, by column name: {column: {l, l_diversity, c, "
        "alpha, t, t_distance, beta, beta_likeness, delta_disclosure}} (ARX's per-attribute "
        "criteria, e.g. recursive (c,l)-diversity on one column and t-closeness on another). A "
        "column named here meets exactly its own set, not the job's l/alpha/t/beta/"
        "delta_disclosure, and is sensitive whether or not sensitive names it; the columns of "
        "sensitive without an entry meet the job's set. At most 8 sensitive columns in all")
    suppression: float = Field(0.0, ge=0.0, le=0.5, description="lattice: largest share of records "
                               "that may be suppressed (removed), e.g. 0.04 for 4%")
    time_budget: float = Field(30.0, gt=0.0, le=600.0, description="lattice: seconds of search after "
                               "which the best generalization found so far is released, flagged")
    max_lattice_nodes: int = Field(200_000, ge=1, le=2_000_000, description="lattice: above this many "
                                   "nodes a greedy climb replaces the optimal search (flagged)")
    metric: Literal["ncp", "entropy", "entropy_monotonic"] = Field(
        "ncp", description="lattice: the information loss minimized — average NCP (suppressed cells "
        "count 1), non-uniform entropy (suppressed records as fully generalized), or ARX's "
        "monotonic non-uniform entropy (suppression not counted)")
    categorical_release: Literal["ancestor", "children"] = Field(
        "ancestor", description="mondrian: release a class's lowest common ancestor in the "
        "hierarchy, or the set of its children the class holds ('{a|b}', lower NCP); with "
        "delta_presence always the children (two classes released at the same ancestor could both "
        "match a person of the population)")
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
        self._population_models()
        self.check_models(self.k)
        listed = [self.sensitive] if isinstance(self.sensitive, str) else list(self.sensitive or [])
        own = self.sensitive_models or {}
        every = list(dict.fromkeys([*listed, *own]))
        if len(every) > MAX_SENSITIVE:
            raise ValueError(f"{len(every)} sensitive columns"
                             + (" (sensitive and sensitive_models together)" if own else "")
                             + f"; at most {MAX_SENSITIVE}")
        for column, models in own.items():
            if not models.asks_a_model:
                raise ValueError(f"sensitive_models[{column!r}] sets no model: give it at least one of l, "
                                 "alpha, t, beta and delta_disclosure, or leave the column out (a column of "
                                 "sensitive without an entry meets the job's models)")
            models.check_models(self.k, f"sensitive_models[{column!r}]: ")
        # an option of the other algorithm was ignored without a word: suppression = 0.04 with
        # Mondrian (which suppresses nothing) released a coarser table than the caller asked for
        ignored = [f"{name} = {getattr(self, name)!r}" for name in _ONLY_FOR[_OTHER[self.algorithm]]
                   if getattr(self, name) != type(self).model_fields[name].default]
        if ignored:
            raise ValueError(f"{', '.join(ignored)} {'apply' if len(ignored) > 1 else 'applies'} to "
                             f"algorithm '{_OTHER[self.algorithm]}' only, "
                             f"and this job runs '{self.algorithm}': drop it or choose the other algorithm")
        return self

    @property
    def k_map_estimated(self) -> bool:
        return self.k_map_estimator is not None

    def _estimated_k_map(self) -> None:
        """k_map_estimator, sampling_fraction, population_size and significance: together, and
        not with research_subset (a ValueError naming the fields)."""
        population = ("sampling_fraction", "population_size")
        given = [name for name in population if getattr(self, name) is not None]
        if not self.k_map_estimated:
            unread = given + (["significance"] if self.significance != DEFAULT_SIGNIFICANCE else [])
            if unread:
                raise ValueError(f"{', '.join(unread)} {'are' if len(unread) > 1 else 'is'} read by "
                                 "k_map_estimator only (k-map estimated from the table as a sample of "
                                 "a population): give k_map and k_map_estimator too, or drop "
                                 + ("them" if len(unread) > 1 else "it"))
            return
        if self.research_subset is not None:
            raise ValueError("k_map_estimator estimates k-map from the table as a sample of an unseen "
                             "population, and research_subset makes the table the population, where "
                             "k_map is counted exactly: drop k_map_estimator (and sampling_fraction, "
                             "population_size, significance) or research_subset")
        if self.k_map is None:
            raise ValueError("k_map_estimator estimates k-map: give k_map, the population class size "
                             "every released class should match")
        if len(given) != 1:
            raise ValueError("k_map_estimator needs the population: give exactly one of sampling_fraction "
                             "(the table's share of it) and population_size"
                             + (" (both were given)" if given else ""))

    def k_map_estimate(self, records: int) -> KMapEstimate | None:
        """The derived k of the estimated k-map on a table of ``records`` records (None without
        k_map_estimator); a MethodInputError when the population or the table cannot hold it."""
        if not self.k_map_estimated:
            return None
        if self.population_size is not None and self.population_size < records:
            raise MethodInputError(f"population_size = {self.population_size} is below the table's {records} "
                                   "records: the table is a sample of the population, so the population "
                                   "holds at least as many")
        return estimate(self.k_map, self.k_map_estimator, self.significance, records,
                        sampling_fraction=self.sampling_fraction, population_size=self.population_size)

    def _population_models(self) -> None:
        """research_subset, k_map and delta_presence: given together and on their own (a
        ValueError naming the problem)."""
        self._estimated_k_map()
        if self.k_map_estimated:  # k_map over a sample: checked above; k = 1 is allowed with it
            if self.delta_presence is not None:
                raise ValueError("delta_presence is read over a research subset of the population, and "
                                 "k_map_estimator has none: drop one of them")
            return
        population = self.k_map is not None or self.delta_presence is not None
        if population and self.research_subset is None:
            raise ValueError("k_map and delta_presence are read over a research subset of the population: "
                             "name the column that marks it in research_subset"
                             + (" (or estimate k_map from the table as a sample of a population: "
                                "k_map_estimator with sampling_fraction or population_size)"
                                if self.delta_presence is None else ""))
        if self.research_subset is not None and not population:
            raise ValueError("research_subset is read by k_map and delta_presence: give one of them (to "
                             "release some records only under k-anonymity, upload those records alone)")
        if self.k == 1 and not population:
            raise ValueError("k = 1 asks no k-anonymity at all: it is allowed only with k_map or delta_presence")
        if self.delta_presence is not None:
            low, high = self.delta_presence
            if low > high:
                raise ValueError(f"delta_presence [{low:g}, {high:g}]: delta_min is above delta_max")
        if population and (self.asks_a_model or self.sensitive_models or self.sensitive is not None):
            raise ValueError("k_map and delta_presence do not combine with the sensitive-column models (sensitive, "
                             "l, alpha, t, beta, delta_disclosure, sensitive_models): those would have to be "
                             "read on the research subset's records only, which is not implemented")

    def population(self, in_subset) -> Population | None:
        if self.research_subset is None:
            return None
        low, high = self.delta_presence if self.delta_presence is not None else (None, None)
        return Population(in_subset=in_subset, k_map=self.k_map, delta_min=low, delta_max=high)

    def constraints(self) -> Constraints:
        return self.model_set(self.k)

    def column_models(self, k: int | None = None) -> dict[str, Constraints]:
        """The columns with models of their own, and those models (with the job's k, or the one given)."""
        return {column: models.model_set(self.k if k is None else k)
                for column, models in (self.sensitive_models or {}).items()}

    def options(self) -> Options:
        # δ-presence needs released classes that never match the same person: two classes
        # released at the same ancestor can (the categorical_release description says so)
        children = self.delta_presence is not None and self.algorithm == "mondrian"
        return Options(algorithm=self.algorithm, suppression=self.suppression, time_budget=self.time_budget,
                       categorical_release="children" if children else self.categorical_release,
                       categorical_coding=self.categorical_coding,
                       numeric_generalization=self.numeric_generalization,
                       auto_levels=self.auto_levels, max_lattice_nodes=self.max_lattice_nodes,
                       metric=self.metric)


# the options one algorithm reads and the other does not (their descriptions start so)
# An option of one algorithm only is the one its description says so of ("lattice: …"): read
# from there, so the catalogue's words and the refusal cannot drift apart.
_ONLY_FOR = {algorithm: tuple(name for name, f in KAnonymityParams.model_fields.items()
                              if (f.description or "").startswith(f"{algorithm}:"))
             for algorithm in ("lattice", "mondrian")}
_OTHER = {"lattice": "mondrian", "mondrian": "lattice"}


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


def read_through_unchanged(table, result: Anonymized, qis: list[str],
                           released: list[str]) -> tuple[dict[str, list[str]], dict | None, list[str]]:
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
    figures = frame_risk(through, qis, result.metrics["risk"]["threshold"])
    figures["quasi_identifiers_read_through"] = determined
    if figures["classes"] == result.metrics["classes"]:
        return determined, figures, []
    named = "; ".join(f"{q!r} by {', '.join(map(repr, cols))}" for q, cols in determined.items())
    return determined, figures, [
        f"columns released unchanged determine quasi-identifiers in this table ({named}: each of "
        "their values goes with one value of the quasi-identifier), so an attacker who knows the "
        "quasi-identifier reads it back from them and the generalization does not hide it: over "
        f"the quasi-identifiers read that way the smallest class is {figures['smallest_class']} "
        f"(k = {result.achieved.k} without them) and {figures['sample_uniques']} records are "
        "alone in their class (metrics.risk_through_unchanged_columns) — declare those columns "
        "quasi-identifiers too, or leave them out"]


def guarantees_of(result: Anonymized, constraints: Constraints, qis: list[str], released: list[str],
                  *, private: bool, extra_statements: list[str] | None = None,
                  extra_warnings: list[str] | None = None,
                  determined: dict[str, list[str]] | None = None, extra_figures: dict | None = None) -> dict:
    achieved = result.achieved.as_dict()
    statements = [
        f"verified independently on the released table: every class of the quasi-identifiers "
        f"({', '.join(qis)}) has at least {achieved['k']} records (k requested: {constraints.k})",
        NOT_DP,
    ]
    own = result.own_models
    named = result.metadata.get("sensitive")
    named = [named] if isinstance(named, str) else list(named or [])
    shared = [column for column in named if column not in own]  # the columns the job's models hold on
    distance = result.metadata.get("t_distance")
    statements += _model_statements(constraints, achieved, _distances(distance, shared))
    if constraints.needs_sensitive and own:
        statements.append("the models above hold on " + ("each of " if len(shared) > 1 else "")
                          + ", ".join(shared) + " (the sensitive columns without models of their own in "
                          "sensitive_models" + ("; the figures are the weakest column's" if len(shared) > 1
                                                else "") + ")")
    elif constraints.needs_sensitive and len(shared) > 1:
        statements.append("the models above hold on each sensitive column: " + ", ".join(shared)
                          + " (the figures are the weakest column's; metadata.sensitive_achieved "
                          "gives each column's) — each column by itself, " + BY_ITSELF)
    for column, (models, got) in own.items():
        statements += [f"on {column} (its own models, sensitive_models): {line}" for line in
                       _model_statements(models, got.as_dict(), _distances(distance, [column]))]
    if own and len(named) > 1:
        statements.append("each sensitive column meets its models by itself, " + BY_ITSELF)
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
        **_other_models(constraints, achieved),
        **({"sensitive_models": {column: _own_figures(models, got, _distances(distance, [column]))
                                 for column, (models, got) in own.items()}} if own else {}),
        suppressed=result.metrics["suppressed"], verified=True,
        determined_by_unprotected=determined or {}, **(extra_figures or {}),
    )


BY_ITSELF = ("not their combinations: an attacker who knows a person's value in one of them can narrow "
             "the others within the class (multi-attribute l-diversity, which treats the other "
             "sensitive columns as quasi-identifiers, is not what is checked)")


def _distances(distance: str | dict | None, columns: list[str]) -> str | None:
    """t-closeness's distance in words, on these columns (metadata.t_distance names each
    column's when there are several)."""
    if not isinstance(distance, dict):
        return distance
    if len(columns) == 1:
        return distance.get(columns[0])
    return "; ".join(f"{column}: {kind}" for column, kind in distance.items() if column in columns) or None


def _model_statements(constraints: Constraints, achieved: dict, distance: str | None) -> list[str]:
    """The statements of the attribute-disclosure models asked, with the figures achieved
    (rounded the safe way: wording.py)."""
    statements = []
    if constraints.l is not None:
        statements.append(f"distinct l-diversity: every class has at least {achieved['l']} distinct "
                          "sensitive values")
    if "entropy_l" in achieved:
        statements.append(f"entropy l-diversity: every class's sensitive entropy is at least "
                          f"ln {rounded(achieved['entropy_l'], down=True)} (l requested: {constraints.l})")
    if "recursive_c" in achieved:
        statements.append(f"recursive (c,l)-diversity with l = {constraints.l}: in every class "
                          f"r1 / (r_l + … + r_m) ≤ {below(achieved['recursive_c'], constraints.c)} "
                          f"(below c = {as_given(constraints.c)})")
    if constraints.delta_disclosure is not None:
        statements.append(f"δ-disclosure privacy: every class holds every sensitive value, each at "
                          f"|ln(class share / table share)| ≤ "
                          f"{below(achieved['delta_disclosure'], constraints.delta_disclosure)} "
                          f"(below δ = {as_given(constraints.delta_disclosure)})")
    if constraints.beta is not None:
        cap = "" if constraints.beta_likeness == "basic" else " and within −ln of its table share"
        statements.append(f"{constraints.beta_likeness} β-likeness: no sensitive value's share in a class "
                          f"exceeds its table share by a relative gain above "
                          f"{rounded(achieved['beta'], down=False)}{cap} (β requested: {as_given(constraints.beta)})")
    if constraints.alpha is not None:
        statements.append("(α,k)-anonymity: no sensitive value exceeds a share "
                          f"{rounded(achieved['alpha'], down=False)} of its class")
    if constraints.t is not None:
        statements.append(f"t-closeness: largest class distance {achieved['t']:.4f} ({distance})")
    return statements


def _own_figures(models: Constraints, got, distance: str | None) -> dict:
    """A column's own models in the guarantee: which, and the figures the check found."""
    achieved = got.as_dict()
    figures = {"models": models.describe(with_k=False), "l": achieved.get("l"), "alpha": achieved.get("alpha"),
               "t": achieved.get("t"), "t_distance": distance if models.t is not None else None,
               **_other_models(models, achieved)}
    return {key: value for key, value in figures.items() if value is not None}


def _other_models(constraints: Constraints, achieved: dict) -> dict:
    """The guarantee's figures of the models beyond k, distinct l, α and t: only those asked for."""
    figures: dict = {}
    if constraints.l is not None:
        figures["l_diversity"] = constraints.l_diversity
    if "entropy_l" in achieved:
        figures["entropy_l"] = achieved["entropy_l"]
    if "recursive_c" in achieved:
        figures.update(recursive_c=achieved["recursive_c"], c_requested=constraints.c)
    if constraints.delta_disclosure is not None:
        figures.update(delta_disclosure=achieved["delta_disclosure"],
                       delta_disclosure_requested=constraints.delta_disclosure)
    if constraints.beta is not None:
        figures.update(beta=achieved["beta"], beta_requested=constraints.beta,
                       beta_likeness=constraints.beta_likeness)
    pop = constraints.population
    if pop is not None and pop.k_map is not None:
        figures.update(k_map=achieved["k_map"], k_map_requested=pop.k_map)
    if pop is not None and pop.presence:
        figures.update(delta_presence=[achieved["delta_presence_min"], achieved["delta_presence_max"]],
                       delta_presence_requested=[pop.delta_min, pop.delta_max])
    return figures


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
    ctx.progress(0.0, "preparing")
    hierarchies, generalized = usable_hierarchies(data)
    # k-map estimated from the table as a sample: k-anonymity with the derived k (or k, if larger)
    estimated = params.k_map_estimate(len(frame))
    k = params.k if estimated is None else max(params.k, estimated.derived_k)
    constraints = replace(params.model_set(k), population=population)
    result = anonymize(frame.drop(columns=identifiers), infos, hierarchies, qis,
                       constraints, sensitive, params.options(), ctx.progress,
                       models=params.column_models(k))
    warnings = chain_warnings(result, qis, generalized) + changed_qi_warnings(data, qis)
    if estimated is not None:
        warnings += estimate_warnings(estimated, params.k)
    labels = [c.name for c in data.columns if c.role == "label" and c.name in qis]
    if labels:  # allowed (a label can identify), but rarely what was meant
        warnings.append(f"the label {labels[0]!r} is a quasi-identifier here: it is generalized like "
                        "the others, so a model trained on the release learns the generalized classes")
    released = list(result.frame.columns)
    determined, through, through_warnings = read_through_unchanged(
        frame.drop(columns=identifiers), result, qis, released)
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
    ctx.progress(1.0, "done")
    return ReleaseResult(
        frame=result.frame.reset_index(drop=True),
        columns=release_columns(data.columns, released, qis),
        guarantees=guarantees_of(
            result, constraints, qis, released,
            # an estimate alone (derived k = 1, k = 1) leaves the release without k-anonymity
            private=(through is None or through["smallest_class"] >= k) and not population_warnings
            and not (estimated is not None and k == 1),
            extra_statements=population_statements(result, constraints, subset) if subset else
            estimate_statements(estimated, k) if estimated is not None else None,
            extra_warnings=warnings + through_warnings + population_warnings, determined=determined,
            extra_figures=estimate_figures(estimated) if estimated is not None else None),
        metrics=metrics,
        metadata=metadata,
        hierarchies_used=result.metadata.get("uploaded_hierarchies", []),
    )


def population_statements(result: Anonymized, constraints: Constraints, subset: str) -> list[str]:
    """What the release says of the population's models, with the figures the check found
    (rounded the safe way)."""
    pop, got, meta = constraints.population, result.achieved, result.metadata["population"]
    statements = [
        f"population setting: the classes were formed over the table's {meta['records']} records (the "
        f"population), and only the {meta['research_subset']} records {subset!r} marks (the research "
        f"subset) are released ({meta['released']} released, {meta['suppressed']} suppressed); {subset!r} "
        "itself is not released"]
    if pop.k_map is not None:
        statements.append(
            f"k-map: every released class's quasi-identifiers match at least {got.k_map} records of the "
            f"population (k_map requested: {pop.k_map}), counted by the check from the released labels "
            "and the population's values" + (
                "; a lower bound: each class counted as the population records the generalization "
                "gives its labels (each checked to cover its record's value), the exact count of every "
                "class against every population tuple being too large to run"
                if (meta.get("check") or {}).get("k_map") == "lower bound" else ""))
    if pop.presence:
        statements.append(
            f"δ-presence: in every class of the population, those without a released record too, the "
            f"share of research-subset records lies in [{rounded(got.delta_presence_min, down=True, places=6)}, "
            f"{rounded(got.delta_presence_max, down=False, places=6)}] (requested [{as_given(pop.delta_min)}, "
            f"{as_given(pop.delta_max)}]); suppressed research records count in their class's share, so "
            "whoever holds the population cannot be surer than that whether a person is in the subset")
    return statements


def _check_kanonymity(params: KAnonymityParams, columns: list[ColumnInfo],
                      source: SourceRelease | None) -> None:
    qis, sensitive = _roles(params, columns)
    subset_column(params.research_subset, columns, qis)
    by_name = {c.name: c for c in columns}
    own = params.column_models()
    for name in [sensitive] if isinstance(sensitive, str) else sensitive or []:
        if name not in own and params.t_distance == "hierarchical" and by_name[name].type == "numeric":
            raise MethodInputError(numeric_hierarchical_t(name))
    for name, models in own.items():
        if models.t_distance == "hierarchical" and by_name[name].type == "numeric":
            raise MethodInputError(f"sensitive_models[{name!r}]: {numeric_hierarchical_t(name)}")


def _kanonymity_rows(params: KAnonymityParams, rows: int, columns: list[ColumnInfo] | None = None) -> None:
    at_least_k_records(params, rows, columns)
    estimated = params.k_map_estimate(rows)
    if estimated is not None and estimated.derived_k > rows:
        raise MethodInputError(
            f"k_map = {params.k_map} estimated with {params.k_map_estimator} at significance "
            f"{params.significance:g} derives k = {estimated.derived_k}, above the table's {rows} records: no "
            "class can be that large; lower k_map or raise significance")
    if estimated is None and params.k_map is not None and params.k_map > rows:
        raise MethodInputError(f"the population has {rows} records, fewer than k_map = {params.k_map}")


register(MethodSpec(
    name="kanonymity",
    family="anonymity",
    kind=MethodKind.release,
    summary="k-anonymity by generalization (Mondrian multidimensional recoding or the optimal "
            "full-domain lattice search), with optional l-diversity (distinct, entropy, recursive), "
            "(α,k), t-closeness (ordered, equal or hierarchical distance), β-likeness and "
            "δ-disclosure privacy; or, releasing a research subset of the table as population, "
            "k-map and δ-presence; or k-map estimated from the table as a random sample (Poisson or "
            "zero-truncated Poisson, as ARX); every release is verified independently.",
    params=KAnonymityParams,
    guarantee="k-anonymity (+ l, α, t, β, δ, or k-map and δ-presence over a population, when asked; an "
              "estimated k-map is k-anonymity with the derived k, the k-map itself an estimate) over "
              "the quasi-identifiers; not differential privacy",
    paper="LeFevre, DeWitt & Ramakrishnan, Mondrian multidimensional k-anonymity (ICDE 2006); "
          "Kohlmayer et al., Flash (2012); Machanavajjhala et al., l-diversity (2007); Li et al., "
          "t-closeness (2007); Cao & Karras, β-likeness (2012); Brickell & Shmatikov, δ-disclosure "
          "(2008); Nergiz, Atzori & Clifton, δ-presence (SIGMOD 2007); El Emam & Dankar, k-map (JAMIA "
          "2008); spec 04 §1",
    run=run_kanonymity,
    check=_check_kanonymity,
    check_rows=_kanonymity_rows,
    produces_randomness=False,
    uses_hierarchies=True,
    docs="docs/methods/kanonymity.md",
    slow_params=('time_budget', 'max_lattice_nodes'),
))
