"""A k above the input's record count is a 422 at submission: it was accepted (202) and the
job then failed as invalid_input (#7 and docs acceptance checks). The record count of a
dataset or release is known without reading the data."""

from __future__ import annotations

import pytest

from app.worker import runner
from tests.support.api import assert_problem, auth, submit, upload

DATA = b"age,sex,zip,y\n30,M,1,a\n41,F,2,b\n52,M,3,a\n63,F,4,b\n"


@pytest.mark.parametrize("method, params", [
    ("kanonymity", {"k": 5, "quasi_identifiers": ["age", "sex"]}),
    ("rfk_anonymity", {"k": 5, "label": "y"}),
    ("rfka", {"k": 5, "label": "y"}),
    ("hamdist", {"k": 5, "label": "y"}),
])
def test_k_above_the_record_count_is_refused_at_submission(client, owner, method, params):
    ds = upload(client, owner, DATA, "four.csv").json()
    assert_problem(submit(client, owner, method, params, dataset_id=ds["id"]), 422,
                   "the input has 4 records, fewer than k = 5")
    assert client.get("/v1/jobs", headers=auth(owner), params={"dataset_id": ds["id"]}).json()["items"] == []


def test_a_release_input_is_checked_against_its_own_record_count(client, owner):
    ds = upload(client, owner, DATA, "four.csv").json()
    job = submit(client, owner, "errph", {"p0": 0.5, "columns": ["sex"]}, dataset_id=ds["id"]).json()
    runner.execute(job["id"])
    release = client.get(f"/v1/jobs/{job['id']}", headers=auth(owner)).json()["result"]["release_ids"][0]
    assert_problem(submit(client, owner, "kanonymity", {"k": 5, "quasi_identifiers": ["age"]}, release_id=release),
                   422, "fewer than k = 5")
    ok = submit(client, owner, "kanonymity", {"k": 4, "quasi_identifiers": ["age"]}, release_id=release)
    assert ok.status_code == 202, ok.text


@pytest.mark.parametrize("method", ["mst", "aim", "dppro", "icahdp", "privbayes"])
def test_a_one_record_table_is_refused_by_dp_releases_before_any_debit(client, owner, method):
    """The job failed ('the table needs at least 2 records') after the debit and its refund,
    and on a budgeted dataset the 409 came first (odd-datasets acceptance check)."""
    ds = upload(client, owner, b"age,sex\n30,M\n", "one.csv",
                schema={"age": {"bounds": [0, 100]}, "sex": {"categories": ["F", "M"]}}).json()
    assert_problem(submit(client, owner, method, {"epsilon": 1.0}, dataset_id=ds["id"]), 422,
                   "the table needs at least 2 records")
    assert client.get(f"/v1/datasets/{ds['id']}/budget", headers=auth(owner)).json()["entry_count"] == 0
