"""The same Idempotency-Key sent by requests that run at once (race acceptance check: of 8
identical job submissions sent together, 1 made the job, 6 read it back and 1 answered 409 "a
concurrent request with the same Idempotency-Key is being processed; retry" — in every trial,
and a request with a different body got that message instead of "used for a different job
request"). A request that loses the race on the key's unique index waits for the winner's
commit, so the winner's job is there to answer with, as an upload's replay does.

The race is made deterministic: another transaction holds the key (an uncommitted UPDATE of
an existing job's key) while the request inserts its job, and commits once the request waits."""

from __future__ import annotations

import time
import uuid
from concurrent.futures import ThreadPoolExecutor

from sqlalchemy import text

from app.db import transaction
from tests.support.api import assert_problem, auth, submit, upload


def _someone_waits_on_a_lock() -> bool:
    with transaction() as s:
        return s.execute(text("SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' "
                              "AND datname = current_database()")).scalar_one() > 0


def _race(client, owner, ds_id: str, winner_id: str, key: str, params: dict):
    """Submit params with key while another transaction gives the key to winner_id; commit
    that transaction once the submission waits on it. Returns the submission's answer."""
    with ThreadPoolExecutor(1) as pool:
        with transaction() as s:
            s.execute(text("UPDATE jobs SET idempotency_key = :k WHERE id = :j"), {"k": key, "j": winner_id})
            answer = pool.submit(submit, client, owner, "errph", params, dataset_id=ds_id,
                                 idempotency_key=key)
            deadline = time.monotonic() + 30
            while not _someone_waits_on_a_lock():
                assert time.monotonic() < deadline and not answer.done(), answer.result().text
                time.sleep(0.02)
        return answer.result(timeout=30)


def test_a_submission_losing_the_race_for_its_key_answers_with_the_winners_job(client, owner):
    ds = upload(client, owner, b"c,n\nx,1\ny,2\nx,3\n", "idem.csv").json()
    first = submit(client, owner, "errph", {"p0": 0.5}, dataset_id=ds["id"], idempotency_key="k-first")
    assert first.status_code == 202, first.text
    key = f"k-{uuid.uuid4().hex}"
    r = _race(client, owner, ds["id"], first.json()["id"], key, {"p0": 0.5})
    assert r.status_code == 200, r.text  # a replay, as for a request that came after the commit
    assert r.json()["id"] == first.json()["id"]
    jobs = client.get("/v1/jobs", headers=auth(owner), params={"dataset_id": ds["id"]}).json()["items"]
    assert len(jobs) == 1  # the loser's own job was rolled back, and so was its debit
    budget = client.get(f"/v1/datasets/{ds['id']}/budget", headers=auth(owner)).json()
    assert [e["kind"] for e in budget["entries"]] == ["debit"]


def test_a_different_request_losing_the_race_for_its_key_is_told_so(client, owner):
    ds = upload(client, owner, b"c,n\nx,1\ny,2\nx,3\n", "idem.csv").json()
    first = submit(client, owner, "errph", {"p0": 0.5}, dataset_id=ds["id"])
    r = _race(client, owner, ds["id"], first.json()["id"], f"k-{uuid.uuid4().hex}", {"p0": 0.6})
    assert_problem(r, 409, "this Idempotency-Key was used for a different job request")
