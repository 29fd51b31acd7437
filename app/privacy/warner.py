"""Warner's randomized response on binary columns (spec 01 §1) and DTPD's whole-record flip
(spec §5): each binary cell — or, with ``whole_record``, each record's binary cells together —
is published as is with probability p and flipped otherwise. Cut points binarize columns first.
One uint32 of CSPRNG output per cell (per record), compared with round((1-p)·2^32)."""

from __future__ import annotations

import dataclasses
import math
from typing import Any, Literal

import numpy as np
import pandas as pd
from pydantic import Field, field_validator, model_validator

from app.privacy.context import RunContext
from app.privacy.data import ColumnInfo, MethodInput, SourceRelease
from app.privacy.guarantees import guarantee, unchanged_columns
from app.privacy.randomized_response import (
    CHUNK, MISSINGNESS_PUBLISHED, domain_labels, encode_column, flips_as_a_coin, planned_k,
    probability_threshold, reconstruct_categorical,
)
from app.privacy.registry import (
    MethodKind, MethodInputError, MethodSpec, Params, register, register_channel_builder, register_reconstructor,
)
from app.privacy.results import ReleaseResult
from app.privacy.rng import SecureRandom
from app.privacy.rr_channels import MISSING, CategoricalChannel, label_of, unique_names, with_columns


def flip_mask(n: int, p: float, rng: SecureRandom) -> np.ndarray:
    """n independent coins that are True (flip) with probability 1 - p, to within 2^-32."""
    if p >= 1.0:
        return np.zeros(n, dtype=bool)
    threshold = probability_threshold(1.0 - p)
    out = np.empty(n, dtype=bool)
    for start in range(0, n, CHUNK):
        stop = min(start + CHUNK, n)
        np.less(rng.uint32(stop - start), threshold, out=out[start:stop])
    return out


def warner_epsilon(p: float) -> float:
    """|ln(p' / (1-p'))| for the keep probability p' that ``flip_mask`` realizes: a cell flips
    when a uniform uint32 is below T = round((1-p)·2^32), so p' = 1 - T/2^32 exactly. Within
    ~2^-32/min(p, 1-p) of the ideal |ln(p/(1-p))|, but it is the level actually delivered: a p
    so close to 1 that T = 0 never flips and is ∞, not the ideal's finite value. ∞ for
    p ∈ {0, 1}."""
    if p <= 0.0 or p >= 1.0:
        return math.inf
    flips = int(probability_threshold(1.0 - p))
    if flips == 0:
        return math.inf
    return abs(math.log((2**32 - flips) / flips))


def _binary_columns(columns: list[ColumnInfo]) -> list[str]:
    return [c.name for c in columns if c.role not in ("label", "identifier") and (
        c.type == "boolean" or (c.type == "categorical" and planned_k(c, "preserve") == 2))]



# --------------------------------------------------------------------------------- Warner
class WarnerParams(Params):
    columns: list[str] | None = Field(
        None, description="binary columns to randomize (boolean, or categorical with two values, or "
        "any column named in cut_points); default: every binary column that is not the label or an "
        "identifier, plus the columns in cut_points")
    p: float = Field(0.75, ge=0.0, le=1.0,
                     description="probability of publishing the true value (else its complement)")
    whole_record: bool = Field(
        False, description="one coin per record flips all the selected columns together (the "
        "randomization of DTPD, Du & Zhan 2003); default: one coin per cell")
    cut_points: dict[str, float | list[str]] = Field(
        default_factory=dict, description="binarize a column before randomizing: a number for a "
        "numeric column (True when value > cut), a list of values for a categorical one (True when "
        "the value is in the list; '<missing>' puts missing cells on the True side)")
    missing: Literal["error", "preserve"] = Field(
        "error", description="'preserve': missing cells stay missing (whether a cell is missing is "
        "then unprotected); 'error': a missing cell is an input error")
    allow_zero_probabilities: bool = Field(
        False, description="permit p = 0 or p = 1 (one answer never happens), which makes ε infinite")

    _distinct = field_validator("columns")(classmethod(lambda cls, v: unique_names(v)))

    @model_validator(mode="after")
    def _p_informative(self):
        if flips_as_a_coin(self.p):  # p = 0.5, or within 2^-33 of it
            raise ValueError("p = 0.5 (or within 2^-33 of it, where every cell flips with "
                             "probability exactly 1/2) publishes pure noise: nothing could be "
                             "reconstructed")
        # the realized flip threshold decides, not p itself: a p within 2^-33 of 1 never flips
        # (ε = ∞, the cells published as they are) and needs the same consent as p = 1
        if math.isinf(warner_epsilon(self.p)) and not self.allow_zero_probabilities:
            raise ValueError("p = 0 or 1 (or p within 2^-33 of 1, where no cell can flip) makes ε "
                             "infinite; set allow_zero_probabilities to accept that")
        return self


