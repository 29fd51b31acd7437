"""What the marginal-based synthesizers (mst, aim) share: parameters, the discrete domain of
every column, marginal counts, decoding of synthetic codes, and the bridge to ``mbi``.

Domain (never read from the data): a categorical column's levels are its declared categories
(params, else schema; a boolean column's are False/True); a numeric column is cut into
equal-width bins over its declared bounds — for an integer column one level per integer when
they fit in ``bins``, else its lower bound alone and ``bins`` − 1 runs of ⌊K/(bins−1)⌋ or
⌈K/(bins−1)⌉ consecutive integers (``lower_bound_alone``) — or into the caller's edges. Every column also
gets one level for a missing value (data-independent: a column without missing values
simply measures a count near 0 there). Values are clipped into the bounds.

Decoding (post-processing): a category level is the category; a numeric bin becomes a value
drawn uniformly inside the bin (uniform over its integers for an integer column), from the
job's random source; the missing level is a missing value.

``mbi`` (private-pgm 2.x, McKenna) does the inference and the sampling. It and jax are
imported inside the run (``load_mbi``), never when the registry imports this module.
"""

from __future__ import annotations

import itertools
import math
import os
import sys
import warnings
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import pandas as pd
from pydantic import Field, field_validator

from app.privacy.context import RunContext
from app.privacy.json_types import schema_bounds
from app.privacy.data import ColumnInfo
from app.privacy.dp_release.common import (
    MAX_EPSILON, NEIGHBOURING, NEIGHBOURING_ADD_REMOVE, TableParams, check_references,
)
from app.privacy.dp_release.encoding import ColumnPlan, check_declared, declared_plan, domain_warnings
from app.privacy.dp_release.mbi_sampling import level_dtype
from app.privacy.guarantees import guarantee
from app.privacy.registry import MethodInputError
from app.privacy.results import ReleaseResult
from app.privacy.rng import SecureRandom

MAX_LEVELS = 1024  # levels of one column, missing level included
MAX_COLUMNS = 100
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


# ----------------------------------------------------------------------------- domain
@dataclass
class Column:
    """One column's discrete domain: levels 0..size-2 are values (categories or bins), level
    size-1 is "missing"."""

    plan: ColumnPlan
    bins: int = 0  # numeric: number of bins
    per_integer: bool = False  # numeric integer column with one level per integer
    edges: tuple[float, ...] | None = None  # numeric: explicit bin edges (as bin_edges gives them)
    edges_given: bool = False  # those edges are the caller's (else the lower-bound rule's)

    @property
    def name(self) -> str:
        return self.plan.name

    @property
    def values(self) -> int:
        return len(self.plan.categories) if self.plan.kind == "categorical" else self.bins

    @property
    def size(self) -> int:
        return self.values + 1

    @property
    def missing_level(self) -> int:
        return self.values

    @property
    def _int_range(self) -> tuple[int, int]:
        lo, hi = math.ceil(self.plan.lo), math.floor(self.plan.hi)
        return lo, hi - lo + 1

    def codes(self, series: pd.Series) -> np.ndarray:
        plan = self.plan
        missing = series.isna().to_numpy()
        if plan.kind == "categorical":
            codes, missing = plan.category_codes(series)
        else:
            v = pd.to_numeric(series, errors="coerce").to_numpy(dtype=np.float64)
            if np.any(np.isnan(v) & ~missing):
                raise MethodInputError(f"column {self.name!r} holds non-numeric values")
            v = np.clip(v, plan.lo, plan.hi)
            if self.edges is not None:  # the last bin holds the upper bound itself
                codes = np.searchsorted(np.asarray(self.edges[1:-1]), np.rint(v) if plan.integer else v,
                                        side="right").astype(np.float64)
            elif plan.integer:  # one level per integer (more integers than bins get edges)
                ilo, count = self._int_range
                codes = np.nan_to_num(np.clip(np.rint(v), ilo, ilo + count - 1) - ilo).astype(np.int64)
            else:
                codes = np.floor((v - plan.lo) / (plan.hi - plan.lo) * self.bins)
            codes = np.nan_to_num(np.minimum(codes, self.bins - 1), nan=0).astype(np.int64)
        codes[missing] = self.missing_level
        return codes

    def bin_edges(self) -> list[float]:
        """Numeric: the lower edge of every bin and the upper edge of the last one (for an
        integer column: the first integer of every bin, then the last integer + 1)."""
        if self.edges is not None:
            return list(self.edges)
        if self.plan.integer:  # one level per integer
            ilo, count = self._int_range
            return [ilo + b for b in range(count + 1)]
        width = (self.plan.hi - self.plan.lo) / self.bins
        return [self.plan.lo + b * width for b in range(self.bins)] + [self.plan.hi]

    def decode(self, codes: np.ndarray, rng: SecureRandom) -> Any:
        codes = np.asarray(codes, dtype=np.int64)
        missing = codes == self.missing_level
        plan = self.plan
        if plan.kind == "categorical":
            out = pd.Categorical.from_codes(np.where(missing, -1, codes), categories=list(plan.categories))
            if all(isinstance(c, (bool, np.bool_)) for c in plan.categories):
                return pd.Series(out).astype(object if missing.any() else bool).to_numpy()
            return out
        edges = np.asarray(self.bin_edges(), dtype=np.float64)
        b = np.where(missing, 0, codes)
        if plan.integer:
            first, width = edges[b], edges[b + 1] - edges[b]  # integers first .. first+width-1
            values = first + np.minimum(np.floor(rng.random(len(b)) * width), width - 1)
            if not missing.any():
                return values.astype(np.int64)
        else:
            values = edges[b] + rng.random(len(b)) * (edges[b + 1] - edges[b])
            values = np.clip(values, plan.lo, plan.hi)
        return np.where(missing, np.nan, values)

    def describe(self) -> dict[str, Any]:
        out = self.plan.describe()
        out.pop("decoding", None)
        out.update(levels=self.size, missing_level=self.missing_level)
        if self.plan.kind == "numeric":
            out.update(bins=self.bins, one_level_per_integer=self.per_integer,
                       bin_edges=self.bin_edges(), edges_given=self.edges_given,
                       lower_bound_alone=self.edges is not None and not self.edges_given,
                       decoding="uniform inside the bin" + (" (its integers)" if self.plan.integer else ""))
        return out


