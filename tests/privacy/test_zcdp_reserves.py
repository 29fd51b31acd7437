"""The zCDP accountant's reserves, met by a run of many measurements: ``rho_for(ε, δ, m)``
sets aside the samplers' floating-point ε slack for all m measurements, and a ledger that makes
them at the σ its ρ allows stays within what was set aside, so the (ε, δ) it delivers is the
one asked for. rho_for's own test only bounded the reserve (0 < slack < 1e-4): a reserve for
one measurement whatever m passed it (mutation testing: slack = SLACK_PER_MEASUREMENT, without
× m)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from app.privacy import noise
from app.privacy.dp_release import zcdp
from app.privacy.rng import SecureRandom


@pytest.mark.parametrize("epsilon,delta,m", [(0.1, 1e-9, 100), (0.05, 1e-6, 150)])
def test_m_measurements_at_the_sigma_rho_allows_stay_within_the_reserves(epsilon, delta, m):
    rho, slack, tails = zcdp.rho_for(epsilon, delta, m)
    ledger = zcdp.Ledger(rho)
    sigma = zcdp.sigma_for(rho / m)
    rng = SecureRandom(seed=2)
    for i in range(m):
        ledger.measure(np.zeros(3), sigma, rng, {"stage": "test", "i": i})
    assert ledger.spent <= rho * (1 + 1e-9)
    # each measurement realizes a slack of ~1e-8 at these σ: m of them outgrow one reserve
    per = noise.gaussian_slack(sigma, 2)[0]
    assert m * per > zcdp.SLACK_PER_MEASUREMENT  # (the point of this test)
    assert ledger.slack == pytest.approx(m * per, rel=1e-9, abs=0) and ledger.slack <= slack
    assert ledger.tails <= tails
    eps_out, delta_out = zcdp.delivered(ledger.spent, epsilon, ledger.slack, ledger.tails)
    assert eps_out == epsilon and delta_out <= delta
    # what the ledger realized, charged as calibrate_gaussian charges it, fits δ
    eps0 = epsilon - slack
    assert (noise.zcdp_delta(ledger.spent, eps0) * math.exp(slack / 2)
            + tails * (1 + math.exp(eps0))) <= delta


@pytest.mark.parametrize("m", [1, 3])
def test_a_delta_inside_the_far_tail_reserve_is_refused(m):
    """Each measurement's far tail is charged to δ as τ·(1 + e^ε₀): its own realized tail and
    the neighbour's, weighed by the privacy loss (``noise.calibrate_gaussian``), m times. A δ 1%
    below that leaves no room; 1% above it does."""
    eps0 = 0.5 - m * zcdp.SLACK_PER_MEASUREMENT
    reserve = m * zcdp.TAIL_PER_MEASUREMENT * (1.0 + math.exp(eps0))
    with pytest.raises(ValueError, match="too small for the number of measurements"):
        zcdp.rho_for(0.5, 0.99 * reserve, m)
    rho, _, tails = zcdp.rho_for(0.5, 1.01 * reserve, m)
    assert rho > zcdp.MIN_RHO and tails == pytest.approx(m * zcdp.TAIL_PER_MEASUREMENT, rel=1e-12, abs=0)


@pytest.mark.parametrize("epsilon,delta,m", [(1.0, 1e-9, 30), (0.1, 1e-6, 200), (0.5, 1e-195, 1),
                                             (3.0, 1e-12, 8)])
def test_delivered_gives_back_the_delta_rho_for_was_asked_for(epsilon, delta, m):
    """``delivered`` states a release's (ε, δ) from the ρ it spent and the reserves; spent all,
    it must give back the δ that ``rho_for`` inverted — slack and the far tails weighed the same
    way (at δ = 1e-195 the tails are 2.6e-5 of it; at m = 200 the slack is 4e-4 of ε)."""
    rho, slack, tails = zcdp.rho_for(epsilon, delta, m)
    eps_out, delta_out = zcdp.delivered(rho, epsilon, slack, tails)
    assert eps_out == epsilon
    assert delta_out <= delta and delta_out == pytest.approx(delta, rel=1e-6, abs=0)
    # less ρ spent, less δ delivered
    assert zcdp.delivered(rho / 2, epsilon, slack, tails)[1] < delta_out
