"""MST (McKenna, Miklau & Sheldon 2021, the NIST 2018 synthetic-data challenge winner, in its
general form): measure every 1-way marginal, pick a maximum spanning tree of 2-way marginals
with the exponential mechanism, measure those, fit a graphical model (mbi), sample.

ρ (the zCDP budget that converts to the (ε, δ) asked for) is split: s = ``one_way_share``
(default 1/2; the paper's 1/3) for the 1-ways, (1 - s)/2 each for selecting and measuring pairs:

  1-way       every column's marginal, discrete Gaussian σ₁ = 1/√ρ_c, Σ_c ρ_c = sρ with
              ρ_c ∝ k_c^(2/3) (k_c the declared levels; ``one_way_weights``="uniform": sρ/d)
  compress    levels whose noisy count is below 3σ₁ share one level, a missing level below 5σ₁
              joins the largest level (post-processing)
  select      Kruskal's algorithm with the exponential mechanism: r rounds, each picks a pair
              of not-yet-connected columns with probability ∝ exp(η·q), q = ‖x - x̂‖₁ of the
              pair on the compressed domain (x̂ from the 1-way model), sensitivity 2
              (add_remove: 1), ε₀ = √(8ρ_s), η = ε₀/4 (add_remove: ε₀/2) (ρ_s = (1 - s)ρ/2r each)
  2-way       the r chosen pairs on the compressed domain, σ₂ = 1/√ρ_s (ρ_s each; add_remove:
              σ = 1/√(2ρ), the same for the 1-ways)
  estimate    mbi mirror descent on all measurements with the public total n (add_remove: the
              total n̂ estimated from the noisy 1-ways, which also sizes the table and the
              selection's x̂)
  sample      mbi's synthetic_data, then a shared level back to its members in proportion to
              their noisy counts, and levels back to values (post-processing)

r = d - (components of the candidate graph): a pair is a candidate when its declared 2-way
domain fits ``max_cells``, so r depends on the schema only.
"""

from __future__ import annotations

import time
from fractions import Fraction
from typing import Any

import numpy as np
from pydantic import Field

from app.privacy.context import RunContext
from app.privacy.data import ColumnInfo, MethodInput, SourceRelease
from app.privacy.dp_release.common import at_least_two_records, require_rows
from app.privacy.dp_release.marginal_domains import (
    Column, build_columns, candidate_pairs, decode_frame, encode_frame, label_columns, marginal,
)
from app.privacy.dp_release.marginals import (
    SynthParams, estimated_total, one_way_facts, one_way_rhos, priced_epsilon, synthetic_rows, zcdp_budget,
)
from app.privacy.dp_release.mbi_bridge import free_memory, load_mbi, mirror_descent
from app.privacy.dp_release.mbi_sampling import level_dtype, synthetic_data
from app.privacy.dp_release.mst_aim_release import release
from app.privacy.dp_release.zcdp import (
    L2_SQ, SCORE_SENSITIVITY, ExactSampler, Ledger, em_epsilon, exact_score, l1_error, sigma_for,
)
from app.privacy.registry import MethodKind, MethodSpec, register
from app.privacy.results import ReleaseResult
from app.privacy.rng import SecureRandom

FEWER = "release fewer columns, or lower max_cells so that fewer pairs are candidates"
COMPRESS_SIGMAS = 3.0
MISSING_SIGMAS = 5.0  # a column without missing values keeps a spurious missing level w.p. ~3e-7


class MstParams(SynthParams):
    compress: bool = Field(True, description="merge the levels whose noisy 1-way count is below "
                           "3σ into one level before selecting and measuring pairs (post-processing)")
    one_way_share: float = Field(0.5, ge=0.05, le=0.95, description="share of ρ spent on the "
                                 "1-way marginals (the rest is split equally between selecting "
                                 "and measuring the tree's pairs); the paper's is 1/3")


class _Forest:
    """Union-find over column indices."""

    def __init__(self, d: int) -> None:
        self.parent = list(range(d))

    def find(self, i: int) -> int:
        while self.parent[i] != i:
            self.parent[i] = self.parent[self.parent[i]]
            i = self.parent[i]
        return i

    def union(self, i: int, j: int) -> bool:
        a, b = self.find(i), self.find(j)
        if a == b:
            return False
        self.parent[a] = b
        return True


def spanning_rounds(d: int, pairs: list[tuple[int, int]]) -> int:
    """Edges of a spanning forest of the candidate graph (schema-determined)."""
    forest = _Forest(d)
    return sum(forest.union(i, j) for i, j in pairs)


