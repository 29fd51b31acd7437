"""AIM (McKenna, Mullins, Sheldon & Miklau 2022): an adaptive, iterative mechanism that keeps
measuring the workload marginal its current model gets most wrong, then samples a synthetic
table from a graphical model fitted to every measurement.

Workload W: every pair of columns whose declared 2-way domain has at most ``max_cells`` cells;
candidates: W and every single column, r weighing w_r = Σ_{s ∈ W} |r ∩ s|. ρ is spent
adaptively, the total never exceeding it (a zCDP filter):

  start     every 1-way marginal, together ``one_way_share``·ρ (default 0.08), column c getting
            ρ_c ∝ k_c^(2/3) (k_c its declared levels; ``one_way_weights``); the paper's start,
            σ = √(T/0.9ρ) for every column (0.9·d/T of ρ), is one_way_share=None with
            one_way_weights="uniform"
  round     a round's ρ_T = (ρ - ρ_1way)/(T - d) (the paper's ρ/T with its start; T = ``rounds``,
            default 16·d): the exponential mechanism (ε₀ = √(0.8ρ_T) at first, ρ = ε₀²/8) picks among the
            candidates whose model would stay within ``max_model_size`` × (ρ used / ρ), by the
            score w_r·(‖x_r - x̂_r‖₁ - √(2/π)·σ·|r|) (sensitivity 2·max w: replace one record;
            max w under add_remove); the pick is measured with σ = √(1/0.9ρ_T) (ρ = 1/σ²;
            add_remove: σ = √(1/1.8ρ_T), ρ = 1/2σ²) and the model refitted; when the refit moved
            the model's answer by less than the noise expected (√(2/π)·σ·|r| in L1), σ /= 2 and
            ε₀ *= 2
  last      when what is left would not pay two more rounds, one round spends all of it
  model     mirror descent on every measurement with the public total n (add_remove: the total
            n̂ estimated from the noisy 1-ways, from the first model on; it also sizes the table)
  sample    mbi's synthetic_data, decoded like mst (uniform inside numeric bins)

The model is fitted by ``pgm.MirrorDescent`` — mbi's estimator in numpy (the tests check it
against mbi), warm-started from round to round — because mbi compiles a new XLA program for
every new set of cliques (tens of seconds for AIM's later models on this machine); the junction
trees and the sampler are mbi's; the round's size filter asks ``pgm.CliqueGraph`` (mbi's
``hypothetical_model_size`` in ~0.3 ms instead of ~60 ms at 86 columns).
"""

from __future__ import annotations

import itertools
import math
import time
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np
from pydantic import Field

from app.privacy.context import RunContext
from app.privacy.data import ColumnInfo, MethodInput, SourceRelease
from app.privacy.dp_release.common import at_least_two_records, require_rows
from app.privacy.dp_release.marginal_domains import (
    Column, build_columns, decode_frame, encode_frame, label_columns, marginal,
)
from app.privacy.dp_release.marginals import (
    SynthParams, estimated_total, one_way_facts, one_way_rhos, priced_epsilon, synthetic_rows, zcdp_budget,
)
from app.privacy.dp_release.mbi_bridge import free_memory, load_mbi
from app.privacy.dp_release.mbi_sampling import synthetic_data
from app.privacy.dp_release.mst_aim_release import release
from app.privacy.dp_release.pgm import (
    Clique, CliqueGraph, Measurement, MirrorDescent,
)
from app.privacy.dp_release.zcdp import (
    L2_SQ, SCORE_SENSITIVITY, ExactSampler, Ledger, em_epsilon, exact_score, l1_error, sigma_for,
)
from app.privacy.registry import MethodKind, MethodInputError, MethodSpec, register
from app.privacy.results import ReleaseResult

