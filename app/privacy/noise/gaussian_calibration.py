"""The discrete Gaussian mechanism's calibration: grid, σ and delivered (ε, δ) via zCDP."""

from __future__ import annotations

import math

from scipy import optimize

from app.privacy.noise.grid import grid_exponents
from app.privacy.noise.samplers import MAX_T
from app.privacy.noise.slack import gaussian_slack


def zcdp_delta(rho: float, epsilon: float) -> float:
    """δ of a ρ-zCDP mechanism at ε: min over α > 1 of
    exp((α-1)(αρ-ε)) / (α-1) · (1-1/α)^α (Canonne, Kamath & Steinke 2020, Cor. 13),
    never above Bun & Steinke's exp(-(ε-ρ)²/4ρ) for ε > ρ (2016, Prop. 1.3)."""
    if rho <= 0:
        return 0.0

    def log_delta(log_a1: float) -> float:
        a = 1.0 + math.exp(log_a1)
        return (a - 1.0) * (a * rho - epsilon) - math.log(a - 1.0) + a * math.log1p(-1.0 / a)

    res = optimize.minimize_scalar(log_delta, bounds=(-20.0, 20.0), method="bounded")
    cks = math.exp(min(0.0, res.fun))
    bun_steinke = math.exp(-((epsilon - rho) ** 2) / (4.0 * rho)) if epsilon > rho else 1.0
    return min(cks, bun_steinke, 1.0)


def calibrate_gaussian(sensitivity: float, coords: int, epsilon: float,
                       delta: float) -> tuple[int, float, float, float]:
    """(grid exponent, σ in steps, delivered ε, delivered δ) of the discrete Gaussian
    mechanism for a query with L2 sensitivity Δ₂ changing ≤ ``coords`` coordinates.
    The discrete Gaussian with integer shifts of L2 norm ≤ A is A²/2σ²-zCDP (CKS 2020,
    Thm. 14); A = Δ₂/γ + √coords covers the rounding to the grid."""
    if sensitivity <= 0 or epsilon <= 0 or not (0 < delta < 1) or coords < 1:
        raise ValueError("sensitivity, epsilon, coords must be positive and 0 < delta < 1")
    best: tuple[float, int, float, float, float] | None = None
    for e in grid_exponents(sensitivity / epsilon):
        gamma = 2.0**e
        shift = sensitivity / gamma + math.sqrt(coords)

        def delivered(sigma: float, shift=shift) -> tuple[float, float]:
            slack_eps, slack_delta = gaussian_slack(sigma, coords)
            eps0 = epsilon - slack_eps
            if eps0 <= 0:
                return math.inf, 1.0
            d0 = zcdp_delta(shift * shift / (2.0 * sigma * sigma), eps0)
            # outside |y| ≤ y0 the neighbour's realized masses are not pointwise controlled, so
            # its tail enters at e^{ε₀}: P̃₁(S) ≤ e^{ε₀+2Λ}P̃₂(S) + e^{Λ}δ₀ + τ̃ + e^{ε₀+Λ}τ
            return epsilon, (d0 * math.exp(slack_eps / 2.0)
                             + slack_delta * (1.0 + math.exp(eps0)))

        lo, hi = shift / epsilon / 4.0, shift / epsilon * 64.0 + 1.0
        if hi > MAX_T / 2 or delivered(hi)[1] > delta:
            continue
        for _ in range(100):  # bisection on σ: δ decreases as σ grows
            mid = math.sqrt(lo * hi)
            if delivered(mid)[1] <= delta:
                hi = mid
            else:
                lo = mid
            if hi / lo < 1.0 + 1e-9:
                break
        if hi < 1.0:
            continue
        eps_out, delta_out = delivered(hi)
        # The strictly least γσ, not calibrate_laplace's coarsest within 2^-20 of it: that rule
        # would change every seeded Gaussian release for no failure. The least sits at σ ~ 10⁸
        # steps, Δ/γ < 2^34 measured across the API's range (ε ≤ 100, δ ≤ 10⁻², k ≤ 256; the
        # most, 2^33.03, at ε = 100, δ = 10⁻¹², k = 1; see test_noise_gaussian_calibration_edges),
        # and dppro's values are at most Δ: far inside
        # the 2^52 steps grid_steps allows (Laplace's failure was sums ≫ Δ).
        if best is None or gamma * hi < best[0]:
            best = (gamma * hi, e, hi, eps_out, delta_out)
    if best is None:
        raise ValueError("no grid delivers this (ε, δ)")
    return best[1], best[2], best[3], best[4]
