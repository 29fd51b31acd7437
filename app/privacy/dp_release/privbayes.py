"""PrivBayes (Zhang, Cormode, Procopiuc, Srivastava & Xiao, SIGMOD 2014; TODS 42(4), 2017):
a pure ε-DP synthetic table (δ = 0) from a Bayesian network. Neighbours replace one record
(n public), or with ``neighbouring: add_remove`` one record is added or removed (n private:
the end of this docstring says what changes).

  domains     the declared schema's, as mst and aim build them (marginal_domains.build_columns):
              categories, ``bins`` bins of a numeric column, a missing level in every column
  structure   β·ε (β = ``structure_share``, the paper's 0.3). The paper's greedy loop
              (GreedyBayes): the first attribute is drawn uniformly at random (no data read);
              each of the d − 1 rounds picks one (X, Π) — X not yet in the network V, Π ⊆ V
              with |Π| ≤ k (``degree``) — with the exponential mechanism at β·ε/(d − 1),
              scored by R (below). Candidates: for each X the maximal θ-useful parent sets
              (the paper's rule for attributes of any domain): |dom(X)|·|dom(Π)| ≤ τ with
              τ = n·(1 − β)ε / (2dθ), i.e. the Laplace scale 2d/((1 − β)ε) of the counts at
              most 1/θ of the average cell count n/|dom(X, Π)|; the empty set when no parent
              fits. τ depends on n (public), ε and the schema only. When no two columns'
              marginal fits τ no column can get a parent, whatever the data: then no ε is
              spent here (the order is drawn uniformly), all of it measures the d columns' own
              counts, and a warning says the synthetic columns are independent.
  conditionals (1 − β)·ε. The attribute sets {X_i} ∪ Π_i of the network, less those inside
              a later one (the paper measures the (k+1)-way marginal once for its first k + 1
              attributes: this is that rule for parent sets of any size), m ≤ d marginals, each
              with the discrete Laplace (noise.laplace_mechanism) at (1 − β)ε/m: one record
              replaced moves one cell down 1 and one up 1 (L1 sensitivity 2, 2 cells), so the
              scale is ≈ 2m/((1 − β)ε) counts. Counts are integers (noise's integer option, as
              the count of records under add/remove): on a grid γ ≤ 1 they are not rounded, and
              the grid stays coarse enough at a large ε for counts up to MAX_RECORDS (the
              rounded path's fine grid held a cell's count below 2^52·γ: ~10⁶ records at ε = 100). Each noisy marginal becomes the nearest table
              of non-negative counts summing to n (``consistency`` "simplex"; "clip", the
              paper's, sets negative counts to 0, which leaves a sparse table's empty cells
              about half the noise scale each); every conditional Pr[X_i | Π_i] is read from
              its marginal or from the later marginal holding it, normalized (a parent
              configuration with no mass takes X_i's distribution from the same marginal;
              uniform if that has none) — consistent conditionals, post-processing.
  sample      ancestral sampling in the network's order, ``rows`` records (default n), from
              the job's random source; levels decoded as mst decodes them (post-processing).

The score R(X, Π) = ½‖P[X, Π] − P[X]·P[Π]‖₁ (TODS 2017, §4: the score the paper proposes
for general domains, sensitivity 3/n + 2/n² under replacing one record). It is computed
exactly in integers, as S = 2n²R = Σ_{x,π} |n·c(x, π) − c(x)·c(π)| (int64: every term and
the sum are at most 2n² < 2^63 for n < 2^31). Replacing one record changes c(x, π) by e
(−1 and +1 in at most two cells), c(x) by a and c(π) by b (the same), so

    Σ |ΔS terms| ≤ n·Σ|e| + Σ_x|a(x)|·Σ_π c(π) + Σ_x c(x)·Σ_π|b(π)| + Σ|a|·Σ|b|
                 ≤ 2n + 2n + 2n + 4 = 6n + 4,

which is the paper's 3/n + 2/n² for R = S/2n² (tests/privacy/test_privbayes.py checks it on
random neighbouring tables). The exponential mechanism P(X, Π) ∝ exp(η·S) with
η = ε_round / (2·(6n + 4)) is ε_round-DP, sampled exactly (zcdp.ExactSampler.exponential:
rational scores, CSPRNG bits, no floating-point argmax). DataSynthesizer's PrivBayes adds
numpy float Laplace noise (open to Mironov's floating-point attack) and scores by mutual
information; here every noisy count is a discrete Laplace draw on a power-of-two grid.

Add/remove (``neighbouring: add_remove``). n is no longer public, so:
  n           measured first: n + discrete Laplace at ε_n = ε/20 (sensitivity 1); n̂ =
              max(1, that) sets τ, the simplex's total and the default size (post-processing).
              The rest, ε' = 19ε/20, is split β·ε' / (1 − β)·ε' as above.
  score       S/n = T = Σ_{x,π} |c(x, π) − c(x)·c(π)/n| = 2n·R, whose add/remove sensitivity does not
              depend on n. Adding a record at (x₀, π₀) to a table of n records (p = P[X], q =
              P[Π] before) moves the joint by e_{x₀π₀} and the product table n·p⊗q by
              e_{x₀π₀} − n/(n + 1)·a⊗b, a = e_{x₀} − p, b = e_{π₀} − q (expand (n + 1)·p'⊗q'
              with p' = p + a/(n + 1)), so c − n·p⊗q moves by exactly n/(n + 1)·a⊗b, whose L1
              norm is n/(n + 1)·‖a‖₁·‖b‖₁ = n/(n + 1)·2(1 − p(x₀))·2(1 − q(π₀)) < 4. Removing is
              the same pair read backwards. So |ΔT| < 4 (tight as the domains grow: an
              independent uniform table), and the choice is ∝ exp(ε_round·T / 8), exact rationals.
  marginals   one record added or removed moves one cell by 1: L1 sensitivity 1 on 1 cell
              (scale ≈ m/((1 − β)ε')), and τ = n̂·(1 − β)ε' / (dθ) keeps θ times that scale.
  ledger      Veil's budget counts replace-one ε. The count of records is constant under a
              replacement: 0. A structure round loses at most 2·ε_round against a replacement
              (a removal and an addition; by T's replace-one sensitivity 6 + 4/n it is
              (1.5 + 1/n)·ε_round ≤ 2·ε_round for n ≥ 2, not stated: n is private). A marginal's
              discrete Laplace loses exactly twice its add/remove loss (the shift 2/γ steps is
              twice 1/γ — 2/γ + 2 twice 1/γ + 1 on a grid γ > 1 — and the sampler's slack is
              linear in the shift and the cells). The job is
              priced at 2ε' = 1.9ε, never below the replace-one ε delivered (checked at release).
"""

