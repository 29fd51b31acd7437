"""The kanonymity release's guarantee in words and figures (shared by rfk_anonymity): what was
verified on the released table, each attribute-disclosure model asked with the figures the check
found (rounded the safe way: wording.py), and what the population setting states."""

from __future__ import annotations

from app.privacy.anonymity.anonymize import Anonymized
from app.privacy.anonymity.models import Constraints
from app.privacy.anonymity.wording import as_given, below, rounded
from app.privacy.guarantees import guarantee

NO_RANDOMNESS = "none: deterministic generalization (no randomness drawn)"
NOT_DP = ("k-anonymity is not differential privacy: it limits linkage through the declared "
          "quasi-identifiers only; an attacker with other background knowledge, or with several "
          "releases of the same data, is not covered")


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