def _warner_columns(params: WarnerParams, columns: list[ColumnInfo]) -> list[str]:
    by_name = {c.name: c for c in columns}
    for name in params.cut_points:
        if name not in by_name:
            raise MethodInputError(f"unknown column {name!r} in cut_points")
    binary = _binary_columns(columns)
    if params.columns is None:
        chosen = [c.name for c in columns if c.name in binary or c.name in params.cut_points]
    else:
        chosen = list(params.columns)
    for name in chosen:
        info = by_name.get(name)
        if info is None:
            raise MethodInputError(f"unknown column {name!r}")
        cut = params.cut_points.get(name)
        if cut is None:
            if info.type != "boolean" and not (info.type == "categorical" and planned_k(info, "preserve") == 2):
                raise MethodInputError(f"column {name!r} is not binary; give a cut point in "
                                       "cut_points to binarize it")
        elif info.type == "numeric" and not isinstance(cut, (int, float)):
            raise MethodInputError(f"cut point of numeric column {name!r} must be a number")
        elif info.type != "numeric" and not isinstance(cut, list):
            raise MethodInputError(f"cut point of column {name!r} must be a list of its values")
        elif isinstance(cut, list) and info.categories is not None:
            unknown = set(cut) - set(map(str, info.categories))
            if unknown:
                raise MethodInputError(f"cut point of column {name!r} names {len(unknown)} value(s) "
                                       "outside its declared categories")
    for name in params.cut_points:
        if name not in chosen:
            raise MethodInputError(f"cut point given for column {name!r}, which is not randomized")
    if not chosen:
        raise MethodInputError("no binary column to randomize (give cut_points to binarize columns)")
    return chosen


def binarize(series: pd.Series, cut: float | list[str]) -> pd.Series:
    """True when value > cut (numeric) or the value is in the list (categorical: a missing cell
    is the value '<missing>', in the list or not); a missing numeric cell stays missing. This
    is also how raw records are binarized when a model trained on the release predicts."""
    if isinstance(cut, list):
        wanted = set(map(str, cut))
        codes, values = pd.factorize(series, use_na_sentinel=True)
        bits = np.array([label_of(v) in wanted for v in values] + [MISSING in wanted])[codes]
        return pd.Series(bits, index=series.index, name=series.name)
    missing = series.isna().to_numpy()
    bits = pd.to_numeric(series, errors="coerce").to_numpy(dtype=float, na_value=np.nan) > float(cut)
    out = pd.array(bits, dtype="boolean")
    out[missing] = pd.NA
    return pd.Series(out, index=series.index, name=series.name)


def _binary_bits(series: pd.Series, info: ColumnInfo, cut) -> tuple[list[Any], np.ndarray, np.ndarray | None]:
    """The two-value domain, each cell's bit (index in the domain) and the missing cells (None
    when there are none)."""
    if cut is not None:
        series = binarize(series, cut)
        missing = series.isna().to_numpy()
        return [False, True], series.fillna(False).to_numpy(dtype=bool), missing if missing.any() else None
    if info.categories is None and pd.api.types.is_bool_dtype(series.dtype):
        # numpy bool or pandas' nullable "boolean" (how datasets load): {False, True} by type
        missing = series.isna().to_numpy()
        return [False, True], series.fillna(False).to_numpy(dtype=bool), missing if missing.any() else None
    domain, codes, _ = encode_column(series, info, "preserve")
    if len(domain) != 2:
        raise MethodInputError(f"column {info.name!r} has {len(domain)} distinct values; warner needs "
                               "exactly 2 (give a cut point to binarize it)")
    missing = codes < 0
    return domain, codes == 1, missing if missing.any() else None