MEASURE_SHARE = 0.9  # of each round's ρ; the rest selects
BIAS = math.sqrt(2.0 / math.pi)  # E|N(0, σ²)| / σ
MISSING_SIGMAS = 5.0  # a missing level whose first noisy count is below 5σ gets no mass
NO_MASS = -1e4  # log-potential of such a level: exp underflows to exactly 0
FEWER = "release fewer columns or plan fewer rounds"
ONE_WAY_SHARE = 0.08  # the paper's 0.9·d/T is 0.056; 0.08 measured best on Adult (docs/methods/aim.md)


class AimParams(SynthParams):
    rounds: int | None = Field(None, ge=1, le=2000, description="T, the planned number of rounds "
                               "(sets the first σ and ε₀; at least the number of columns); default "
                               "16 × the number of columns")
    max_model_size: float = Field(2.0, gt=0.0, le=80.0, description="MB of float64 tables the model's "
                                  "junction tree may reach (the limit grows with the budget used)")
    round_iterations: int = Field(100, ge=10, le=5000, description="mirror-descent iterations of "
                                  "the refit after each measurement (warm-started)")
    one_way_share: float | None = Field(ONE_WAY_SHARE, ge=0.01, le=0.95, description="share of ρ spent "
                                        "on the first 1-way marginals (the rounds share the rest); "
                                        "null: the paper's 0.9·d/T, each 1-way costing one round's "
                                        "measurement")


def workload_weights(names: list[str], columns: list[Column], max_cells: int,
                     labels: frozenset[str] = frozenset(), label_weight: float = 1.0) -> dict[Clique, float]:
    """The candidates — every column and every pair of columns whose declared 2-way domain has
    at most ``max_cells`` cells (the workload) — with their weights Σ_{s ∈ W} |r ∩ s|, times
    ``label_weight`` for a candidate that holds one of ``labels``."""
    size = {c.name: c.size for c in columns}
    workload = [cl for cl in itertools.combinations(names, 2) if size[cl[0]] * size[cl[1]] <= max_cells]
    candidates = [(a,) for a in names] + workload
    # Σ_s |r ∩ s| = Σ_{a ∈ r} (workload pairs holding a): linear in the candidates, not quadratic
    holding = dict.fromkeys(names, 0)
    for a, b in workload:
        holding[a] += 1
        holding[b] += 1
    return {r: (float(sum(holding[a] for a in r)) or 1.0) * (label_weight if labels & set(r) else 1.0)
            for r in candidates}


@dataclass
class _Rounds:
    """The adaptive part: what was measured and what it cost."""

    ledger: Ledger
    measured: list[Measurement]
    model: MirrorDescent
    maximal: dict[Clique, np.ndarray]
    masked: list[str]  # columns whose missing level gets no mass
    total: float  # n (replace-one) or its estimate from the noisy 1-ways (add/remove)
    rounds: int = 0
    annealed: int = 0


def _first_model(columns: list[Column], truth, sigmas: list[float], ledger: Ledger, n: int | None,
                 iterations: int, rng) -> _Rounds:
    """Every 1-way marginal. A missing level whose noisy count is below 5σ gets no mass in the
    model (post-processing), so a column without missing values releases none. ``n`` None (add/
    remove): the model's total is estimated from the noisy 1-ways."""
    sizes = {c.name: c.size for c in columns}
    measured, mask = [], {}
    for col, sigma in zip(columns, sigmas):
        y = ledger.measure(truth[(col.name,)], sigma, rng,
                           {"kind": "measure", "clique": [col.name], "stage": "1-way"})
        measured.append(Measurement((col.name,), y, sigma))
        if y[col.missing_level] < MISSING_SIGMAS * sigma:
            mask[(col.name,)] = np.where(np.arange(col.size) == col.missing_level, NO_MASS, 0.0)
    frozen = {c: sizes[c] - 1 for (c,) in mask}  # the missing level is the last
    total = n if n is not None else estimated_total([(float(m.values.sum()), m.values.size * m.sigma**2)
                                                     for m in measured])
    model = MirrorDescent(sizes, measured, total, mask, frozen)
    return _Rounds(ledger, measured, model, model.run(iterations), [c[0] for c in mask], total)