def build_columns(params: DomainParams, infos: list[ColumnInfo]) -> list[Column]:
    """The released columns' discrete domains, from declared bounds and categories only."""
    chosen = check_references(params, infos)
    if len(chosen) > MAX_COLUMNS:
        given = "'columns' names" if params.columns is not None else "the table has"
        raise MethodInputError(f"{given} {len(chosen)} columns to release; a synthetic table has at "
                               f"most {MAX_COLUMNS}: name the ones you need in 'columns'")
    names = {c.name for c in chosen}
    numeric = {c.name for c in chosen if c.type == "numeric"}
    for name in params.bins if isinstance(params.bins, dict) else {}:
        if name not in names:
            raise MethodInputError(f"bins given for column {name!r}, which is not released")
        if name not in numeric:
            raise MethodInputError(f"bins given for column {name!r}, which is not numeric")
    check_declared(chosen, params.bounds, params.categories)
    out = []
    for info in chosen:
        plan = declared_plan(info, params.bounds, params.categories)
        if plan.kind == "numeric":
            bins = params.bins_of(info.name)
            if isinstance(bins, list):
                col = Column(plan, bins=len(bins) - 1, edges=given_edges(plan, bins), edges_given=True)
            elif plan.integer:
                _, count = Column(plan)._int_range
                if count <= bins:
                    col = Column(plan, bins=count, per_integer=True)
                else:
                    col = Column(plan, bins=bins, edges=lower_bound_alone(plan, bins))
            else:
                col = Column(plan, bins=bins)
        else:
            col = Column(plan)
        if col.size > MAX_LEVELS:  # only a categorical column can: bins are at most MAX_BINS
            raise MethodInputError(
                f"column {info.name!r} has {col.values} categories, {col.size} levels with the missing "
                f"level every column gets (limit {MAX_LEVELS} levels: at most {MAX_LEVELS - 1} categories)")
        out.append(col)
    return out


def label_columns(infos: list[ColumnInfo], released: list[str]) -> frozenset[str]:
    """The released columns whose declared role is label (their marginals weigh
    ``label_weight`` in mst's and aim's selection)."""
    return frozenset(c.name for c in infos if c.role == "label") & set(released)


