"""privbayes' release: its guarantee, statements and metadata under replace-one or add/remove
neighbours (the mechanisms and their derivations: privbayes.py's docstring). Under add/remove
the release states the replace-one ε it also satisfies — the ε Veil's budget counts, priced at
submission by privbayes.replace_one_price — and is held to that price here.
"""

from __future__ import annotations

import math
from typing import Any

from app.privacy.context import RunContext
from app.privacy.dp_release.common import NEIGHBOURING, NEIGHBOURING_ADD_REMOVE, rng_statements
from app.privacy.dp_release.encoding import domain_warnings
from app.privacy.dp_release.marginal_domains import Column, output_infos
from app.privacy.guarantees import guarantee
from app.privacy.noise import LAPLACE_SAMPLER
from app.privacy.results import ReleaseResult

SCORE = "S = 2n²·R = Σ|n·c(x,π) − c(x)·c(π)| (R = ½‖P[X,Π] − P[X]P[Π]‖₁), exact integers"
SCORE_ADD_REMOVE = ("T = S/n = 2n·R = Σ|c(x,π) − c(x)·c(π)/n| (R = ½‖P[X,Π] − P[X]P[Π]‖₁), exact "
                    "rationals")
REPLACE_BOUND = ("a replacement is a removal and an addition: the count of records loses nothing "
                 "(n does not change); each round of the network at most 2·ε_round (by T's replace-one "
                 "sensitivity 6 + 4/n it is (1.5 + 1/n)·ε_round, not stated: n is private); each "
                 "marginal's discrete Laplace exactly its loss against a shift of 2 on 2 cells, twice "
                 "its add/remove loss. 'epsilon' is the price debited at submission, 2·(ε − ε/20); "
                 "'epsilon_delivered' the same bound on the mechanisms as run (grid rounding and "
                 "sampler slack included)")


def noise_dominated(measurements: list[dict[str, Any]], n: float, theta: float, records: str) -> list[str]:
    """A warning when a measured marginal's average count n / cells is below its Laplace scale:
    θ-usefulness keeps a parent set's marginal above θ times its noise, but a large column's own
    1-way counts at a small ε, or any marginal with θ < 1 (0: no rule), can fall below it. From
    public figures only (n or, under add/remove, its noisy count; the cells, the scale);
    ``records``: how n is shown."""
    weak = [m for m in measurements if n / m["cells"] < m["laplace_scale"]]
    if not weak:
        return []
    worst = min(weak, key=lambda m: n / (m["cells"] * m["laplace_scale"]))
    return [f"{len(weak)} of the {len(measurements)} measured marginals have an average count below their "
            f"noise's scale (the worst, {' × '.join(worst['clique'])}: {worst['cells']:,} cells for {records} "
            f"records, {n / worst['cells']:.3g} a cell against Laplace scale {worst['laplace_scale']:.3g}): "
            "their conditionals are mostly noise; a larger epsilon or fewer levels (bins, categories)"
            + (f" or a larger theta (θ = {theta:g} admits parent sets below their noise; 1 or more does not)"
               if theta < 1 else "") + " would lift them"]


def _structure_phrase(facts: dict[str, Any], d: int) -> str:
    """How the network was chosen, for the ε statement."""
    if d == 1:
        return "one column: no network to choose"
    if facts["independent"]:
        return ("none can have an edge: τ, set by n, ε, θ and the domains, is below every pair's cells; "
                "its order drawn uniformly, no data read")
    rounds = len(facts["rounds"])
    return f"the exponential mechanism, {rounds} round{'s' if rounds != 1 else ''}"


def _replace_one(facts: dict[str, Any]) -> dict[str, Any]:
    """The replace-one ε of an add/remove run: its price and the bound on the mechanisms as run,
    which never exceeds it."""
    split = {"records": 0.0, "structure": 2.0 * facts["split"]["structure"],
             "conditionals": sum(m["epsilon_delivered_replace_one"] for m in facts["measurements"])}
    delivered = sum(split.values())
    if delivered > facts["price"]:  # never: each part is at most twice its share of ε − ε/20
        raise RuntimeError(f"replace-one ε delivered {delivered!r} exceeds the price {facts['price']!r}")
    return {"epsilon": facts["price"], "delta": 0.0, "epsilon_delivered": delivered,
            "epsilon_split": split, "bound": REPLACE_BOUND}


