"""privbayes' structure: the exact R score S (and T = S/n under add/remove) with its
sensitivity, the θ-useful parent sets and GreedyBayes, which picks the network round by round
with the exponential mechanism (exact sampler). What a reader checks for the structure's ε is
here; the derivations ("module docstring") are in privbayes.py's docstring.
"""

from __future__ import annotations

import itertools
import math
from fractions import Fraction
from typing import Any

import numpy as np

from app.privacy.dp_release.privbayes_params import MARGINAL_L1, MAX_CANDIDATES, T_SENSITIVITY
from app.privacy.dp_release.zcdp import ExactSampler
from app.privacy.rng import SecureRandom


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
