"""A schema change while jobs on the dataset's data are queued or running (acceptance check).

A job is checked and priced (its ε debited) against the schema it was submitted with, but the
worker reads the schema when the job starts. errph submitted with `income` as the label (not
randomized) and run after `income` became an ordinary column released ε 19.45 on a debit of
18.36: the budget was charged less than the release states, and a cap could be overspent."""

from __future__ import annotations

import pytest

from tests.support.api import assert_problem, auth, submit, upload

ROWS = b"c,label\n" + b"".join(b"%s,%s\n" % (b"xyz"[i % 3:i % 3 + 1], b"ab"[i % 2:i % 2 + 1])
                                for i in range(30))


def _dataset(client, owner) -> dict:
    return upload(client, owner, ROWS, "labelled.csv", schema={"label": {"role": "label"}}).json()


def test_the_schema_cannot_change_under_a_queued_job_on_the_data(client, owner):
    ds = _dataset(client, owner)
    url = f"/v1/datasets/{ds['id']}/schema"
    job = submit(client, owner, "errph", {"p0": 0.5}, dataset_id=ds["id"])  # no worker runs here: it stays queued
    assert job.status_code == 202, job.text
    debited = job.json()["epsilon"]

    assert_problem(client.put(url, headers=auth(owner), json={"label": {"role": "insensitive"}}), 409,
                   "1 queued or running job(s)", "cancel them")
    columns = {c["name"]: c for c in client.get(f"/v1/datasets/{ds['id']}", headers=auth(owner)).json()["columns"]}
    assert columns["label"]["role"] == "label"  # nothing changed
    assert client.get(f"/v1/jobs/{job.json()['id']}", headers=auth(owner)).json()["epsilon"] == debited

    # once the job is no longer active the change goes through, and a new job is priced on it
    assert client.post(f"/v1/jobs/{job.json()['id']}/cancel", headers=auth(owner)).status_code == 202
    changed = client.put(url, headers=auth(owner), json={"label": {"role": "insensitive"}})
    assert changed.status_code == 200, changed.text
    again = submit(client, owner, "errph", {"p0": 0.5}, dataset_id=ds["id"]).json()
    assert again["epsilon"] > debited  # the former label is randomized too now


def test_a_cancelled_queued_job_says_what_was_refunded(client, owner):
    """job.failed said `refunded_epsilon`; the cancel of a queued job refunded without saying so."""
    ds = _dataset(client, owner)
    job = submit(client, owner, "errph", {"p0": 0.5}, dataset_id=ds["id"]).json()
    client.post(f"/v1/jobs/{job['id']}/cancel", headers=auth(owner))
    events = client.get("/v1/audit", headers=auth(owner),
                        params={"dataset_id": ds["id"], "action": "job.cancelled"}).json()["items"]
    assert [e["details"] for e in events] == [{"while": "queued", "refunded_epsilon": pytest.approx(job["epsilon"])}]
