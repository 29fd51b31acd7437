"""Randomized response on categorical and binary columns: ERRPH and Warner (spec 01 §1, §2, §5).

ERRPH publishes, independently per record and per attribute, the true value with probability
p0 and value a_j with probability p_j (Σ p_j = 1 - p0). Warner publishes a binary attribute
as is with probability p and flipped otherwise, per attribute or — DTPD's randomization
(spec §5) — with one coin for the whole record. Everything works on whole columns, in
cache-sized chunks: one uint32 of CSPRNG output per cell (per record for the whole-record
flip), compared against integer thresholds.

Reconstruction (the ``reconstruct`` analysis) inverts the published channels, also through
later steps of a chain: see rr_channels.py.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any, Literal

import numpy as np
import pandas as pd
from pydantic import Field, field_validator, model_validator

from app.privacy.context import RunContext
from app.privacy.data import ColumnInfo, MethodInput, SourceRelease
from app.privacy.guarantees import guarantee
from app.privacy.registry import (
    Kind, MethodInputError, MethodSpec, Params, register, register_reconstructor,
)
from app.privacy.results import ReleaseResult
from app.privacy.rng import SecureRandom
from app.privacy.rr_channels import (
    MISSING, CategoricalChannel, columns_to_reconstruct, count_labels, label_of,
    project_to_simplex, unique_names, with_columns,
)

_SCALE = 2.0**32
_CHUNK = 1 << 16  # cells per chunk: keeps the random words and the codes in L2 cache
MAX_DOMAIN = 10_000  # categories per column; a larger domain is an identifier, not a category
PAPER = ("Zhang & Tang, Privacy Preserving Naive Bayes Classification, Chinese Journal of "
         "Computers 30(8), 2007 (seed 000)")


# ----------------------------------------------------------------------------------- core
def _threshold(prob: float) -> np.uint32:
    return np.uint32(min(max(round(prob * _SCALE), 0), _SCALE - 1))


def randomize_codes(codes: np.ndarray, p0: float, p: np.ndarray, rng: SecureRandom) -> np.ndarray:
    """ERRPH on integer codes in [0, k): keep with probability p0, else publish j w.p. p[j].

    [0, 2^32) is cut into [0, T0) (keep) followed by one segment per value; one uint32 per
    cell picks the segment. Uniform p_j: the segment is floor((u - T0)·k / (2^32 - T0)), one
    multiplication; otherwise k comparisons (small k) or a binary search. Probabilities are
    realized to within 2^-32 per segment boundary. p0 = 1 keeps every cell. A code < 0 (a
    missing cell left out) may come out as a value: the caller restores it.
    """
    k = len(p)
    dtype = _code_dtype(k + 1)
    codes = codes.astype(dtype, copy=False)
    if p0 >= 1.0:
        return codes.copy()
    edges = np.array([_threshold(p0 + s) for s in np.concatenate([[0.0], np.cumsum(p)[:-1]])],
                     dtype=np.uint32)
    uniform = bool(np.all(p == p[0]))
    keep_below = edges[0]
    width = k / (_SCALE - float(keep_below))
    out = np.empty(len(codes), dtype=dtype)
    for start in range(0, len(codes), _CHUNK):
        stop = min(start + _CHUNK, len(codes))
        u = rng.uint32(stop - start)
        if uniform:
            # (u - T0) wraps for kept cells; their value is discarded by the where below
            drawn = ((u - keep_below).astype(np.float64) * width).astype(dtype)
            np.copyto(out[start:stop], np.where(u < keep_below, codes[start:stop], drawn))
            continue
        if k <= 16:
            # k comparisons over the chunk beat a binary search per cell for small domains.
            segment = (u >= edges[0]).astype(dtype)
            for edge in edges[1:]:
                segment += u >= edge
        else:
            segment = np.searchsorted(edges, u, side="right").astype(dtype)
        segment -= 1  # -1 = keep, j = publish value j
        np.copyto(out[start:stop], np.where(segment < 0, codes[start:stop], segment))
    return out


def flip_mask(n: int, p: float, rng: SecureRandom) -> np.ndarray:
    """n independent coins that are True (flip) with probability 1 - p, to within 2^-32."""
    if p >= 1.0:
        return np.zeros(n, dtype=bool)
    threshold = _threshold(1.0 - p)
    out = np.empty(n, dtype=bool)
    for start in range(0, n, _CHUNK):
        stop = min(start + _CHUNK, n)
        np.less(rng.uint32(stop - start), threshold, out=out[start:stop])
    return out


def local_epsilon(p0: float, p: np.ndarray) -> float:
    """max_j ln((p0 + p_j) / p_j): the local-DP level of one attribute (∞ if some p_j = 0)."""
    p = np.asarray(p, dtype=float)
    if np.any(p <= 0):
        return math.inf
    return float(np.max(np.log((p0 + p) / p)))


def warner_epsilon(p: float) -> float:
    """|ln(p / (1-p))|: the local-DP level of one Warner attribute (∞ for p ∈ {0, 1})."""
    if p <= 0.0 or p >= 1.0:
        return math.inf
    return abs(math.log(p / (1.0 - p)))


def estimate_distribution(published_counts: np.ndarray, p0: float, p: np.ndarray) -> np.ndarray:
    """Unbiased π̂_j = (λ̂_j - p_j) / p0 (paper eq. 1); may leave [0, 1]."""
    n = published_counts.sum()
    lam = published_counts / n if n else np.zeros_like(published_counts, dtype=float)
    return (lam - p) / p0


def breach(p0: float, p: np.ndarray, pi: np.ndarray) -> np.ndarray:
    """Breach(a_i) = p0 · p0·π_i / (p0·π_i + p_i) (paper §6.1), per value."""
    pi = np.asarray(pi, dtype=float)
    p = np.asarray(p, dtype=float)
    denom = p0 * pi + p
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(denom > 0, p0 * p0 * pi / np.where(denom > 0, denom, 1.0), 0.0)


# ------------------------------------------------------------------------- column coding
def _sorted_values(values: list[Any]) -> list[Any]:
    try:
        return sorted(values)
    except TypeError:  # mixed types: order by label
        return sorted(values, key=label_of)


def _code_dtype(k: int):
    return np.int8 if k < 127 else (np.int16 if k < 32_767 else np.int32)


def encode_column(series: pd.Series, info: ColumnInfo, missing: str) -> tuple[list[Any], np.ndarray, bool]:
    """The column's domain (declared categories, else the sorted distinct values, then the
    missing category when asked for and present) and each cell's code in it (-1 = a missing
    cell left out). Also whether the domain was read from the data.

    One pass counts the distinct values (and the missing cells); the per-cell recoding is
    skipped when the column's own codes already are the domain's."""
    if isinstance(series.dtype, pd.CategoricalDtype):
        uniques, codes = list(series.cat.categories), series.cat.codes.to_numpy()
    else:
        codes, arr = pd.factorize(series, use_na_sentinel=True)
        uniques = list(arr)
    per_value = np.bincount(codes.astype(np.intp) + 1, minlength=len(uniques) + 1)
    n_missing, present = int(per_value[0]), per_value[1:] > 0
    if info.categories is not None:
        domain: list[Any] = list(info.categories)
        from_data = False
    else:
        domain = _sorted_values([u for u, seen in zip(uniques, present) if seen])
        from_data = True
    pos = {label_of(v): i for i, v in enumerate(domain)}
    lut = np.array([pos.get(label_of(u), -2) for u in uniques], dtype=np.int64)
    if ((lut == -2) & present).any():
        raise MethodInputError(f"column {info.name!r} holds values outside its declared categories")
    as_missing = len(domain) if missing == "category" and n_missing else -1
    if as_missing >= 0:
        domain.append(None)
    dtype = _code_dtype(len(domain))
    if np.array_equal(lut[present], np.flatnonzero(present)) and as_missing < 0:
        return domain, codes.astype(dtype, copy=False), from_data  # already the domain's codes
    table = np.append(lut, as_missing).astype(dtype)
    return domain, table[codes], from_data  # a missing cell (code -1) takes the last entry


def domain_labels(domain: list[Any]) -> list[str]:
    return [label_of(v) for v in domain]


def publish_codes(codes: np.ndarray, domain: list[Any]) -> pd.Categorical:
    """The published column: codes into the domain; the missing category and left-out
    missing cells are published as missing."""
    values = [v for v in domain if v is not None]
    if len(values) < len(domain):
        codes = np.where(codes >= len(values), -1, codes).astype(codes.dtype)
    return pd.Categorical.from_codes(codes, dtype=pd.CategoricalDtype(values), validate=False)


def planned_k(info: ColumnInfo, missing: str) -> int | None:
    """The domain size a run will use, from the schema and profile alone (no data read)."""
    if info.categories is not None:
        k = len(info.categories)
    elif info.distinct is not None:
        k = int(info.distinct)
    else:
        return None
    return k + (1 if missing == "category" and info.missing > 0 else 0)


def _check_planned_k(info: ColumnInfo, missing: str, actual: int) -> None:
    planned = planned_k(info, missing)
    if planned is not None and planned != actual:
        raise MethodInputError(
            f"column {info.name!r}: the data has {actual} values (counting the missing category) "
            f"but its profile says {planned}; the job's ε was priced from the profile, so the "
            "dataset must be re-profiled (or its categories declared) first")


def _binary_columns(columns: list[ColumnInfo]) -> list[str]:
    return [c.name for c in columns if c.role not in ("label", "identifier") and (
        c.type == "boolean" or (c.type == "categorical" and planned_k(c, "preserve") == 2))]


# ---------------------------------------------------------------------------------- ERRPH
Probabilities = list[float] | dict[str, float]


class ColumnOverride(Params):
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
    per_column: dict[str, ColumnOverride] = Field(
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


def _planned_probabilities(name: str, k: int, params: ErrphParams) -> tuple[float, np.ndarray]:
    """The same p vector as the run will use, up to the order of values (which ε ignores)."""
    p0, given = _given_probabilities(name, params)
    if isinstance(given, dict):
        if len(given) > k:
            raise MethodInputError(f"column {name!r}: p names {len(given)} values, the domain has {k}")
        p = np.array([*map(float, given.values()), *[0.0] * (k - len(given))])
        return p0, _validated(name, p0, p, params)
    labels = [str(i) for i in range(k)]  # stand-ins: a list is positional
    return _column_probabilities(name, labels, params)


def errph_column_epsilons(params: ErrphParams, columns: list[ColumnInfo]) -> dict[str, float]:
    """Per randomized column, the local ε the run will report, from the schema and profile."""
    by_name = {c.name: c for c in columns}
    out: dict[str, float] = {}
    for name in _selected_columns(params, columns):
        k = planned_k(by_name[name], params.missing)
        if k is None:
            raise MethodInputError(f"column {name!r}: its number of distinct values is unknown, so "
                                   "ε cannot be priced; declare its categories or profile the dataset")
        if k > MAX_DOMAIN:
            raise MethodInputError(f"column {name!r} has {k} distinct values; errph allows at most "
                                   f"{MAX_DOMAIN} (is it an identifier?)")
        out[name] = local_epsilon(*_planned_probabilities(name, k, params))
    return out


def run_errph(data: MethodInput, params: ErrphParams, ctx: RunContext) -> ReleaseResult:
    frame = data.frame
    if frame is None:
        raise MethodInputError("errph needs a table")
    chosen = _selected_columns(params, data.columns)
    new_columns: dict[str, Any] = {}
    out_columns = {c.name: c for c in data.columns}
    per_column: dict[str, Any] = {}
    warnings: list[str] = []
    for i, name in enumerate(chosen):
        ctx.progress(i / len(chosen), f"randomizing {name}")
        info = data.column(name)
        domain, codes, from_data = encode_column(frame[name], info, params.missing)
        if len(domain) < 2:
            raise MethodInputError(f"column {name!r} has fewer than 2 values; nothing to randomize")
        if len(domain) > MAX_DOMAIN:
            raise MethodInputError(f"column {name!r} has {len(domain)} distinct values; errph allows "
                                   f"at most {MAX_DOMAIN} (is it an identifier?)")
        _check_planned_k(info, params.missing, len(domain))
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
        eps = local_epsilon(p0, p)
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
            "breach_at_reconstructed": float(breach(p0, p, pi_hat).max()),
            "breach_at_uniform_prior": float(breach(p0, p, np.full(k, 1.0 / k)).max()),
            "missing": params.missing,
            "missing_cells_left_out": n_left_out,
        }
    out = with_columns(frame, new_columns)
    record_eps = float(sum(c["local_epsilon"] for c in per_column.values()))
    unprotected = [c for c in frame.columns if c not in per_column]
    if params.missing == "preserve" and any(c["missing_cells_left_out"] for c in per_column.values()):
        warnings.append("missing cells were preserved: whether a cell is missing is unprotected")
    statements = [
        "each randomized attribute is local ε-DP at its 'local_epsilon' = max_j ln((p0+p_j)/p_j); "
        f"a record's randomized attributes together are {record_eps:.4g}-local-DP (sequential "
        "composition)",
        "with uniform p_j, ERRPH equals k-ary randomized response with keep probability "
        "p0 + (1-p0)/k and (1-p0)/k for each other value, and ε = ln(1 + k·p0/(1-p0))",
        "selection probabilities are realized to within 2^-32",
    ]
    if unprotected:
        statements.append("columns not randomized are released exactly as in the input and carry "
                          "no guarantee: " + ", ".join(map(str, unprotected)))
    ctx.progress(1.0, "done")
    return ReleaseResult(
        frame=out,
        columns=list(out_columns.values()),
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


def _errph_epsilon(params: ErrphParams, columns: list[ColumnInfo]) -> float:
    """ε debited at acceptance: exactly the record-level ε the run reports. The run uses the
    same k (declared categories, else the profile's distinct count, + the missing category)
    or fails before publishing anything."""
    return float(sum(errph_column_epsilons(params, columns).values()))


def _check_errph(params: ErrphParams, columns: list[ColumnInfo], source: SourceRelease | None) -> None:
    by_name = {c.name: c for c in columns}
    for name in _selected_columns(params, columns):
        k = planned_k(by_name[name], params.missing)
        if k is not None:
            _planned_probabilities(name, k, params)  # list lengths, sums, zeros


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
        if self.p == 0.5:
            raise ValueError("p = 0.5 publishes pure noise: nothing could be reconstructed")
        if self.p in (0.0, 1.0) and not self.allow_zero_probabilities:
            raise ValueError("p = 0 or 1 makes ε infinite; set allow_zero_probabilities to accept that")
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
    if info.categories is None and series.dtype == np.bool_:
        return [False, True], series.to_numpy(), None
    domain, codes, _ = encode_column(series, info, "preserve")
    if len(domain) != 2:
        raise MethodInputError(f"column {info.name!r} has {len(domain)} distinct values; warner needs "
                               "exactly 2 (give a cut point to binarize it)")
    missing = codes < 0
    return domain, codes == 1, missing if missing.any() else None


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
    new_columns: dict[str, Any] = {}
    out_columns = list(data.columns)
    shared_flip = flip_mask(len(frame), params.p, ctx.rng) if params.whole_record else None
    eps1 = warner_epsilon(params.p)
    per_column: dict[str, Any] = {}
    for i, name in enumerate(chosen):
        ctx.progress(i / len(chosen), f"randomizing {name}")
        info = data.column(name)
        cut = params.cut_points.get(name)
        domain, bits, missing = _binary_bits(frame[name], info, cut)
        if missing is not None and params.missing == "error":
            raise MethodInputError(f"column {name!r} has missing cells; set missing='preserve' to "
                                   "leave them missing")
        flip = shared_flip if shared_flip is not None else flip_mask(len(frame), params.p, ctx.rng)
        published = bits ^ flip
        as_bool = cut is not None or pd.api.types.is_bool_dtype(frame[name].dtype)
        new_columns[name] = _published_column(published, missing, domain, as_bool)
        if cut is not None:
            idx = next(j for j, c in enumerate(out_columns) if c.name == name)
            out_columns[idx] = dataclasses.replace(info, type="boolean", bounds=None, categories=None,
                                                   integer=False, distinct=2,
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
    if any(c["missing_cells_left_out"] for c in per_column.values()):
        warnings.append("missing cells were preserved: whether a cell is missing is unprotected")
    if any(c["binarize"] for c in per_column.values()):
        statements.append("columns with a cut point were binarized before randomizing; the cut "
                          "points are published")
    if unprotected:
        statements.append("columns not randomized are released exactly as in the input and carry "
                          "no guarantee: " + ", ".join(map(str, unprotected)))
    ctx.progress(1.0, "done")
    return ReleaseResult(
        frame=out,
        columns=out_columns,
        guarantees=guarantee(
            "local_dp", rng=ctx.rng.name,
            private=ctx.rng.is_private and not unprotected and not math.isinf(record_eps),
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
    _warner_columns(params, columns)


# ------------------------------------------------------------------------- reconstruction
def reconstruct_categorical(data: MethodInput, step: dict[str, Any], params: Any, ctx: RunContext) -> dict[str, Any]:
    """Per categorical column of ``step``: the unbiased π̂, its standard errors, the
    simplex-consistent estimate, inverted through every later step of the chain that
    randomized the same column again. Reads only the final release."""
    if data.frame is None or data.source is None:
        raise MethodInputError("reconstruct needs a table release")
    found, notes = columns_to_reconstruct(data, step, getattr(params, "columns", None), CategoricalChannel)
    out: dict[str, Any] = {}
    for name, channel in found:
        try:
            est = channel.estimate(count_labels(data.frame[name], channel.labels, name))
        except ValueError as exc:
            raise MethodInputError(str(exc)) from None
        missing_cells = int(data.frame[name].isna().sum()) if MISSING not in channel.labels else 0
        out[name] = _describe_estimate(name, step, channel, est, missing_cells)
    return {"columns": out, "notes": notes,
            "projection": "Euclidean projection of the unbiased vector onto the probability simplex",
            "standard_errors": "sqrt(λ̂_j(1-λ̂_j)/n) / |scale| (scale = p0 for ERRPH, 2p-1 for Warner; "
                               "the product over chained steps)"}


def _describe_estimate(name: str, step: dict[str, Any], channel: CategoricalChannel,
                       est: dict[str, Any], missing_cells: int) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "kind": "categorical", "n": est["n"], "domain": list(channel.domain),
        "estimate": est["estimate"].tolist(), "consistent": est["consistent"].tolist(),
        "standard_error": est["standard_error"].tolist(),
        "published_share": est["published_share"].tolist(), "through_steps": list(channel.steps),
    }
    if channel.preserve_missing and missing_cells:
        entry["population"] = "cells that were not missing (missing cells were left out)"
        entry["missing_cells"] = missing_cells
    if step["method"] == "errph" and len(channel.steps) == 1:
        meta = step["metadata"]["errph"][name]
        entry["breach_at_reconstructed"] = float(
            breach(meta["p0"], np.asarray(meta["p"]), est["consistent"]).max())
    if step["method"] == "warner":
        entry.update(kind="binary", positive_value=channel.domain[1],
                     pi_hat=float(est["estimate"][1]), pi_hat_standard_error=float(est["standard_error"][1]))
    return entry


register(MethodSpec(
    name="errph",
    family="randomized_response",
    kind=Kind.release,
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

register(MethodSpec(
    name="warner",
    family="randomized_response",
    kind=Kind.release,
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

register_reconstructor("errph", reconstruct_categorical)
register_reconstructor("warner", reconstruct_categorical)

__all__ = ["MISSING", "randomize_codes", "flip_mask", "local_epsilon", "warner_epsilon",
           "estimate_distribution", "project_to_simplex", "breach", "binarize", "encode_column"]
