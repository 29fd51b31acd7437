"""DPPro baseline (Xu et al. 2017): random Gaussian projection, Gaussian noise, back-projection.

Records are encoded in [0, 1]^p (bounds, one-hot) and centred at a data-independent point c
(0.5 for a numeric coordinate, 1/m in a block of m categories). A p × k matrix R with i.i.d.
N(0, 1/k) entries — drawn from the CSPRNG, independent of the data, published — projects them:
Y = (X - c)R. One record changes one row of Y by (x - x')R, whose L2 norm is at most
σ_max(R)·‖x - x'‖₂ ≤ σ_max(R)·√(n_num + 2n_cat); discrete Gaussian noise calibrated to that
makes Y (ε, δ)-DP. The release is Ỹ R⁺ + c (least-squares back-projection, or Ỹ Rᵀ + c),
decoded like icahdp's: post-processing.

Xu et al. additionally credit the randomness of R with part of the privacy and add less noise;
that argument needs R secret, while a back-projected release needs it, so Veil takes no such
credit: the guarantee holds with R public.
"""

from __future__ import annotations

import math
from typing import Literal

import numpy as np
from pydantic import Field

from app.privacy.context import RunContext
from app.privacy.data import ColumnInfo, MethodInput, SourceRelease
from app.privacy.dp_release.common import (
    MAX_EPSILON, NEIGHBOURING, TableParams, assemble, at_least_two_records, check_references, check_width,
    require_rows, rng_statements,
)
from app.privacy.dp_release.encoding import Encoding, check_declared, domain_warnings, plan_column
from app.privacy.dp_release.feasibility import gaussian_feasible, require
from app.privacy.guarantees import guarantee
from app.privacy.noise import gaussian_mechanism
from app.privacy.registry import MethodKind, MethodSpec, register
from app.privacy.results import ReleaseResult


MAX_DELTA = 1e-2


class DpproParams(TableParams):
    delta: float = Field(1e-6, gt=0.0, le=MAX_DELTA, description="δ of the (ε, δ) guarantee")
    k: int = Field(10, ge=1, le=256, description="dimension of the random projection")
    backprojection: Literal["pinv", "transpose"] = Field(
        "pinv", description="back to the attribute space by the pseudo-inverse R⁺ (least squares) "
        "or by Rᵀ (unbiased over R)")


def run_dppro(data: MethodInput, params: DpproParams, ctx: RunContext) -> ReleaseResult:
    frame = require_rows(data)
    _check_budget(params)
    chosen = check_references(params, data.columns)
    plans = [plan_column(c, params.bounds, params.categories, frame, require_declared=True)
             for c in chosen]
    check_width(plans)
    enc = Encoding(plans)
    ctx.progress(0.1, "encoding")
    X = enc.encode(frame)
    center = np.concatenate([[0.5] if p.kind == "numeric" else np.full(p.width, 1.0 / p.width)
                             for p in enc.plans])
    k = params.k
    ctx.progress(0.3, "random projection")
    R = ctx.rng.normal((enc.width, k), scale=1.0 / math.sqrt(k))
    spectral = float(np.linalg.norm(R, 2))
    noisy, record = gaussian_mechanism((X - center) @ R, spectral * enc.l2_diameter, k,
                                       params.epsilon, params.delta, ctx.rng)
    ctx.progress(0.7, "back-projection")
    back = np.linalg.pinv(R) if params.backprojection == "pinv" else R.T
    out = assemble(frame, dict(enc.decode(noisy @ back + center, frame.index).items()))
    statements = [
        f"(ε, δ)-differential privacy with ε = {params.epsilon:g}, δ = {record.delta_delivered:.3g} "
        f"(≤ the δ = {params.delta:g} asked for): {NEIGHBOURING}",
        "Gaussian mechanism on the projected records: discrete Gaussian on a power-of-two grid, "
        "calibrated through zero-concentrated DP (Canonne, Kamath & Steinke 2020) to the L2 "
        "sensitivity σ_max(R)·√(n_num + 2n_cat); floating-point slack included",
        "R is independent of the data and published; no privacy is credited to its randomness "
        "(Xu et al. do, which needs R secret)",
        "bounds and categories are declared, not read from the data; back-projection and decoding "
        "are post-processing",
        *rng_statements(ctx),
    ]
    ctx.progress(1.0, "done")
    return ReleaseResult(
        frame=out, columns=[p.output_info() for p in enc.plans],
        guarantees=guarantee(
            "central_dp", rng=ctx.rng.name, private=ctx.rng.is_private, epsilon=params.epsilon,
            delta=record.delta_delivered, protected_columns=list(out.columns),
            statements=statements, warnings=domain_warnings(enc.plans),
            epsilon_split={"projection": params.epsilon},
            neighbouring=NEIGHBOURING),
        metadata={"dppro": {
            "epsilon": params.epsilon, "delta": params.delta, "delta_delivered": record.delta_delivered,
            "k": k, "spectral_norm": spectral, "projection_matrix": R.tolist(),
            "center": center.tolist(), "encoded_columns": enc.names(),
            "backprojection": params.backprojection,
            "columns": {p.name: p.describe() for p in enc.plans}, "noise": record.as_dict()},
            "epsilon_split": {"projection": params.epsilon}},
        metrics={"k": k, "encoded_width": enc.width, "rows": len(frame)},
    )


def dppro_epsilon(params: DpproParams, columns: list[ColumnInfo]) -> float:
    return params.epsilon


def _check_budget(params: DpproParams) -> None:
    """The Gaussian calibration must serve (ε, δ) for k coordinates (any sensitivity)."""
    require(lambda e, d: gaussian_feasible(params.k, e, d), params.epsilon, params.delta,
            why=f"dppro adds discrete Gaussian noise to k = {params.k} projected coordinates; the "
                "sampler's floating-point slack is reserved out of ε and its far tails count "
                "towards δ, both per coordinate",
            max_epsilon=MAX_EPSILON, max_delta=MAX_DELTA, fewer="lower k")


def _check(params: DpproParams, columns: list[ColumnInfo], source: SourceRelease | None) -> None:
    check_declared(check_references(params, columns), params.bounds, params.categories)
    _check_budget(params)


register(MethodSpec(
    name="dppro",
    family="dp_release",
    kind=MethodKind.release,
    summary="DPPro baseline: random Gaussian projection of the encoded records, discrete Gaussian "
            "noise, back-projection to the attribute space.",
    params=DpproParams,
    guarantee="central (ε, δ)-DP of the whole table (replace-one neighbours), R public",
    paper="Xu, Ren, Zhang, Chen & Ren, DPPro: Differentially Private High-Dimensional Data "
          "Release via Random Projection, IEEE TIFS 12(12), 2017",
    run=run_dppro,
    epsilon=dppro_epsilon,
    check=_check,
    check_rows=at_least_two_records,
    docs="docs/methods/dppro.md",
))
