"""privbayes after its noisy marginals are drawn (post-processing): which attribute sets are
measured and where each conditional is read from, whether a column's missing level is released,
the marginals made non-negative (simplex or clip), the conditionals Pr[X | Π] and ancestral
sampling of the synthetic records. Separate from the structure (privbayes_network.py) and from
the run, which draws the noise.
"""

from __future__ import annotations

import math

import numpy as np

from app.privacy.arrays import project_to_simplex
from app.privacy.dp_release.marginal_domains import Column
from app.privacy.dp_release.privbayes_network import parent_index
from app.privacy.dp_release.privbayes_params import MISSING_FALSE_RELEASE
from app.privacy.rng import SecureRandom


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
