"""The discrete Laplace mechanism's calibration: grid, scale and delivered ε, and its loss."""

from __future__ import annotations

import functools
import math

from app.privacy.noise.grid import grid_exponents
from app.privacy.noise.samplers import MAX_T
from app.privacy.noise.slack import laplace_slack

_GRID_TOLERANCE = 2.0**-20  # noise a Laplace grid may add over the least, to be coarser


def laplace_shift(grid: float, sensitivity: float, coords: int, integer: bool = False) -> float:
    """The steps two neighbours' values can be apart on the grid γ: Δ/γ + d (rounding moves each
    of the d coordinates by ≤ ½ step), or Δ/γ for integer values on a grid γ ≤ 1 (a power of
    two: 1/γ is an integer, so integers are already on the grid and nothing is rounded)."""
    if integer and grid <= 1.0:
        return sensitivity / grid
    return sensitivity / grid + coords


def laplace_abs_error(grid: float, t: float) -> float:
    """E|γX| of the discrete Laplace of scale t steps on the grid γ: 2γq/(1 − q²), q = e^{-1/t},
    = γ/sinh(1/t) (below the continuous Laplace's γt, by ~1/(6t) relative for large t)."""
    return grid / math.sinh(1.0 / t)


def _settled_scale(shift: float, coords: int, epsilon: float, least: float) -> float | None:
    """The scale t ≥ ``least`` at which shift/t plus the sampler's slack reaches ε (or stays
    under it, when ``least`` binds), with a float safety margin; None when no t ∈ [1, 2^50]."""
    t = max(shift / epsilon, least)
    if t < 1.0 or t > MAX_T:
        return None
    for _ in range(8):  # the slack grows with t: a few fixed-point steps settle it
        room = epsilon - laplace_slack(t, shift, coords)
        if room <= 0:
            break
        t = max(shift / room, least)
    return t * (1.0 + 2.0**-40)  # float safety margin on the equality


def _integer_scale(gamma: float, sensitivity: float, coords: int, epsilon: float) -> float | None:
    """The least t ≥ 1 found on the grid γ for integer values: settled at their shift, or at the
    rounding's larger shift Δ/γ + d (valid a fortiori) when that fixed point misses — at ε below
    ~10⁻⁶ the slack steps with t and 8 steps may not settle. So no grid is worse than it is
    without ``integer``."""
    best = None
    for shift in (laplace_shift(gamma, sensitivity, coords, True), laplace_shift(gamma, sensitivity, coords)):
        t = _settled_scale(shift, coords, epsilon, 1.0)
        if (t is not None and laplace_loss(gamma, t, sensitivity, coords, True) <= epsilon
                and (best is None or t < best)):
            best = t
    return best


@functools.lru_cache(maxsize=4096)  # pure; ~4 ms a call (61 grids): a job's check and run repeat it
def calibrate_laplace(sensitivity: float, coords: int, epsilon: float,
                      integer: bool = False) -> tuple[int, float, float]:
    """(grid exponent e, t, delivered ε) of the discrete Laplace mechanism for a query with
    L1 sensitivity Δ₁ changing ≤ ``coords`` coordinates: among the grids whose delivered ε
    (rounding and slack included) stays ≤ ``epsilon``, the coarsest whose noise γ·t is within
    2^-20 of the least (a finer one buys < 10⁻⁶ of the noise and holds smaller values).

    ``integer``: the values are integers (laplace_mechanism verifies it). Grids γ ≤ 1 then pay
    no rounding (shift Δ/γ, ``laplace_shift``), the scale may sit above what ε needs (t ≥ 1 is
    the sampler's floor: at Δ/ε < 1 the integer grid at t = 1 can still beat a finer one), and
    the grid is chosen by the noise's expected absolute error γ/sinh(1/t) rather than γ·t —
    the figure the answers' error is (and the benchmarks report); γ·t would call every grid
    γ ≤ 1 equal (γ·t = Δ/ε on each), where the coarsest is the most accurate. The variance,
    γ²/(2·sinh²(1/2t)), orders those grids the same way (both fall as γ grows at γ·t fixed).
    Without ``integer`` the noise is measured by γ·t, as it always was in Veil."""
    if sensitivity <= 0 or epsilon <= 0 or coords < 1:
        raise ValueError("sensitivity, epsilon and coords must be positive")
    exponents = grid_exponents(sensitivity / epsilon)
    if integer:  # one grid coarser: at t = 1 it can beat 2^top at t near 2
        exponents = range(exponents.start, exponents.stop + 1)
    candidates: list[tuple[float, int, float, float]] = []
    for e in exponents:
        gamma = 2.0**e
        if integer:
            t = _integer_scale(gamma, sensitivity, coords, epsilon)
        else:
            t = _settled_scale(laplace_shift(gamma, sensitivity, coords), coords, epsilon, 0.0)
        if t is None or t > MAX_T:
            continue
        delivered = laplace_loss(gamma, t, sensitivity, coords, integer)
        if delivered > epsilon:
            continue
        cost = laplace_abs_error(gamma, t) if integer else gamma * t
        candidates.append((cost, e, t, delivered))
    if not candidates:
        raise ValueError("no grid delivers this ε: the sensitivity or dimension is too large")
    # the coarsest grid within _GRID_TOLERANCE of the least noise: finer grids buy < 1e-6 of
    # the noise and shrink the values the float64 grid can hold (2^52 steps): γ·t falls only
    # as Δ/ε·(1 + dγ/Δ), so the strict minimum sat at t ~ 10^8 steps, where a sum of 5·10^6
    # values in [0, 1] at ε = 10 no longer fitted; here that limit is ~2^32·Δ/d whatever ε
    least = min(c[0] for c in candidates)
    _, e, t, delivered = max((c for c in candidates if c[0] <= least * (1.0 + _GRID_TOLERANCE)),
                             key=lambda c: c[1])
    return e, t, delivered


def laplace_loss(grid: float, t: float, sensitivity: float, coords: int, integer: bool = False) -> float:
    """The privacy loss of the discrete Laplace mechanism of scale ``t`` steps on the grid
    ``grid`` against a neighbour moving its input by ``sensitivity`` over ``coords``
    coordinates: the shift (``laplace_shift``: Δ/γ + d steps, Δ/γ for integer values on γ ≤ 1)
    over t, plus the sampler's slack at that shift (the loss calibrate_laplace holds to ε,
    here for any shift). 0 when nothing moves."""
    if sensitivity == 0:
        return 0.0
    shift = laplace_shift(grid, sensitivity, coords, integer)
    return shift / t + laplace_slack(t, shift, coords)
