"""icahdp's steps shared by the strict and paper modes: planning the released columns into the
projection and sensitive channels, the decoding's description and the output column order, and
the ε budget — the split among the noisy steps, the personalized budgets of sensitive columns,
the check that every step's share reaches the discrete Laplace floor, and the ε the ledger
debits. Separate so that each mode's run reads on its own.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from app.privacy.data import ColumnInfo, MethodInput
from app.privacy.dp_release.budget import personalized_budgets
from app.privacy.dp_release.common import MAX_EPSILON, check_references, check_width
from app.privacy.dp_release.encoding import ColumnPlan, declared_plan, plan_column
from app.privacy.dp_release.feasibility import laplace_minimum, round_up
from app.privacy.dp_release.icahdp_params import IcahdpParams
from app.privacy.registry import MethodInputError


# ------------------------------------------------------------------------ shared steps
def column_plans(data: MethodInput, params: IcahdpParams, frame: pd.DataFrame | None,
           declared: bool, skip: frozenset[str] = frozenset()) -> tuple[list[ColumnPlan], list[ColumnPlan]]:
    """(projection plans, sensitive plans) of the released columns not in ``skip``."""
    chosen = check_references(params, data.columns)
    names = {c.name for c in chosen}
    for name in params.sensitive or {}:
        if name not in names:
            raise MethodInputError(f"sensitive column {name!r} is not released")
    plans = [plan_column(c, params.bounds, params.categories, frame, require_declared=declared)
             for c in chosen if c.name not in skip]
    sensitive = set(params.sensitive or {})
    projection = [p for p in plans if p.name not in sensitive]
    if not projection:
        raise MethodInputError("every released column is sensitive or dropped: nothing left to project")
    check_width(plans)
    return projection, [p for p in plans if p.name in sensitive]


def decoding_statement(params: IcahdpParams) -> str:
    plain = "numeric: clip to [0, 1] → bounds → output grid (integers rounded); "
    if not params.calibrated:
        return plain + "one-hot blocks: plain argmax"
    return plain + ("one-hot blocks: argmax with per-category offsets matching the estimated "
                    "category frequencies (post-processing)")


def budget_shares(params: IcahdpParams) -> dict[str, float]:
    rest = params.epsilon - params.sensitive_epsilon
    shares = {"filter": rest * params.filter_share if params.threshold is not None else 0.0,
              "mean": rest * params.mean_share,
              "covariance": 0.0 if params.basis else rest * params.covariance_share}
    shares["projection"] = rest - sum(shares.values())
    return shares


def budget_split(params: IcahdpParams) -> dict[str, Any] | None:
    if not params.sensitive:
        return None
    return personalized_budgets(params.sensitive, params.sensitive_epsilon, params.levels)


def _noisy_steps(params: IcahdpParams, chosen: list[ColumnInfo]) -> list[tuple[str, int, float]]:
    """(step, most coordinates one record can change, share of ε) of every Laplace mechanism
    the run may call, from the params and the schema: coordinates are bounded before the
    filter drops columns and for the largest k allowed (fewer only make the step easier)."""
    sensitive = params.sensitive or {}
    budgets = budget_split(params)["assignment"] if sensitive else {}
    steps = [(f"sensitive:{c.name}", 1 if c.type == "numeric" else 2, budgets[c.name])
             for c in chosen if c.name in sensitive]
    if params.mode == "paper":  # each candidate release spends ε_rest on its projection
        return steps + [("projection", max(params.candidates()),
                         params.epsilon - params.sensitive_epsilon)]
    shares = budget_shares(params)
    widths = [declared_width(c, params) for c in chosen if c.name not in sensitive]
    n_num = sum(c.type == "numeric" for c in chosen if c.name not in sensitive)
    q, width = len(widths), sum(widths)
    k = len(params.basis[0]) if params.basis else min(params.k or params.k_max, width)
    steps += [("mean", n_num + 2 * (q - n_num), shares["mean"]), ("projection", k, shares["projection"])]
    if params.threshold is not None:
        steps.append(("filter", 2 * q, shares["filter"]))
    if not params.basis:
        steps.append(("covariance", min(width * (width + 1) // 2, q * (q + 1)), shares["covariance"]))
    return steps


def declared_width(info: ColumnInfo, params: IcahdpParams) -> int:
    """Encoded width of a declared column (strict mode)."""
    return declared_plan(info, params.bounds, params.categories).width


def check_budget(params: IcahdpParams, chosen: list[ColumnInfo]) -> None:
    """Every noisy step's share of ε must reach the discrete Laplace floor for its coordinates
    (``feasibility.laplace_minimum``); the message names the shortest step and the smallest ε
    that serves every step (each share is a fixed fraction of ε)."""
    def short(epsilon: float) -> list[tuple[str, int, float]]:
        steps = _noisy_steps(params.model_copy(update={"epsilon": epsilon}), chosen)
        return [s for s in steps if s[2] < laplace_minimum(s[1])]

    if not (missing := short(params.epsilon)):
        return
    fractions = _noisy_steps(params.model_copy(update={"epsilon": 1.0}), chosen)
    needed = round_up(max(laplace_minimum(c) / f for _, c, f in fractions))
    while short(needed):  # the run's shares may round below the fractions' product
        needed = round_up(needed * 1.01)
    name, coords, share = max(missing, key=lambda s: laplace_minimum(s[1]) - s[2])
    raise MethodInputError(
        f"epsilon = {params.epsilon:g} is too small for this job: its step {name!r} gets "
        f"{share:.3g} of ε for noise on up to {coords} coordinates, and discrete Laplace noise needs "
        f"at least {laplace_minimum(1):g} of ε per coordinate (the sampler's floating-point slack "
        f"is reserved out of each share); epsilon must lie in [{needed:.2g}, {MAX_EPSILON:g}] "
        "(or release fewer columns, lower k or k_max, or give that step a larger share)")


def ordered_infos(out: pd.DataFrame, plans: list[ColumnPlan]) -> list[ColumnInfo]:
    by_name = {p.name: p for p in plans}
    return [by_name[c].output_info() for c in out.columns]


def icahdp_epsilon(params: IcahdpParams, columns: list[ColumnInfo]) -> float:
    """ε to debit at acceptance. strict: ε. paper: what its noise spends, ε_sens + (ε - ε_sens)
    per candidate release — debited although paper mode gives no DP guarantee."""
    if params.mode == "strict":
        return params.epsilon
    rest = params.epsilon - params.sensitive_epsilon
    return params.sensitive_epsilon + rest * len(params.candidates())
