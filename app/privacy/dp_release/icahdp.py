"""ICAHDP: a whole table released through a noisy PCA projection (spec 03).

strict (default): every step that reads the data is a DP mechanism and the shares of ε add up to
the ε asked for (sequential composition):

  filter      (optional, when ``threshold`` is set) noisy attribute histograms → entropies
  mean        noisy column sums of the encoded records → μ̃
  covariance  noisy upper triangle of Σ x xᵀ → C̃ = M̃/n - μ̃μ̃ᵀ → eigenvectors U (free),
              k from the user or from the noisy eigenvalues (free)
  projection  Z = (X - μ̃)U_k plus discrete Laplace(√k·√(n_num + 2 n_cat) / ε_proj) per entry
  sensitive   each sensitive attribute is taken out of the projection and released on its
              own with Laplace noise at the budget the assignment gave it

The release is Z̃ U_kᵀ + μ̃, decoded (clip, bounds, output grid, argmax): post-processing.

paper: the paper's pipeline (entropy filter, exact mean and covariance, k chosen by mutual
information between the data and candidate releases). Those steps read the raw data without
noise, so the release is NOT differentially private; the metadata lists them.

This module holds the strict mode's run, the checks and the registration; the parameters are in
icahdp_params.py, the column plans and the ε budget both modes share in icahdp_steps.py, the paper
mode's run in icahdp_paper.py.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from app.privacy.context import RunContext
from app.privacy.data import ColumnInfo, MethodInput, SourceRelease
from app.privacy.dp_release.common import (
    NEIGHBOURING, assemble, at_least_two_records, check_references, require_rows, rng_statements,
)
from app.privacy.dp_release.encoding import Encoding, calibrate, check_declared, check_given, domain_warnings
from app.privacy.dp_release.icahdp_paper import run_paper
from app.privacy.dp_release.icahdp_params import IcahdpParams, orthonormalized
from app.privacy.dp_release.icahdp_steps import (
    budget_split, check_budget, decoding_statement, ordered_infos, column_plans, budget_shares, declared_width, icahdp_epsilon,
)
from app.privacy.dp_release.projection import (
    eigh_desc, filter_by_importance, importance, project, sensitive_release, top_k,
)
from app.privacy.guarantees import guarantee
from app.privacy.noise import laplace_mechanism
from app.privacy.registry import MethodKind, MethodInputError, MethodSpec, register
from app.privacy.results import ReleaseResult


def _user_basis(rows: list[list[float]], width: int) -> np.ndarray:
    basis = np.asarray(rows, dtype=float)
    if basis.shape[0] != width:
        raise MethodInputError(f"basis has {basis.shape[0]} rows, the encoding is {width} wide")
    return orthonormalized(rows)


# ------------------------------------------------------------------------------ strict
def _run_strict(data: MethodInput, params: IcahdpParams, ctx: RunContext) -> ReleaseResult:
    frame = require_rows(data)
    n = len(frame)
    projection, sensitive = column_plans(data, params, frame, declared=True)
    shares = budget_shares(params)
    noise: dict[str, Any] = {}
    dropped: dict[str, str] = {c.name: "identifier" for c in data.columns
                               if c.role == "identifier" and params.columns is None}
    if params.columns is not None:
        dropped.update({c.name: "not selected" for c in data.columns if c.name not in params.columns})
    eigen: list[float] | None = None
    if params.threshold is not None:
        ctx.progress(0.05, "noisy entropy filter")
        weights, noise["filter"] = importance(frame, projection, params.bins, (shares["filter"], ctx.rng))
        projection, gone = filter_by_importance(projection, weights, params.threshold)
        dropped.update({name: "entropy filter (noisy histograms)" for name in gone})
    enc = Encoding(projection)
    # a user basis is checked before any noise is drawn: a job refused here is refunded
    basis = None if params.basis is None else _user_basis(params.basis, enc.width)
    ctx.progress(0.1, "encoding")
    X = enc.encode(frame)

    ctx.progress(0.2, "DP mean")
    sums, rec = laplace_mechanism(X.sum(axis=0), enc.l1_diameter, int(enc.l1_diameter),
                                  shares["mean"], ctx.rng)
    noise["mean"] = rec.as_dict()
    mu = sums / n

    if basis is not None:
        k, k_source = basis.shape[1], "user basis (orthonormalized)"
    else:
        ctx.progress(0.3, "DP covariance")
        q = enc.max_l1_norm
        iu = np.triu_indices(enc.width)
        second = (X.T @ X)[iu]
        # Σ_{i≤j} |x_i x_j - x'_i x'_j| ≤ Σ x_i x_j + Σ x'_i x'_j ≤ q² + q; changed entries ≤ q(q+1)
        noisy_second, rec = laplace_mechanism(second, q * q + q, int(min(len(second), q * (q + 1))),
                                              shares["covariance"], ctx.rng)
        noise["covariance"] = rec.as_dict()
        M = np.zeros((enc.width, enc.width))
        M[iu] = noisy_second
        M = M + np.triu(M, 1).T
        values, vectors = eigh_desc(M / n - np.outer(mu, mu))
        eigen = values.tolist()
        if params.k is not None:
            k = min(params.k, enc.width)
            k_source = "user" if k == params.k else (
                f"user: k = {params.k} asked, capped at the encoded width {enc.width} (a projection "
                "cannot have more components than the data has dimensions)")
        else:
            k = top_k(values, params.variance_fraction, params.k_max)
            k_source = f"noisy eigenvalues (variance fraction {params.variance_fraction})"
        basis = vectors[:, :k]

    ctx.progress(0.5, "noisy projection")
    released, rec = project(X, mu, basis, enc, shares["projection"], ctx.rng)
    noise["projection"] = rec.as_dict()
    if params.calibrated:
        released = calibrate(released, enc, mu)
    parts = dict(enc.decode(released, frame.index).items())

    split = budget_split(params)
    if sensitive:
        ctx.progress(0.8, "sensitive attributes")
        sens_parts, sens_noise = sensitive_release(frame, sensitive, split["assignment"], {}, ctx.rng)
        parts.update(sens_parts)
        noise.update(sens_noise)
    out = assemble(frame, parts)

    epsilon_split = {f"{key}": val for key, val in shares.items() if val > 0}
    if split:
        epsilon_split.update({f"sensitive:{c}": e for c, e in split["assignment"].items()})
    delivered = sum(v["epsilon_delivered"] for v in noise.values())
    released_plans = projection + sensitive
    attribute_eps = {p.name: params.epsilon - params.sensitive_epsilon for p in projection}
    if split:
        attribute_eps.update(split["assignment"])
    statements = [
        f"ε-differential privacy with ε = {params.epsilon:g} for the whole table: {NEIGHBOURING}",
        "ε is split among the steps below (sequential composition); 'epsilon_split' adds up to ε",
        "every step that reads the data adds discrete Laplace noise on a power-of-two grid "
        "(metadata.icahdp.noise names the grid, the sampler and the delivered ε of each step, "
        "floating-point slack included)",
        "bounds and categories are declared, not read from the data; values are clipped to them",
        "U_k, k and the decoding (clip to bounds, output grid, integer rounding, argmax of one-hot "
        "blocks) are post-processing of DP outputs",
        "changing one attribute of one record costs at most 'attribute_epsilon' of that attribute",
        *rng_statements(ctx),
    ]
    if dropped:
        statements.append("columns not published at all: " + ", ".join(map(str, dropped)))
    meta = {
        "mode": "strict", "epsilon": params.epsilon, "epsilon_split": epsilon_split,
        "epsilon_delivered": delivered, "neighbouring": NEIGHBOURING,
        "k": int(k), "k_source": k_source, "noisy_eigenvalues": eigen,
        "encoded_columns": enc.names(), "basis": basis.tolist(), "mean": mu.tolist(),
        "columns": {p.name: {**p.describe(), "channel": "sensitive" if p in sensitive else "projection"}
                    for p in released_plans},
        "categorical_encoding": "one-hot blocks; a missing cell is an all-zero block; decoded by argmax",
        "decoding": decoding_statement(params),
        "missing_numeric": "imputed by the midpoint of the declared bounds (data-independent)",
        "noise": noise, "dropped_columns": dropped, "personalized_budget": split,
        "non_private_steps": [],
    }
    ctx.progress(1.0, "done")
    return ReleaseResult(
        frame=out,
        columns=ordered_infos(out, released_plans),
        guarantees=guarantee(
            "central_dp", rng=ctx.rng.name, private=ctx.rng.is_private, epsilon=params.epsilon,
            delta=0.0, protected_columns=list(out.columns), statements=statements,
            warnings=domain_warnings(released_plans), epsilon_split=epsilon_split, epsilon_delivered=delivered,
            attribute_epsilon=attribute_eps, neighbouring=NEIGHBOURING),
        metadata={"icahdp": meta, "epsilon_split": epsilon_split},
        metrics={"k": int(k), "encoded_width": enc.width, "rows": n},
    )


# --------------------------------------------------------------------------- the method
def run_icahdp(data: MethodInput, params: IcahdpParams, ctx: RunContext) -> ReleaseResult:
    check_budget(params, check_references(params, data.columns))
    if params.mode == "paper":
        return run_paper(data, params, ctx)
    return _run_strict(data, params, ctx)


def _check(params: IcahdpParams, columns: list[ColumnInfo], source: SourceRelease | None) -> None:
    chosen = check_references(params, columns)
    names = {c.name for c in chosen}
    for name in params.sensitive or {}:
        if name not in names:
            raise MethodInputError(f"sensitive column {name!r} is not released")
    if names <= set(params.sensitive or {}):
        raise MethodInputError("every released column is sensitive: nothing left to project (leave "
                               "at least one column out of 'sensitive')")
    if params.mode == "strict":
        check_declared(chosen, params.bounds, params.categories)
        if params.basis is not None:  # every column is declared here (an undeclared boolean: 2 wide)
            width = sum(declared_width(c, params) for c in chosen if c.name not in (params.sensitive or {}))
            if len(params.basis) != width:
                raise MethodInputError(f"basis has {len(params.basis)} rows, the encoding is {width} wide")
    else:
        check_given(chosen, params.bounds, params.categories)
    check_budget(params, chosen)


register(MethodSpec(
    name="icahdp",
    family="dp_release",
    kind=MethodKind.release,
    summary="Release a table through a noisy PCA projection (ICAHDP). strict: end-to-end ε-DP "
            "with declared bounds, DP mean/covariance, discrete Laplace noise and personalized "
            "budgets for sensitive attributes; paper: the paper's pipeline, not DP.",
    params=IcahdpParams,
    guarantee="strict: central ε-DP of the whole table (replace-one neighbours), shares listed; "
              "paper: none (raw data read by the filter, PCA and choice of k)",
    paper="Chu et al., Differentially private high-dimensional data publishing based on improved "
          "component analysis (ICAHDP/PCAO), seed 002",
    run=run_icahdp,
    epsilon=icahdp_epsilon,
    check=_check,
    check_rows=at_least_two_records,
    docs="docs/methods/icahdp.md",
))