def _adaptive_rounds(state: _Rounds, weights: dict[Clique, float], truth, sizes: dict[str, int],
                     rho: float, per_round: float, params: AimParams, ctx: RunContext) -> None:
    ledger, n = state.ledger, state.total
    sigma = sigma_for(MEASURE_SHARE * per_round, ledger.l2_sq)
    eps0 = em_epsilon((1 - MEASURE_SHARE) * per_round)
    sampler = ExactSampler(ctx.rng)
    max_weight = max(weights.values())
    sensitivity = SCORE_SENSITIVITY[params.neighbouring]  # per unit of weight
    terminate = False
    while not terminate:
        state.rounds += 1
        if ledger.remaining < 2 * (ledger.gaussian_rho(sigma) + eps0**2 / 8.0):  # one last round spends the rest
            left = ledger.remaining
            sigma = sigma_for(MEASURE_SHARE * left, ledger.l2_sq)
            eps0 = em_epsilon((1 - MEASURE_SHARE) * left)
            terminate = True
        limit = params.max_model_size * (ledger.spent + eps0**2 / 8.0 + ledger.gaussian_rho(sigma)) / rho
        cliques = [m.clique for m in state.measured]
        free = {frozenset(sub) for m in state.model.tree.maximal for k in range(1, len(m) + 1)
                for sub in itertools.combinations(m, k)}
        graph = CliqueGraph(sizes, cliques)  # mbi's hypothetical_model_size, fast (pgm.py)
        allowed = [r for r in weights
                   if frozenset(r) in free or graph.cells(r) * 8 / 2**20 <= limit]
        estimates = state.model.tree.all_pairs(state.maximal, n)
        # exact rationals: w·(S - b) with S the exact L1 error and b the data-independent bias
        scores = [exact_score(weights[r]) * (exact_score(l1_error(truth[r], estimates[r]))
                                             - exact_score(BIAS * sigma * truth[r].size)) for r in allowed]
        eta = Fraction(eps0) / (2 * sensitivity * Fraction(max_weight))
        pick = allowed[sampler.exponential(scores, eta)]
        ledger.spend(eps0**2 / 8.0, {"kind": "select", "stage": "exponential mechanism",
                                     "round": state.rounds, "candidates": len(allowed),
                                     "chosen": list(pick), "epsilon0": eps0,
                                     "score_sensitivity": sensitivity * max_weight})
        y = ledger.measure(truth[pick], sigma, ctx.rng,
                           {"kind": "measure", "clique": list(pick), "stage": f"round {state.rounds}"})
        state.measured.append(Measurement(pick, y.reshape([sizes[a] for a in pick]), sigma))
        state.model = MirrorDescent(sizes, state.measured, n, state.model.potentials, state.model.frozen)
        state.maximal = state.model.run(params.round_iterations)
        moved = np.abs(state.model.tree.project(state.maximal, pick) - estimates[pick]).sum()
        if moved <= BIAS * sigma * truth[pick].size and not terminate:  # anneal: less noise
            sigma, eps0, state.annealed = sigma / 2.0, eps0 * 2.0, state.annealed + 1
        ctx.progress(0.05 + 0.65 * min(1.0, ledger.spent / rho), f"round {state.rounds}")