def lower_bound_alone(plan: ColumnPlan, bins: int) -> tuple[float, ...]:
    """An integer column's default edges when it has more integers than ``bins``: its lower
    bound alone in the first bin, the other integers in ``bins`` − 1 runs of consecutive
    integers (bin_edges' form: each bin's first integer, then the last integer + 1).

    Why: values are decoded uniformly inside their bin, and amounts pile up at their lower
    bound — 92 % of Adult's capital-gain and 95 % of its capital-loss are 0. Equal bins spread
    those zeros over [0, 3125) and [0, 137): the synthetic table had 0.0 % and 0.7 % zeros, and
    99 % of its rows both a gain and a loss, which no real row has (#8 acceptance run). With
    the bound alone they stay 0 (91.5 %, 95.1 %); where the bound holds no spike, one narrow
    bin among 32 costs nothing measurable (AIM on Adult at ε = 1: same misclassification and
    marginal TVDs on the release's bins, TVD on the real data's deciles 0.145 → 0.034)."""
    lo, hi = math.ceil(plan.lo), math.floor(plan.hi)
    rest, runs = hi - lo, bins - 1  # the integers lo + 1 .. hi
    return (float(lo),) + tuple(float(lo + 1 + (b * rest + runs - 1) // runs) for b in range(runs + 1))


def given_edges(plan: ColumnPlan, edges: list[float]) -> tuple[float, ...]:
    """The caller's bin edges of a numeric column, checked against its declared bounds (an integer
    column's: its first and last integer within them); for an integer column in bin_edges' form
    (each bin's first integer, then the last integer + 1)."""
    name, lo, hi = plan.name, plan.lo, plan.hi
    if plan.integer and (lo != math.ceil(lo) or hi != math.floor(hi)):  # bounds [20.5, 60.5]
        lo, hi = float(math.ceil(lo)), float(math.floor(hi))
        if edges[0] != lo or edges[-1] != hi:
            raise MethodInputError(f"bins of column {name!r}: an integer column's edges run from its first "
                                   f"to its last integer within its bounds, from {lo:g} to {hi:g}")
    if edges[0] != lo or edges[-1] != hi:
        raise MethodInputError(f"bins of column {name!r}: the edges must start at its lower bound "
                               f"({lo:g}) and end at its upper bound ({hi:g})")
    if not plan.integer:
        return tuple(float(e) for e in edges)
    if any(e != math.floor(e) for e in edges):
        raise MethodInputError(f"bins of column {name!r}: an integer column's edges are integers")
    return tuple(float(e) for e in edges[:-1]) + (float(hi) + 1.0,)


def candidate_pairs(columns: list[Column], max_cells: int) -> list[tuple[int, int]]:
    """Pairs of columns whose 2-way marginal fits in ``max_cells`` (declared domains only)."""
    return [(i, j) for i, j in itertools.combinations(range(len(columns)), 2)
            if columns[i].size * columns[j].size <= max_cells]


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


def encode_frame(columns: list[Column], frame: pd.DataFrame, compact: bool = False) -> dict[str, np.ndarray]:
    """Every column's level codes (int64). ``compact``: each in the smallest unsigned type that
    holds its levels (one byte up to 256 levels, two up to MAX_LEVELS): Adult's 15 columns at
    4,950,000 rows take 75 MB instead of 594, and mst's and aim's marginals count the same."""
    if len(frame) < 2:
        raise MethodInputError("the table needs at least 2 records")
    if not compact:
        return {c.name: c.codes(frame[c.name]) for c in columns}
    return {c.name: c.codes(frame[c.name]).astype(level_dtype(c.size)) for c in columns}


def marginal(codes: dict[str, np.ndarray], clique: tuple[str, ...], shape: tuple[int, ...]) -> np.ndarray:
    """Counts of the clique's level combinations, flattened in C order. The flat index is
    ravel_multi_index's, summed in place in one array (codes are below their sizes by
    construction): half its time on one-byte codes, which it converts for every call."""
    index = np.zeros(len(codes[clique[0]]), dtype=np.intp)
    for c, k in zip(clique, shape):
        index *= k
        index += codes[c]
    return np.bincount(index, minlength=math.prod(shape)).astype(np.float64)


def decode_frame(columns: list[Column], codes: dict[str, np.ndarray], rng: SecureRandom) -> pd.DataFrame:
    # copy=False: a frame built from a dict copies every column by default (pandas 3), and the
    # decoded columns are the release (~280 MB more at 4,950,000 × 15)
    return pd.DataFrame({c.name: c.decode(codes[c.name], rng) for c in columns}, copy=False)


def output_infos(columns: list[Column]) -> list[ColumnInfo]:
    return [c.plan.output_info() for c in columns]


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


# ------------------------------------------------------------------------------ mbi
XLA_FLAGS = "--xla_backend_optimization_level=0"


def load_mbi():
    """Import jax and mbi for this run: float64 (mbi's estimates stall in float32 on large
    tables) and no persistent compilation cache (mbi compiles many small programs). Their
    advisory warnings are silenced. mbi's message order is replaced by ``pgm``'s, the same rule
    without a set's hash order (a seeded release is then the same in every process).

    When this process has not started jax yet (a job's child process), XLA's backend
    optimizations are turned off: a model's programs then compile in about half the time
    and run ~4× slower, which wins below a few thousand iterations (measured on Adult)."""
    if "jax" not in sys.modules and "xla_backend_optimization_level" not in os.environ.get("XLA_FLAGS", ""):
        os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + " " + XLA_FLAGS).strip()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import jax

        jax.config.update("jax_enable_x64", True)
        jax.config.update("jax_enable_compilation_cache", False)
        import mbi
        from mbi import estimation  # noqa: F401
    from app.privacy.dp_release.pgm import message_passing_order

    mbi.junction_tree.message_passing_order = message_passing_order  # read at each call (and trace)
    return mbi


def free_memory() -> None:
    """Hand back to the OS the pages glibc's allocator keeps after XLA's compilations and the
    sampler's temporary arrays (malloc_trim; nothing without glibc). jax's compiled programs stay
    cached: clearing them too took mst's peak at 4,950,000 rows from 1.75 to 1.43 GiB but made
    every later release in the process compile again — an experiment's repetitions, and the
    suite's mst/aim tests ran in 100 s instead of 55."""
    import ctypes

    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):
        pass


