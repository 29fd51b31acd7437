"""Randomized response on categorical columns: ERRPH (spec 01 §2), the column coding shared
with Warner (warner.py), and the categorical reconstructor of both.

ERRPH publishes, independently per record and per attribute, the true value with probability
p0 and value a_j with probability p_j (Σ p_j = 1 - p0). Everything works on whole columns, in
cache-sized chunks: one uint32 of CSPRNG output per cell, against integer thresholds.

Reconstruction (the ``reconstruct`` analysis) inverts the published channels, also through
later steps of a chain: see rr_channels.py.
The mechanism on codes is in rr_mechanism.py, the column coding in rr_coding.py, the
reconstructor in rr_reconstruction.py; their public names are re-exported here.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any, Literal

import numpy as np
import pandas as pd
from pydantic import Field, field_validator

from app.privacy.context import RunContext
from app.privacy.data import ColumnInfo, MethodInput, SourceRelease
from app.privacy.guarantees import guarantee, raw_determinants, unchanged_columns
from app.privacy.registry import (
    MethodKind, MethodInputError, MethodSpec, Params, register, register_channel_builder, register_reconstructor,
)
from app.privacy.results import ReleaseResult
from app.privacy.rr_channels import MISSING, label_of, project_to_simplex, unique_names, with_columns
from app.privacy.rr_coding import domain_labels, encode_column, planned_k, publish_codes
from app.privacy.rr_mechanism import (
    CHUNK, breach, delivered_epsilon, epsilon_bound, estimate_distribution, flips_as_a_coin, keeps_no_cell,
    local_epsilon, probability_threshold, randomize_codes, realized_segments,
)
from app.privacy.rr_reconstruction import errph_channels, reconstruct_categorical, reconstruct_errph

MAX_DOMAIN = 10_000  # categories per column; a larger domain is an identifier, not a category
PAPER = ("Zhang & Tang, Privacy Preserving Naive Bayes Classification, Chinese Journal of "
         "Computers 30(8), 2007 (seed 000)")


# The statement of a release whose missing cells were left missing: their missingness is
# published as it is, which no ε bounds (a missing cell and a value are told apart surely).
MISSINGNESS_PUBLISHED = (
    "missing cells were preserved: whether a cell is missing is published as it is and is "
    "unprotected, so the local ε holds only between records whose cells are both missing or both "
    "present (private: false)")


def _check_planned_k(info: ColumnInfo, missing: str, actual: int) -> None:
    planned = planned_k(info, missing)
    if planned is not None and planned != actual:
        raise MethodInputError(
            f"column {info.name!r}: the data has {actual} values (counting the missing category) "
            f"but its profile says {planned}; the job's ε was priced from the profile, so the "
            "dataset must be re-profiled (or its categories declared) first")


# ---------------------------------------------------------------------------------- ERRPH
Probabilities = list[float] | dict[str, float]


class ErrphColumnOverride(Params):
    p0: float | None = Field(None, gt=0.0, le=1.0, description="keep probability for this column")
    p: Probabilities | None = Field(
        None, description="explicit p_j for this column: a list in domain order or a value→p map; "
        "must add up to 1 - p0")


class ErrphParams(Params):
    columns: list[str] | None = Field(
        None, description="categorical columns to randomize; default: every categorical or boolean "
        "column that is not the label or an identifier")
    p0: float = Field(0.5, gt=0.0, le=1.0, description="probability of publishing the true value")
    p: dict[str, Probabilities] | None = Field(
        None, description="explicit p_j per column (list in domain order or value→p map; the "
        "missing category is '<missing>'); default uniform p_j = (1 - p0)/k")
    per_column: dict[str, ErrphColumnOverride] = Field(
        default_factory=dict, description="per-column overrides of p0 and p")
    missing: Literal["category", "preserve"] = Field(
        "category", description="'category': a missing cell is one more value of the domain, "
        "randomized like the others; 'preserve': missing cells stay missing and are not "
        "randomized (whether a cell is missing is then unprotected)")
    allow_zero_probabilities: bool = Field(
        False, description="permit some p_j = 0 (or p0 = 1), which makes ε infinite")

    _distinct = field_validator("columns")(classmethod(lambda cls, v: unique_names(v)))


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


def _given_probabilities(name: str, params: ErrphParams) -> tuple[float, Probabilities | None]:
    override = params.per_column.get(name)
    p0 = override.p0 if override and override.p0 is not None else params.p0
    given = override.p if override and override.p is not None else (params.p or {}).get(name)
    return p0, given


def _validated(name: str, p0: float, p: np.ndarray, params: ErrphParams) -> np.ndarray:
    if np.any(p < 0):
        raise MethodInputError(f"column {name!r}: p_j must be ≥ 0")
    if abs(p.sum() - (1.0 - p0)) > 1e-9:
        raise MethodInputError(f"column {name!r}: p_j add up to {p.sum():.6g}, must be 1 - p0 = {1 - p0:.6g}")
    if (np.any(p == 0) or p0 >= 1.0) and not params.allow_zero_probabilities:
        raise MethodInputError(f"column {name!r}: some p_j = 0 makes ε infinite; "
                               "set allow_zero_probabilities to accept that")
    if keeps_no_cell(p0):  # no 32-bit word keeps the cell
        raise MethodInputError(f"column {name!r}: p0 = {p0:.6g} is within 2^-33 of 0, so no cell is "
                               "ever kept: the release would be pure noise (nothing could be "
                               "reconstructed); use p0 ≥ 1.2e-10")
    return p


def _column_probabilities(name: str, labels: list[str], params: ErrphParams) -> tuple[float, np.ndarray]:
    p0, given = _given_probabilities(name, params)
    k = len(labels)
    if given is None:
        return p0, _validated(name, p0, np.full(k, (1.0 - p0) / k), params)
    if isinstance(given, dict):
        unknown = sorted(set(given) - set(labels))
        if unknown:
            raise MethodInputError(f"column {name!r}: p names {len(unknown)} value(s) outside the domain")
        p = np.array([float(given.get(label, 0.0)) for label in labels])
    else:
        if len(given) != k:
            raise MethodInputError(f"column {name!r}: p has {len(given)} entries, the domain has {k}")
        p = np.asarray(given, dtype=float)
    return p0, _validated(name, p0, p, params)


def _planned_probabilities(name: str, k: int, params: ErrphParams,
                           labels: list[str] | None = None) -> tuple[float, np.ndarray]:
    """The same p vector as the run will use: exactly, in domain order, when the domain's
    ``labels`` are known (declared categories) or p is uniform or a list; otherwise (a value→p
    map over a domain known only by its size) up to the order of values."""
    p0, given = _given_probabilities(name, params)
    if isinstance(given, dict) and labels is None:
        if len(given) > k:
            raise MethodInputError(f"column {name!r}: p names {len(given)} values, the domain has {k}")
        p = np.array([*map(float, given.values()), *[0.0] * (k - len(given))])
        return p0, _validated(name, p0, p, params)
    return _column_probabilities(name, labels or [str(i) for i in range(k)], params)


def _declared_labels(info: ColumnInfo, missing: str) -> list[str] | None:
    """The run's domain labels when the categories are declared (see ``encode_column``)."""
    if info.categories is None:
        return None
    extra = [label_of(None)] if missing == "category" and info.missing > 0 else []
    return domain_labels(list(info.categories)) + extra


