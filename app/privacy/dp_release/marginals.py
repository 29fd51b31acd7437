"""What the marginal-based synthesizers (mst, aim) share: their parameters (privbayes' too:
DomainParams) and their budget — the 1-way split, the (ε, δ) → ρ plan, the replace-one ε an
add/remove job is priced at, and the synthetic table's size.

The rest lives beside it: the discrete domains, marginal counts and decoding in
marginal_domains.py (which says how a domain is built, never from the data), the bridge to
``mbi`` in mbi_bridge.py, and the release's metadata and guarantee in mst_aim_release.py.
"""

from __future__ import annotations

import itertools
from typing import Any, Literal

import numpy as np
from pydantic import Field, field_validator

from app.privacy.json_types import schema_bounds
from app.privacy.dp_release.common import MAX_EPSILON, TableParams
from app.privacy.dp_release.marginal_domains import Column
from app.privacy.registry import MethodInputError

MAX_BINS = 256
MAX_DELTA = 1e-3
MAX_ROWS = 2_000_000  # the largest `rows` a job may ask for; an estimated size is capped there


# The label's marginals weigh twice as much in the selection (aim.md and mst.md, "The label's
# weight"): at ε = 0.5 on Adult 3 aim releases in 10 linked the label to one column and predicted
# the majority class; mst's tree held 3 of the label's pairs and misclassified 0.195 at ε = 1.
LABEL_WEIGHT = 2.0


class DomainParams(TableParams):
    """The parameters of a synthesizer on the declared discrete domains (mst, aim, privbayes):
    epsilon, columns, bounds, categories from TableParams; the numeric columns' ``bins``; the
    synthetic table's ``rows``."""

    bins: int | dict[str, int | list[float]] = Field(
        32, description=f"number of bins of a numeric column over its declared bounds "
        f"(2-{MAX_BINS}): equal-width for a real-valued column; an integer column with at most that "
        "many values gets one level per integer, else its lower bound alone in the first bin (a "
        "spike such as capital-gain = 0 survives) and runs of consecutive integers in the others. "
        "One number for every numeric column or column → number, or column → the bin edges "
        "themselves, from the lower to the upper declared bound",
        json_schema_extra=schema_bounds(types_=("integer",), minimum=2, maximum=MAX_BINS))
    rows: int | None = Field(None, ge=1, le=MAX_ROWS, description="rows of the synthetic table; "
                             "default the number of input records (public: neighbours replace one "
                             "record)")

    @field_validator("bins")
    @classmethod
    def _bins(cls, v):
        # a per-column map names the column at fault
        for name, b in (v.items() if isinstance(v, dict) else [(None, v)]):
            where = "bins" if name is None else f"bins of {name!r}"
            if not 2 <= (len(b) - 1 if isinstance(b, list) else b) <= MAX_BINS:
                raise ValueError(f"{where} must lie in [2, {MAX_BINS}] (edges: 3 to {MAX_BINS + 1} numbers)")
            if isinstance(b, list) and any(x >= y for x, y in itertools.pairwise(b)):
                raise ValueError(f"{where}: its edges must increase strictly")
        return v

    def bins_of(self, name: str) -> int | list[float]:
        if isinstance(self.bins, dict):
            return self.bins.get(name, 32)
        return self.bins


class SynthParams(DomainParams):
    """Parameters of mst and aim (epsilon, columns, bounds, categories, bins, rows from
    DomainParams)."""

    delta: float = Field(1e-9, gt=0.0, le=MAX_DELTA, description="δ of the (ε, δ) guarantee")
    rows: int | None = Field(None, ge=1, le=MAX_ROWS, description="rows of the synthetic table; "
                             "default the number of input records (replace_one) or, under add_remove, "
                             "the total estimated from the noisy measurements (rounded, at least 1, at "
                             f"most {MAX_ROWS:,})")
    neighbouring: Literal["replace_one", "add_remove"] = Field(
        "replace_one", description="the neighbouring relation ε is stated under: 'replace_one' "
        "(Veil's convention: one record's values changed, n public) or 'add_remove' (one record "
        "added or removed, as in the MST/AIM papers and OpenDP: marginal sensitivity 1, n not "
        "public). An add_remove job is debited the replace-one ε its run also satisfies (at ε = 1 "
        "and the defaults ≈ 1.6ε for mst, ≈ 1.5ε for aim), and its guarantee states both")
    iterations: int = Field(2000, ge=50, le=20_000, description="mirror-descent iterations of the "
                            "final graphical-model fit")
    max_cells: int = Field(100_000, ge=4, le=1_000_000, description="a marginal over more cells "
                           "(on the declared domains) is never measured")
    label_weight: float = Field(
        LABEL_WEIGHT, ge=1.0, le=100.0, description="the selection score of a marginal that holds a "
        "column whose role is label is multiplied by this (aim: its candidates; mst: the tree's "
        "edges), so the release keeps what predicts the label; 1: the papers' scores, every pair alike")
    one_way_weights: Literal["uniform", "levels"] = Field(
        "levels", description="split of the 1-way share among the columns: 'levels' (ρ_c ∝ "
        "levels^(2/3), the split with the least expected L1 noise) or 'uniform' (the paper's)")