from __future__ import annotations

import itertools
import math
import time
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Literal

import numpy as np
from pydantic import Field

from app.privacy.arrays import project_to_simplex
from app.privacy.context import RunContext
from app.privacy.data import ColumnInfo, MethodInput, SourceRelease
from app.privacy.dp_release.common import require_rows
from app.privacy.dp_release.marginal_domains import Column, build_columns, decode_frame, encode_frame, marginal
from app.privacy.dp_release.marginals import MAX_ROWS, DomainParams
from app.privacy.dp_release.privbayes_release import release
from app.privacy.dp_release.zcdp import ExactSampler
from app.privacy.noise import calibrate_laplace, laplace_mechanism
from app.privacy.registry import MethodInputError, MethodKind, MethodSpec, register
from app.privacy.results import ReleaseResult
from app.privacy.rng import SecureRandom

MAX_CANDIDATES = 50_000  # (attribute, parent set) pairs the structure may score, d·Σ_{j≤k} C(d−1, j)
MAX_RECORDS = 2**31 - 1  # S ≤ 2n² must fit in int64
MARGINAL_L1 = 2.0  # replace one record: one cell −1, one cell +1
MARGINAL_CELLS = 2
# (L1 sensitivity, cells) of a marginal under each relation: add/remove moves one cell by 1
MARGINAL_MOVE = {"replace_one": (MARGINAL_L1, MARGINAL_CELLS), "add_remove": (1.0, 1)}
COUNT_SHARE = Fraction(1, 20)  # add/remove: the share of ε measuring n, which is not public there
T_SENSITIVITY = 4  # of T = S/n under add/remove: n/(n + 1)·‖a‖₁·‖b‖₁ < 4 (module docstring)
MISSING_FALSE_RELEASE = 1e-6  # the chance that noise alone releases a missing level a column lacks
SAFETY = 1e-12  # ε shares nudged down so float rounding never sums above ε


