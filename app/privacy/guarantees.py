"""The common shape of a release's ``guarantees``: every release states its notion, whether
it is private at all, the record-level ε where one exists, what the guarantee covers and what
it does not. Method-specific figures (per-column ε, breach, k, l, t) go beside these keys."""

from __future__ import annotations

import math
from typing import Any, Literal

Notion = Literal["local_dp", "central_dp", "k_anonymity", "none"]


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