def mirror_descent(mbi):
    """mbi's MirrorDescent whose marginal oracle (HUGIN message passing) is compiled once:
    the estimator calls it outside its compiled loop too (start and end), where it would run
    op by op (seconds of tiny compilations)."""
    import jax

    return mbi.estimation.MirrorDescent(
        marginal_oracle=jax.jit(mbi.marginal_oracles.message_passing_hugin))


# ------------------------------------------------------------------------- metadata
def release(method: str, params: SynthParams, ctx: RunContext, columns: list[Column],
            out: pd.DataFrame, ledger, budget: tuple[float, float, float], facts: dict[str, Any],
            extra: dict[str, Any], plan: tuple[int, float]) -> ReleaseResult:
    """The release of a marginal-based synthesizer: the (ε, δ) delivered by the ledger's ρ,
    every measurement and selection, the columns' domains, and ``extra`` (method-specific).
    ``plan``: (the measurements priced, the share of ρ at most spent measuring), as the
    method's ``epsilon`` priced an add/remove job."""
    from app.privacy.dp_release.zcdp import (
        ACCOUNTANT, ACCOUNTANT_ADD_REMOVE, CONVERSION, delivered, noise_description, replace_one_rho,
    )

    rho, slack, tails = budget
    eps, delta_out = delivered(ledger.spent, params.epsilon, slack, tails)
    measurements = [s for s in ledger.steps if s["kind"] == "measure"]
    selections = [s for s in ledger.steps if s["kind"] == "select"]
    split = {"1-way": sum(s["rho"] for s in measurements if s["stage"] == "1-way"),
             "select": sum(s["rho"] for s in selections),
             "marginals chosen": sum(s["rho"] for s in measurements if s["stage"] != "1-way")}
    add_remove = params.neighbouring == "add_remove"
    accountant = ACCOUNTANT_ADD_REMOVE if add_remove else ACCOUNTANT
    neighbouring = NEIGHBOURING_ADD_REMOVE if add_remove else NEIGHBOURING
    replaced: dict[str, Any] = {}
    if add_remove:
        m, share = plan
        eps_priced = priced_epsilon(method, params, m, share, "")
        rho_replaced = replace_one_rho(split["1-way"] + split["marginals chosen"], split["select"])
        replaced = {"epsilon": eps_priced, "delta": delivered(rho_replaced, eps_priced, slack, tails)[1],
                    "rho": rho_replaced, "rho_priced": replaced_rho_bound(rho, share),
                    "priced": eps_priced,
                    "bound": "a replacement is a removal and an addition: each measurement's ρ × 2 "
                             "(Δ₂ = √2), each selection's × 4 (score sensitivity 2, ε₀ doubled); ε "
                             "priced at submission from the plan's ρ (measurements at most "
                             f"{share:.6g} of it), δ delivered by the ρ actually spent"}
    meta = {
        "method": method, "epsilon": params.epsilon, "delta": params.delta,
        "delta_delivered": delta_out, "rho": rho, "rho_spent": ledger.spent,
        "accountant": accountant, "conversion": CONVERSION, "neighbouring": neighbouring,
        **({"replace_one": replaced} if add_remove else {}),
        "sampler_slack_reserved": {"epsilon": slack, "delta": tails},
        "sampler_slack_realized": {"epsilon": ledger.slack, "delta": ledger.tails},
        "budget_split": split, "noise": noise_description(ctx.rng, params.neighbouring),
        "measurements": measurements, "selections": selections,
        "columns": {c.name: c.describe() for c in columns}, "rows": facts["rows"],
        "model": {"library": f"mbi {mbi_version()}", "known_total": facts["n"],
                  **({"total": "estimated: the inverse-variance-weighted mean of the noisy 1-way "
                      "totals (post-processing; n is not public under add/remove)"} if add_remove else {}),
                  "sampling": "mbi MarkovRandomField.synthetic_data, run by Veil with a column's "
                  "parents in sampling order (randomized rounding along the junction tree, shuffled "
                  "within each parent group)", **extra.pop("model", {})},
        **extra,
    }
    g = guarantee("central_dp", rng=ctx.rng.name, private=ctx.rng.is_private, epsilon=eps,
                  delta=delta_out, protected_columns=list(out.columns),
                  statements=statements(method, eps, delta_out, ctx, neighbouring, replaced),
                  warnings=domain_warnings([c.plan for c in columns]), rho=rho, accountant=accountant,
                  conversion=CONVERSION, neighbouring=neighbouring, rho_split=split,
                  **({"replace_one": {k: replaced[k] for k in ("epsilon", "delta", "rho")}}
                     if add_remove else {}))
    return ReleaseResult(frame=out, columns=output_infos(columns), guarantees=g, metadata={method: meta},
                         metrics={"rows": facts["rows"], "seconds": facts["seconds"],
                                  "measurements": len(measurements), "selections": len(selections)})


