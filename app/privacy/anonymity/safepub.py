"""The registered ``safepub`` method: (ε, δ)-differentially private k-anonymization (Bild, Kuhn &
Prasser, SafePub, PoPETs 2018(1):67-87, ARX's "(ε, δ)-differential privacy" criterion; Li,
Qardaji & Su, ASIACCS 2012).

0. A record with a quasi-identifier value outside its public domain is dropped, on its own values
   alone (safepub_domain.py): a failure on one published that such a record exists.
1. ε_search chooses a full-domain generalization with the exact exponential mechanism over
   scores of the input: one draw over every node of the lattice of hierarchy levels, or (a large
   lattice, or search 'walk') SafePub's random walk down it, each pivot one draw
   (safepub_search.py).
2. Each record is kept with probability β = 1 − e^(−ε_anon), exactly (safepub_params.py).
3. The kept records are generalized at the chosen node, and every class of fewer than k of them
   is suppressed (removed, not starred, and not counted anywhere published); k is the smallest
   with δ(k) ≤ δ.
Only the quasi-identifiers are released — and, with metric 'classification', the label, as is,
the classes then being over the quasi-identifiers and the label together: Li et al.'s theorem
covers records every released attribute of which is generalized by a scheme fixed before the
data are read (the identity is one), their groups of fewer than k suppressed; a column released
as is beside classes it is not part of would show whether a person's exact record is in the
sample.

Step 1 is ε_search-DP, step 2–3 for a fixed node (ε_anon, δ)-DP (Li et al. Thm 5, add/remove-one
neighbours); their coins are independent, so the release is (ε_search + ε_anon, δ)-DP by
sequential composition under add/remove, and by group privacy (2ε, (1 + e^ε)δ)-DP under
replace-one, the ε Veil's budget is debited. The dropping of step 0 is a per-record filter: the
filtered tables of two neighbours are equal or neighbours, so the same (ε, δ) holds for the table
as given. n is not part of the release; the submission's checks on it (δ < 1/n, k ≤ n) answer the
dataset's owner, who knows it, outside ε.
"""

from __future__ import annotations

import math
import time

import numpy as np
import pandas as pd

from app.privacy.anonymity.axes import build_axes
from app.privacy.anonymity.hierarchies import MISSING_LEAF
from app.privacy.anonymity.lattice import Columns
from app.privacy.anonymity.release import generalize_levels
from app.privacy.anonymity.roles import resolve_label as resolve_classification_label, resolve_quasi_identifiers
from app.privacy.anonymity.safepub_domain import (
    anchor_record, in_domain, leaves_within_bounds, public_hierarchies, refuse_without_domain, with_missing_cells,
)
from app.privacy.anonymity.safepub_params import (
    SafePubParams, arx_k, beta_of, bernoulli_sample, delta_of_k, empty_release_warning, smallest_k,
)
from app.privacy.anonymity.safepub_scores import sensitivity
from app.privacy.anonymity.safepub_search import (
    Scorer, categorical_costs, exhaustive, numeric_costs, random_walk, score_threshold,
)
from app.privacy.anonymity.verify import equivalence_classes
from app.privacy.context import RunContext
from app.privacy.data import ColumnInfo, MethodInput, SourceRelease
from app.privacy.dp_release.common import rng_statements
from app.privacy.dp_release.encoding import ColumnPlan, inferred_warnings
from app.privacy.guarantees import guarantee
from app.privacy.registry import MethodInputError, MethodKind, MethodSpec, register
from app.privacy.results import ReleaseResult

NEIGHBOURING = ("neighbouring tables differ by one record added or removed (add/remove one), the "
                "relation Li et al.'s and SafePub's theorems are proven under; the number of records n "
                "is not part of the release (the dataset's owner knows it: the checks at submission "
                "read it, outside ε)")
