"""TRR's mechanism and its estimators: the sets A and B drawn from Gaussians, y = a·x + b with
a and b drawn per cell from the job's random source, the published values' moments in
cache-sized chunks, the original column's mean and variance reconstructed from them (paper
eqs. 2, 3; delta-method standard errors) and the breach-interval widths. Separate from
transforming_rr.py (parameters, checks, run, registration) as rr_mechanism.py is from
randomized_response.py; naive_bayes reads sample_moments from here.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np
from scipy.stats import norm

from app.privacy.rng import SecureRandom
from app.privacy.rr_channels import NumericChannel

_CHUNK = 1 << 16
BREACH_CONFIDENCES = (0.5, 0.9, 0.999)


# ----------------------------------------------------------------------------------- core
@dataclasses.dataclass(frozen=True)
class TrrSets:
    a: np.ndarray
    b: np.ndarray

    @property
    def moments(self) -> tuple[float, float, float, float]:
        """(Ā, S_A², B̄, S_B²) with the paper's population formulas (divisor m)."""
        return float(self.a.mean()), float(self.a.var()), float(self.b.mean()), float(self.b.var())


def draw_sets(m: int, a_mean: float, a_var: float, b_mean: float, b_var: float,
              rng: SecureRandom) -> TrrSets:
    return TrrSets(a=rng.normal(m, loc=a_mean, scale=math.sqrt(a_var)),
                   b=rng.normal(m, loc=b_mean, scale=math.sqrt(b_var)))


def _uniform_index(u: np.ndarray, m: int) -> np.ndarray:
    """floor(u·m / 2^32): uniform on [0, m) to within m/2^32."""
    return ((u.astype(np.uint64) * np.uint64(m)) >> np.uint64(32)).astype(np.intp)


def _index_pairs(count: int, m_a: int, m_b: int, rng: SecureRandom) -> tuple[np.ndarray, np.ndarray]:
    """Independent uniform indices into A and B. When both sizes are powers of two that fit
    together in 32 bits, one random word holds both (exactly uniform); else one word each."""
    bits_a, bits_b = m_a.bit_length() - 1, m_b.bit_length() - 1
    if m_a == 1 << bits_a and m_b == 1 << bits_b and bits_a + bits_b <= 32:
        u = rng.uint32(count)
        ia = u >> np.uint32(32 - bits_a) if bits_a else np.zeros(count, np.uint32)
        ib = (u >> np.uint32(32 - bits_a - bits_b)) & np.uint32(m_b - 1) if bits_b else np.zeros(count, np.uint32)
        return ia, ib
    u = rng.uint32(2 * count)
    return _uniform_index(u[:count], m_a), _uniform_index(u[count:], m_b)


def transform(x: np.ndarray, sets: TrrSets, rng: SecureRandom) -> np.ndarray:
    """y = a·x + b, a and b drawn uniformly and independently from the sets per cell.
    NaN (a missing cell) stays NaN. Works in cache-sized chunks."""
    x = np.asarray(x, dtype=np.float64)
    out = np.empty_like(x)
    for start in range(0, len(x), _CHUNK):
        stop = min(start + _CHUNK, len(x))
        ia, ib = _index_pairs(stop - start, len(sets.a), len(sets.b), rng)
        block = out[start:stop]
        np.multiply(sets.a.take(ia), x[start:stop], out=block)
        block += sets.b.take(ib)
    return out


@dataclasses.dataclass(frozen=True)
class Moments:
    """n, mean, sample variance (divisor n-1) and the 3rd and 4th central moments."""

    n: int
    mean: float
    var: float
    mu3: float = math.nan
    mu4: float = math.nan