def _checked_bits(series: pd.Series, info: ColumnInfo, cut, params: WarnerParams):
    domain, bits, missing = _binary_bits(series, info, cut)
    if missing is not None and params.missing == "error":
        raise MethodInputError(f"column {info.name!r} has missing cells; set missing='preserve' to "
                               "leave them missing")
    present = bits if missing is None else bits[~missing]
    if cut is not None and present.size and (present.all() or not present.any()):
        side = "above the cut / in the list" if present.all() else "below the cut / outside the list"
        raise MethodInputError(f"column {info.name!r}: every cell falls {side} of its cut point, so the "
                               "binarized column is constant; check cut_points")
    return domain, bits, missing


def _published_column(bits: np.ndarray, missing: np.ndarray | None, domain: list[Any], as_bool: bool):
    if as_bool:
        if missing is None:
            return bits
        column = pd.array(bits, dtype="boolean")
        column[missing] = pd.NA
        return column
    codes = bits.astype(np.int8)
    if missing is not None:
        codes[missing] = -1
    return pd.Categorical.from_codes(codes, dtype=pd.CategoricalDtype(domain), validate=False)


def run_warner(data: MethodInput, params: WarnerParams, ctx: RunContext) -> ReleaseResult:
    frame = data.frame
    if frame is None:
        raise MethodInputError("warner needs a table")
    chosen = _warner_columns(params, data.columns)
    # Every column's bits first: an input error is then raised before any randomness is
    # drawn (the job's ε is refunded; app/worker/runner.py).
    prepared = {name: _checked_bits(frame[name], data.column(name), params.cut_points.get(name), params)
                for name in chosen}
    new_columns: dict[str, Any] = {}
    out_columns = list(data.columns)
    shared_flip = flip_mask(len(frame), params.p, ctx.rng) if params.whole_record else None
    eps1 = warner_epsilon(params.p)
    per_column: dict[str, Any] = {}
    for i, name in enumerate(chosen):
        ctx.progress(i / len(chosen), f"randomizing {name}")
        info = data.column(name)
        cut = params.cut_points.get(name)
        domain, bits, missing = prepared[name]
        flip = shared_flip if shared_flip is not None else flip_mask(len(frame), params.p, ctx.rng)
        published = bits ^ flip
        as_bool = cut is not None or pd.api.types.is_bool_dtype(frame[name].dtype)
        new_columns[name] = _published_column(published, missing, domain, as_bool)
        if cut is not None:
            idx = next(j for j, c in enumerate(out_columns) if c.name == name)
            # boolean by the cut, not by the data: nothing of its schema is inferred any more
            out_columns[idx] = dataclasses.replace(info, type="boolean", bounds=None, categories=None,
                                                   integer=False, inferred=(), distinct=2,
                                                   missing=0 if missing is None else int(missing.sum()))
        n = len(published) - (0 if missing is None else int(missing.sum()))
        ones = int(np.count_nonzero(published if missing is None else published & ~missing))
        pi1 = ((ones / n) - (1.0 - params.p)) / (2.0 * params.p - 1.0) if n else float("nan")
        per_column[name] = {
            "domain": domain_labels(domain),
            "binarize": None if cut is None else (
                {"in": list(map(str, cut))} if isinstance(cut, list) else {"threshold": float(cut)}),
            "local_epsilon": eps1,
            "breach": max(params.p, 1.0 - params.p),
            "pi_hat_at_release": float(min(max(pi1, 0.0), 1.0)) if n else None,
            "missing_cells_left_out": len(published) - n,
        }
    out = with_columns(frame, new_columns)
    m = len(chosen)
    record_eps = math.inf if params.whole_record and m > 1 else m * eps1
    unprotected = [c for c in frame.columns if c not in per_column]
    statements = [
        f"each randomized attribute, taken alone, is local ε-DP with ε = |ln(p/(1-p))| = {eps1:.4g}",
        "Breach (paper §6.1) of a Warner attribute is max(p, 1-p)",
        "flip probabilities are realized to within 2^-32",
    ]
    warnings: list[str] = []
    if params.whole_record:
        statements.append(
            "whole-record flip (DTPD): one coin per record flips all randomized attributes together, "
            "so which attributes are equal to which is published exactly; the record as a whole is "
            "NOT differentially private" + (" (ε = ∞)" if m > 1 else ""))
    else:
        statements.append(f"one coin per cell: a record's randomized attributes together are "
                          f"{record_eps:.4g}-local-DP (sequential composition)")
    missing_left_raw = any(c["missing_cells_left_out"] for c in per_column.values())
    if missing_left_raw:
        warnings.append(MISSINGNESS_PUBLISHED)
    for name in chosen:  # as errph: the two values of an undeclared, non-boolean column
        if (name not in params.cut_points and data.column(name).categories is None
                and not pd.api.types.is_bool_dtype(frame[name].dtype)):
            warnings.append(f"column {name!r}: domain read from the data (not declared), so the "
                            "set of values that occur is disclosed")
    if any(c["binarize"] for c in per_column.values()):
        statements.append("columns with a cut point were binarized before randomizing; the cut "
                          "points are published")
    if unprotected:
        statements.append(unchanged_columns(unprotected, "randomized", data.source is not None))
    ctx.progress(1.0, "done")
    return ReleaseResult(
        frame=out,
        columns=out_columns,
        guarantees=guarantee(
            "local_dp", rng=ctx.rng.name,
            private=(ctx.rng.is_private and not unprotected and not math.isinf(record_eps)
                     and not missing_left_raw),
            epsilon=record_eps, protected_columns=chosen, unprotected_columns=unprotected,
            statements=statements, warnings=warnings,
            columns={name: {"local_epsilon": c["local_epsilon"], "breach": c["breach"]}
                     for name, c in per_column.items()},
        ),
        metadata={"warner": {"p": params.p, "whole_record": params.whole_record, "columns": per_column}},
    )