def compression(y: np.ndarray, sigma: float, missing_level: int, enabled: bool) -> np.ndarray:
    """Level → compressed level (post-processing of the noisy 1-way counts ``y``): levels
    with a noisy count ≥ 3σ keep a level of their own (in order); the other value levels share
    one last level; a missing level below 5σ is folded into the value level with the largest
    noisy count (so a column without missing values releases none). ``enabled=False`` keeps
    every value level."""
    keep = y >= COMPRESS_SIGMAS * sigma if enabled else np.ones(len(y), dtype=bool)
    keep[missing_level] = y[missing_level] >= MISSING_SIGMAS * sigma
    values = np.arange(len(y)) != missing_level
    mapping = np.empty(len(y), dtype=np.int64)
    mapping[keep] = np.arange(int(keep.sum()))
    mapping[~keep & values] = int(keep.sum())
    if not keep[missing_level]:
        mapping[missing_level] = mapping[np.argmax(np.where(values, y, -np.inf))]
    return mapping


def decompress(codes: np.ndarray, mapping: np.ndarray, missing_level: int, noisy: np.ndarray,
               rng: SecureRandom) -> np.ndarray:
    """Compressed codes back to levels; the shared level goes to its members in proportion to
    their noisy 1-way counts clipped at 0 (uniformly if none is positive): post-processing."""
    own = np.ones(len(mapping), dtype=bool)
    folded = (mapping == mapping[missing_level]).sum() > 1
    own[missing_level] = not folded
    inverse = np.zeros(int(mapping.max()) + 1, dtype=np.int64)
    inverse[mapping[own]] = np.flatnonzero(own)
    out = inverse[codes]
    shared = int(mapping[own].max())
    members = np.flatnonzero(own & (mapping == shared))
    if len(members) > 1:
        rest = np.flatnonzero(codes == shared)
        weights = np.clip(noisy[members], 0.0, None)
        out[rest] = members[rng.choice(len(members), len(rest), p=weights if weights.sum() > 0 else None)]
    return out


def one_way_fit(y: np.ndarray, mapping: np.ndarray, n: int) -> np.ndarray:
    """The 1-way model's distribution over the compressed levels: the least-squares fit of
    the noisy counts (a shared level g of k_g members is measured as their sum, variance
    k_g·σ²) on {μ ≥ 0, Σμ = n} — what mbi's estimate converges to for 1-way measurements
    alone: μ_g = max(0, t_g - λ·k_g) with λ set by bisection so that Σμ = n."""
    t = np.bincount(mapping, weights=y)
    k = np.bincount(mapping).astype(np.float64)
    lo, hi = (t.min() - n) / k.max() - 1.0, t.max() / k.min() + 1.0
    for _ in range(200):
        lam = 0.5 * (lo + hi)
        if np.maximum(0.0, t - lam * k).sum() > n:
            lo = lam
        else:
            hi = lam
    mu = np.maximum(0.0, t - hi * k)
    return mu / mu.sum() if mu.sum() > 0 else np.full(len(t), 1.0 / len(t))


def select_tree(pairs: list[tuple[int, int]], names: list[str], codes: dict[str, np.ndarray],
                model_1way: dict[str, np.ndarray], n: float, rho_round: float, rounds: int,
                ledger: Ledger, rng: SecureRandom, labels: frozenset[str] = frozenset(),
                label_weight: float = 1.0, sensitivity: int = SCORE_SENSITIVITY["replace_one"],
                ) -> list[tuple[str, str]]:
    """Kruskal's algorithm in which each round's edge is drawn by the exponential mechanism
    (ρ_round each) among the pairs not yet connected, scored by the exact L1 distance between
    the pair's counts and the 1-way model's product estimate with total ``n`` (sensitivity 2
    replace-one, 1 add/remove, for an ``n`` that is public or itself noisy), times
    ``label_weight`` for a pair that holds one of ``labels`` (the sensitivity times the
    largest weight: η is scaled down by it)."""
    scores = {}
    weight = Fraction(label_weight)  # exact: the float the caller gave
    top = weight if labels and any({names[i], names[j]} & labels for i, j in pairs) else Fraction(1)
    for i, j in pairs:
        a, b = names[i], names[j]
        p, q = model_1way[a], model_1way[b]
        xhat = n * np.outer(p, q).ravel()
        score = exact_score(l1_error(marginal(codes, (a, b), (len(p), len(q))), xhat))
        scores[(i, j)] = score * (weight if {a, b} & labels else 1)
    eps0 = em_epsilon(rho_round)
    eta = Fraction(eps0) / (2 * sensitivity * top)
    sampler, forest = ExactSampler(rng), _Forest(len(names))
    chosen: list[tuple[str, str]] = []
    for r in range(rounds):
        open_pairs = [e for e in pairs if forest.find(e[0]) != forest.find(e[1])]
        pick = open_pairs[sampler.exponential([scores[e] for e in open_pairs], eta)]
        forest.union(*pick)
        chosen.append((names[pick[0]], names[pick[1]]))
        ledger.spend(rho_round, {"kind": "select", "stage": "exponential mechanism", "round": r + 1,
                                 "candidates": len(open_pairs), "chosen": list(chosen[-1]),
                                 "epsilon0": eps0, "score": "L1 error of the 2-way marginal against "
                                 "the 1-way model" + (f", × {float(weight):g} for a pair holding a label "
                                                      "column" if top != 1 else ""),
                                 "score_sensitivity": sensitivity * float(top)})
    return chosen