def errph_column_epsilons(params: ErrphParams, columns: list[ColumnInfo]) -> dict[str, float]:
    """Per randomized column, the local ε the run will report, from the schema and profile."""
    by_name = {c.name: c for c in columns}
    out: dict[str, float] = {}
    for name in _selected_columns(params, columns):
        k = _checked_k(by_name[name], params)
        if k is None:
            raise MethodInputError(f"column {name!r}: its number of distinct values is unknown, so "
                                   "ε cannot be priced; declare its categories or profile the dataset")
        labels = _declared_labels(by_name[name], params.missing)
        p0, p = _planned_probabilities(name, k, params, labels)
        ordered = labels is not None or not isinstance(_given_probabilities(name, params)[1], dict)
        # the realized segments depend on the order of the p_j: exact when it is known
        out[name] = delivered_epsilon(p0, p) if ordered else epsilon_bound(p0, p)
        # they decide, not the p_j themselves: a p_j > 0 whose segment holds no 32-bit word, or
        # a p0 within 2^-33 of 1, is ε = ∞ like p_j = 0 and needs the same consent (checked at
        # submission: the experiments build their own runs)
        if math.isinf(out[name]) and not params.allow_zero_probabilities:
            raise MethodInputError(f"column {name!r}: a p_j or p0 that the 32-bit thresholds "
                                   "realize as 0 or 1 (within 2^-33 of it) makes ε infinite; set "
                                   "allow_zero_probabilities to accept that")
    return out


def _checked_k(info: ColumnInfo, params: ErrphParams) -> int | None:
    """planned_k, refused at submission (before the ε is debited) where the run would refuse it."""
    k = planned_k(info, params.missing)
    if k is not None and k < 2:
        raise _single_value(info.name, params)
    if k is not None and k > MAX_DOMAIN:
        raise MethodInputError(f"column {info.name!r} has {k} distinct values; errph allows at most "
                               f"{MAX_DOMAIN} (is it an identifier?)")
    return k


