"""The power-of-two grid: candidate grids, rounding values onto one, and checks on values."""

from __future__ import annotations

import math

import numpy as np


def grid_exponents(scale: float) -> range:
    """Candidate grids: from 2^-60 below the noise scale to the scale itself."""
    top = int(math.floor(math.log2(scale)))
    return range(top - 60, top + 1)


def grid_steps(values: np.ndarray, gamma: float) -> np.ndarray:
    """Values rounded to the grid, in steps; the sums with the noise must stay exact."""
    steps = np.rint(np.asarray(values, dtype=np.float64) / gamma)
    if steps.size and not np.all(np.abs(steps) < 2.0**52):
        raise ValueError("values too large (or not finite) for the noise grid")
    return steps


def require_integers(values: np.ndarray) -> None:
    """The guarantee of ``integer=True``: every value a finite integer (one vectorized pass)."""
    v = np.asarray(values, dtype=np.float64)
    if v.size and not np.all(np.isfinite(v) & (v == np.rint(v))):
        raise ValueError("values declared integer hold a non-integer (or non-finite) value")


def clamp(values: np.ndarray, lo, hi) -> np.ndarray:
    """Clip into [lo, hi] (broadcasting per column); NaN stays NaN."""
    return np.minimum(np.maximum(values, lo), hi)


def on_grid(values: np.ndarray, gamma: float) -> bool:
    """True when every value is an integer multiple of gamma (exact for powers of two)."""
    v = np.asarray(values, dtype=np.float64) / gamma
    return bool(np.all(v == np.rint(v)))
