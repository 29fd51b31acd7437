"""Randomized response on categorical columns: ERRPH (spec 01 §2).

ERRPH publishes, independently per record and per attribute, the true value with probability
p0 and value a_j with probability p_j (Σ p_j = 1 - p0). Everything here works on whole
columns: one uint32 of CSPRNG output per cell, compared against integer thresholds.
"""

from __future__ import annotations

import math
from typing import Any, Literal

import numpy as np
import pandas as pd
from pydantic import Field, field_validator, model_validator

from app.privacy.context import RunContext
from app.privacy.data import ColumnInfo, MethodInput, SourceRelease
from app.privacy.guarantees import guarantee
from app.privacy.registry import Kind, MethodInputError, MethodSpec, Params, register
from app.privacy.results import ReleaseResult
from app.privacy.rng import SecureRandom

MISSING_LABEL = None  # a missing cell published as missing
_SCALE = 2.0**32


# ----------------------------------------------------------------------------------- core
def randomize_codes(codes: np.ndarray, p0: float, p: np.ndarray, rng: SecureRandom) -> np.ndarray:
    """ERRPH on integer codes in [0, k): keep with probability p0, else publish j w.p. p[j].

    The [0, 1) interval is cut into [0, p0) (keep) followed by one segment per value; one
    uint32 per cell picks the segment. Probabilities are realized to within 2**-32.
    """
    k = len(p)
    dtype = np.int8 if k < 127 else (np.int16 if k < 32767 else np.int32)
    codes = codes.astype(dtype, copy=False)
    edges = np.round((p0 + np.concatenate([[0.0], np.cumsum(p)[:-1]])) * _SCALE)
    edges = np.clip(edges, 0, _SCALE - 1).astype(np.uint32)
    u = rng.uint32(len(codes))
    if k <= 16:
        # k comparisons over the column beat a binary search per cell for small domains.
        segment = np.zeros(len(codes), dtype=dtype)
        for edge in edges:
            segment += u >= edge
    else:
        segment = np.searchsorted(edges, u, side="right").astype(dtype)
    segment -= 1  # -1 = keep, j = publish value j
    return np.where(segment < 0, codes, segment)


def local_epsilon(p0: float, p: np.ndarray) -> float:
    """max_j ln((p0 + p_j) / p_j): the local-DP level of one attribute (∞ if some p_j = 0)."""
    p = np.asarray(p, dtype=float)
    if np.any(p <= 0):
        return math.inf
    return float(np.max(np.log((p0 + p) / p)))


def estimate_distribution(published_counts: np.ndarray, p0: float, p: np.ndarray) -> np.ndarray:
    """Unbiased π̂_j = (λ̂_j - p_j) / p0 (paper eq. 1); may leave [0, 1]."""
    n = published_counts.sum()
    lam = published_counts / n if n else np.zeros_like(published_counts, dtype=float)
    return (lam - p) / p0


def project_to_simplex(v: np.ndarray) -> np.ndarray:
    """Euclidean projection onto the probability simplex (Duchi et al. 2008)."""
    v = np.asarray(v, dtype=float)
    u = np.sort(v)[::-1]
    css = np.cumsum(u) - 1.0
    idx = np.arange(1, len(v) + 1)
    rho = np.nonzero(u - css / idx > 0)[0][-1]
    theta = css[rho] / (rho + 1.0)
    return np.maximum(v - theta, 0.0)


def breach(p0: float, p: np.ndarray, pi: np.ndarray) -> np.ndarray:
    """Breach(a_i) = p0 · p0·π_i / (p0·π_i + p_i) (paper §6.1), per value."""
    pi = np.asarray(pi, dtype=float)
    p = np.asarray(p, dtype=float)
    denom = p0 * pi + p
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(denom > 0, p0 * p0 * pi / denom, 0.0)


# ----------------------------------------------------------------------------- the method
Probabilities = list[float] | dict[str, float]


class ColumnOverride(Params):
    p0: float | None = Field(None, gt=0.0, le=1.0, description="keep probability for this column")
    p: Probabilities | None = Field(
        None, description="explicit p_j for this column: a list in domain order or a value→p map; "
        "must add up to 1 - p0")