class PrivBayesParams(DomainParams):
    degree: int = Field(2, ge=1, le=4, description="k: the most parents an attribute may get (the "
                        "θ-useful rule may give it fewer: see theta)")
    structure_share: float = Field(0.3, ge=0.05, le=0.95, description="β: the share of ε spent "
                                   "choosing the network (the paper's 0.3); the rest measures its "
                                   "conditional distributions")
    theta: float = Field(4.0, ge=0.0, le=1000.0, description="θ-usefulness (the paper's 4): a "
                         "parent set Π of X is a candidate only if the marginal of X and Π has at "
                         "most n·(1 − β)ε/(2dθ) cells (its average count at least θ times the "
                         "noise scale); 0: every parent set of up to `degree` columns")
    consistency: Literal["simplex", "clip"] = Field(
        "simplex", description="how a noisy marginal becomes a distribution (post-processing): "
        "'simplex', the nearest table of non-negative counts summing to n (n is public), which "
        "keeps a sparse table's empty cells near 0; 'clip', the paper's, negative counts set to 0 "
        "(each empty cell then keeps about half the noise scale: 10 % spurious mass on Adult at ε = 50)")
    rows: int | None = Field(None, ge=1, le=MAX_ROWS, description="rows of the synthetic table; "
                             "default the number of input records (replace_one: public) or, under "
                             "add_remove, the noisy count of records (rounded, at least 1, at most "
                             f"{MAX_ROWS:,})")
    neighbouring: Literal["replace_one", "add_remove"] = Field(
        "replace_one", description="the neighbouring relation ε is stated under: 'replace_one' "
        "(Veil's convention: one record's values changed, n public) or 'add_remove' (one record "
        "added or removed, as DataSynthesizer's marginal noise assumes: marginal sensitivity 1, n "
        "not public — ε/20 measures it). An add_remove job is debited the replace-one ε its run "
        "also satisfies (at most 2·19ε/20 = 1.9ε), and its guarantee states both")

    @property
    def add_remove(self) -> bool:
        return self.neighbouring == "add_remove"


# ----------------------------------------------------------------------------- score
def r_score(x: np.ndarray, x_size: int, parents: np.ndarray, parent_size: int, n: int) -> int:
    """S = 2n²·R(X, Π) = Σ_{x,π} |n·c(x, π) − c(x)·c(π)|, exactly (``parents``: the flat index
    of each record's parent configuration; 0 for every record when Π is empty)."""
    joint = np.bincount(x * parent_size + parents, minlength=x_size * parent_size)
    joint = joint.reshape(x_size, parent_size).astype(np.int64)
    outer = np.outer(joint.sum(axis=1), joint.sum(axis=0))
    return int(np.abs(n * joint - outer).sum())


def score_sensitivity(n: int) -> int:
    """Of S under replacing one record (module docstring): 6n + 4, i.e. 3/n + 2/n² for R."""
    return 6 * n + 4