def one_way_facts(share: float | None, weights: str) -> dict[str, Any]:
    """The 1-way budget as the release's metadata states it."""
    return {"share": share, "weights": weights,
            "rule": "ρ_c ∝ levels^(2/3)" if weights == "levels" else "equal"}


def one_way_rhos(columns: list[Column], rho: float, weights: str) -> list[float]:
    """ρ of each column's 1-way measurement, summing to ``rho``. "uniform": equal shares;
    "levels": ρ_c ∝ k_c^(2/3) (k_c the declared levels), the split that minimizes the expected
    total L1 noise Σ_c k_c·σ_c (σ_c = 1/√ρ_c) for a fixed total — the sum of the columns' TVDs
    before post-processing. Depends on the declared schema only."""
    w = np.ones(len(columns)) if weights == "uniform" else np.array([c.size ** (2.0 / 3.0) for c in columns])
    return [float(rho * x / w.sum()) for x in w]


def zcdp_budget(method: str, params: SynthParams, measurements: int,
                fewer: str) -> tuple[float, float, float]:
    """(ρ, ε slack, δ tails) for the job's (ε, δ) and measurements, or the MethodInputError
    naming the parameter and the range that works (check and run both call it)."""
    from app.privacy.dp_release.zcdp import check_budget

    return check_budget(method, params.epsilon, params.delta, measurements, max_delta=MAX_DELTA,
                        max_epsilon=MAX_EPSILON, fewer=fewer)


def priced_epsilon(method: str, params: SynthParams, measurements: int, measure_share: float,
                   fewer: str) -> float:
    """ε debited at acceptance (δ is reported, not budgeted): the job's ε under replace-one;
    under add/remove the replace-one ε' the run also satisfies at the job's δ — the ρ of its
    plan with the Gaussian measurements' part (at most ``measure_share`` of ρ, fixed by the
    schema and the params) doubled and the selections' part (the rest) quadrupled, plus 10⁻⁹
    relative for the σ/ε₀ roundings (``zcdp.replace_one_rho``)."""
    from app.privacy.dp_release.zcdp import replace_one_epsilon

    if params.neighbouring == "replace_one":
        return params.epsilon
    rho = zcdp_budget(method, params, measurements, fewer)[0]
    bound = replaced_rho_bound(rho, measure_share)
    try:
        return replace_one_epsilon(bound, params.delta, measurements)
    except ValueError:
        raise MethodInputError(f"epsilon {params.epsilon:g} under add_remove is more than ε = 10⁴ "
                               "under replace-one, which the budget counts: lower epsilon") from None


def replaced_rho_bound(rho: float, measure_share: float) -> float:
    """The replace-one ρ of an add/remove run of ρ spending at most ``measure_share`` of it on
    measurements, the rest (at most) on selections."""
    from app.privacy.dp_release.zcdp import replace_one_rho

    return replace_one_rho(measure_share * rho, (1.0 - measure_share) * rho) * (1.0 + 1e-9)


def estimated_total(totals: list[tuple[float, float]]) -> float:
    """n̂ under add/remove (post-processing): the inverse-variance-weighted mean of the columns'
    noisy 1-way totals, given as (Σ of a column's noisy counts, its variance k·σ²), at least 1."""
    weights = [1.0 / var for _, var in totals]
    return max(1.0, sum(t * w for (t, _), w in zip(totals, weights)) / sum(weights))


def synthetic_rows(params: SynthParams, total: float) -> int:
    """The synthetic table's size: ``rows`` when given; else n (replace-one: public) or the
    estimated total rounded, in [1, MAX_ROWS] (add/remove)."""
    if params.rows:
        return params.rows
    if params.neighbouring == "replace_one":
        return int(total)
    return int(min(MAX_ROWS, max(1, round(total))))