def _single_value(name: str, params: ErrphParams) -> MethodInputError:
    # the default selection takes every categorical column, a constant one too
    hint = ("; declare its categories, or name the columns to randomize in 'columns'"
            if params.columns is None else "; declare its categories")
    return MethodInputError(f"column {name!r} has fewer than 2 values; nothing to randomize{hint}")


def _checked_encoding(series: pd.Series, info: ColumnInfo, params: ErrphParams) -> tuple[list[Any], np.ndarray, bool]:
    name, missing = info.name, params.missing
    domain, codes, from_data = encode_column(series, info, missing)
    if len(domain) < 2:
        raise _single_value(name, params)
    if len(domain) > MAX_DOMAIN:
        raise MethodInputError(f"column {name!r} has {len(domain)} distinct values; errph allows "
                               f"at most {MAX_DOMAIN} (is it an identifier?)")
    _check_planned_k(info, missing, len(domain))
    labels = domain_labels(domain)
    if len(set(labels)) < len(labels):  # the two were one label: reconstruction lost their cells
        raise MethodInputError(f"column {name!r} holds a value spelled {MISSING!r}, the label of its "
                               "missing category: rename that value, or use missing = \"preserve\"")
    return domain, codes, from_data


def _missing_category_warning(per_column: dict[str, dict[str, Any]]) -> list[str]:
    """The '<missing>' category joins a declared domain only when the column has missing
    cells, so the published domain (and k, ε) tells whether any cell is missing: a fact read
    from the data outside the randomization (a domain read from the data has its own warning)."""
    declared = [f"{name!r} ({'has missing cells' if MISSING in c['domain'] else 'has none'})"
                for name, c in per_column.items() if not c["domain_from_data"]]
    if not declared:
        return []
    return [f"whether a column's domain has the {MISSING!r} category was read from the data (it is "
            "added only when the column has missing cells), so whether any of its cells is missing "
            "is disclosed: " + ", ".join(declared)]