def _statements(params, ctx: RunContext, facts: dict[str, Any], d: int, relation: str,
                replaced: dict[str, Any]) -> list[str]:
    split, add_remove = facts["split"], params.add_remove
    score = ("the network's scores are exact rationals (T = 2n·R, sensitivity 4 under adding or removing "
             "one record, whatever n)" if add_remove else
             "the network's scores are exact integers (2n²·R, sensitivity 6n + 4 under replacing one record)")
    return [
        f"ε-differential privacy with ε = {params.epsilon:g}, δ = 0, for the whole synthetic table: {relation}",
        *([f"under replace-one neighbours (one record's values changed, n public: the relation Veil's "
           f"budget counts) the same release is ε-DP with ε = {replaced['epsilon']:.7g} (the mechanisms as "
           f"run: {replaced['epsilon_delivered']:.7g}), a replacement being a removal and an addition: each "
           "round of the network and each marginal loses at most twice its ε, the count of records "
           f"nothing; the job was priced at ε = {replaced['epsilon']:.7g} (debited from the dataset's "
           "budget unless it ran on a central-DP release, which costs nothing more)"] if add_remove else []),
        "ε is split (sequential composition): "
        + (f"{split['records']:.6g} measuring the number of records (discrete Laplace, sensitivity 1: n is "
           "not public under add/remove), " if add_remove else "")
        + f"{split['structure']:.6g} choosing the network (" + _structure_phrase(facts, d)
        + f"), {split['conditionals']:.6g} measuring its {len(facts['measurements'])} marginals (discrete "
        "Laplace); 'epsilon_split' adds up to at most ε",
        f"{score} and each choice is sampled exactly from CSPRNG bits (no floating-point argmax)",
        "every noisy count is an integer count plus discrete Laplace noise on a power-of-two grid "
        "(metadata.privbayes.measurements: the scale, grid and delivered ε of each, floating-point "
        "slack included)",
        "domains come from the declared bounds and categories (never from the data); values are "
        "clipped into the bounds; every column has a 'missing' level",
        "the conditionals (each noisy marginal made non-negative, "
        + ((f"projected onto the tables of {'the noisy count of' if add_remove else 'n'} records")
           if params.consistency == "simplex" else "negative counts clipped")
        + ", normalized), the sampled records and their decoding (uniform inside a numeric bin) are post-processing",
        *rng_statements(ctx),
    ]


def _score(params, facts: dict[str, Any]) -> dict[str, str]:
    if params.add_remove:
        return {"name": "R (PrivBayes TODS 2017), as T = 2n·R", "computed": SCORE_ADD_REMOVE,
                "sensitivity": "4 under add/remove (a record added to n moves c − c(x)c(π)/n by "
                "n/(n + 1)·(e_x − P[X])⊗(e_π − P[Π]), L1 < 4), whatever n",
                "mechanism": "exponential, P ∝ exp(ε_round·T / (2·4)), sampled exactly"}
    return {"name": "R (PrivBayes TODS 2017)", "computed": SCORE,
            "sensitivity": f"6n + 4 = {facts['score_sensitivity']} (R: 3/n + 2/n²)",
            "mechanism": "exponential, P ∝ exp(ε_round·S / (2·(6n + 4))), sampled exactly"}