OUT_OF_DOMAIN = ("records with a quasi-identifier value outside its public domain (a numeric value missing, "
                 "not a number, outside the declared bounds, or not a leaf of the uploaded hierarchy; a "
                 "categorical value that is not a leaf of the uploaded hierarchy or a declared category) "
                 "were dropped before the search and the sampling, each on its own values alone: the "
                 "(ε, δ) holds for the table as given (the filtered tables of two neighbours are equal or "
                 "neighbours); whether any were dropped, and how many, is not published (a count would "
                 "not be DP); a missing categorical cell is in the domain, released as '<missing>'")


def calibration(params: SafePubParams) -> tuple[float, int, float]:
    """(β, k, δ(k)) for the job, or a MethodInputError naming the parameters."""
    anon = float(params.epsilon_anon)
    try:
        k = smallest_k(params.delta, anon)
    except ValueError:
        raise MethodInputError(f"epsilon {params.epsilon:g} with search_share {params.search_share:g} leaves "
                               f"ε_anon = {anon:.4g}: no k up to 10⁷ reaches delta {params.delta:g} (k is "
                               "smallest near ε_anon ≈ 0.5–1 and grows away from it, like e^ε_anon·ln(1/δ) "
                               "above); raise delta or bring ε_anon = (1 − search_share)·epsilon nearer 1") from None
    return beta_of(anon), k, delta_of_k(k, anon)


def resolve_label(columns: list[ColumnInfo], params: SafePubParams, qis: list[str]) -> str | None:
    """The label column of metric 'classification' (given, else the schema's one column of role
    'label'), or None for the other metrics; refusals name `label`. Not numeric: a number's text
    may depend on the rest of the column, which the release would then leak outside (ε, δ)."""
    if params.metric != "classification":
        return None
    return resolve_classification_label(columns, params.label, qis, numeric=False)


def _check(params: SafePubParams, columns: list[ColumnInfo], source: SourceRelease | None) -> None:
    """At submission: the schema and the uploaded hierarchies (ColumnInfo.has_hierarchy) give every
    quasi-identifier a public domain, a classification has its label, and k exists — nothing here
    reads a record."""
    by_name = {c.name: c for c in columns}
    qis = resolve_quasi_identifiers(columns, params.quasi_identifiers)
    for q in qis:
        refuse_without_domain(by_name[q], by_name[q].has_hierarchy)
    resolve_label(columns, params, qis)
    calibration(params)


def _check_hierarchies(params: SafePubParams, columns: list[ColumnInfo], hierarchy) -> None:
    """At submission, on the uploaded hierarchies (public, no record read): a numeric
    quasi-identifier's hierarchy has a leaf within the declared bounds (without one the job failed
    when it started, on public inputs alone)."""
    by_name = {c.name: c for c in columns}
    for q in resolve_quasi_identifiers(columns, params.quasi_identifiers):
        info = by_name[q]
        if info.type == "numeric" and info.bounds is not None and info.has_hierarchy:
            table = hierarchy(q)
            if table is not None:
                leaves_within_bounds(info, table)


def _check_rows(params: SafePubParams, rows: int, columns: list[ColumnInfo] | None = None) -> None:
    """δ < 1/n and k ≤ n, on the table's record count n (every record, in the domain or not). Not
    covered by ε: only the dataset's owner may submit safepub (raw data, or a release job), the
    owner knows n (the dataset listing shows it), and the answer, a 422, goes to the owner; nothing
    of it enters a release."""
    if rows < 1:
        raise MethodInputError("the table has no records")
    if params.delta >= 1.0 / rows:
        raise MethodInputError(f"delta {params.delta:g} is not below 1/n = {1.0 / rows:.3g} (n = {rows:,} "
                               "records): δ that large allows releasing a record outright; lower delta")
    _, k, _ = calibration(params)
    if k > rows:
        # k grows, broadly, with ε_anon: "raise epsilon", as this said, raised it. Not strictly:
        # just above 0.5, k can be one below k at 0.5 (δ = 0.03, ε_anon = 0.53: 11 against 12),
        # so lowering is advised only where k at 0.5 is smaller
        anon = float(params.epsilon_anon)
        k_half = smallest_k(params.delta, 0.5) if anon > 0.5 else k
        lower = (f", or lower epsilon (k grows with ε_anon = (1 − search_share)·epsilon, {anon:.3g} now; at ε_anon "
                 f"= 0.5 and this delta k = {k_half:,})" if k_half < k else "")
        raise MethodInputError(f"epsilon {params.epsilon:g} and delta {params.delta:g} give k = {k:,}, above "
                               f"the table's {rows:,} records: nothing could be released; raise delta{lower}")