def run_errph(data: MethodInput, params: ErrphParams, ctx: RunContext) -> ReleaseResult:
    frame = data.frame
    if frame is None:
        raise MethodInputError("errph needs a table")
    chosen = _selected_columns(params, data.columns)
    new_columns: dict[str, Any] = {}
    out_columns = {c.name: c for c in data.columns}
    per_column: dict[str, Any] = {}
    warnings: list[str] = []
    # every column is checked before any randomness is drawn, so an input error is refunded
    encoded = {name: _checked_encoding(frame[name], data.column(name), params) for name in chosen}
    for i, name in enumerate(chosen):
        ctx.progress(i / len(chosen), f"randomizing {name}")
        info = data.column(name)
        domain, codes, from_data = encoded[name]
        labels = domain_labels(domain)
        p0, p = _column_probabilities(name, labels, params)
        published = randomize_codes(codes, p0, p, ctx.rng)
        n_left_out = 0
        if params.missing == "preserve":
            left_out = codes < 0
            n_left_out = int(left_out.sum())
            if n_left_out:
                published[left_out] = -1
        new_columns[name] = publish_codes(published, domain)
        counts = np.bincount(published.astype(np.intp) + 1, minlength=len(domain) + 1)[1:].astype(float)
        values = [v for v in domain if v is not None]
        published_missing = n_left_out + (int(counts[len(values)]) if len(values) < len(domain) else 0)
        # the output schema declares the published domain, so a later step is priced exactly
        out_columns[name] = dataclasses.replace(info, categories=tuple(domain_labels(values)),
                                                distinct=len(values), missing=published_missing)
        pi_hat = project_to_simplex(estimate_distribution(counts, p0, p))
        eps = delivered_epsilon(p0, p)
        if math.isinf(eps):
            warnings.append(f"column {name!r}: some p_j = 0, so publishing that value can reveal "
                            "the truth; its ε is infinite")
        if from_data:
            warnings.append(f"column {name!r}: domain read from the data (not declared), so the "
                            "set of values that occur is disclosed")
        k = len(domain)
        per_column[name] = {
            "k": k,
            "domain": labels,
            "domain_from_data": from_data,
            "p0": p0,
            "p": p.tolist(),
            "uniform": bool(np.allclose(p, p[0])),
            "keep_probability": p0 + float(p.mean()) if np.allclose(p, p[0]) else None,
            "local_epsilon": eps,
            "local_epsilon_ideal": local_epsilon(p0, p),
            "breach_at_reconstructed": float(breach(p0, p, pi_hat).max()),
            "breach_at_uniform_prior": float(breach(p0, p, np.full(k, 1.0 / k)).max()),
            "missing": params.missing,
            "missing_cells_left_out": n_left_out,
        }
    out = with_columns(frame, new_columns)
    record_eps = float(sum(c["local_epsilon"] for c in per_column.values()))
    unprotected = [c for c in frame.columns if c not in per_column]
    missing_left_raw = (params.missing == "preserve"
                        and any(c["missing_cells_left_out"] for c in per_column.values()))
    if missing_left_raw:
        warnings.append(MISSINGNESS_PUBLISHED)
    if params.missing == "category":
        warnings.extend(_missing_category_warning(per_column))
    statements = [
        "each randomized attribute is local ε-DP at its 'local_epsilon' = max_j ln((p0'+p_j')/p_j') "
        "for the probabilities p0', p_j' the 32-bit thresholds realize (within 2^-32 of p0, p_j; "
        "'local_epsilon_ideal' is the formula at p0, p_j themselves); "
        f"a record's randomized attributes together are {record_eps:.4g}-local-DP (sequential "
        "composition)",
        "with uniform p_j, ERRPH equals k-ary randomized response with keep probability "
        "p0 + (1-p0)/k and (1-p0)/k for each other value, and ε = ln(1 + k·p0/(1-p0))",
        "selection probabilities are realized to within 2^-32",
    ]
    if unprotected:
        statements.append(unchanged_columns(unprotected, "randomized", data.source is not None))
    determined = raw_determinants(frame, unprotected, chosen,
                                  codes={name: codes for name, (_, codes, _) in encoded.items()})
    for name, keys in determined.items():
        warnings.append(f"column {name!r} is randomized, but {', '.join(map(repr, keys))}, published "
                        f"as {'it is' if len(keys) == 1 else 'they are'}, determine{'s' if len(keys) == 1 else ''} "
                        f"it in this table (each of its values goes with one value of {name!r}): the "
                        "release does not hide it — randomize or leave out those columns too")
        per_column[name]["determined_by_unprotected"] = keys
    ctx.progress(1.0, "done")
    return ReleaseResult(
        frame=out,
        columns=list(out_columns.values()),
        guarantees=guarantee(
            "local_dp", rng=ctx.rng.name,
            private=ctx.rng.is_private and not unprotected and not missing_left_raw,
            epsilon=record_eps, protected_columns=chosen, unprotected_columns=unprotected,
            statements=statements, warnings=warnings,
            columns={name: {"local_epsilon": c["local_epsilon"],
                            "breach_at_reconstructed": c["breach_at_reconstructed"],
                            "breach_at_uniform_prior": c["breach_at_uniform_prior"],
                            "determined_by_unprotected": c.get("determined_by_unprotected", [])}
                     for name, c in per_column.items()},
        ),
        metadata={"errph": per_column},
    )


def _errph_epsilon(params: ErrphParams, columns: list[ColumnInfo]) -> float:
    """ε debited at acceptance: exactly the record-level ε the run reports. The run uses the
    same k (declared categories, else the profile's distinct count, + the missing category)
    or fails before publishing anything."""
    return float(sum(errph_column_epsilons(params, columns).values()))


def _check_errph(params: ErrphParams, columns: list[ColumnInfo], source: SourceRelease | None) -> None:
    by_name = {c.name: c for c in columns}
    for name in _selected_columns(params, columns):
        k = _checked_k(by_name[name], params)
        if k is not None:
            _planned_probabilities(name, k, params)  # list lengths, sums, zeros

register(MethodSpec(
    name="errph",
    family="randomized_response",
    kind=MethodKind.release,
    summary="Extended randomized response with partial hiding: each categorical cell keeps its "
            "value with probability p0, else takes value a_j with probability p_j.",
    params=ErrphParams,
    guarantee="local ε-DP per attribute, ε = max_j ln((p0+p_j)/p_j); summed over a record's attributes",
    paper=PAPER,
    run=run_errph,
    epsilon=_errph_epsilon,
    check=_check_errph,
    docs="docs/methods/errph.md",
))

register_reconstructor("errph", reconstruct_errph)
register_channel_builder("errph", errph_channels)

__all__ = ["MISSING", "randomize_codes", "local_epsilon", "estimate_distribution",
           "project_to_simplex", "breach", "encode_column", "planned_k", "reconstruct_categorical",
           # moved to rr_mechanism.py / rr_coding.py, imported from here by warner.py and the tests
           "CHUNK", "delivered_epsilon", "domain_labels", "epsilon_bound", "flips_as_a_coin", "keeps_no_cell",
           "probability_threshold", "realized_segments"]
