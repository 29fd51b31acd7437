"""dp_statistics' guarantee: the statements, guarantees and metadata of a release under
replace-one or add/remove neighbours, and the replace-one ε an add/remove release also
satisfies — the ε Veil's budget counts (statistics_params.ledger_epsilon prices it at
submission; here each mechanism's delivered replace-one ε is computed and held to that price).
"""

from __future__ import annotations

from typing import Any

from app.privacy.context import RunContext
from app.privacy.dp_release.common import NEIGHBOURING, rng_statements
from app.privacy.dp_release.encoding import ColumnPlan, domain_warnings
from app.privacy.dp_release.statistics_params import (
    MISSING, DPStatisticsParams, Mechanism, QueryPlan, ledger_epsilon, replace_cases, spent_epsilon,
)
from app.privacy.guarantees import guarantee
from app.privacy.noise import LAPLACE_SAMPLER, NoiseRecord

NEIGHBOURING_ADD_REMOVE = ("neighbouring tables differ by one record added or removed (add/remove "
                           "one); the number of records n is not public: an ungrouped count of "
                           "records is answered with noise and n is not published")
REPLACE_BOUND = ("a replacement is a removal and an addition: per query the replace-one ε is its ε "
                 "times Δ_replace/Δ_add_remove — exact for a Laplace mechanism (its loss is the shift "
                 "over the scale; an ungrouped mean's two mechanisms in the worst case one replacement "
                 "reaches for both at once), an upper bound for a quantile's exponential mechanism (a value "
                 "changed in its group: ε_each / max(q, 1 − q) a draw; a record moved between groups: "
                 "a removal and an addition, ε_each a draw in each); 'epsilon' is the price debited at "
                 "submission, 'epsilon_delivered' the loss of the mechanisms as run, grid rounding and "
                 "sampler slack included")


def replace_one_delivered(record: NoiseRecord, m: Mechanism) -> float:
    """The mechanism's loss against a replacement at its own worst."""
    # NoiseRecord.laplace_loss_against: the shift Δ'/γ + d' (Δ'/γ for counts on γ ≤ 1) over t,
    # plus the sampler's slack — the bound calibrate_laplace holds the job's relation to; 0 when
    # nothing moves (n under replace-one)
    return record.laplace_loss_against(m.replace_sensitivity, m.replace_coords)


def query_replace_one_delivered(plan: QueryPlan, records: list[NoiseRecord]) -> float:
    """A Laplace query's loss against a replacement: its mechanisms (run with ``records``)
    added up in the worst of the replacement's cases (statistics_params.replace_cases)."""
    return max(sum(r.laplace_loss_against(s, c) for r, (s, c) in zip(records, case))
               for case in replace_cases(plan))


def laplace_facts(m: Mechanism, record: NoiseRecord, sensitivity: str, add_remove: bool) -> dict[str, Any]:
    """A Laplace mechanism's record for the metadata, with its replace-one figures under add/remove."""
    facts = record.as_dict()
    facts.update(role=m.role, sensitivity_statement=sensitivity)
    if add_remove:
        facts.update(sensitivity_replace_one=m.replace_sensitivity, coordinates_replace_one=m.replace_coords,
                     epsilon_delivered_replace_one=replace_one_delivered(record, m))
    return facts


def query_prices(params: DPStatisticsParams, plans: list[QueryPlan]) -> dict[str, float]:
    """Each query's part of the ledger's replace-one ε (add/remove): epsilon·w_q·r_q / Σw."""
    total = sum(p.weight for p in plans)
    return {p.where: params.epsilon * p.weight * p.replace_ratio / total for p in plans}