def run_aim(data: MethodInput, params: AimParams, ctx: RunContext) -> ReleaseResult:
    started = time.perf_counter()
    frame = require_rows(data)
    columns = build_columns(params, data.columns)
    _check_rounds(params, len(columns))
    names = [c.name for c in columns]
    sizes = {c.name: c.size for c in columns}
    codes = encode_frame(columns, frame, compact=True)
    labels = label_columns(data.columns, names)
    weights = workload_weights(names, columns, params.max_cells, labels, params.label_weight)
    T = _planned_rounds(params, len(columns))
    rho, slack, tails = zcdp_budget("aim", params, len(columns) + T + 1, FEWER)
    ctx.progress(0.02, "loading the inference library")
    mbi = load_mbi()
    truth = {r: marginal(codes, r, tuple(sizes[a] for a in r)).reshape([sizes[a] for a in r])
             for r in weights}
    del codes  # every candidate's marginal counted: the data's last use
    ctx.progress(0.05, "1-way marginals")
    d = len(columns)
    rho_one, per_round = _one_way_budget(params, rho, d, T)
    l2_sq = L2_SQ[params.neighbouring]
    sigmas = [sigma_for(r, l2_sq) for r in one_way_rhos(columns, rho_one, params.one_way_weights)]
    n = len(frame) if params.neighbouring == "replace_one" else None  # add/remove: n is not public
    state = _first_model(columns, truth, sigmas, Ledger(rho, l2_sq=l2_sq), n, params.round_iterations, ctx.rng)
    _adaptive_rounds(state, weights, truth, sizes, rho, per_round, params, ctx)
    ctx.progress(0.72, "fitting the graphical model")
    maximal = state.model.run(params.iterations)
    ctx.progress(0.85, "sampling")
    rows = synthetic_rows(params, state.total)
    fitted = _markov_random_field(mbi, names, sizes, state.model, maximal, state.total)
    synthetic = synthetic_data(mbi, fitted, rows, ctx.rng)
    free_memory()  # the sampler's programs and temporaries, before the table is decoded
    out = decode_frame(columns, synthetic, ctx.rng)  # the sampler's compact codes (decode widens each)
    ctx.progress(1.0, "done")
    return _result(params, ctx, columns, out, state.ledger, (rho, slack, tails),
                   {"n": state.total, "rows": rows, "rounds": state.rounds, "annealed": state.annealed,
                    "planned_rounds": T, "round_rho": per_round,
                    "workload": sum(len(r) == 2 for r in weights),
                    "labels": sorted(labels),
                    "candidates": len(weights), "model_cells": state.model.tree.cells,
                    "model_cliques": [list(m) for m in state.model.tree.maximal],
                    "missing_released": [c.name for c in columns if c.name not in state.masked],
                    "seconds": time.perf_counter() - started},
                   (len(columns) + T + 1, _measure_share(params, len(columns), T)))


def _one_way_budget(params: AimParams, rho: float, d: int, T: int) -> tuple[float, float]:
    """(ρ of all the 1-way measurements, a planned round's ρ)."""
    if params.one_way_share is None:  # the paper's: each 1-way costs a round's measurement
        return MEASURE_SHARE * rho * d / T, rho / T
    rho_one = params.one_way_share * rho  # the 1-ways take d of the T planned rounds' slots
    return rho_one, (rho - rho_one) / max(T - d, 1)


def _check_rounds(params: AimParams, d: int) -> None:
    if params.rounds is not None and params.rounds < d:
        raise MethodInputError(f"rounds ({params.rounds}) must be at least the number of released "
                               f"columns ({d}): the 1-way marginals take d of the T planned rounds")


def _planned_rounds(params: AimParams, d: int) -> int:
    return params.rounds or 16 * d


def _measure_share(params: AimParams, d: int, T: int) -> float:
    """The share of ρ at most spent on Gaussian measurements: the 1-ways' and 0.9 of every
    round's (a round's split is fixed: annealing halves σ and doubles ε₀, both ρ × 4, and the
    last round splits what is left the same way); the selections spend at most the rest."""
    one = _one_way_budget(params, 1.0, d, T)[0]
    return one + MEASURE_SHARE * (1.0 - one)


def _check(params: AimParams, columns: list[ColumnInfo], source: SourceRelease | None) -> None:
    d = len(build_columns(params, columns))
    _check_rounds(params, d)
    # at most d + T + 1 measurements: the 1-ways, then rounds of at least a planned round's ρ
    zcdp_budget("aim", params, d + _planned_rounds(params, d) + 1, FEWER)