def _epsilon(params: SafePubParams, columns: list[ColumnInfo]) -> float:
    """(ε, δ)-DP under add/remove is (2ε, (1 + e^ε)·δ)-DP under replace-one: 2ε is debited."""
    return 2.0 * params.epsilon


def _trees(table: pd.DataFrame, infos: dict[str, ColumnInfo], qis: list[str],
           hierarchies: dict[str, pd.DataFrame], uploaded: set[str]):
    """Each quasi-identifier's tree over ``table`` (in-domain records only, safepub_domain) and
    public costs: its hierarchy (uploaded, or the declared categories under '*'); numeric
    columns without one get automatic intervals over their declared bounds."""
    trees, notes = build_axes(table, [infos[q] for q in qis], hierarchies,
                              numeric="hierarchy", categorical="hierarchy", integer_from_data=False)
    costs = [numeric_costs(t) if infos[q].type == "numeric" else categorical_costs(t, hierarchies[q])
             for q, t in zip(qis, trees)]
    declared = [q for q in qis if q not in uploaded and infos[q].type != "numeric"]
    return trees, costs, {"uploaded": [q for q in qis if q in uploaded], "declared_categories": declared,
                          "automatic_intervals": notes.automatic}


def _inferred_warnings(columns: list[ColumnInfo], automatic: list[str], label: str | None) -> list[str]:
    """An automatic hierarchy's intervals and labels follow the schema's integer flag ('0-79' or
    '[0, 80)'), and a boolean label is released as 'True'/'False' whatever the file spelt: when
    the upload inferred the flag or the boolean type from the data, the release shows it, outside
    ε — said as dp_statistics says it (encoding.inferred_warnings, one sentence for all)."""
    infos = {c.name: c for c in columns}
    plans = [ColumnPlan(q, "numeric", *infos[q].bounds, integer=infos[q].integer, info=infos[q]) for q in automatic]
    if label is not None and infos[label].type == "boolean":
        plans.append(ColumnPlan(label, "categorical", categories=(False, True), source="type", info=infos[label]))
    return inferred_warnings(plans)


def _in_domain_table(data: MethodInput, qis: list[str], label: str | None = None):
    """The records whose every quasi-identifier lies in its public domain (a filter record by
    record, safepub_domain), their count, the hierarchies the trees are built on, and the names of
    the uploaded ones. With no such record, one public anchor record stands in for building the
    trees (never scored, sampled or released). A label comes along as text, a missing one
    '<missing>' (any label is in the domain)."""
    infos = {c.name: c for c in data.columns}
    given = public_hierarchies(infos, qis, data.hierarchies)  # uploaded, or declared categories
    inside = np.flatnonzero(in_domain(data.frame, infos, qis, given))
    table, hierarchies = with_missing_cells(data.frame.iloc[inside].reset_index(drop=True), infos, qis, given)
    if len(table) == 0:
        table = anchor_record(infos, qis, hierarchies)
    if label is not None:
        values = data.frame[label].iloc[inside].astype(object)
        text = values.where(values.notna(), MISSING_LEAF).astype(str).to_numpy(dtype=object)
        table[label] = text if len(inside) else np.array([MISSING_LEAF], dtype=object)
    return table, len(inside), hierarchies, set(data.hierarchies) & set(qis)