def run_mst(data: MethodInput, params: MstParams, ctx: RunContext) -> ReleaseResult:
    started = time.perf_counter()
    frame = require_rows(data)
    columns = build_columns(params, data.columns)
    names = [c.name for c in columns]
    d = len(columns)
    codes = encode_frame(columns, frame, compact=True)
    pairs = candidate_pairs(columns, params.max_cells)
    labels = label_columns(data.columns, names)
    rounds = spanning_rounds(d, pairs)
    rho, slack, tails = zcdp_budget("mst", params, d + rounds, FEWER)
    l2_sq = L2_SQ[params.neighbouring]
    ledger = Ledger(rho, l2_sq=l2_sq)
    rho_one = rho if rounds == 0 else rho * params.one_way_share
    ctx.progress(0.02, "loading the inference library")
    mbi = load_mbi()
    from mbi.marginal_loss import LinearMeasurement

    # 1-way marginals on the declared domains
    ctx.progress(0.08, "1-way marginals")
    sigmas = [sigma_for(r, l2_sq) for r in one_way_rhos(columns, rho_one, params.one_way_weights)]
    full = mbi.Domain(names, [c.size for c in columns])
    mappings: dict[str, np.ndarray] = {}
    one_way, noisy = [], {}
    for col, sigma1 in zip(columns, sigmas):
        y = ledger.measure(marginal(codes, (col.name,), (col.size,)), sigma1, ctx.rng,
                           {"kind": "measure", "clique": [col.name], "stage": "1-way"})
        mappings[col.name] = compression(y, sigma1, col.missing_level, params.compress)
        noisy[col.name] = y
        one_way.append(LinearMeasurement(y, (col.name,), sigma1))
    one_way = [m.compress(mappings, full) for m in one_way]
    # the total: n (public under replace-one) or its estimate from the noisy 1-ways (add/remove)
    n = (len(frame) if params.neighbouring == "replace_one" else
         estimated_total([(float(noisy[c.name].sum()), c.size * s * s) for c, s in zip(columns, sigmas)]))
    small = mbi.Domain(names, [int(mappings[c].max()) + 1 for c in names])
    ccodes = {c: mappings[c].astype(codes[c].dtype)[codes[c]] for c in names}  # as compact as codes
    del codes  # the 1-ways were its last use
    estimator = mirror_descent(mbi)

    chosen: list[tuple[str, str]] = []
    if rounds:
        ctx.progress(0.2, "selecting pairs")
        model_1way = {c: one_way_fit(noisy[c], mappings[c], n) for c in names}
        chosen = select_tree(pairs, names, ccodes, model_1way, n, (rho - rho_one) / 2.0 / rounds,
                             rounds, ledger, ctx.rng, labels, params.label_weight,
                             SCORE_SENSITIVITY[params.neighbouring])

    ctx.progress(0.35, "2-way marginals")
    two_way = []
    if rounds:
        sigma2 = sigma_for((rho - rho_one) / 2.0 / rounds, l2_sq)
        for a, b in chosen:
            shape = (small[a], small[b])
            y = ledger.measure(marginal(ccodes, (a, b), shape), sigma2, ctx.rng,
                               {"kind": "measure", "clique": [a, b], "stage": "2-way",
                                "domain": "compressed" if params.compress else "declared"})
            two_way.append(LinearMeasurement(y, (a, b), sigma2))
    del ccodes  # the data's last use

    ctx.progress(0.45, "fitting the graphical model")
    model = estimator.estimate(small, one_way + two_way, known_total=float(n), iters=params.iterations)
    free_memory()  # the fit's programs
    ctx.progress(0.85, "sampling")
    rows = synthetic_rows(params, n)
    synthetic = synthetic_data(mbi, model, rows, ctx.rng)
    free_memory()  # the sampler's programs and temporaries, before the table is decoded
    # each column's sampled codes freed once decompressed, its levels kept compact
    levels = {c.name: decompress(np.asarray(synthetic.pop(c.name)), mappings[c.name], c.missing_level,
                                 noisy[c.name], ctx.rng).astype(level_dtype(c.size))
              for c in columns}
    out = decode_frame(columns, levels, ctx.rng)
    ctx.progress(1.0, "done")
    return _result(params, ctx, columns, out, ledger, (rho, slack, tails), mappings,
                   {"n": n, "rows": rows, "rounds": rounds, "candidate_pairs": len(pairs),
                    "labels": sorted(labels),
                    "seconds": time.perf_counter() - started}, (d + rounds, _measure_share(params, rounds)))


