"""Can the noise calibration serve this ε (and δ)? Asked by the methods' checks, before the
job's ε is debited, so that a budget the samplers cannot serve is a 422 naming the parameter
and the range that works — never a job that fails after the debit.

Both samplers reserve their floating-point slack out of each mechanism's share of ε (and the
Gaussian its far tails out of δ; ``app/privacy/noise/slack.py``), so a share below about
2.5·10⁻⁸ (Laplace) or 6·10⁻⁸ (Gaussian) per noisy coordinate cannot be delivered at all.
These are floors of the samplers, not tolerances: they hold whatever the sensitivity.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable

from app.privacy.noise import calibrate_gaussian
from app.privacy.registry import MethodInputError

# A discrete Laplace share of ε at or above this per coordinate is always calibrated. Measured
# on noise.calibrate_laplace over 1-10⁶ coordinates and sensitivities of 0.01-100× the
# coordinates: it fails below ≈ 2.55e-8 per coordinate and, just above, erratically (its
# fixed-point iteration meets a stepwise slack) up to ≈ 4.1e-8; twice the floor clears that band
# (tests/privacy/test_dp_release_inputs.py checks the claim on a grid).
LAPLACE_EPSILON_PER_COORDINATE = 5.2e-8


def laplace_minimum(coords: int) -> float:
    """The smallest share of ε Veil accepts for a discrete Laplace mechanism changing up to
    ``coords`` coordinates per neighbour (whatever its sensitivity)."""
    return LAPLACE_EPSILON_PER_COORDINATE * max(int(coords), 1)


@functools.lru_cache(maxsize=256)
def gaussian_feasible(coords: int, epsilon: float, delta: float) -> bool:
    """True when ``noise.calibrate_gaussian`` serves (ε, δ) for ``coords`` coordinates. The
    calibration works in grid steps, so its feasibility does not depend on the sensitivity
    (measured: the smallest ε moves by < 10⁻⁵ relative over sensitivities 1-100); the check
    asks for 0.1% less ε and δ than the run gets, and feasibility grows with ε and δ."""
    try:
        calibrate_gaussian(1.0, coords, epsilon * 0.999, delta * 0.999)
    except (ValueError, OverflowError, ZeroDivisionError):
        return False
    return True


def smallest(feasible: Callable[[float], bool], value: float, top: float) -> float | None:
    """The smallest x in [value, top] with feasible(x), to ~1% and rounded up to two
    significant digits; None when even ``top`` fails. ``feasible`` must be monotone."""
    if not feasible(top):
        return None
    lo, hi = math.log(max(value, 1e-320)), math.log(top)
    while hi - lo > 0.01:
        mid = 0.5 * (lo + hi)
        lo, hi = (lo, mid) if feasible(math.exp(mid)) else (mid, hi)
    x = math.exp(hi)
    rounded = round_up(x)
    return rounded if rounded <= top and feasible(rounded) else x


def round_up(x: float) -> float:
    """x rounded up to two significant digits (x > 0)."""
    exponent = math.floor(math.log10(x)) - 1
    return float(f"{math.ceil(x / 10.0**exponent)}e{exponent}")


def require(feasible: Callable[[float, float], bool], epsilon: float, delta: float, *, why: str,
            max_epsilon: float, max_delta: float, fewer: str) -> None:
    """Nothing when feasible(ε, δ); else a MethodInputError naming the parameter to raise and
    the range that works for this job (δ first: at the ε asked for, if some δ works)."""
    if feasible(epsilon, delta):
        return
    min_delta = smallest(lambda d: feasible(epsilon, d), delta, max_delta)
    if min_delta is not None:
        raise MethodInputError(
            f"delta = {delta:g} is too small for this job: {why}; at epsilon = {epsilon:g} delta "
            f"must lie in [{min_delta:.2g}, {max_delta:g}] (or {fewer})")
    min_eps = smallest(lambda e: feasible(e, delta), epsilon, max_epsilon)
    if min_eps is not None:
        raise MethodInputError(
            f"epsilon = {epsilon:g} is too small for this job: {why}; at delta = {delta:g} "
            f"epsilon must lie in [{min_eps:.2g}, {max_epsilon:g}] (or {fewer})")
    raise MethodInputError(
        f"epsilon = {epsilon:g} and delta = {delta:g} are too small for this job: {why}; raise "
        f"them (epsilon ≤ {max_epsilon:g}, delta ≤ {max_delta:g}) or {fewer}")
