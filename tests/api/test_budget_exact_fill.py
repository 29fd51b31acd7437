"""The cap's edge: a job priced at exactly what remains is accepted, and a cap set at exactly
what is spent is kept. The ledger's conditional UPDATE compared spent + ε < total (mutation
testing): the tests around it only tried jobs well below or well above what was left, and the
last of every budget could not be spent."""

from __future__ import annotations

import pytest

from tests.support.api import assert_problem, auth, submit, upload


def _dataset(client, headers):
    return upload(client, headers, b"b,n\nx,1\ny,2\nx,3\n", "b.csv").json()


def _icahdp(client, headers, ds, epsilon):
    return submit(client, headers, "icahdp", {"epsilon": epsilon, "columns": ["n"], "bounds": {"n": [0, 4]}},
                  dataset_id=ds["id"])


def test_the_last_of_the_budget_can_be_spent_and_no_more(client, owner):
    ds = _dataset(client, owner)
    url = f"/v1/datasets/{ds['id']}/budget"
    assert client.put(url, headers=auth(owner), json={"epsilon_total": 1.2}).status_code == 200
    assert _icahdp(client, owner, ds, 0.7).status_code == 202
    last = _icahdp(client, owner, ds, 0.5)  # 0.7 + 0.5 = 1.2 exactly (decimal arithmetic)
    assert last.status_code == 202, last.text
    budget = client.get(url, headers=auth(owner)).json()
    assert budget["epsilon_spent"] == pytest.approx(1.2) and budget["epsilon_remaining"] == 0.0
    assert_problem(_icahdp(client, owner, ds, 1e-6), 409, "budget")


def test_a_cap_equal_to_what_is_spent_is_kept(client, owner):
    ds = _dataset(client, owner)
    url = f"/v1/datasets/{ds['id']}/budget"
    assert _icahdp(client, owner, ds, 0.75).status_code == 202
    r = client.put(url, headers=auth(owner), json={"epsilon_total": 0.75})
    assert r.status_code == 200, r.text
    assert r.json()["epsilon_remaining"] == 0.0 and r.json()["epsilon_total"] == 0.75
    assert_problem(_icahdp(client, owner, ds, 0.01), 409, "budget")