def mbi_version() -> str:
    from importlib.metadata import version

    return version("mbi")


def statements(method: str, epsilon: float, delta: float, ctx: RunContext,
               neighbouring: str = NEIGHBOURING, replaced: dict[str, Any] | None = None) -> list[str]:
    from app.privacy.dp_release.common import rng_statements

    return [
        f"(ε, δ)-differential privacy with ε = {epsilon:g}, δ = {delta:.3g} for the whole synthetic "
        f"table: {neighbouring}",
        *([f"under replace-one neighbours (one record's values changed, n public: the relation "
           f"Veil's budget counts) the same release is (ε, δ)-DP with ε = {replaced['epsilon']:.7g}, "
           f"δ = {replaced['delta']:.3g}, a replacement being a removal and an addition (each "
           "measurement's ρ doubled, each selection's quadrupled); Veil's budget counts replace-one "
           f"ε, so the job was priced at ε = {replaced['epsilon']:.7g} (debited from the dataset's "
           "budget unless it ran on a central-DP release, which costs nothing more)"] if replaced else []),
        f"{method} reads the data only through the measurements and selections listed in "
        f"metadata.{method}.measurements / metadata.{method}.selections; each is charged in ρ-zCDP, "
        "the ρ add up to at most the ρ that converts to (ε, δ) (guarantees.accountant, "
        "guarantees.conversion)",
        "measurements are integer counts plus discrete Gaussian noise on a power-of-two grid; "
        "selections are exponential mechanisms on exact rational scores, sampled exactly (no "
        "floating-point argmax)",
        "domains come from the declared bounds and categories (never from the data); values are "
        "clipped into the bounds; every column has a 'missing' level",
        "the graphical model (mbi), the synthetic records it samples and their decoding (uniform "
        "inside a numeric bin) are post-processing; the sampler (mbi's, in Veil) uses a numpy "
        "generator seeded from the job's random source — that randomness protects nobody",
        *rng_statements(ctx),
    ]