def _released_classes(cols: Columns, node, label_codes: np.ndarray | None) -> tuple[np.ndarray, int]:
    """The class of each record at ``node``: of its generalized quasi-identifiers, and of its
    label too when the label is released (suppression is over the released columns)."""
    ids, n_classes = cols.classes(node)
    if label_codes is None:
        return ids, n_classes
    ids, uniques = pd.factorize(ids * (int(label_codes.max()) + 1) + label_codes)
    return ids.astype(np.int64), len(uniques)


def run_safepub(data: MethodInput, params: SafePubParams, ctx: RunContext) -> ReleaseResult:
    started = time.perf_counter()
    assert data.frame is not None
    qis = resolve_quasi_identifiers(data.columns, params.quasi_identifiers)
    label = resolve_label(data.columns, params, qis)
    beta, k, delta_k = calibration(params)
    _check_rows(params, len(data.frame))  # the whole table's n, as at submission (the owner knows it)
    ctx.progress(0.02, "hierarchies")
    table, n, hierarchies, uploaded = _in_domain_table(data, qis, label)
    infos = {c.name: c for c in data.columns}
    trees, costs, sources = _trees(table, infos, qis, hierarchies, uploaded)
    cols = Columns(trees, metric=None)  # the codes; the costs are safepub's own
    scored = np.arange(len(table)) < n  # all but an anchor
    k_score = score_threshold(k, beta)
    label_codes = pd.factorize(table[label])[0].astype(np.int64) if label else None
    scorer = Scorer(cols, costs, params.metric, k_score, scored, label_codes)
    top = tuple(t.height for t in trees)
    lattice_size = math.prod(h + 1 for h in top)
    strategy = params.strategy(lattice_size)
    spent_steps = 1 if strategy == "exhaustive" else params.walk_steps + (1 if params.walk_final == "exponential" else 0)
    eps_step = params.epsilon_search / spent_steps
    delta_score = sensitivity(params.metric, len(qis), k_score)
    eta = eps_step / (2 * delta_score)
    progress = lambda f, s: ctx.progress(0.05 + 0.8 * f, s)  # noqa: E731
    if strategy == "exhaustive":
        walk = exhaustive(scorer, top, eta, ctx.rng, progress)
    else:
        walk = random_walk(scorer, top, params.walk_steps, eta, params.walk_final, ctx.rng, progress)
    ctx.progress(0.9, "sampling and suppressing")
    sampled = np.zeros(len(table), dtype=bool)
    sampled[:n] = bernoulli_sample(n, params.epsilon_anon, ctx.rng)
    # the sample's classes at the chosen node: those of fewer than k sampled records are suppressed
    ids, n_classes = _released_classes(cols, walk.node, label_codes)
    keep = sampled & (np.bincount(ids[sampled], minlength=n_classes)[ids] >= k)
    gen = generalize_levels(trees, walk.node)
    rows = np.flatnonzero(keep)[ctx.rng.permutation(int(keep.sum()))]  # input order is not released
    out = pd.DataFrame({q: pd.Series(gen.labels[q][rows], dtype=object).astype(str) for q in qis})
    if label:
        out[label] = table[label].to_numpy(dtype=object)[rows]
    released = qis + ([label] if label else [])
    sizes = np.bincount(equivalence_classes(out, released)) if len(out) else np.zeros(0, dtype=np.int64)
    if len(out) and sizes.min() < k:
        raise RuntimeError("safepub: a released class has fewer than k records")  # never expected
    facts = {"strategy": strategy, "lattice_size": lattice_size, "beta": beta, "k": k, "delta_k": delta_k, "k_score": k_score, "sensitivity": delta_score,
             "eta": eta, "eps_step": eps_step, "walk": walk, "sources": sources, "sizes": sizes, "label": label,
             "granularity": _granularity(costs, cols, walk.node, rows),
             "inferred_warnings": _inferred_warnings(data.columns, sources["automatic_intervals"], label),
             "seconds": time.perf_counter() - started}
    ctx.progress(1.0, "done")
    return _result(params, ctx, qis, out, facts)


