"""ρ-zCDP ⇒ (ε, δ): ``noise.zcdp_delta`` against two oracles that do not share its code.

1. Soundness: the Gaussian mechanism of sensitivity 1 and σ = 1/√(2ρ) is ρ-zCDP, and its exact
   δ(ε) is known in closed form (Balle & Wang 2018). A conversion valid for every ρ-zCDP
   mechanism can never state a smaller δ than that one's.
2. The formula: Canonne, Kamath & Steinke 2020, Cor. 13, δ = inf over α > 1 of
   exp((α-1)(αρ-ε))/(α-1)·(1-1/α)^α, evaluated here on a dense grid of α in log space (no
   optimizer), capped by Bun & Steinke's exp(-(ε-ρ)²/4ρ) and by 1.

test_noise.py only checked the conversion against Bun & Steinke's (looser) bound and for
monotonicity: a conversion stating 2/3 of the δ it should (log(α-1) read as log(α+1)) passed it,
and so did ones stating more (mutation testing)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from app.privacy import noise

POINTS = [(rho, eps) for rho in (0.001, 0.01, 0.1, 0.5, 1.0, 4.0) for eps in (0.05, 0.3, 1.0, 3.0, 10.0)]


def gaussian_delta(rho: float, eps: float) -> float:
    """Exact δ(ε) of the Gaussian mechanism with Δ = 1 and σ = 1/√(2ρ) (Balle & Wang 2018)."""
    sigma = 1.0 / math.sqrt(2.0 * rho)
    a, b = 1.0 / (2.0 * sigma), eps * sigma
    return float(stats.norm.cdf(a - b) - math.exp(eps) * stats.norm.cdf(-a - b))


def cks_delta(rho: float, eps: float) -> float:
    """Cor. 13 by brute force: α - 1 on 400,001 points from 1e-9 to 1e9 (log spacing 1e-4)."""
    a = 1.0 + np.logspace(-9.0, 9.0, 400_001)
    log_d = (a - 1.0) * (a * rho - eps) - np.log(a - 1.0) + a * np.log1p(-1.0 / a)
    cks = math.exp(min(0.0, float(log_d.min())))
    bun_steinke = math.exp(-((eps - rho) ** 2) / (4.0 * rho)) if eps > rho else 1.0
    return min(cks, bun_steinke, 1.0)


@pytest.mark.parametrize("rho,eps", POINTS)
def test_the_conversion_never_states_less_delta_than_the_gaussian_mechanism_has(rho, eps):
    exact = gaussian_delta(rho, eps)
    if exact < 1e-250:
        pytest.skip("below the closed form's float resolution")
    assert noise.zcdp_delta(rho, eps) >= exact


@pytest.mark.parametrize("rho,eps", POINTS)
def test_the_conversion_is_canonne_kamath_steinke_corollary_13(rho, eps):
    expected = cks_delta(rho, eps)
    got = noise.zcdp_delta(rho, eps)
    if expected < 1e-300:
        assert got < 1e-290
    else:
        assert got == pytest.approx(expected, rel=1e-6, abs=0)


def test_cor_13_is_tighter_than_bun_steinke_where_it_should_be():
    """Where the cap does not decide, the figure is the corollary's (a check that could not see
    the difference between the two would pass a conversion that only applied the cap)."""
    rho, eps = 0.1, 1.0
    bun_steinke = math.exp(-((eps - rho) ** 2) / (4.0 * rho))
    assert noise.zcdp_delta(rho, eps) < 0.5 * bun_steinke


def test_zero_rho_is_zero_delta():
    assert noise.zcdp_delta(0.0, 1.0) == 0.0
    assert noise.zcdp_delta(0.0, 1e-6) == 0.0