def moments(y: np.ndarray, higher: bool = True) -> Moments:
    """Moments of the non-missing values from power sums of (y - shift) taken in cache-sized
    chunks (a few passes over L2-resident data instead of one pass per temporary array over
    memory). The shift — a mean of the first values — keeps the sums well conditioned."""
    y = np.asarray(y, dtype=np.float64)
    head = y[:1024][~np.isnan(y[:1024])]
    shift = float(head.mean()) if len(head) else 0.0
    n, sums = 0, np.zeros(4)
    for start in range(0, len(y), _CHUNK):
        d = y[start:start + _CHUNK] - shift
        nan = np.isnan(d)
        if nan.any():
            d = d[~nan]
        n += len(d)
        d2 = d * d
        sums += (d.sum(), d2.sum(), (d2 * d).sum() if higher else 0.0, (d2 * d2).sum() if higher else 0.0)
    if n == 0:
        return Moments(0, math.nan, math.nan)
    m1, m2, m3, m4 = (float(v) for v in sums / n)
    central2 = max(m2 - m1 * m1, 0.0)
    var = central2 * n / (n - 1) if n > 1 else 0.0
    if not higher:
        return Moments(n, shift + m1, var)
    mu3 = m3 - 3 * m1 * m2 + 2 * m1**3
    mu4 = m4 - 4 * m1 * m3 + 6 * m1 * m1 * m2 - 3 * m1**4
    return Moments(n, shift + m1, var, mu3, mu4)


def sample_moments(y: np.ndarray) -> tuple[int, float, float]:
    """n, ȳ and the sample variance S_y² (divisor n-1) of the non-missing values."""
    m = moments(y, higher=False)
    return m.n, m.mean, m.var


def reconstruct_moments(y: np.ndarray, channel: NumericChannel) -> dict[str, Any]:
    """x̂̄ and Ŝ_x² of the original column from its published values (paper eqs. 2, 3), with
    standard errors by the delta method on (ȳ, S_y²). The variance estimate can come out ≤ 0
    (the S_A²·x̄² term dominates when x̄² ≫ Var(x)): then it is clipped to 0 and flagged."""
    m = moments(y)
    if m.n < 2:
        raise ValueError("fewer than 2 published values")
    mean, var = (float(v) for v in channel.invert(m.mean, m.var))
    cov = np.array([[m.var, m.mu3], [m.mu3, max(m.mu4 - m.var * m.var, 0.0)]]) / m.n
    grad = _gradient(channel, m.mean, m.var)
    se_var = float(np.sqrt(max(grad[1] @ cov @ grad[1], 0.0)))
    farthest = float(np.nanmax(np.abs(y - m.mean)))
    fourth = m.mu4 * m.n
    return {
        "n": m.n, "published_mean": m.mean, "published_variance": m.var,
        "mean": mean, "mean_standard_error": float(np.sqrt(m.var / m.n) * abs(channel.mean_gain)),
        "variance_raw": var, "variance": max(var, 0.0), "variance_clipped": bool(var <= 0.0),
        "variance_standard_error": se_var,
        "extreme_share_of_fourth_moment": farthest**4 / fourth if fourth > 0 else 0.0,
    }


def _gradient(channel: NumericChannel, mean_y: float, var_y: float) -> np.ndarray:
    """∂(x̄, S_x²)/∂(ȳ, S_y²) by central differences (invert is a low-degree polynomial)."""
    rows = np.zeros((2, 2))
    for j, (dm, dv) in enumerate(((1.0, 0.0), (0.0, 1.0))):
        h = 1e-6 * max(abs(mean_y) if j == 0 else abs(var_y), 1.0)
        hi = channel.invert(mean_y + h * dm, var_y + h * dv)
        lo = channel.invert(mean_y - h * dm, var_y - h * dv)
        rows[:, j] = (np.asarray(hi) - np.asarray(lo)) / (2 * h)
    return rows


def breach_widths(variance: float) -> dict[str, float]:
    """BreachWidth(C) = 2·z_{(1+C)/2}·Ŝ_x (paper Table 2) for C = 0.5, 0.9, 0.999."""
    sd = math.sqrt(max(variance, 0.0))
    return {str(c): float(2.0 * norm.ppf((1.0 + c) / 2.0) * sd) for c in BREACH_CONFIDENCES}