def _granularity(costs, cols: Columns, node, rows: np.ndarray) -> float | None:
    """The mean public cost of the released cells (a function of the release alone)."""
    if len(rows) == 0:
        return None
    total = sum(float(c.numerators[level][cols.codes[q][level][rows]].sum()) / c.den
                for q, (c, level) in enumerate(zip(costs, node)))
    return total / (len(rows) * len(node))


def _released_statement(label: str | None) -> str:
    if label is None:
        return ("only the quasi-identifiers are released, each generalized to its chosen hierarchy level; the other "
                "columns are left out (the theorem covers generalized records only)")
    return (f"the quasi-identifiers are released, each generalized to its chosen hierarchy level, and the label "
            f"{label!r} as is (metric 'classification'); the classes, and so the suppression of those below k, are "
            "over the quasi-identifiers and the label together — Li et al.'s theorem covers it: the label's "
            "generalization, the identity, is fixed before the data are read; the other columns are left out")


def _result(params: SafePubParams, ctx: RunContext, qis: list[str], out: pd.DataFrame, facts: dict) -> ReleaseResult:
    eps = params.epsilon
    eps_search, eps_anon = float(params.epsilon_search), float(params.epsilon_anon)
    stated = eps_search + eps_anon  # ≤ ε: ε_anon was rounded down to the sampler's grid
    delta = params.delta
    replace = {"epsilon": 2.0 * eps, "delta": (1.0 + math.exp(stated)) * delta,
               "bound": "group privacy: a replacement is a removal and an addition, (ε, δ) → (2ε, (1 + e^ε)·δ)"}
    walk, sizes, label = facts["walk"], facts["sizes"], facts["label"]
    released = qis + ([label] if label else [])
    levels = dict(zip(qis, walk.node))
    warnings = list(facts["inferred_warnings"])
    if not len(out):
        warnings.append(empty_release_warning(params, facts["k"], facts["beta"]))
    statements = [
        f"(ε, δ)-differential privacy with ε = {stated:.6g}, δ = {delta:g} for the whole release: {NEIGHBOURING}",
        f"under replace-one neighbours (one record's values changed, n the same: the relation Veil's budget "
        f"counts) the release is (ε, δ)-DP with ε = {replace['epsilon']:.6g}, δ = {replace['delta']:.3g} "
        "(group privacy); the job was priced at that ε",
        f"ε is split (sequential composition, independent coins): ε_search = {eps_search:.6g} choosing the "
        f"generalization ("
        + (f"one exponential-mechanism draw over all {facts['lattice_size']:,} nodes of the lattice"
           if facts["strategy"] == "exhaustive" else
           f"a random walk of {walk.draws} exponential-mechanism draws at ε = {float(facts['eps_step']):.6g} each")
        + "), "
        f"ε_anon = {eps_anon:.6g} for sampling and k-anonymizing",
        f"each record was kept with probability β = 1 − e^(−ε_anon) = {facts['beta']:.6g}, drawn exactly "
        "from CSPRNG bits (Bernoulli(e^(−ε_anon)), Canonne, Kamath & Steinke 2020's algorithm)",
        f"every class of fewer than k = {facts['k']} kept records was suppressed (removed; how many is not "
        f"published); k is the smallest with δ(k) ≤ δ (Li et al.'s bound: δ({facts['k']}) = "
        f"{facts['delta_k']:.4g}, rounded up)",
        f"verified on the released table: every class of the released columns ({', '.join(released)}) has at "
        f"least {facts['k']} records",
        _released_statement(label),
        "the scores the search reads are exact rationals of the input table (classes below "
        f"{facts['k_score']} records counted as suppressed), with sensitivity {facts['sensitivity']} under "
        "add/remove (docs/methods/safepub.md); hierarchies and domains are public (uploaded, declared "
        "categories or declared bounds), never read from the data",
        OUT_OF_DOMAIN,
        "not published: n, the number of records sampled, suppressed or dropped (this release shows only "
        "its own records; the dataset's owner knows n, which the submission's checks δ < 1/n and k ≤ n "
        "read outside ε)",
        *rng_statements(ctx),
    ]
    meta = {
        "method": "safepub", "epsilon": stated, "epsilon_requested": eps, "delta": delta,
        "delta_k": facts["delta_k"], "neighbouring": NEIGHBOURING, "replace_one": replace,
        "epsilon_split": {"search": eps_search, "anonymization": eps_anon},
        "beta": facts["beta"], "k": facts["k"], "k_arx": arx_k(delta, eps_anon),
        "search": {"strategy": facts["strategy"], "lattice_size": facts["lattice_size"], "metric": params.metric,
                   **({"label": label} if label else {}),
                   **({"steps": params.walk_steps, "steps_taken": walk.steps_taken, "final": params.walk_final}
                      if facts["strategy"] == "walk" else {}),
                   "draws": walk.draws, "epsilon_per_draw": float(facts["eps_step"]),
                   "score_threshold": facts["k_score"], "sensitivity": facts["sensitivity"],
                   "eta": str(facts["eta"]), "nodes_scored": walk.nodes_scored,
                   "pivots": [dict(zip(qis, p)) for p in walk.pivots],
                   "mechanism": "exponential, P ∝ exp(η·score), η = ε_draw / (2·sensitivity), sampled exactly "
                                "(zcdp.ExactSampler; exact_em over the whole lattice)"},
        "levels": levels, "hierarchies": facts["sources"],
        "suppressed": "removed; their number (and the sample's size) is not published",
        "out_of_domain": OUT_OF_DOMAIN,
    }
    g = guarantee("central_dp", rng=ctx.rng.name, private=ctx.rng.is_private, epsilon=stated, delta=delta,
                  protected_columns=released, statements=statements, warnings=warnings, neighbouring=NEIGHBOURING,
                  replace_one={"epsilon": replace["epsilon"], "delta": replace["delta"]},
                  epsilon_split=meta["epsilon_split"], k=facts["k"], beta=facts["beta"], verified=True)
    classes = int(len(sizes))
    metrics = {"records": len(out), "classes": classes, "smallest_class": int(sizes.min()) if classes else 0,
               "average_class_size": float(len(out) / classes) if classes else 0.0,
               "granularity": facts["granularity"], "seconds": facts["seconds"]}
    columns = [ColumnInfo(name=q, type="categorical", role="quasi_identifier") for q in qis]
    if label:
        columns.append(ColumnInfo(name=label, type="categorical", role="label"))
    return ReleaseResult(frame=out, columns=columns, guarantees=g, metadata={"safepub": meta}, metrics=metrics,
                         hierarchies_used=facts["sources"]["uploaded"])