def parent_index(codes: dict[str, np.ndarray], parents: tuple[str, ...], sizes: dict[str, int],
                 n: int) -> np.ndarray:
    if not parents:
        return np.zeros(n, dtype=np.int64)
    return np.ravel_multi_index(tuple(codes[p] for p in parents), tuple(sizes[p] for p in parents))


# ------------------------------------------------------------------------- structure
def useful_cells(n: float, epsilon: float, share: float, d: int, theta: float,
                 sensitivity: float = MARGINAL_L1) -> float:
    """τ: the most cells of a θ-useful marginal (∞ when θ = 0): n·(1 − β)ε/(Δ·d·θ), the noise
    scale Δ·d/((1 − β)ε) of a marginal's counts (L1 sensitivity Δ) at most 1/θ of the average
    count n/τ. ``n``: the public n, or n̂ under add/remove; ``epsilon`` what the network and
    its marginals share."""
    if theta == 0:
        return math.inf
    return n * (1.0 - share) * epsilon / (sensitivity * d * theta)


def candidate_count(d: int, degree: int) -> int:
    """The (attribute, parent set) pairs the structure could score, over every round:
    d·Σ_{j ≤ k} C(d − 1, j) (schema-determined)."""
    return d * sum(math.comb(d - 1, j) for j in range(min(degree, d - 1) + 1))


def fitting_degree(d: int, ceiling: int) -> int:
    """The largest degree ≤ ``ceiling`` whose candidate count on d columns is within the limit
    (at least 1: degree 1 scores d² pairs) — what the DP experiment runs on CoIL's 86 columns."""
    return max([1] + [k for k in range(1, ceiling + 1) if candidate_count(d, k) <= MAX_CANDIDATES])


def parent_sets(x: str, chosen: list[str], sizes: dict[str, int], degree: int,
                tau: float) -> list[tuple[str, ...]]:
    """X's candidate parent sets among the attributes already in the network: the maximal
    sets of at most ``degree`` of them whose marginal with X has at most τ cells (a set is
    maximal when it holds ``degree`` columns or no further column fits: the domains grow with
    every column added, so a set none of whose one-column extensions fits has no larger
    superset that fits); the empty set when no column fits."""
    out = []
    top = min(degree, len(chosen))
    for j in range(top, -1, -1):
        for combo in itertools.combinations(chosen, j):
            cells = sizes[x] * math.prod(sizes[p] for p in combo)
            if cells > tau and j > 0:
                continue
            if j < top and any(cells * sizes[v] <= tau for v in chosen if v not in combo):
                continue
            out.append(combo)
    return out


def greedy_network(names: list[str], codes: dict[str, np.ndarray], sizes: dict[str, int], n: int,
                   degree: int, tau: float, epsilon_round: Fraction, rng: SecureRandom,
                   add_remove: bool = False) -> tuple[list[tuple[str, tuple[str, ...]]], list[dict[str, Any]]]:
    """The paper's GreedyBayes: the network as (attribute, parents) in order, and each round's
    record (candidates, choice, ε). The first attribute is uniform (no data read); each later
    one and its parents come from the exponential mechanism at ``epsilon_round`` over S
    (replace-one, sensitivity 6n + 4) or T = S/n (add/remove, sensitivity 4: n is private, and
    T's sensitivity does not involve it); at 0 (no parent set can be non-empty:
    ``independent_columns``) uniformly, no score computed."""
    sampler = ExactSampler(rng)
    first = names[sampler.uniform(len(names))]
    network: list[tuple[str, tuple[str, ...]]] = [(first, ())]
    chosen = [first]
    eta = epsilon_round / (2 * (T_SENSITIVITY if add_remove else score_sensitivity(n)))
    cache: dict[tuple[str, tuple[str, ...]], int] = {}
    rounds: list[dict[str, Any]] = []
    for r in range(len(names) - 1):
        candidates = [(x, ps) for x in names if x not in chosen
                      for ps in parent_sets(x, chosen, sizes, degree, tau)]
        scores = []
        for x, ps in candidates:
            if epsilon_round == 0:
                scores.append(Fraction(0))
                continue
            key = (x, tuple(sorted(ps)))
            if key not in cache:
                cache[key] = r_score(codes[x], sizes[x], parent_index(codes, ps, sizes, n),
                                     math.prod(sizes[p] for p in ps), n)
            scores.append(Fraction(cache[key], n) if add_remove else Fraction(cache[key]))
        x, ps = candidates[sampler.exponential(scores, eta)]
        network.append((x, ps))
        chosen.append(x)
        rounds.append({"round": r + 1, "candidates": len(candidates), "attribute": x,
                       "parents": list(ps), "epsilon": float(epsilon_round)})
    return network, rounds