def _warner_epsilon(params: WarnerParams, columns: list[ColumnInfo]) -> float:
    m = len(_warner_columns(params, columns))
    if params.whole_record and m > 1:
        return math.inf
    return m * warner_epsilon(params.p)


def _check_warner(params: WarnerParams, columns: list[ColumnInfo], source: SourceRelease | None) -> None:
    chosen = _warner_columns(params, columns)
    if params.missing == "error":  # the profile knows the missing cells: refuse before the debit
        by_name = {c.name: c for c in columns}
        for name in chosen:  # a list cut makes a missing cell the value '<missing>': no gap
            if by_name[name].missing and not isinstance(params.cut_points.get(name), list):
                raise MethodInputError(f"column {name!r} has {by_name[name].missing} missing cells; set "
                                       "missing='preserve' to leave them missing")


register(MethodSpec(
    name="warner",
    family="randomized_response",
    kind=MethodKind.release,
    summary="Warner's randomized response on binary columns: each cell (or, for DTPD, each whole "
            "record) is published as is with probability p, flipped otherwise; optional cut points "
            "binarize columns first.",
    params=WarnerParams,
    guarantee="local ε-DP per attribute, ε = |ln(p/(1-p))|; per-cell coins compose over a record, "
              "the whole-record flip is not DP for more than one column",
    paper="Warner 1965 (JASA 60); Du & Zhan 2003 (DTPD), as the baseline of seed 000",
    run=run_warner,
    epsilon=_warner_epsilon,
    check=_check_warner,
    docs="docs/methods/warner.md",
))


def reconstruct_binary(data: MethodInput, step: dict[str, Any], params: Any, ctx: RunContext) -> dict[str, Any]:
    """reconstruct_categorical, with Warner's estimate π̂ of each column: the share of its
    positive value (the second of its domain)."""
    out = reconstruct_categorical(data, step, params, ctx)
    for entry in out["columns"].values():
        entry.update(kind="binary", positive_value=entry["domain"][1], pi_hat=entry["estimate"][1],
                     pi_hat_standard_error=entry["standard_error"][1])
    return out


def warner_channels(metadata: dict[str, Any]) -> dict[str, CategoricalChannel]:
    """λ = (2p-1)·π + (1-p) over each column's two labels; missing cells are never flipped."""
    w = metadata.get("warner", {})
    p = float(w.get("p", 1.0))
    return {name: CategoricalChannel(labels=tuple(c["domain"]), scale=2.0 * p - 1.0, offset=(1.0 - p, 1.0 - p),
                                     domain=tuple(c["domain"]), preserve_missing=True,
                                     binarize=c.get("binarize"), steps=("warner",))
            for name, c in w.get("columns", {}).items()}


register_reconstructor("warner", reconstruct_binary)
register_channel_builder("warner", warner_channels)
