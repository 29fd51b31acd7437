"""icahdp's paper mode: Chu et al.'s pipeline as published (filter on exact histograms, exact
mean and covariance, k chosen by mutual information with the raw data), kept for comparison.
Not differentially private; its release states so. Separate from the strict mode, which shares
none of these steps.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from app.privacy.context import RunContext
from app.privacy.data import MethodInput
from app.privacy.dp_release.budget import mean_mutual_information
from app.privacy.dp_release.common import assemble, check_references, require_rows, rng_statements
from app.privacy.dp_release.encoding import Encoding, calibrate
from app.privacy.dp_release.icahdp_params import PAPER_DEFAULT_THRESHOLD, IcahdpParams
from app.privacy.dp_release.icahdp_steps import (
    budget_split, decoding_statement, ordered_infos, column_plans, icahdp_epsilon,
)
from app.privacy.dp_release.projection import eigh_desc, filter_by_importance, importance, project, sensitive_release
from app.privacy.guarantees import guarantee
from app.privacy.results import ReleaseResult


# ------------------------------------------------------------------------------- paper
def run_paper(data: MethodInput, params: IcahdpParams, ctx: RunContext) -> ReleaseResult:
    frame = require_rows(data)
    # attributes with too many missing values go before planning: an empty column has no
    # domain to read from the data (sensitive and label columns are kept)
    too_many = [c.name for c in check_references(params, data.columns)
                if c.name not in (params.sensitive or {}) and c.role != "label"
                and float(frame[c.name].isna().mean()) > params.max_missing]
    projection, sensitive = column_plans(data, params, frame, declared=False, skip=frozenset(too_many))
    rest = params.epsilon - params.sensitive_epsilon
    non_private: list[str] = []
    dropped: dict[str, str] = {c.name: "identifier" for c in data.columns
                               if c.role == "identifier" and params.columns is None}
    from_data = [p.name for p in projection + sensitive if not p.declared]
    if from_data:
        non_private.append("bounds/categories read from the data for: " + ", ".join(from_data))
    if too_many:
        dropped.update({name: "too many missing values" for name in too_many})
    if params.max_missing < 1.0:  # every column's exact missing share was read, dropped or not
        non_private.append(f"attributes checked against max_missing = {params.max_missing:g} by their exact "
                           "fraction of missing values (dropped: " + (", ".join(too_many) or "none") + ")")
    threshold = PAPER_DEFAULT_THRESHOLD if params.threshold is None else params.threshold
    ctx.progress(0.05, "entropy filter")
    weights, _ = importance(frame, projection, params.bins, None)
    projection, gone = filter_by_importance(projection, weights, threshold)
    dropped.update({name: "entropy filter" for name in gone})
    non_private.append(f"entropy filter on exact histograms (threshold {threshold:g})")

    enc = Encoding(projection)
    fill = {p.name: float(((pd.to_numeric(frame[p.name], errors="coerce").clip(p.lo, p.hi) - p.lo)
                           / (p.hi - p.lo)).mean()) for p in projection if p.kind == "numeric"}
    fill = {k: (0.5 if math.isnan(v) else v) for k, v in fill.items()}
    X = enc.encode(frame, fill)
    mu = X.mean(axis=0)
    values, vectors = eigh_desc(np.cov(X, rowvar=False, bias=True).reshape(enc.width, enc.width))
    non_private += ["exact mean (centering and the released mean)", "exact covariance and its eigenvectors U_k"]
    imputed = [p.name for p in projection
               if p.kind == "numeric" and pd.to_numeric(frame[p.name], errors="coerce").isna().any()]
    if imputed:  # listed only where it happened: after a drop there may be no missing cell left
        non_private.append("missing numeric cells imputed by the exact mean: " + ", ".join(imputed))

    candidates = [k for k in params.candidates() if k <= enc.width] or [min(enc.width, params.candidates()[0])]
    releases, scores, records = {}, {}, {}
    for i, k in enumerate(candidates):
        ctx.progress(0.1 + 0.7 * i / len(candidates), f"candidate k = {k}")
        released, rec = project(X, mu, vectors[:, :k], enc, rest, ctx.rng)
        if params.calibrated:
            released = calibrate(released, enc, mu)
        releases[k] = enc.decode(released, frame.index)
        records[k] = rec.as_dict()
        if len(candidates) > 1:
            scores[k] = mean_mutual_information(frame, releases[k], projection, params.bins)
    if len(candidates) > 1:
        target = float(np.mean(list(scores.values())))
        k = min(candidates, key=lambda c: (abs(scores[c] - target), c))
        non_private.append("k chosen by the mutual information between the raw data and each "
                           "candidate release (mean method)")
    else:
        k = candidates[0]
    if params.calibrated:
        non_private.append("categories calibrated to the exact category frequencies")
    parts = dict(releases[k].items())
    noise: dict[str, Any] = {"projection": records[k]}
    split = budget_split(params)
    if sensitive:
        sens_parts, sens_noise = sensitive_release(frame, sensitive, split["assignment"], fill, ctx.rng)
        parts.update(sens_parts)
        noise.update(sens_noise)
    out = assemble(frame, parts)
    spent = rest * len(candidates) + params.sensitive_epsilon
    released_plans = projection + sensitive
    statements = [
        "paper mode reproduces Chu et al.'s ICAHDP for comparison; it is NOT differentially "
        "private: the steps in 'non_private_steps' read the raw data without noise",
        f"the projection noise alone is the strict mode's (Laplace, scale √k·√(n_num+2n_cat)/ε "
        f"with ε = {rest:g} per candidate), calibrated as if U_k, the mean and the scaling were public",
        f"{len(candidates)} candidate release(s) were built; their noise spent {spent:g} in total",
        *rng_statements(ctx),
    ]
    meta = {
        "mode": "paper", "epsilon": params.epsilon, "nominal_epsilon_per_candidate": rest,
        "epsilon_noise_spent": spent, "epsilon_debited": icahdp_epsilon(params, []),
        "non_private_steps": non_private, "k": int(k), "k_candidates": candidates,
        "mutual_information": {str(c): s for c, s in scores.items()},
        "importance": weights, "threshold": threshold, "eigenvalues": values.tolist(),
        "encoded_columns": enc.names(),
        "columns": {p.name: {**p.describe(), "channel": "sensitive" if p in sensitive else "projection"}
                    for p in released_plans},
        "categorical_encoding": "one-hot blocks; a missing cell is an all-zero block; decoded by argmax",
        "decoding": decoding_statement(params),
        "noise": noise, "candidate_noise": {str(c): r for c, r in records.items()},
        "dropped_columns": dropped, "personalized_budget": split,
    }
    ctx.progress(1.0, "done")
    return ReleaseResult(
        frame=out, columns=ordered_infos(out, released_plans),
        guarantees=guarantee(
            "none", rng=ctx.rng.name, private=False, epsilon=None, protected_columns=list(out.columns),
            unprotected_columns=[], statements=statements,
            warnings=["not differentially private: " + "; ".join(non_private)],
            non_private_steps=non_private, nominal_epsilon=params.epsilon),
        metadata={"icahdp": meta},
        metrics={"k": int(k), "encoded_width": enc.width, "rows": len(frame)},
    )
