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

The parameters and constants are in privbayes_params.py, the score and the network in
privbayes_network.py, the conditionals and sampling in privbayes_conditionals.py, the metadata
and guarantee in privbayes_release.py; this module holds the budget, the checks, the run and
the registration.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from app.privacy.context import RunContext
from app.privacy.data import ColumnInfo, MethodInput, SourceRelease
from app.privacy.dp_release.common import require_rows
from app.privacy.dp_release.marginal_domains import build_columns, decode_frame, encode_frame, marginal
from app.privacy.dp_release.marginals import MAX_ROWS
from app.privacy.dp_release.privbayes_conditionals import (
    conditional, measured_sets, missing_released, nonnegative, sample_network,
)
from app.privacy.dp_release.privbayes_network import (
    candidate_count, greedy_network, independent_columns, score_sensitivity, smallest_pair, useful_cells,
)
from app.privacy.dp_release.privbayes_params import (
    COUNT_SHARE, MARGINAL_CELLS, MARGINAL_L1, MARGINAL_MOVE, MAX_CANDIDATES, MAX_RECORDS, SAFETY, PrivBayesParams,
)
from app.privacy.dp_release.privbayes_release import release
from app.privacy.noise import calibrate_laplace, laplace_mechanism
from app.privacy.registry import MethodInputError, MethodKind, MethodSpec, register
from app.privacy.results import ReleaseResult


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