def _epsilon(params: AimParams, columns: list[ColumnInfo]) -> float:
    """ε debited: the job's (replace-one), or the replace-one ε of an add/remove job's plan."""
    d = len(build_columns(params, columns))
    T = _planned_rounds(params, d)
    return priced_epsilon("aim", params, d + T + 1, _measure_share(params, d, T), FEWER)


def _markov_random_field(mbi, names: list[str], sizes: dict[str, int], model: MirrorDescent,
                         maximal: dict, n: float):
    """mbi's model object over the fitted potentials (its sampler needs nothing else)."""
    import jax.numpy as jnp

    domain = mbi.Domain(names, [sizes[a] for a in names])

    def vector(tables: dict[Clique, np.ndarray]):
        factors = {c: mbi.Factor(domain.project(c), jnp.asarray(t)) for c, t in tables.items()}
        return mbi.CliqueVector(domain, list(factors), factors)

    marginals = {c: model.tree.project(maximal, c) for c in model.potentials}
    return mbi.MarkovRandomField(potentials=vector(model.potentials), marginals=vector(marginals),
                                 total=float(n))


def _result(params: AimParams, ctx: RunContext, columns: list[Column], out, ledger: Ledger,
            budget: tuple[float, float, float], facts: dict[str, Any],
            plan: tuple[int, float]) -> ReleaseResult:
    released = ", ".join(facts["missing_released"]) or "no column"
    return release("aim", params, ctx, columns, out, ledger, budget, facts, {
        "missing_levels": "a column's missing level gets no mass in the model (log-potential -10⁴) "
                          f"when its first noisy count is below 5σ (post-processing); released for {released}",
        "workload": {"marginals": facts["workload"], "candidates": facts["candidates"],
                     "max_cells": params.max_cells, "weights": "w_r = Σ_{s ∈ W} |r ∩ s|" + (
                         f", × {params.label_weight:g} when r holds a label column ({', '.join(facts['labels'])})"
                         if facts["labels"] and params.label_weight != 1 else ""),
                     "label_columns": facts["labels"], "label_weight": params.label_weight},
        "one_way": one_way_facts(params.one_way_share, params.one_way_weights),
        "rounds": facts["rounds"], "planned_rounds": facts["planned_rounds"],
        "round_rho": facts["round_rho"],
        "annealed": facts["annealed"],
        "model": {"estimator": "mirror descent (app/privacy/dp_release/pgm.py: mbi's algorithm in "
                  "numpy), warm-started from round to round", "iterations": params.iterations,
                  "round_iterations": params.round_iterations, "max_model_size_mb": params.max_model_size,
                  "cells": facts["model_cells"], "cliques": facts["model_cliques"]}}, plan)


register(MethodSpec(
    name="aim",
    family="dp_release",
    kind=MethodKind.release,
    summary="DP synthetic table by AIM: noisy 1-way marginals, then rounds that measure the "
            "workload marginal the current graphical model answers worst (exponential mechanism), "
            "annealing the noise; a final mbi model sampled into records. Domains from the "
            "declared bounds and categories.",
    params=AimParams,
    guarantee="central (ε, δ)-DP of the whole table (replace-one neighbours; add/remove-one with "
              "neighbouring: add_remove) through ρ-zCDP",
    paper="McKenna, Mullins, Sheldon & Miklau, AIM: An Adaptive and Iterative Mechanism for "
          "Differentially Private Synthetic Data, PVLDB 15(11), 2022",
    run=run_aim,
    epsilon=_epsilon,
    check=_check,
    check_rows=at_least_two_records,
    docs="docs/methods/aim.md",
    slow_params=('rounds', 'round_iterations', 'iterations', 'max_model_size', 'max_cells', 'rows'),
))
