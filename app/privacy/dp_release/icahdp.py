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
"""

from __future__ import annotations

import math
from typing import Any, Literal

import numpy as np
import pandas as pd
from pydantic import Field, model_validator

from app.privacy.context import RunContext
from app.privacy.data import ColumnInfo, MethodInput, SourceRelease
from app.privacy.dp_release.budget import mean_mutual_information, personalized_budgets
from app.privacy.dp_release.common import (
    MAX_EPSILON, NEIGHBOURING, TableParams, assemble, at_least_two_records, check_references, check_width,
    require_rows, rng_statements,
)
from app.privacy.dp_release.encoding import (
    ColumnPlan, Encoding, calibrate, check_declared, check_given, declared_plan, domain_warnings, plan_column,
)
from app.privacy.dp_release.feasibility import laplace_minimum, round_up
from app.privacy.dp_release.projection import (
    eigh_desc, filter_by_importance, importance, project, sensitive_release, top_k,
)
from app.privacy.guarantees import guarantee
from app.privacy.json_types import schema_bounds
from app.privacy.noise import laplace_mechanism
from app.privacy.registry import MethodKind, MethodInputError, MethodSpec, register
from app.privacy.results import ReleaseResult

DEFAULT_K_CANDIDATES = [2, 4, 6, 8, 10]
PAPER_DEFAULT_THRESHOLD = 0.02


class IcahdpParams(TableParams):
    mode: Literal["strict", "paper"] = Field(
        "strict", description="'strict': end-to-end ε-DP; 'paper': the paper's pipeline, whose "
        "filter, mean, covariance and choice of k read the raw data (NOT differentially private)")
    k: int | None = Field(None, ge=1, le=64, description="number of principal components; default: "
                          "strict picks it from the noisy eigenvalues, paper by mutual information")
    variance_fraction: float = Field(
        0.8, gt=0.0, le=1.0, description="strict, k not given: the smallest k whose noisy "
        "eigenvalues explain this fraction of the (positive) variance")
    k_max: int = Field(10, ge=1, le=64, description="upper limit of an automatically chosen k")
    basis: list[list[float]] | None = Field(
        None, description="strict: a user-given basis (width × k, rows in the order of the "
        "metadata's encoded_columns); replaces the DP covariance, whose share goes to the projection")
    sensitive: dict[str, float] | None = Field(
        None, description="sensitive column → preference sp ∈ [0, 1] (1 = most sensitive); these "
        "columns leave the projection and get their own budget from sensitive_share",
        json_schema_extra=schema_bounds(minimum=0.0, maximum=1.0))
    sensitive_share: float = Field(0.2, gt=0.0, lt=1.0, description="fraction of ε split among "
                                   "the sensitive columns (used only when 'sensitive' is given)")
    levels: int = Field(3, ge=1, le=10, description="number of sensitivity levels G_1..G_m")
    threshold: float | None = Field(
        None, ge=0.0, lt=1.0, description="entropy filter: drop attributes whose importance "
        "H_j / Σ H is below it. strict: off unless set (then on noisy histograms); paper: default 0.02")
    bins: int = Field(10, ge=2, le=256, description="bins of a numeric column in entropies and "
                      "mutual information")
    mean_share: float = Field(0.1, gt=0.0, lt=1.0, description="strict: fraction of the "
                              "non-sensitive ε spent on the mean")
    covariance_share: float = Field(0.3, gt=0.0, lt=1.0, description="strict: fraction of the "
                                    "non-sensitive ε spent on the covariance")
    filter_share: float = Field(0.1, gt=0.0, lt=1.0, description="strict with threshold: "
                                "fraction of the non-sensitive ε spent on the noisy histograms")
    k_candidates: list[int] | None = Field(
        None, min_length=1, max_length=12, description="paper, k not given: the candidate k "
        f"(default {DEFAULT_K_CANDIDATES}); every candidate release spends ε again")
    max_missing: float = Field(0.5, ge=0.0, le=1.0, description="paper: drop attributes with a "
                               "larger fraction of missing values")
    calibrate: bool | None = Field(
        None, description="decode one-hot blocks by argmax with per-category offsets that match "
        "the estimated (strict: DP) category frequencies, instead of plain argmax. Default: on in "
        "strict mode (post-processing, free), off in paper mode (the paper's plain decoding)")

    @model_validator(mode="after")
    def _consistent(self):
        if self.mode == "strict":
            used = self.mean_share + (0 if self.basis else self.covariance_share) + (
                self.filter_share if self.threshold is not None else 0)
            if used >= 1.0:
                raise ValueError("mean_share + covariance_share (+ filter_share) must be < 1: "
                                 "the rest is the projection's share")
        if self.basis is not None:
            if self.mode != "strict":
                raise ValueError("basis is a strict-mode parameter")
            if self.threshold is not None:
                raise ValueError("basis and threshold exclude each other (the filter changes the width)")
            widths = {len(r) for r in self.basis}
            if len(widths) != 1 or not self.basis or 0 in widths:
                raise ValueError("basis must be a non-empty rectangular width × k matrix")
            if self.k is not None and self.k != len(self.basis[0]):
                raise ValueError("k differs from the basis' number of columns")
            orthonormalized(self.basis)  # refuses columns that are not independent
        for name, sp in (self.sensitive or {}).items():
            if not 0.0 <= sp <= 1.0:
                raise ValueError(f"sensitive preference of {name!r} must lie in [0, 1]")
        if self.k_candidates is not None and any(k < 1 or k > 64 for k in self.k_candidates):
            raise ValueError("k_candidates must lie in [1, 64]")
        return self

    @property
    def calibrated(self) -> bool:
        return self.mode == "strict" if self.calibrate is None else self.calibrate

    @property
    def sensitive_epsilon(self) -> float:
        return self.epsilon * self.sensitive_share if self.sensitive else 0.0

    def candidates(self) -> list[int]:
        if self.k is not None:
            return [self.k]
        return sorted(set(self.k_candidates or DEFAULT_K_CANDIDATES))


# ------------------------------------------------------------------------ shared steps
def _plans(data: MethodInput, params: IcahdpParams, frame: pd.DataFrame | None,
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


def orthonormalized(rows: list[list[float]]) -> np.ndarray:
    """A user's basis with orthonormal columns spanning the same space (needed for the √k
    bound): each column scaled to a largest entry of 1, then QR. Columns that are not linearly
    independent are refused (ValueError): QR turned an all-zero basis into the standard axes, a
    basis the caller never gave."""
    basis = np.asarray(rows, dtype=float)
    if not np.isfinite(basis).all():
        raise ValueError("basis entries must be finite numbers")
    if basis.shape[1] > basis.shape[0]:
        raise ValueError(f"basis has {basis.shape[1]} columns but {basis.shape[0]} rows: at most as "
                         "many independent columns as rows")
    peak = np.abs(basis).max(axis=0)
    q, r = np.linalg.qr(basis / np.where(peak > 0, peak, 1.0))
    dependent = np.flatnonzero(np.abs(np.diag(r)) <= 1e-9)
    if dependent.size:
        raise ValueError(f"basis column {dependent[0] + 1} is zero or a combination of the columns "
                         "before it: give k linearly independent columns")
    return q


def _user_basis(rows: list[list[float]], width: int) -> np.ndarray:
    basis = np.asarray(rows, dtype=float)
    if basis.shape[0] != width:
        raise MethodInputError(f"basis has {basis.shape[0]} rows, the encoding is {width} wide")
    return orthonormalized(rows)


def _decoding(params: IcahdpParams) -> str:
    plain = "numeric: clip to [0, 1] → bounds → output grid (integers rounded); "
    if not params.calibrated:
        return plain + "one-hot blocks: plain argmax"
    return plain + ("one-hot blocks: argmax with per-category offsets matching the estimated "
                    "category frequencies (post-processing)")


def _shares(params: IcahdpParams) -> dict[str, float]:
    rest = params.epsilon - params.sensitive_epsilon
    shares = {"filter": rest * params.filter_share if params.threshold is not None else 0.0,
              "mean": rest * params.mean_share,
              "covariance": 0.0 if params.basis else rest * params.covariance_share}
    shares["projection"] = rest - sum(shares.values())
    return shares


def _budget_split(params: IcahdpParams) -> dict[str, Any] | None:
    if not params.sensitive:
        return None
    return personalized_budgets(params.sensitive, params.sensitive_epsilon, params.levels)


def _noisy_steps(params: IcahdpParams, chosen: list[ColumnInfo]) -> list[tuple[str, int, float]]:
    """(step, most coordinates one record can change, share of ε) of every Laplace mechanism
    the run may call, from the params and the schema: coordinates are bounded before the
    filter drops columns and for the largest k allowed (fewer only make the step easier)."""
    sensitive = params.sensitive or {}
    budgets = _budget_split(params)["assignment"] if sensitive else {}
    steps = [(f"sensitive:{c.name}", 1 if c.type == "numeric" else 2, budgets[c.name])
             for c in chosen if c.name in sensitive]
    if params.mode == "paper":  # each candidate release spends ε_rest on its projection
        return steps + [("projection", max(params.candidates()),
                         params.epsilon - params.sensitive_epsilon)]
    shares = _shares(params)
    widths = [_width(c, params) for c in chosen if c.name not in sensitive]
    n_num = sum(c.type == "numeric" for c in chosen if c.name not in sensitive)
    q, width = len(widths), sum(widths)
    k = len(params.basis[0]) if params.basis else min(params.k or params.k_max, width)
    steps += [("mean", n_num + 2 * (q - n_num), shares["mean"]), ("projection", k, shares["projection"])]
    if params.threshold is not None:
        steps.append(("filter", 2 * q, shares["filter"]))
    if not params.basis:
        steps.append(("covariance", min(width * (width + 1) // 2, q * (q + 1)), shares["covariance"]))
    return steps


def _width(info: ColumnInfo, params: IcahdpParams) -> int:
    """Encoded width of a declared column (strict mode)."""
    return declared_plan(info, params.bounds, params.categories).width


def _check_budget(params: IcahdpParams, chosen: list[ColumnInfo]) -> None:
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


# ------------------------------------------------------------------------------ strict
def _run_strict(data: MethodInput, params: IcahdpParams, ctx: RunContext) -> ReleaseResult:
    frame = require_rows(data)
    n = len(frame)
    projection, sensitive = _plans(data, params, frame, declared=True)
    shares = _shares(params)
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

    split = _budget_split(params)
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
        "decoding": _decoding(params),
        "missing_numeric": "imputed by the midpoint of the declared bounds (data-independent)",
        "noise": noise, "dropped_columns": dropped, "personalized_budget": split,
        "non_private_steps": [],
    }
    ctx.progress(1.0, "done")
    return ReleaseResult(
        frame=out,
        columns=_ordered_infos(out, released_plans),
        guarantees=guarantee(
            "central_dp", rng=ctx.rng.name, private=ctx.rng.is_private, epsilon=params.epsilon,
            delta=0.0, protected_columns=list(out.columns), statements=statements,
            warnings=domain_warnings(released_plans), epsilon_split=epsilon_split, epsilon_delivered=delivered,
            attribute_epsilon=attribute_eps, neighbouring=NEIGHBOURING),
        metadata={"icahdp": meta, "epsilon_split": epsilon_split},
        metrics={"k": int(k), "encoded_width": enc.width, "rows": n},
    )


def _ordered_infos(out: pd.DataFrame, plans: list[ColumnPlan]) -> list[ColumnInfo]:
    by_name = {p.name: p for p in plans}
    return [by_name[c].output_info() for c in out.columns]


# ------------------------------------------------------------------------------- paper
def _run_paper(data: MethodInput, params: IcahdpParams, ctx: RunContext) -> ReleaseResult:
    frame = require_rows(data)
    # attributes with too many missing values go before planning: an empty column has no
    # domain to read from the data (sensitive and label columns are kept)
    too_many = [c.name for c in check_references(params, data.columns)
                if c.name not in (params.sensitive or {}) and c.role != "label"
                and float(frame[c.name].isna().mean()) > params.max_missing]
    projection, sensitive = _plans(data, params, frame, declared=False, skip=frozenset(too_many))
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
    split = _budget_split(params)
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
        "decoding": _decoding(params),
        "noise": noise, "candidate_noise": {str(c): r for c, r in records.items()},
        "dropped_columns": dropped, "personalized_budget": split,
    }
    ctx.progress(1.0, "done")
    return ReleaseResult(
        frame=out, columns=_ordered_infos(out, released_plans),
        guarantees=guarantee(
            "none", rng=ctx.rng.name, private=False, epsilon=None, protected_columns=list(out.columns),
            unprotected_columns=[], statements=statements,
            warnings=["not differentially private: " + "; ".join(non_private)],
            non_private_steps=non_private, nominal_epsilon=params.epsilon),
        metadata={"icahdp": meta},
        metrics={"k": int(k), "encoded_width": enc.width, "rows": len(frame)},
    )


# --------------------------------------------------------------------------- the method
def run_icahdp(data: MethodInput, params: IcahdpParams, ctx: RunContext) -> ReleaseResult:
    _check_budget(params, check_references(params, data.columns))
    if params.mode == "paper":
        return _run_paper(data, params, ctx)
    return _run_strict(data, params, ctx)


def icahdp_epsilon(params: IcahdpParams, columns: list[ColumnInfo]) -> float:
    """ε to debit at acceptance. strict: ε. paper: what its noise spends, ε_sens + (ε - ε_sens)
    per candidate release — debited although paper mode gives no DP guarantee."""
    if params.mode == "strict":
        return params.epsilon
    rest = params.epsilon - params.sensitive_epsilon
    return params.sensitive_epsilon + rest * len(params.candidates())


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
            width = sum(_width(c, params) for c in chosen if c.name not in (params.sensitive or {}))
            if len(params.basis) != width:
                raise MethodInputError(f"basis has {len(params.basis)} rows, the encoding is {width} wide")
    else:
        check_given(chosen, params.bounds, params.categories)
    _check_budget(params, chosen)


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
