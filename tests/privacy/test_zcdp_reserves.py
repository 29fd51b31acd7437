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
    assert ledger.slack == pytest.approx(m * per) and ledger.slack <= slack
    assert ledger.tails <= tails
    eps_out, delta_out = zcdp.delivered(ledger.spent, epsilon, ledger.slack, ledger.tails)
    assert eps_out == epsilon and delta_out <= delta
    # what the ledger realized, charged as calibrate_gaussian charges it, fits δ
    eps0 = epsilon - slack
    assert (noise.zcdp_delta(ledger.spent, eps0) * math.exp(slack / 2)
            + tails * (1 + math.exp(eps0))) <= delta