class ErrphParams(Params):
    columns: list[str] | None = Field(
        None, description="categorical columns to randomize; default: every categorical column "
        "that is not the label or an identifier")
    p0: float = Field(0.5, gt=0.0, le=1.0, description="probability of publishing the true value")
    p: dict[str, Probabilities] | None = Field(
        None, description="explicit p_j per column (list in domain order or value→p map); "
        "default uniform p_j = (1 - p0)/k")
    per_column: dict[str, ColumnOverride] = Field(
        default_factory=dict, description="per-column overrides of p0 and p")
    missing: Literal["category", "preserve"] = Field(
        "category", description="'category': a missing cell is one more value of the domain, "
        "randomized like the others; 'preserve': missing cells stay missing and are not "
        "randomized (whether a cell is missing is then unprotected)")
    allow_zero_probabilities: bool = Field(
        False, description="permit some p_j = 0, which makes ε infinite")

    @field_validator("columns")
    @classmethod
    def _distinct(cls, v):
        if v is not None and len(set(v)) != len(v):
            raise ValueError("columns must not repeat")
        return v


def _selected_columns(params: ErrphParams, columns: list[ColumnInfo]) -> list[str]:
    by_name = {c.name: c for c in columns}
    if params.columns is None:
        chosen = [c.name for c in columns
                  if c.type in ("categorical", "boolean") and c.role not in ("label", "identifier")]
    else:
        chosen = params.columns
    for name in chosen:
        if name not in by_name:
            raise MethodInputError(f"unknown column {name!r}")
        if by_name[name].type not in ("categorical", "boolean"):
            raise MethodInputError(f"column {name!r} is {by_name[name].type}; errph randomizes "
                                   "categorical or boolean columns only")
    for name in [*(params.p or {}), *params.per_column]:
        if name not in chosen:
            raise MethodInputError(f"parameters given for column {name!r}, which is not randomized")
    if not chosen:
        raise MethodInputError("no categorical column to randomize")
    return chosen


def _column_probabilities(name: str, domain: list[Any], params: ErrphParams) -> tuple[float, np.ndarray]:
    override = params.per_column.get(name)
    p0 = override.p0 if override and override.p0 is not None else params.p0
    given = override.p if override and override.p is not None else (params.p or {}).get(name)
    k = len(domain)
    if given is None:
        return p0, np.full(k, (1.0 - p0) / k)
    if isinstance(given, dict):
        labels = [_label(v) for v in domain]
        unknown = sorted(set(given) - set(labels))
        if unknown:
            raise MethodInputError(f"column {name!r}: p names values outside the domain: {unknown[:5]}")
        p = np.array([float(given.get(label, 0.0)) for label in labels])
    else:
        if len(given) != k:
            raise MethodInputError(f"column {name!r}: p has {len(given)} entries, the domain has {k}")
        p = np.asarray(given, dtype=float)
    if np.any(p < 0):
        raise MethodInputError(f"column {name!r}: p_j must be ≥ 0")
    if abs(p.sum() - (1.0 - p0)) > 1e-9:
        raise MethodInputError(f"column {name!r}: p_j add up to {p.sum():.6g}, must be 1 - p0 = {1 - p0:.6g}")
    if np.any(p == 0) and not params.allow_zero_probabilities:
        raise MethodInputError(f"column {name!r}: some p_j = 0 makes ε infinite; "
                               "set allow_zero_probabilities to accept that")
    return p0, p


def _label(value: Any) -> str:
    return "<missing>" if value is MISSING_LABEL else str(value)


def _domain(series: pd.Series, info: ColumnInfo, missing: str) -> tuple[list[Any], bool]:
    """The column's domain and whether it was read from the data (which discloses which
    values occur) rather than declared in the schema."""
    if info.categories is not None:
        domain: list[Any] = list(info.categories)
        from_data = False
    else:
        domain = sorted(pd.unique(series.dropna()).tolist(), key=str)
        from_data = True
    if missing == "category" and series.isna().any():
        domain.append(MISSING_LABEL)
    return domain, from_data