def smallest_pair(sizes: dict[str, int]) -> int | None:
    """The fewest cells of a marginal of two columns (None with one column)."""
    ordered = sorted(sizes.values())
    return ordered[0] * ordered[1] if len(ordered) > 1 else None


def independent_columns(sizes: dict[str, int], tau: float) -> bool:
    """Whether no column can get a parent: no two columns' marginal fits τ (a larger parent set
    has more cells still). Decided by n, ε, θ and the domains — never by the data — so no ε
    is spent on a structure that can only be empty."""
    pair = smallest_pair(sizes)
    return pair is not None and pair > tau


# ----------------------------------------------------------------------- conditionals
def measured_sets(network: list[tuple[str, tuple[str, ...]]]) -> tuple[list[int], list[int]]:
    """(the network positions whose attribute set {X_i} ∪ Π_i is measured, and for every
    position the measured one its conditional is read from). A set inside a later one is not
    measured (an earlier set cannot hold a later one: it lacks the later attribute); it is
    read from the first later measured set that holds it."""
    sets = [frozenset((x, *ps)) for x, ps in network]
    measured = [i for i, s in enumerate(sets) if not any(s < t for t in sets[i + 1:])]
    source = [next(j for j in measured if j >= i and sets[i] <= sets[j]) for i in range(len(sets))]
    return measured, source


def laplace_sum_threshold(scale: float, cells: int, p: float = MISSING_FALSE_RELEASE) -> float:
    """The smallest x whose Chernoff bound on P(Σ of ``cells`` Laplace(``scale``) ≥ x) is ≤ p.
    Laplace's moment generating function is 1/(1 − b²t²), so the bound is exp(−u·y − c·ln(1 − u²))
    with y = x/b, u = bt ∈ (0, 1), least at u = (√(c² + y²) − c)/y; y by bisection (the bound
    falls as y grows). Unlike a multiple of the standard deviation b·√(2c), it holds the chance
    for a few cells, where the tails are Laplace's (5σ of one cell: ½·e^(−5√2) ≈ 4·10⁻⁴), and
    tends to √(2 ln(1/p)) standard deviations (5.3 at 10⁻⁶) for many. One cell: the exact
    tail ½·e^(−y), y = ln(1/(2p)) (13.1 at 10⁻⁶; the bound would say 17.0)."""
    if cells == 1:
        return scale * math.log(0.5 / p)
    target = math.log(p)

    def log_bound(y: float) -> float:
        u = (math.sqrt(cells * cells + y * y) - cells) / y
        return -u * y - cells * math.log1p(-u * u)

    lo, hi = 0.0, 1.0
    while log_bound(hi) > target:
        lo, hi = hi, 2.0 * hi
    for _ in range(100):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if log_bound(mid) > target else (lo, mid)
    return scale * hi