def _statements(params: DPStatisticsParams, ctx: RunContext, spent: float, priced: float) -> list[str]:
    add_remove = params.add_remove
    relation = NEIGHBOURING_ADD_REMOVE if add_remove else NEIGHBOURING
    return [
        f"ε-differential privacy with ε = {spent:g}, δ = 0, for the whole table of answers: {relation}",
        *([f"under replace-one neighbours (one record's values changed, n public: the relation Veil's "
           f"budget counts) the same answers are ε-DP with ε = {priced:.7g}, a replacement being a "
           "removal and an addition (per query ε·Δ_replace/Δ_add_remove: metadata.dp_statistics."
           "replace_one); the job was priced at that ε (debited from the dataset's budget unless it "
           "ran on a central-DP release, which costs nothing more)"] if add_remove else []),
        "ε is split over the queries (sequential composition): each row's 'epsilon' is its query's "
        "share and 'epsilon_split' adds up to at most ε; inside a query the groups and histogram "
        "cells are disjoint (parallel composition: a record moving between cells is in the "
        "sensitivity)",
        *([] if add_remove else [
            "an ungrouped mean's centred sum runs at its query's whole share and its count at half: a "
            "replacement that changes a value moves the sum by up to hi − lo and the count not at all, "
            "one that makes it missing moves the sum by at most (hi − lo)/2 and the count by 1, so the "
            "query loses at most max(ε_S, ε_S/2 + ε_C) = its share (its epsilon_delivered: the worse "
            "case's)"]),
        "counts, histograms, sums and means: exact values plus discrete Laplace noise on a "
        "power-of-two grid (metadata.dp_statistics.queries: each mechanism's sensitivity, scale, "
        "grid and delivered ε, floating-point slack included); sums are exact integer sums of the "
        "clamped values on a grid of (hi − lo)/2^20 or finer; counts (histogram cells, a mean's "
        "count) are integers, verified, noised on the power-of-two grid γ ≤ 1 of least expected "
        "absolute error, which they need no rounding onto (the integers themselves — the geometric "
        "mechanism — at sensitivity/ε from 1 to a few hundred), so their shift is Δ/γ steps where "
        "rounded values pay Δ/γ + d (each mechanism's integer_values, sensitivity_steps)",
        "an ungrouped count of records is answered with discrete Laplace noise (sensitivity 1): n is "
        "not public under add/remove" if add_remove else
        "an ungrouped count of records is n itself, public under replace-one neighbours: no noise, no ε",
        "quantiles: the exponential mechanism with utility −|#{x ≤ c} − q·m| (sensitivity "
        + ("max(q, 1 − q) under add/remove) over a grid of candidates in the declared bounds, sampled "
           "exactly from CSPRNG bits; per group each at its query's full share (a record added or "
           "removed is in one group)" if add_remove else
           "1) over a grid of candidates in the declared bounds, sampled exactly from CSPRNG bits; per "
           "group each at half its share (a record moving between groups changes two groups' answers)"),
        "domains come from the declared bounds and categories (never from the data); numeric values "
        "are clamped into their bounds (how many were is not published); a missing cell is its own "
        "level in counts and histograms and is left out of sums, means and quantiles",
        "ci95_low / ci95_high cover the noise only (not the sampling error of the data): for a Laplace "
        "answer the exact 95 % interval of its discrete Laplace noise, plus half a grid step for a "
        "value rounded onto the grid (not a count on a grid γ ≤ 1); for a "
        "mean the ratio's range over the 97.5 % intervals of its sum and count (≥ 95 % together); "
        "none for a quantile",
        "means clipped into the bounds and intervals are post-processing; a group whose noisy count "
        "of non-missing values is below 1 has no mean (value empty, interval the whole bounds: it may "
        "hold no value); noisy counts may be negative (left unbiased)",
        *rng_statements(ctx),
    ]


def release_guarantee(params: DPStatisticsParams, ctx: RunContext, plans: list[QueryPlan],
                      facts: list[dict[str, Any]], n: int, protected: list[str],
                      ) -> tuple[dict[str, Any], dict[str, Any]]:
    """(guarantees, metadata.dp_statistics) of a release: ``facts`` per query as run (each with
    its delivered ε and, under add/remove, its delivered replace-one ε)."""
    add_remove = params.add_remove
    spent = spent_epsilon(params)
    priced = ledger_epsilon(params, plans)
    split = {p.where: p.epsilon for p in plans}
    delivered = sum(f["epsilon_delivered"] for f in facts)
    if delivered > spent:  # never: each query's delivered ε is held to its share
        raise RuntimeError(f"ε delivered {delivered!r} exceeds the ε stated {spent!r}")
    relation = NEIGHBOURING_ADD_REMOVE if add_remove else NEIGHBOURING
    declared: list[ColumnPlan] = ([p.value for p in plans if p.value is not None]
                                  + [g for p in plans for g in p.groups])
    replaced: dict[str, Any] = {}
    if add_remove:
        delivered_replace = sum(f["epsilon_delivered_replace_one"] for f in facts)
        if delivered_replace > priced:  # never: replace_ratio's bound; a debit below the truth is a bug
            raise RuntimeError(f"replace-one ε delivered {delivered_replace!r} exceeds the price {priced!r}")
        replaced = {"epsilon": priced, "delta": 0.0, "epsilon_delivered": delivered_replace,
                    "epsilon_split": query_prices(params, plans), "bound": REPLACE_BOUND}
    meta = {"method": "dp_statistics", "epsilon": spent, "delta": 0.0, "neighbouring": relation,
            **({"replace_one": replaced} if add_remove else {}),
            "epsilon_split": split, "epsilon_delivered": delivered,
            **({"records_public": "n is not public under add/remove neighbours: not published"}
               if add_remove else {"records": n, "records_public": "n is public under replace-one neighbours"}),
            "queries": facts,
            "noise": {"mechanism": "discrete Laplace on a power-of-two grid (noise.laplace_mechanism)",
                      "sampler": LAPLACE_SAMPLER, "rng": ctx.rng.name},
            "columns": {p.name: p.describe() for p in declared}, "missing_label": MISSING}
    g = guarantee("central_dp", rng=ctx.rng.name, private=ctx.rng.is_private, epsilon=spent, delta=0.0,
                  protected_columns=protected, statements=_statements(params, ctx, spent, priced),
                  warnings=domain_warnings(list({p.name: p for p in declared}.values())),
                  neighbouring=relation, epsilon_split=split, epsilon_delivered=delivered,
                  **({"replace_one": {k: replaced[k] for k in ("epsilon", "delta", "epsilon_delivered")}}
                     if add_remove else {}))
    return g, meta