def _plan(params: MstParams, columns: list[ColumnInfo]) -> tuple[int, int]:
    """(columns, the tree's rounds): the schema fixes the domains, hence both."""
    chosen = build_columns(params, columns)
    return len(chosen), spanning_rounds(len(chosen), candidate_pairs(chosen, params.max_cells))


def _measure_share(params: MstParams, rounds: int) -> float:
    """The share of ρ spent on Gaussian measurements: the 1-ways' and half the rest (all of it
    without a pair to select); the selections get the other half of the rest."""
    return 1.0 if rounds == 0 else params.one_way_share + (1.0 - params.one_way_share) / 2.0


def _check(params: MstParams, columns: list[ColumnInfo], source: SourceRelease | None) -> None:
    d, rounds = _plan(params, columns)
    zcdp_budget("mst", params, d + rounds, FEWER)


def _epsilon(params: MstParams, columns: list[ColumnInfo]) -> float:
    """ε debited: the job's (replace-one), or the replace-one ε of an add/remove job's plan."""
    d, rounds = _plan(params, columns)
    return priced_epsilon("mst", params, d + rounds, _measure_share(params, rounds), FEWER)


def _result(params: MstParams, ctx: RunContext, columns: list[Column], out, ledger: Ledger,
            budget: tuple[float, float, float], mappings: dict[str, np.ndarray],
            facts: dict[str, Any], plan: tuple[int, float]) -> ReleaseResult:
    result = release("mst", params, ctx, columns, out, ledger, budget, facts, {
        "compression": ("levels with a noisy 1-way count below 3σ₁ share one level (post-processing), "
                        "sampled back among them in proportion to their noisy counts clipped at 0 "
                        "('shared_levels'); " if params.compress else "")
        + "a missing level below 5σ₁ is folded into the level with the largest noisy count "
          "('missing_folded_into') and never released",
        "model": {"estimator": "mbi MirrorDescent", "iterations": params.iterations},
        "one_way": one_way_facts(params.one_way_share, params.one_way_weights),
        "rounds": facts["rounds"], "candidate_pairs": facts["candidate_pairs"],
        "label_columns": facts["labels"], "label_weight": params.label_weight}, plan)
    for c in columns:
        result.metadata["mst"]["columns"][c.name].update(_compression_facts(mappings[c.name], c.missing_level))
    return result


def _compression_facts(mapping: np.ndarray, missing_level: int) -> dict[str, Any]:
    same = np.flatnonzero(mapping == mapping[missing_level])
    folded = [int(v) for v in same if v != missing_level]
    own = np.flatnonzero(np.arange(len(mapping)) != missing_level)
    shared = [int(v) for v in own if (mapping[own] == mapping[v]).sum() > 1]
    return {"shared_levels": shared, "missing_folded_into": folded[0] if folded else None}


register(MethodSpec(
    name="mst",
    family="dp_release",
    kind=MethodKind.release,
    summary="DP synthetic table by MST: noisy 1-way marginals, a maximum spanning tree of 2-way "
            "marginals chosen with the exponential mechanism, a graphical model fitted with mbi, "
            "records sampled from it. Domains from the declared bounds and categories.",
    params=MstParams,
    guarantee="central (ε, δ)-DP of the whole table (replace-one neighbours; add/remove-one with "
              "neighbouring: add_remove) through ρ-zCDP",
    paper="McKenna, Miklau & Sheldon, Winning the NIST Contest: A scalable and general approach "
          "to differentially private synthetic data, Journal of Privacy and Confidentiality 11(3), 2021",
    run=run_mst,
    epsilon=_epsilon,
    check=_check,
    check_rows=at_least_two_records,
    docs="docs/methods/mst.md",
    slow_params=('iterations', 'max_cells', 'rows'),
))