def release(params, ctx: RunContext, columns: list[Column], out, facts: dict[str, Any]) -> ReleaseResult:
    """The ReleaseResult of a run: ``facts`` as privbayes.run_privbayes gathered them."""
    split, add_remove, tau = facts["split"], params.add_remove, facts["tau"]
    d = len(columns)
    n_public = facts["n_public"]  # n, or its noisy count under add/remove: never the private n
    records = f"a noisy {n_public:,.0f}" if add_remove else f"{facts['n']:,}"
    relation = NEIGHBOURING_ADD_REMOVE if add_remove else NEIGHBOURING
    replaced = _replace_one(facts) if add_remove else {}
    independent = None
    if facts["independent"]:
        independent = (
            f"no column can have a parent: a θ-useful marginal has at most τ = {tau:.4g} cells "
            f"(n = {records}, ε = {params.epsilon:g}, θ = {params.theta:g}, {d} columns) and the smallest "
            f"marginal of two columns has {facts['smallest_pair']:,} cells, so the synthetic columns are "
            f"independent of each other (each keeps its own distribution); no ε went to choosing a "
            f"network, all of it measured the {d} columns' own counts. To link columns: raise epsilon, "
            f"lower theta (0 lifts the rule) or declare fewer levels (bins, categories)")
    count = facts["count"]
    meta = {
        "method": "privbayes", "epsilon": params.epsilon, "delta": 0.0, "neighbouring": relation,
        **({"replace_one": replaced} if add_remove else {}),
        "epsilon_split": split, "epsilon_delivered": facts["delivered"],
        "structure_share": params.structure_share, "degree": params.degree, "theta": params.theta,
        "useful_cells": None if math.isinf(tau) else tau,
        "independent_columns": facts["independent"],  # why: the warning in guarantees.warnings
        **({"records_estimate": n_public, "records_public": "n is not public under add/remove neighbours: "
            "not published; records_estimate, the noisy count (at least 1), sets τ, the simplex's total "
            "and the default size",
            "records_count": {"sensitivity_l1": 1, "laplace_scale": count.scale, "epsilon": count.epsilon_share,
                              "epsilon_delivered": count.epsilon_delivered, "grid": count.grid,
                              "sampler_slack": count.sampler_slack}}
           if add_remove else {"records": facts["n"], "records_public": "n is public under replace-one "
                               "neighbours: it sets τ, the score's sensitivity and the default size"}),
        "network": [{"attribute": x, "parents": list(ps)} for x, ps in facts["network"]],
        "first_attribute": "drawn uniformly at random from the job's random source (no data read)",
        "selections": facts["rounds"],
        "score": _score(params, facts),
        "measurements": facts["measurements"],
        "missing_released": facts["missing"],
        "conditionals": [{"attribute": x, "parents": list(ps), "read_from": src}
                         for (x, ps), src in zip(facts["network"], facts["source"])],
        "noise": {"mechanism": "discrete Laplace on a power-of-two grid (noise.laplace_mechanism)",
                  "sampler": LAPLACE_SAMPLER, "rng": ctx.rng.name,
                  "sensitivity_l1": "1 per marginal (add or remove one record: one cell ±1)" if add_remove
                  else "2 per marginal (replace one record: one cell −1, one cell +1)"},
        "columns": {c.name: c.describe() for c in columns}, "rows": facts["rows"],
        "consistency": params.consistency,
        "sampling": "ancestral, in the network's order, by inverse CDF from the job's random source",
    }
    g = guarantee("central_dp", rng=ctx.rng.name, private=ctx.rng.is_private, epsilon=params.epsilon,
                  delta=0.0, protected_columns=list(out.columns),
                  statements=_statements(params, ctx, facts, d, relation, replaced),
                  warnings=[*domain_warnings([c.plan for c in columns]), *([independent] if independent else []),
                            *noise_dominated(facts["measurements"], n_public, params.theta, records)],
                  neighbouring=relation, epsilon_split=split, epsilon_delivered=facts["delivered"],
                  **({"replace_one": {k: replaced[k] for k in ("epsilon", "delta", "epsilon_delivered")}}
                     if add_remove else {}))
    return ReleaseResult(frame=out, columns=output_infos(columns), guarantees=g, metadata={"privbayes": meta},
                         metrics={"rows": facts["rows"], "seconds": facts["seconds"],
                                  "measurements": len(facts["measurements"]),
                                  "selections": len(facts["rounds"])})
