"""The common shape of a release's ``guarantees``: every release states its notion, whether
it is private at all, the record-level ε where one exists, what the guarantee covers and what
it does not. Method-specific figures (per-column ε, breach, k, l, t) go beside these keys."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Annotated, Any, Literal

import numpy as np
import pandas as pd
from pydantic import BaseModel, ConfigDict, Field, ValidationError, WithJsonSchema

Notion = Literal["local_dp", "central_dp", "k_anonymity", "none"]
# how a stored guarantee spells an unbounded ε (JSON has no infinity); a one-value enum, as the
# jobs' ε (a generated client reads a number-or-const union as the const alone)
_Unbounded = Annotated[Literal["Infinity"], WithJsonSchema({"type": "string", "enum": ["Infinity"]})]


class Guarantees(BaseModel):
    """What a release guarantees: the keys every release carries (``guarantee`` builds them).
    A method's own figures sit beside them — per-column ε and breach (`columns`), k, l, t, the
    accountant of a DP synthesizer — and a step run on a release adds `chain_guarantees`, the
    earlier steps' keys, oldest first."""
    model_config = ConfigDict(extra="allow", json_schema_serialization_defaults_required=True)

    notion: Notion = Field(..., description="local_dp (each record randomized on its own), central_dp "
                           "(a DP computation over the table), k_anonymity, or none (no formal guarantee)")
    private: bool = Field(..., description="the notion holds for the whole released table: false when a "
                          "column is published as the input held it, the randomness was seeded (test "
                          "mode), or the step gives no formal guarantee. The syntactic releases "
                          "(kanonymity, rfka, hamdist) guarantee their quasi-identifiers or selected "
                          "features and stay true beside the columns they pass through (sensitive, label)")
    epsilon: float | _Unbounded | None = Field(
        ..., description="the record-level ε this step delivers (\"Infinity\" when unbounded; null "
        "when the notion has none)")
    delta: float | None = Field(..., description="the δ of an (ε, δ) guarantee; null for pure ε")
    protected_columns: list[str] = Field(..., description="the columns the guarantee covers")
    unprotected_columns: list[str] = Field(
        ..., description="the columns released as the input held them, outside the guarantee")
    random_source: str = Field(..., description="where the randomness came from (the OS CSPRNG unless "
                               "seeded in test mode)")
    statements: list[str] = Field(..., description="what the guarantee says, in words")
    warnings: list[str] = Field(..., description="what it does not cover, or what the release "
                                "discloses besides")


def check_guarantees(guarantees: dict[str, Any], method: str) -> None:
    """A method's release must state the common keys (a method added by VEIL_PLUGINS that
    built its own dict instead of calling ``guarantee`` is refused, not published; the job's
    error names the keys)."""
    from app.privacy.registry import MethodContractError

    try:
        Guarantees.model_validate(guarantees)
    except ValidationError as exc:
        wrong = ", ".join(sorted({".".join(map(str, e["loc"])) or "(not a dict)" for e in exc.errors()}))
        raise MethodContractError(f"method {method!r} returned guarantees without the common keys, or "
                                  "with a value of another type (build them with "
                                  f"app.privacy.guarantees.guarantee): {wrong}") from None


def guarantee(
    notion: Notion,
    *,
    rng: str,
    private: bool,
    epsilon: float | None = None,
    delta: float | None = None,
    protected_columns: list[str] | None = None,
    unprotected_columns: list[str] | None = None,
    statements: list[str] | None = None,
    warnings: list[str] | None = None,
    **extra: Any,
) -> dict[str, Any]:
    """Build the guarantees dict. ``private`` must be False when the RNG was seeded (test
    mode) or when the method gives no formal guarantee; ``unprotected_columns`` lists the
    columns released exactly as they were in the input."""
    out: dict[str, Any] = {
        "notion": notion,
        "private": bool(private),
        "epsilon": None if epsilon is None else float(epsilon),
        "delta": delta,
        "protected_columns": protected_columns or [],
        "unprotected_columns": unprotected_columns or [],
        "random_source": rng,
        "statements": list(statements or []),
        "warnings": list(warnings or []),
    }
    if epsilon is not None and math.isinf(epsilon):
        out["warnings"].append("epsilon is infinite: some published value can reveal the truth")
    out.update(extra)
    return out


def unchanged_columns(columns: list[str], verb: str, on_release: bool) -> str:
    """The statement for the columns a step passes through untouched. On a dataset they are
    raw; on a release they are as that release published them, with whatever protection its
    own steps gave them (its guarantees, in the provenance chain), and nothing from this step."""
    where = ("as the release this step ran on published them: they keep that release's "
             "protection (see its guarantees in the provenance chain) and gain none from this step"
             if on_release else "exactly as in the dataset and carry no guarantee")
    return f"columns not {verb} are released {where}: " + ", ".join(map(str, columns))


MAX_DETERMINANT_LEVELS = 1_000  # a raw column with more values is an identifier-like key, not a code


def _distinct_pairs(a: np.ndarray, a_size: int, b: np.ndarray, b_size: int) -> int:
    """How many distinct (a, b) pairs the rows hold, codes 0 ≤ a < a_size, 0 ≤ b < b_size: a
    count by bincount when the pair space is small (both are small code spaces here), a sort
    only when it is not. np.unique sorted 10⁶ pairs per (raw, protected) column pair: 48 pairs,
    5.6 s of kanonymity's read-through check on Adult copied to 995,346 rows."""
    space = a_size * b_size
    if space <= max(4 * len(a), 1 << 16):
        return int(np.count_nonzero(np.bincount(a * b_size + b, minlength=space)))
    return len(np.unique(a * b_size + b))


def raw_determinants(frame: pd.DataFrame, unprotected: list[str], protected: list[str],
                     codes: Mapping[str, np.ndarray] | None = None) -> dict[str, list[str]]:
    """The unprotected columns that determine a protected one in this table: every value of
    the raw column (with at most MAX_DETERMINANT_LEVELS values, each held by ≥ 2 records on
    average) goes with a single value of the protected column (a missing cell is a value).
    Adult's education-num, published raw beside a randomized education, is a code for it: the
    randomization then hides nothing (the RR acceptance run). {protected: [raw, …]}.

    ``codes`` may give a protected column's cells as integer codes the caller already has
    (equal values, equal codes; a missing cell -1 or a code of its own): factorizing 10⁶
    strings again cost errph a third of its time."""
    n, codes = len(frame), dict(codes or {})
    raw = {r: pd.factorize(frame[r], use_na_sentinel=False)[0].astype(np.int64, copy=False) for r in unprotected}
    sizes = {r: int(v.max()) + 1 if n else 0 for r, v in raw.items()}
    keys = [r for r in unprotected if 2 <= sizes[r] <= min(MAX_DETERMINANT_LEVELS, n // 2)]
    out: dict[str, list[str]] = {}
    if not keys:  # nothing published raw could be a code: the protected columns need no reading
        return out
    for c in protected:
        cells = (codes[c].astype(np.int64) + 1 if c in codes
                 else pd.factorize(frame[c], use_na_sentinel=False)[0].astype(np.int64, copy=False))
        size = int(cells.max()) + 1
        if np.count_nonzero(np.bincount(cells, minlength=size)) < 2:
            continue  # a constant column is "determined" by anything
        found = [r for r in keys if _distinct_pairs(raw[r], sizes[r], cells, size) == sizes[r]]
        if found:
            out[c] = found
    return out