register(MethodSpec(
    name="safepub",
    family="anonymity",
    kind=MethodKind.release,
    summary="(ε, δ)-differentially private k-anonymization (SafePub, ARX's '(ε,δ)-differential privacy'): a "
            "full-domain generalization chosen with the exact exponential mechanism (over the whole "
            "lattice, or ARX's random walk on a large one), "
            "records sampled with probability β = 1 − e^(−ε_anon), classes below k suppressed; only the "
            "generalized quasi-identifiers are released (truthful, no noise added to values).",
    params=SafePubParams,
    guarantee="central (ε, δ)-DP of the release (add/remove-one neighbours); (2ε, (1 + e^ε)δ) replace-one, "
              "the ε debited",
    paper="Bild, Kuhn & Prasser, SafePub: A Truthful Data Anonymization Algorithm With Strong Privacy "
          "Guarantees, PoPETs 2018(1):67-87; Li, Qardaji & Su, On sampling, anonymization, and differential "
          "privacy, ASIACCS 2012",
    run=run_safepub,
    epsilon=_epsilon,
    check=_check,
    check_rows=_check_rows,
    check_hierarchies=_check_hierarchies,
    uses_hierarchies=True,
    docs="docs/methods/safepub.md",
    slow_params=("search", "steps"),
))