def run_errph(data: MethodInput, params: ErrphParams, ctx: RunContext) -> ReleaseResult:
    frame = data.frame
    assert frame is not None
    chosen = _selected_columns(params, data.columns)
    out = frame.copy()
    per_column: dict[str, Any] = {}
    warnings: list[str] = []
    for i, name in enumerate(chosen):
        ctx.progress(i / len(chosen), f"randomizing {name}")
        series = frame[name]
        domain, from_data = _domain(series, data.column(name), params.missing)
        if len(domain) < 2:
            raise MethodInputError(f"column {name!r} has fewer than 2 values; nothing to randomize")
        p0, p = _column_probabilities(name, domain, params)
        values = [v for v in domain if v is not MISSING_LABEL]
        codes = pd.Categorical(series, categories=values).codes.astype(np.int32)
        missing_mask = codes < 0
        if params.missing == "category" and MISSING_LABEL in domain:
            codes[missing_mask] = len(values)
        elif missing_mask.any() and info_has_unknown(series, missing_mask):
            raise MethodInputError(f"column {name!r} holds values outside its declared categories")
        published = randomize_codes(codes, p0, p, ctx.rng)
        if params.missing == "preserve":
            published = np.where(missing_mask, -1, published)
        published = np.where(published >= len(values), -1, published)  # the missing category
        out[name] = pd.Categorical.from_codes(published, categories=values)
        counts = np.bincount(np.where(published < 0, len(values), published)[
            ~missing_mask if params.missing == "preserve" else slice(None)], minlength=len(domain))
        counts = counts[: len(domain)]
        pi_hat = project_to_simplex(estimate_distribution(counts, p0, p))
        eps = local_epsilon(p0, p)
        if math.isinf(eps):
            warnings.append(f"column {name!r}: some p_j = 0, so publishing that value can reveal "
                            "the truth; its ε is infinite")
        if from_data:
            warnings.append(f"column {name!r}: domain read from the data (not declared), so the "
                            "set of values that occur is disclosed")
        uniform_k = len(domain)
        per_column[name] = {
            "k": uniform_k,
            "domain": [_label(v) for v in domain],
            "domain_from_data": from_data,
            "p0": p0,
            "p": p.tolist(),
            "uniform": bool(np.allclose(p, p[0])),
            "local_epsilon": eps,
            "breach_at_reconstructed": float(breach(p0, p, pi_hat).max()),
            "breach_at_uniform_prior": float(breach(p0, p, np.full(uniform_k, 1.0 / uniform_k)).max()),
            "missing": params.missing,
        }
    record_eps = float(sum(c["local_epsilon"] for c in per_column.values()))
    unprotected = [c for c in frame.columns if c not in per_column]
    if params.missing == "preserve" and any(frame[c].isna().any() for c in chosen):
        warnings.append("missing cells were preserved: whether a cell is missing is unprotected")
    statements = [
        f"each randomized attribute is local ε-DP at its 'local_epsilon'; a record's randomized "
        f"attributes together are {record_eps:.4g}-local-DP (sequential composition)",
        "with uniform p_j, ERRPH equals k-ary randomized response with keep probability "
        "p0 + (1-p0)/k and (1-p0)/k for each other value",
        "selection probabilities are realized to within 2^-32",
    ]
    if unprotected:
        statements.append("columns not randomized are released exactly as in the input and carry "
                          "no guarantee: " + ", ".join(map(str, unprotected)))
    ctx.progress(1.0, "done")
    return ReleaseResult(
        frame=out,
        guarantees=guarantee(
            "local_dp", rng=ctx.rng.name, private=ctx.rng.is_private and not unprotected,
            epsilon=record_eps, protected_columns=chosen, unprotected_columns=unprotected,
            statements=statements, warnings=warnings,
            columns={name: {"local_epsilon": c["local_epsilon"],
                            "breach_at_reconstructed": c["breach_at_reconstructed"],
                            "breach_at_uniform_prior": c["breach_at_uniform_prior"]}
                     for name, c in per_column.items()},
        ),
        metadata={"errph": per_column},
    )


def info_has_unknown(series: pd.Series, missing_mask: np.ndarray) -> bool:
    """True when some cell is not missing yet fell outside the declared categories."""
    return bool((missing_mask & series.notna().to_numpy()).any())


def _errph_epsilon(params: ErrphParams, columns: list[ColumnInfo]) -> float | None:
    """ε debited at acceptance. Domains are not known without reading data, so the cost is
    the uniform-case bound with k taken from declared categories; with undeclared domains
    the exact figure is settled when the job runs (see docs/methods/errph.md)."""
    return None


def _check(params: ErrphParams, columns: list[ColumnInfo], source: SourceRelease | None) -> None:
    _selected_columns(params, columns)


register(MethodSpec(
    name="errph",
    family="randomized_response",
    kind=Kind.release,
    summary="Extended randomized response with partial hiding: each categorical cell keeps its "
            "value with probability p0, else takes value a_j with probability p_j.",
    params=ErrphParams,
    guarantee="local ε-DP per attribute, ε = max_j ln((p0+p_j)/p_j); summed over a record's attributes",
    paper="Zhang & Tang, Privacy Preserving Naive Bayes Classification, Chinese Journal of "
          "Computers 30(8), 2007 (seed 000)",
    run=run_errph,
    check=_check,
    docs="docs/methods/errph.md",
))