def missing_released(measured: tuple[tuple[str, ...], np.ndarray, float], column: Column) -> bool:
    """Whether the column's missing level is released: its noisy count in the marginal the
    column's conditional is read from (the sum over its slice of c cells, each with Laplace
    noise of scale b) is above what noise alone reaches with chance 10⁻⁶
    (:func:`laplace_sum_threshold`; mst's rule, 5 standard deviations of its Gaussian counts,
    is about 3·10⁻⁷). Otherwise no synthetic record is missing there — a column without missing
    values would else get some from the noise alone (post-processing)."""
    axes, table, scale = measured
    axis = axes.index(column.name)
    cells = table.size // table.shape[axis]
    return bool(np.take(table, column.missing_level, axis=axis).sum() >= laplace_sum_threshold(scale, cells))


def nonnegative(table: np.ndarray, axes: tuple[str, ...], columns: list[Column], missing: dict[str, bool],
                n: int, consistency: str) -> np.ndarray:
    """A noisy marginal as non-negative counts: the cells of a missing level not released are 0,
    the others projected onto the tables of n records ("simplex") or clipped at 0 ("clip")."""
    allowed = np.ones(table.shape, dtype=bool)
    for column in columns:
        if column.name in axes and not missing[column.name]:
            index = [slice(None)] * table.ndim
            index[axes.index(column.name)] = column.missing_level
            allowed[tuple(index)] = False
    out = np.zeros(table.shape)
    out[allowed] = project_to_simplex(table[allowed], n) if consistency == "simplex" else np.clip(table[allowed], 0.0, None)
    return out


def conditional(table: np.ndarray, axes: tuple[str, ...], x: str, parents: tuple[str, ...]) -> np.ndarray:
    """P[x | parents] as a (parent configurations × levels of x) array from a non-negative noisy
    marginal over ``axes`` (C order): summed down to (parents..., x) and normalized per
    configuration; a configuration with no mass takes x's distribution in the same table,
    uniform if that has none."""
    keep = (*parents, x)
    summed = table.sum(axis=tuple(i for i, a in enumerate(axes) if a not in keep))
    rest = [a for a in axes if a in keep]
    ordered = np.transpose(summed, [rest.index(a) for a in keep])
    rows = ordered.reshape(-1, ordered.shape[-1])
    fallback = rows.sum(axis=0)
    fallback = fallback / fallback.sum() if fallback.sum() > 0 else np.full(len(fallback), 1.0 / len(fallback))
    mass = rows.sum(axis=1, keepdims=True)
    return np.where(mass > 0, rows / np.where(mass > 0, mass, 1.0), fallback)


