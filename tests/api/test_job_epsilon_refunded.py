"""A job says whether its ε was given back (`epsilon_refunded`). Its `epsilon` is the price debited
at acceptance; a job cancelled while queued, or failed before drawing randomness, is refunded, and
a dashboard that summed the `epsilon` of a dataset's jobs counted those too (dashboard acceptance
check: 673 succeeded and 38 cancelled errph jobs summed to ε = 1,868.5 where the budget had spent
1,743.2); only the ledger told them apart."""

from __future__ import annotations

import pytest

from tests.api.test_budget_and_audit import P0_FOR_06, _binary_dataset, _fail_as_invalid_input_with_refund
from tests.support.api import auth, submit


def _jobs(client, owner, ds) -> dict[str, dict]:
    items = client.get("/v1/jobs", headers=auth(owner), params={"dataset_id": ds["id"]}).json()["items"]
    return {j["id"]: j for j in items}


def test_a_job_says_whether_its_epsilon_was_refunded(client, owner, make_key):
    admin = make_key("admin", tenant=owner["X-Tenant"])
    ds = _binary_dataset(client, owner)
    kept = submit(client, owner, "errph", {"p0": P0_FOR_06, "columns": ["b"]}, dataset_id=ds["id"]).json()
    cancelled = submit(client, owner, "errph", {"p0": P0_FOR_06, "columns": ["b"]}, dataset_id=ds["id"]).json()
    free = submit(client, owner, "risk", {"quasi_identifiers": ["b"]}, dataset_id=ds["id"]).json()
    assert (kept["epsilon_refunded"], free["epsilon_refunded"]) == (False, False)

    answer = client.post(f"/v1/jobs/{cancelled['id']}/cancel", headers=auth(owner)).json()
    assert answer["status"] == "cancelled" and answer["epsilon_refunded"] is True
    assert answer["epsilon"] == pytest.approx(0.6)  # still the price it was accepted at
    assert client.get(f"/v1/jobs/{cancelled['id']}", headers=auth(owner)).json()["epsilon_refunded"] is True
    listed = _jobs(client, owner, ds)
    assert {j: listed[j]["epsilon_refunded"] for j in listed} == {
        kept["id"]: False, cancelled["id"]: True, free["id"]: False}
    # what a dashboard sums from the jobs alone is what the budget spent
    spent = client.get(f"/v1/datasets/{ds['id']}/budget", headers=auth(owner)).json()["epsilon_spent"]
    assert sum(j["epsilon"] or 0 for j in listed.values() if not j["epsilon_refunded"]) == pytest.approx(spent)

    # refunded on failure, debited again by an admin's retry, refunded again
    _fail_as_invalid_input_with_refund(kept)
    assert client.get(f"/v1/jobs/{kept['id']}", headers=auth(owner)).json()["epsilon_refunded"] is True
    retried = client.post(f"/v1/jobs/{kept['id']}/retry", headers=auth(admin)).json()
    assert retried["status"] == "queued" and retried["epsilon_refunded"] is False
    _fail_as_invalid_input_with_refund(kept)
    assert _jobs(client, owner, ds)[kept["id"]]["epsilon_refunded"] is True
