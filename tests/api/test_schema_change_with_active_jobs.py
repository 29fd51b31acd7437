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


def _during_the_child(monkeypatch, action):
    """Run `action` in another thread while the schema change's child process is working, and
    return what it returned (None if it was still waiting 20 s later)."""
    import threading

    from app.datasets import isolated

    real, result = isolated.apply_schema, {}

    def apply_schema(*args, **kwargs):
        thread = threading.Thread(target=lambda: result.setdefault("value", action()))
        thread.start()
        thread.join(timeout=20)
        return real(*args, **kwargs)

    monkeypatch.setattr(isolated, "apply_schema", apply_schema)
    return result


def test_a_submission_is_not_held_up_by_a_schema_change_in_progress(client, owner, monkeypatch):
    """A schema change held the dataset's row lock while its child ran (up to the 300 s parse
    limit): a submission on the dataset waited behind it, past the 120 s statement timeout a 503.
    The child runs unlocked now; the change locks the row afterwards and re-checks, so the job
    that came in between keeps the schema it was priced against and the change is refused."""
    ds = _dataset(client, owner)
    result = _during_the_child(monkeypatch, lambda: submit(client, owner, "errph", {"p0": 0.5},
                                                           dataset_id=ds["id"]))
    r = client.put(f"/v1/datasets/{ds['id']}/schema", headers=auth(owner), json={"label": {"role": "insensitive"}})
    assert "value" in result, "the submission waited for the schema change"
    assert result["value"].status_code == 202, result["value"].text
    assert_problem(r, 409, "1 queued or running job(s)")
    columns = {c["name"]: c for c in client.get(f"/v1/datasets/{ds['id']}", headers=auth(owner)).json()["columns"]}
    assert columns["label"]["role"] == "label"


def test_two_schema_changes_at_once_one_wins_the_other_is_told_to_retry(client, owner, monkeypatch):
    ds = _dataset(client, owner)
    url = f"/v1/datasets/{ds['id']}/schema"
    other = {"c": {"type": "categorical", "categories": ["x", "y", "z"]}}
    from app.datasets import isolated

    real = isolated.apply_schema
    result = _during_the_child(monkeypatch, lambda: (monkeypatch.setattr(isolated, "apply_schema", real),
                                                     client.put(url, headers=auth(owner), json=other))[1])
    r = client.put(url, headers=auth(owner), json={"label": {"role": "insensitive"}})
    assert result["value"].status_code == 200, result["value"].text
    assert_problem(r, 409, "changed while", "retry")
    columns = {c["name"]: c for c in client.get(url.removesuffix("/schema"), headers=auth(owner)).json()["columns"]}
    assert columns["label"]["role"] == "label" and columns["c"]["categories"] == ["x", "y", "z"]


def test_a_queued_job_an_earlier_attempt_of_which_drew_is_not_refunded_when_cancelled(client, owner):
    """Queued again after an attempt that drew and then crashed (or was lost): its failure may
    have depended on the noise, so a cancel now keeps the ε spent (the worker test
    test_a_job_whose_process_dies_is_refunded_only_if_no_attempt_drew makes such attempts)."""
    from sqlalchemy import text

    from app.db import transaction

    ds = _dataset(client, owner)
    job = submit(client, owner, "errph", {"p0": 0.5}, dataset_id=ds["id"]).json()
    with transaction() as s:  # what the runner notes when such an attempt ends
        s.execute(text("UPDATE jobs SET randomness_drawn = true, attempt = 1 WHERE id = :j"), {"j": job["id"]})
    assert client.post(f"/v1/jobs/{job['id']}/cancel", headers=auth(owner)).status_code == 202
    budget = client.get(f"/v1/datasets/{ds['id']}/budget", headers=auth(owner)).json()
    assert [e["kind"] for e in budget["entries"]] == ["debit"]
    events = client.get("/v1/audit", headers=auth(owner),
                        params={"dataset_id": ds["id"], "action": "job.cancelled"}).json()["items"]
    assert [e["details"] for e in events] == [{"while": "queued"}]