def sample_network(network: list[tuple[str, tuple[str, ...]]], conditionals: dict[str, np.ndarray],
                   sizes: dict[str, int], rows: int, rng: SecureRandom) -> dict[str, np.ndarray]:
    """Ancestral sampling: each attribute in the network's order from its conditional given
    its parents' sampled levels, by inverse CDF on the job's random source."""
    out: dict[str, np.ndarray] = {}
    for x, ps in network:
        cdf = np.cumsum(conditionals[x], axis=1)
        cdf[:, -1] = 1.0
        config = parent_index(out, ps, sizes, rows)
        u = rng.random(rows)
        levels = np.empty(rows, dtype=np.int64)
        chunk = max(1, (1 << 22) // sizes[x])
        for start in range(0, rows, chunk):
            stop = min(rows, start + chunk)
            levels[start:stop] = (cdf[config[start:stop]] <= u[start:stop, None]).sum(axis=1)
        out[x] = np.minimum(levels, sizes[x] - 1)
    return out


# ------------------------------------------------------------------------------- run
@dataclass(frozen=True)
class Budget:
    """ε's parts (sequential composition): the count of records (add/remove only: n is public
    under replace-one), the structure and one round of it (exact), and what the marginals share."""

    count: float
    structure: Fraction
    per_round: Fraction
    conditionals: float
    shared: Fraction  # the network's and its marginals': ε, or ε' = ε − ε/20 under add/remove


def _budget(params: PrivBayesParams, d: int, independent: bool = False) -> Budget:
    """No structure without a second column, nor when no column can get a parent."""
    eps = Fraction(params.epsilon)
    count = eps * COUNT_SHARE if params.add_remove else Fraction(0)
    shared = eps - count
    structure = shared * Fraction(params.structure_share) if d > 1 and not independent else Fraction(0)
    per_round = structure / (d - 1) if d > 1 else Fraction(0)
    return Budget(float(count) * (1.0 - SAFETY), structure, per_round,
                  float(shared - structure) * (1.0 - SAFETY), shared)


def _calibration_problem(params: PrivBayesParams, d: int) -> str | None:
    budget = _budget(params, d)
    try:
        calibrate_laplace(*MARGINAL_MOVE[params.neighbouring], budget.conditionals / d * (1.0 - SAFETY), True)
        if params.add_remove:
            calibrate_laplace(1.0, 1, budget.count, True)
    except ValueError:
        return (f"epsilon {params.epsilon:g} leaves too little for {d} noisy marginals"
                + (" and the noisy count of records" if params.add_remove else "")
                + ": the discrete Laplace cannot be calibrated; raise epsilon or release fewer columns")
    return None


def _check(params: PrivBayesParams, columns: list[ColumnInfo], source: SourceRelease | None) -> None:
    d = len(build_columns(params, columns))
    count = candidate_count(d, params.degree)
    if count > MAX_CANDIDATES:
        raise MethodInputError(
            f"degree {params.degree} with {d} columns gives up to {count:,} (attribute, parent set) "
            f"candidates to score (limit {MAX_CANDIDATES:,}): lower degree or release fewer columns")
    if (problem := _calibration_problem(params, d)) is not None:
        raise MethodInputError(problem)


def _check_rows(params: PrivBayesParams, rows: int, columns: list[ColumnInfo] | None = None) -> None:
    if rows < 2:
        raise MethodInputError("the table needs at least 2 records")
    if rows > MAX_RECORDS:
        raise MethodInputError(f"privbayes scores at most {MAX_RECORDS:,} records exactly; the table "
                               f"has {rows:,}")


def _epsilon(params: PrivBayesParams, columns: list[ColumnInfo]) -> float:
    """The replace-one ε the budget counts: the job's ε, all of it, under replace-one; under
    add/remove :func:`replace_one_price`."""
    return replace_one_price(params) if params.add_remove else params.epsilon


def replace_one_price(params: PrivBayesParams) -> float:
    """An add/remove run's replace-one ε, bounded from the params alone (n is not known here):
    2ε' (ε' = ε − ε/20). Against a replacement the count of records loses nothing (n does not
    change), each round of the network at most twice its ε (a removal then an addition), each
    marginal's discrete Laplace exactly twice its add/remove loss (module docstring)."""
    return float(2 * Fraction(params.epsilon) * (1 - COUNT_SHARE))


def run_privbayes(data: MethodInput, params: PrivBayesParams, ctx: RunContext) -> ReleaseResult:
    started = time.perf_counter()
    frame = require_rows(data)
    columns = build_columns(params, data.columns)
    _check(params, data.columns, None)
    n = len(frame)
    _check_rows(params, n)
    names = [c.name for c in columns]
    sizes = {c.name: c.size for c in columns}
    d = len(columns)
    codes = encode_frame(columns, frame)
    l1, cells = MARGINAL_MOVE[params.neighbouring]
    count, n_public = None, float(n)
    if params.add_remove:  # n is private: measured first, its noisy value public from here on
        noisy_n, count = laplace_mechanism(np.array([float(n)]), 1.0, 1, _budget(params, d).count, ctx.rng,
                                             integer=True)
        n_public = max(1.0, float(noisy_n[0]))
    tau = useful_cells(n_public, float(_budget(params, d).shared), params.structure_share, d, params.theta, l1)
    independent = independent_columns(sizes, tau)
    budget = _budget(params, d, independent)

    ctx.progress(0.05, "choosing the network")
    network, rounds = greedy_network(names, codes, sizes, n, params.degree, tau, budget.per_round, ctx.rng,
                                     params.add_remove)
    ctx.check_cancelled()

    ctx.progress(0.6, "noisy marginals")
    measured, source = measured_sets(network)
    share = budget.conditionals / len(measured) * (1.0 - SAFETY)
    noisy_tables: dict[int, tuple[tuple[str, ...], np.ndarray, float]] = {}
    measurements = []
    for i in measured:
        x, ps = network[i]
        axes = tuple(a for a in names if a == x or a in ps)  # column order
        shape = tuple(sizes[a] for a in axes)
        noisy, record = laplace_mechanism(marginal(codes, axes, shape), l1, cells, share, ctx.rng, integer=True)
        noisy_tables[i] = (axes, noisy.reshape(shape), record.scale)
        measurements.append({"clique": list(axes), "cells": int(math.prod(shape)),
                             "laplace_scale": record.scale, "epsilon": share,
                             "epsilon_delivered": record.epsilon_delivered, "grid": record.grid,
                             "sampler_slack": record.sampler_slack, "integer_values": record.integer_values,
                             # against a replacement: one cell −1 and another +1
                             **({"epsilon_delivered_replace_one": record.laplace_loss_against(
                                 MARGINAL_L1, MARGINAL_CELLS)}
                                if params.add_remove else {})})
    position = {x: i for i, (x, _) in enumerate(network)}
    missing = {c.name: missing_released(noisy_tables[source[position[c.name]]], c) for c in columns}
    tables = {i: (axes, nonnegative(table, axes, columns, missing, n_public, params.consistency))
              for i, (axes, table, _) in noisy_tables.items()}
    conditionals = {}
    for i, (x, ps) in enumerate(network):
        axes, table = tables[source[i]]
        conditionals[x] = conditional(table, axes, x, ps)

    ctx.progress(0.8, "sampling")
    rows = params.rows or (int(min(MAX_ROWS, round(n_public))) if params.add_remove else n)
    levels = sample_network(network, conditionals, sizes, rows, ctx.rng)
    out = decode_frame(columns, levels, ctx.rng)[names]
    split = {**({"records": count.epsilon_delivered} if count else {}), "structure": float(budget.structure),
             "conditionals": sum(m["epsilon_delivered"] for m in measurements)}
    ctx.progress(1.0, "done")
    return release(params, ctx, columns, out, {
        "n": n, "n_public": n_public, "count": count, "rows": rows, "network": network, "rounds": rounds,
        "tau": tau, "split": split, "measurements": measurements, "source": [network[j][0] for j in source],
        "missing": missing, "delivered": sum(split.values()), "independent": independent,
        "smallest_pair": smallest_pair(sizes), "score_sensitivity": score_sensitivity(n),
        "price": _epsilon(params, data.columns), "seconds": time.perf_counter() - started})


register(MethodSpec(
    name="privbayes",
    family="dp_release",
    kind=MethodKind.release,
    summary="DP synthetic table by PrivBayes: a Bayesian network of degree ≤ k chosen with the "
            "exponential mechanism (R score, exact), its conditional distributions measured with "
            "discrete Laplace noise, records sampled from it. Pure ε-DP (δ = 0). Domains from the "
            "declared bounds and categories.",
    params=PrivBayesParams,
    guarantee="central ε-DP (δ = 0) of the whole table (replace-one neighbours, or add/remove: "
              "neighbouring: add_remove, debited the replace-one ε it also satisfies)",
    paper="Zhang, Cormode, Procopiuc, Srivastava & Xiao, PrivBayes: Private Data Release via "
          "Bayesian Networks, SIGMOD 2014; ACM TODS 42(4), 2017",
    run=run_privbayes,
    epsilon=_epsilon,
    check=_check,
    check_rows=_check_rows,
    docs="docs/methods/privbayes.md",
    slow_params=("degree", "rows"),
))
