"""Personalized budgets (spec 03 step 6), entropies and mutual information (steps 1 and 7)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd
from scipy.optimize import linear_sum_assignment

from app.privacy.dp_release.encoding import ColumnPlan


def preference_level(preference: float, levels: int) -> int:
    """Sensitivity level G ∈ {1..m} of a preference sp ∈ [0, 1]: m equal-width bands."""
    return 1 + min(levels - 1, int(math.floor(preference * levels)))


def personalized_budgets(preferences: dict[str, float], epsilon_sensitive: float,
                         levels: int) -> dict[str, Any]:
    """Split ε_sens among the sensitive attributes by an optimal assignment (paper Alg. 1).

    Candidate budgets form the ladder ε_j = ε_sens · j / (1 + 2 + … + s), j = 1..s (s sensitive
    attributes), so they add up to ε_sens. The cost of giving budget ε_j to an attribute of
    level G_i is T_ij = G_i · ε_j; the minimum-cost perfect matching
    (scipy.optimize.linear_sum_assignment) hands the smallest budgets — the most noise — to the
    most sensitive attributes. Attributes of the same level then share their budgets equally,
    so equal preferences get equal protection; the total is unchanged.
    """
    names = list(preferences)
    s = len(names)
    level = np.array([preference_level(preferences[n], levels) for n in names], dtype=float)
    ladder = epsilon_sensitive * np.arange(1, s + 1) / (s * (s + 1) / 2.0)
    cost = level[:, None] * ladder[None, :]
    rows, cols = linear_sum_assignment(cost)
    assigned = np.empty(s)
    assigned[rows] = ladder[cols]
    for g in np.unique(level):
        same = level == g
        assigned[same] = assigned[same].mean()
    assigned *= epsilon_sensitive / assigned.sum()  # exact total despite rounding
    return {
        "levels": {n: int(level[i]) for i, n in enumerate(names)},
        "candidate_budgets": ladder.tolist(),
        "cost": cost.tolist(),
        "assignment": {n: float(assigned[i]) for i, n in enumerate(names)},
    }


# ------------------------------------------------------------------- entropy and MI
def discretize(values: np.ndarray | pd.Series | pd.Categorical, plan: ColumnPlan,
               bins: int) -> tuple[np.ndarray, int]:
    """Integer codes in [0, size) of one column: numeric values in ``bins`` equal-width bins
    over the plan's bounds, categories by their index; a missing value is the last code."""
    if plan.kind == "numeric":
        v = pd.to_numeric(pd.Series(np.asarray(values)), errors="coerce").to_numpy(dtype=float)
        scaled = (np.clip(v, plan.lo, plan.hi) - plan.lo) / (plan.hi - plan.lo)
        codes = np.full(len(v), bins, dtype=np.int64)
        ok = ~np.isnan(scaled)
        codes[ok] = np.minimum((scaled[ok] * bins).astype(np.int64), bins - 1)
        return codes, bins + 1
    labels = [str(c) for c in plan.categories]
    series = pd.Series(np.asarray(values, dtype=object))
    codes = pd.Index(labels).get_indexer(series.astype(str)).astype(np.int64)
    codes[series.isna().to_numpy() | (codes < 0)] = len(labels)
    return codes, len(labels) + 1


def entropy_of_counts(counts: np.ndarray) -> float:
    """Shannon entropy (nats) of a histogram; negative counts count as 0."""
    c = np.clip(np.asarray(counts, dtype=float), 0.0, None)
    total = c.sum()
    if total <= 0:
        return 0.0
    p = c[c > 0] / total
    return float(-(p * np.log(p)).sum())


def mutual_information(x: np.ndarray, y: np.ndarray, size: int) -> float:
    """I(X, Y) = H(X) + H(Y) - H(X, Y) of two code arrays over [0, size)."""
    joint = np.bincount(x * size + y, minlength=size * size)
    return (entropy_of_counts(np.bincount(x, minlength=size))
            + entropy_of_counts(np.bincount(y, minlength=size)) - entropy_of_counts(joint))


def mean_mutual_information(original: pd.DataFrame, release: pd.DataFrame,
                            plans: list[ColumnPlan], bins: int) -> float:
    """Per-attribute I(original, release) after discretization, averaged (spec step 7)."""
    if not plans:
        return 0.0
    total = 0.0
    for plan in plans:
        x, size = discretize(original[plan.name], plan, bins)
        y, _ = discretize(release[plan.name], plan, bins)
        total += mutual_information(x, y, size)
    return total / len(plans)
