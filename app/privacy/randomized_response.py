"""Randomized response on categorical columns: ERRPH (spec 01 §2), the column coding shared
with Warner (warner.py), and the categorical reconstructor of both.

ERRPH publishes, independently per record and per attribute, the true value with probability
p0 and value a_j with probability p_j (Σ p_j = 1 - p0). Everything works on whole columns, in
cache-sized chunks: one uint32 of CSPRNG output per cell, against integer thresholds.

Reconstruction (the ``reconstruct`` analysis) inverts the published channels, also through
later steps of a chain: see rr_channels.py.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from typing import Any, Literal

import numpy as np
import pandas as pd
from pydantic import Field, field_validator

from app.privacy.arrays import factorize
from app.privacy.context import RunContext
from app.privacy.data import ColumnInfo, MethodInput, SourceRelease
from app.privacy.guarantees import guarantee, raw_determinants, unchanged_columns
from app.privacy.registry import (
    MethodKind, MethodInputError, MethodSpec, Params, register, register_channel_builder, register_reconstructor,
)
from app.privacy.results import ReleaseResult
from app.privacy.rng import SecureRandom
from app.privacy.rr_channels import (
    MISSING, CategoricalChannel, columns_to_reconstruct, count_labels, label_of,
    project_to_simplex, unique_names, with_columns,
)

_SCALE = 2.0**32
CHUNK = 1 << 16  # cells per chunk: keeps the random words and the codes in L2 cache
MAX_DOMAIN = 10_000  # categories per column; a larger domain is an identifier, not a category
PAPER = ("Zhang & Tang, Privacy Preserving Naive Bayes Classification, Chinese Journal of "
         "Computers 30(8), 2007 (seed 000)")


# The statement of a release whose missing cells were left missing: their missingness is
# published as it is, which no ε bounds (a missing cell and a value are told apart surely).
MISSINGNESS_PUBLISHED = (
    "missing cells were preserved: whether a cell is missing is published as it is and is "
    "unprotected, so the local ε holds only between records whose cells are both missing or both "
    "present (private: false)")


# ----------------------------------------------------------------------------------- core
def probability_threshold(prob: float) -> np.uint32:
    return np.uint32(min(max(round(prob * _SCALE), 0), _SCALE - 1))


def keeps_no_cell(p0: float) -> bool:
    """p0 within 2^-33 of 0: its keep threshold is 0, no cell is ever kept (pure noise)."""
    return int(probability_threshold(p0)) == 0


def flips_as_a_coin(p: float) -> bool:
    """A keep probability p within 2^-33 of 1/2: the flip threshold is exactly 2^31 (pure noise)."""
    return int(probability_threshold(1.0 - p)) == 2**31


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
    edges = np.array([probability_threshold(p0 + s) for s in np.concatenate([[0.0], np.cumsum(p)[:-1]])],
                     dtype=np.uint32)
    uniform = bool(np.all(p == p[0]))
    keep_below = edges[0]
    width = k / (_SCALE - float(keep_below))
    last = _last_positive(p)
    out = np.empty(len(codes), dtype=dtype)
    for start in range(0, len(codes), CHUNK):
        stop = min(start + CHUNK, len(codes))
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
        if last < k - 1:  # trailing p_j = 0: the capped top edge (2^32 - 1) would give them a word
            np.minimum(segment, last, out=segment)
        np.copyto(out[start:stop], np.where(segment < 0, codes[start:stop], segment))
    return out


def _last_positive(p: np.ndarray) -> int:
    """The last value with p_j > 0: it takes the top of [0, 2^32), so a value asked at p_j = 0
    after it is never published (a threshold for probability 1 is capped at 2^32 - 1)."""
    positive = np.flatnonzero(np.asarray(p) > 0)
    return int(positive[-1]) if positive.size else len(p) - 1


def local_epsilon(p0: float, p: np.ndarray) -> float:
    """max_j ln((p0 + p_j) / p_j): the local-DP level of one attribute (∞ if some p_j = 0)."""
    p = np.asarray(p, dtype=float)
    if np.any(p <= 0):
        return math.inf
    # a difference of logs: the ratio overflowed to ∞ (with a RuntimeWarning) for a p_j below
    # ~1e-308, ln(0.05 / 2.1e-312) being 714.66
    return float(np.max(np.log(p0 + p) - np.log(p)))


def realized_segments(p0: float, p: np.ndarray) -> tuple[int, np.ndarray]:
    """(T0, c): how many of the 2^32 words ``randomize_codes`` keeps the cell for, and how many
    publish value j — the probabilities it actually realizes, p0' = T0/2^32, p_j' = c_j/2^32.
    Explicit p_j: the widths of the threshold segments. Uniform p_j: the words of the keep
    complement [0, N) that floor(d·k/N) sends to j, boundaries found by bisection (the map is
    monotone in d)."""
    p = np.asarray(p, dtype=float)
    k = len(p)
    if p0 >= 1.0:
        return 2**32, np.zeros(k, dtype=np.int64)
    edges = np.array([probability_threshold(p0 + s) for s in np.concatenate([[0.0], np.cumsum(p)[:-1]])],
                     dtype=np.int64)
    keep = int(edges[0])
    if not np.all(p == p[0]):
        counts = np.diff(np.append(edges, 2**32))
        last = _last_positive(p)
        counts[last] += counts[last + 1:].sum()  # randomize_codes folds the trailing zeros' word
        counts[last + 1:] = 0
        return keep, counts
    width = k / (_SCALE - float(keep))  # exactly the factor randomize_codes multiplies by
    target = np.arange(k + 1, dtype=np.int64)
    lo, hi = np.zeros(k + 1, dtype=np.int64), np.full(k + 1, 2**32 - keep, dtype=np.int64)
    while np.any(open_ := lo < hi):  # least d < N with floor(d·width) ≥ j (N when none)
        mid = (lo + hi) // 2
        reached = np.floor(mid.astype(np.float64) * width) >= target
        hi = np.where(open_ & reached, mid, hi)
        lo = np.where(open_ & ~reached, mid + 1, lo)
    return keep, np.diff(lo)


def delivered_epsilon(p0: float, p: np.ndarray) -> float:
    """The local ε ``randomize_codes`` delivers: max_j ln((T0 + c_j)/c_j) over its realized
    segments (``realized_segments``) — within ~2^-32/min p_j of ``local_epsilon``, and ∞ when a
    p_j > 0 is so small that its segment is empty (the ideal formula would say finite)."""
    # memoized: every submission prices its columns with it (0.5-1 ms each, a bisection on
    # tiny arrays), and the same (p0, p) come back job after job
    return _delivered_epsilon(float(p0), np.ascontiguousarray(p, dtype=float).tobytes())


@functools.lru_cache(maxsize=1024)
def _delivered_epsilon(p0: float, p_bytes: bytes) -> float:
    keep, counts = realized_segments(p0, np.frombuffer(p_bytes, dtype=float))
    if keep >= 2**32:
        return math.inf
    if keep == 0:
        return 0.0  # no cell is ever kept: the output does not depend on the input
    if np.any(counts == 0):
        return math.inf
    return float(np.max(np.log((keep + counts) / counts)))


def epsilon_bound(p0: float, p: np.ndarray) -> float:
    """An upper bound of ``delivered_epsilon`` for the p_j in any order: each realized segment
    is within 2 words of its ideal width p_j·2^32 (its two edges round by ≤ 1/2 word each, the
    top edge is capped at 2^32 - 1, the cumulative sums err by < 10^-2 word), T0 + c_j too."""
    p = np.asarray(p, dtype=float)
    if p0 >= 1.0 or np.any(p * _SCALE <= 2.0):
        return math.inf
    return float(np.max(np.log(((p0 + p) * _SCALE + 2.0) / (p * _SCALE - 2.0))))


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
    """The column's domain (declared categories, {False, True} for a boolean column, else the
    sorted distinct values, then the missing category when asked for and present) and each cell's code in it (-1 = a missing
    cell left out). Also whether the domain was read from the data.

    One pass counts the distinct values (and the missing cells); the per-cell recoding is
    skipped when the column's own codes already are the domain's."""
    if isinstance(series.dtype, pd.CategoricalDtype):
        uniques, codes = list(series.cat.categories), series.cat.codes.to_numpy()
    else:
        codes, uniques = factorize(series)
    per_value = np.bincount(codes.astype(np.intp) + 1, minlength=len(uniques) + 1)
    n_missing, present = int(per_value[0]), per_value[1:] > 0
    if info.categories is not None:
        domain: list[Any] = list(info.categories)
        from_data = False
    elif info.type == "boolean":  # the type is the domain (as warner and mst read it)
        domain, from_data = [False, True], False
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
    elif info.type == "boolean":
        k = 2
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


# ------------------------------------------------------------------------- reconstruction
# A share's standard error above which ±1.96·SE spans more than the whole of [0, 1]
UNINFORMATIVE_SE = 0.255
# Published cells of a value below which ±1.96·SE is a rough interval: the count is nearly
# Poisson and the normal approximation undercovers (Poisson mean 3: 80 %, 5: 87 %, 10: 93 %;
# acceptance check on Adult samples: values with 1.5-5 expected published cells 79-92 %)
FEW_PUBLISHED_CELLS = 10
NAMED_VALUES = 5


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
        widest = float(np.max(est["standard_error"], initial=0.0))
        if widest > UNINFORMATIVE_SE:  # an unbiased estimate is still returned, as documented
            notes.append(f"column {name!r}: standard errors up to {widest:.3g}, so a 95 % interval is "
                         "wider than [0, 1]: the estimate says little about this column (the "
                         "randomization is close to uniform for this many records)")
        if (note := _few_cells_note(name, channel, est["published_count"])) is not None:
            notes.append(note)
    return {"columns": out, "notes": notes,
            "projection": "Euclidean projection of the unbiased vector onto the probability simplex",
            "standard_errors": "sqrt(λ_j(1-λ_j)/n) / |scale| at λ_j = the published share λ̂_j moved into "
                               "[offset_j, offset_j + scale] (scale = p0 and offset_j = p_j for ERRPH, "
                               "2p-1 and 1-p for Warner; the product over chained steps)"}


def _few_cells_note(name: str, channel: CategoricalChannel, counts: np.ndarray) -> str | None:
    """The values of a column whose intervals rest on a handful of published cells."""
    few = [label for label, c in zip(channel.domain, counts) if c < FEW_PUBLISHED_CELLS]
    if not few:
        return None
    named = ", ".join(map(repr, few[:NAMED_VALUES])) + (f" and {len(few) - NAMED_VALUES} more"
                                                         if len(few) > NAMED_VALUES else "")
    verb = "has" if len(few) == 1 else "have"
    return (f"column {name!r}: {len(few)} of its {len(channel.domain)} values {verb} fewer than "
            f"{FEW_PUBLISHED_CELLS} published cells ({named}): their ±1.96 standard error intervals "
            "(the plot's error bars) are rough — with so few cells the normal approximation covers "
            "80-93 % rather than 95 %")


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
    return entry


def reconstruct_errph(data: MethodInput, step: dict[str, Any], params: Any, ctx: RunContext) -> dict[str, Any]:
    """reconstruct_categorical, with the breach probability at the reconstructed distribution
    of each column no later step changed again."""
    out = reconstruct_categorical(data, step, params, ctx)
    for name, entry in out["columns"].items():
        if len(entry["through_steps"]) == 1:
            meta = step["metadata"]["errph"][name]
            entry["breach_at_reconstructed"] = float(
                breach(meta["p0"], np.asarray(meta["p"]), np.asarray(entry["consistent"])).max())
    return out


def errph_channels(metadata: dict[str, Any]) -> dict[str, CategoricalChannel]:
    """λ = p0·π + p over each column's published domain (its metadata["errph"] entry)."""
    return {name: CategoricalChannel(labels=tuple(c["domain"]), scale=float(c["p0"]), offset=tuple(c["p"]),
                                     domain=tuple(c["domain"]), preserve_missing=c.get("missing") == "preserve",
                                     steps=("errph",))
            for name, c in metadata.get("errph", {}).items()}


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
           "project_to_simplex", "breach", "encode_column", "planned_k", "reconstruct_categorical"]
