"""mst's and aim's release: the (ε, δ) the ledger's ρ delivers, every measurement and selection,
the columns' domains, the guarantee and its statements, under replace-one or add/remove
neighbours (an add/remove release also states the replace-one ε it was priced at). Separate
from marginals.py (the parameters and the budget), as privbayes_release.py is from privbayes.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from app.privacy.context import RunContext
from app.privacy.dp_release.common import NEIGHBOURING, NEIGHBOURING_ADD_REMOVE
from app.privacy.dp_release.encoding import domain_warnings
from app.privacy.dp_release.marginal_domains import Column, output_infos
from app.privacy.dp_release.marginals import SynthParams, priced_epsilon, replaced_rho_bound
from app.privacy.dp_release.mbi_bridge import mbi_version
from app.privacy.guarantees import guarantee
from app.privacy.results import ReleaseResult


def release(method: str, params: SynthParams, ctx: RunContext, columns: list[Column],
            out: pd.DataFrame, ledger, budget: tuple[float, float, float], facts: dict[str, Any],
            extra: dict[str, Any], plan: tuple[int, float]) -> ReleaseResult:
    """The release of a marginal-based synthesizer: the (ε, δ) delivered by the ledger's ρ,
    every measurement and selection, the columns' domains, and ``extra`` (method-specific).
    ``plan``: (the measurements priced, the share of ρ at most spent measuring), as the
    method's ``epsilon`` priced an add/remove job."""
    from app.privacy.dp_release.zcdp import (
        ACCOUNTANT, ACCOUNTANT_ADD_REMOVE, CONVERSION, delivered, noise_description, replace_one_rho,
    )

    rho, slack, tails = budget
    eps, delta_out = delivered(ledger.spent, params.epsilon, slack, tails)
    measurements = [s for s in ledger.steps if s["kind"] == "measure"]
    selections = [s for s in ledger.steps if s["kind"] == "select"]
    split = {"1-way": sum(s["rho"] for s in measurements if s["stage"] == "1-way"),
             "select": sum(s["rho"] for s in selections),
             "marginals chosen": sum(s["rho"] for s in measurements if s["stage"] != "1-way")}
    add_remove = params.neighbouring == "add_remove"
    accountant = ACCOUNTANT_ADD_REMOVE if add_remove else ACCOUNTANT
    neighbouring = NEIGHBOURING_ADD_REMOVE if add_remove else NEIGHBOURING
    replaced: dict[str, Any] = {}
    if add_remove:
        m, share = plan
        eps_priced = priced_epsilon(method, params, m, share, "")
        rho_replaced = replace_one_rho(split["1-way"] + split["marginals chosen"], split["select"])
        replaced = {"epsilon": eps_priced, "delta": delivered(rho_replaced, eps_priced, slack, tails)[1],
                    "rho": rho_replaced, "rho_priced": replaced_rho_bound(rho, share),
                    "priced": eps_priced,
                    "bound": "a replacement is a removal and an addition: each measurement's ρ × 2 "
                             "(Δ₂ = √2), each selection's × 4 (score sensitivity 2, ε₀ doubled); ε "
                             "priced at submission from the plan's ρ (measurements at most "
                             f"{share:.6g} of it), δ delivered by the ρ actually spent"}
    meta = {
        "method": method, "epsilon": params.epsilon, "delta": params.delta,
        "delta_delivered": delta_out, "rho": rho, "rho_spent": ledger.spent,
        "accountant": accountant, "conversion": CONVERSION, "neighbouring": neighbouring,
        **({"replace_one": replaced} if add_remove else {}),
        "sampler_slack_reserved": {"epsilon": slack, "delta": tails},
        "sampler_slack_realized": {"epsilon": ledger.slack, "delta": ledger.tails},
        "budget_split": split, "noise": noise_description(ctx.rng, params.neighbouring),
        "measurements": measurements, "selections": selections,
        "columns": {c.name: c.describe() for c in columns}, "rows": facts["rows"],
        "model": {"library": f"mbi {mbi_version()}", "known_total": facts["n"],
                  **({"total": "estimated: the inverse-variance-weighted mean of the noisy 1-way "
                      "totals (post-processing; n is not public under add/remove)"} if add_remove else {}),
                  "sampling": "mbi MarkovRandomField.synthetic_data, run by Veil with a column's "
                  "parents in sampling order (randomized rounding along the junction tree, shuffled "
                  "within each parent group)", **extra.pop("model", {})},
        **extra,
    }
    g = guarantee("central_dp", rng=ctx.rng.name, private=ctx.rng.is_private, epsilon=eps,
                  delta=delta_out, protected_columns=list(out.columns),
                  statements=statements(method, eps, delta_out, ctx, neighbouring, replaced),
                  warnings=domain_warnings([c.plan for c in columns]), rho=rho, accountant=accountant,
                  conversion=CONVERSION, neighbouring=neighbouring, rho_split=split,
                  **({"replace_one": {k: replaced[k] for k in ("epsilon", "delta", "rho")}}
                     if add_remove else {}))
    return ReleaseResult(frame=out, columns=output_infos(columns), guarantees=g, metadata={method: meta},
                         metrics={"rows": facts["rows"], "seconds": facts["seconds"],
                                  "measurements": len(measurements), "selections": len(selections)})


def statements(method: str, epsilon: float, delta: float, ctx: RunContext,
               neighbouring: str = NEIGHBOURING, replaced: dict[str, Any] | None = None) -> list[str]:
    from app.privacy.dp_release.common import rng_statements

    return [
        f"(ε, δ)-differential privacy with ε = {epsilon:g}, δ = {delta:.3g} for the whole synthetic "
        f"table: {neighbouring}",
        *([f"under replace-one neighbours (one record's values changed, n public: the relation "
           f"Veil's budget counts) the same release is (ε, δ)-DP with ε = {replaced['epsilon']:.7g}, "
           f"δ = {replaced['delta']:.3g}, a replacement being a removal and an addition (each "
           "measurement's ρ doubled, each selection's quadrupled); Veil's budget counts replace-one "
           f"ε, so the job was priced at ε = {replaced['epsilon']:.7g} (debited from the dataset's "
           "budget unless it ran on a central-DP release, which costs nothing more)"] if replaced else []),
        f"{method} reads the data only through the measurements and selections listed in "
        f"metadata.{method}.measurements / metadata.{method}.selections; each is charged in ρ-zCDP, "
        "the ρ add up to at most the ρ that converts to (ε, δ) (guarantees.accountant, "
        "guarantees.conversion)",
        "measurements are integer counts plus discrete Gaussian noise on a power-of-two grid; "
        "selections are exponential mechanisms on exact rational scores, sampled exactly (no "
        "floating-point argmax)",
        "domains come from the declared bounds and categories (never from the data); values are "
        "clipped into the bounds; every column has a 'missing' level",
        "the graphical model (mbi), the synthetic records it samples and their decoding (uniform "
        "inside a numeric bin) are post-processing; the sampler (mbi's, in Veil) uses a numpy "
        "generator seeded from the job's random source — that randomness protects nobody",
        *rng_statements(ctx),
    ]
