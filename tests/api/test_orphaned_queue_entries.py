"""A queued job whose queue entry was lost is queued again by the workers' reaper: a worker that
took the entry while PostgreSQL went away could not claim the job, the queue recorded a failure,
and the job stayed 'queued' for ever (the outage test saw 1 of 32 jobs left so)."""

from __future__ import annotations

from sqlalchemy import text

from app.db import transaction
from app.worker.main import reap_stalled
from tests.support.api import auth, submit, upload


def _queue_entry(job_id: str) -> tuple[int, str, int]:
    with transaction() as s:
        row = s.execute(text("SELECT q.id, q.status::text, q.priority FROM jobs j "
                             "JOIN procrastinate_jobs q ON q.id = j.queue_job_id WHERE j.id = :j"),
                        {"j": job_id}).one()
    return row[0], row[1], row[2]


def _set_entry(entry: int, status: str, started_seconds_ago: float | None = None) -> None:
    with transaction() as s:
        s.execute(text("UPDATE procrastinate_jobs SET status = CAST(:st AS procrastinate_job_status) "
                       "WHERE id = :i"), {"st": status, "i": entry})
        if status == "doing":  # taken by a live worker (one without is the abandoned case)
            worker = s.execute(text("INSERT INTO procrastinate_workers DEFAULT VALUES RETURNING id")).scalar_one()
            s.execute(text("UPDATE procrastinate_jobs SET worker_id = :w WHERE id = :i"), {"w": worker, "i": entry})
        if started_seconds_ago is not None:  # the queue's trigger recorded the start: date it
            s.execute(text("UPDATE procrastinate_events SET at = now() - make_interval(secs => :a) "
                           "WHERE job_id = :i AND type = 'started'"), {"i": entry, "a": started_seconds_ago})


def test_a_queued_job_whose_entry_failed_or_hangs_unclaimed_is_queued_again(client, owner):
    ds = upload(client, owner, b"a,b\n1,x\n2,y\n3,x\n", "o.csv").json()
    failed, hanging, fresh = (submit(client, owner, "errph", {"p0": 0.5}, dataset_id=ds["id"]).json()["id"]
                              for _ in range(3))
    lost, _, _ = _queue_entry(failed)
    _set_entry(lost, "failed")  # taken, the claim failed, the queue recorded the failure
    stuck, _, _ = _queue_entry(hanging)
    _set_entry(stuck, "doing", started_seconds_ago=3600)  # taken an hour ago, never claimed
    taking, _, _ = _queue_entry(fresh)
    _set_entry(taking, "doing", started_seconds_ago=0)  # being taken now: left alone
    reap_stalled(stall_timeout_s=60)
    for job_id, old in ((failed, lost), (hanging, stuck)):
        entry, status, _ = _queue_entry(job_id)
        assert entry != old and status == "todo"
        assert client.get(f"/v1/jobs/{job_id}", headers=auth(owner)).json()["status"] == "queued"
    assert _entry_status(stuck) == "failed"  # the hanging entry is closed, not left 'doing'
    assert _queue_entry(fresh)[:2] == (taking, "doing")
    events = client.get("/v1/audit", headers=auth(owner), params={"action": "job.requeued"}).json()["items"]
    assert sorted(e["subject"] for e in events) == sorted([failed, hanging])
    assert {e["details"]["reason"] for e in events} == {"queue entry lost"}
    reap_stalled(stall_timeout_s=60)  # nothing more to do: no second entry
    assert len(client.get("/v1/audit", headers=auth(owner),
                          params={"action": "job.requeued"}).json()["items"]) == 2


def _entry_status(entry: int) -> str:
    with transaction() as s:
        return s.execute(text("SELECT status::text FROM procrastinate_jobs WHERE id = :i"),
                         {"i": entry}).scalar_one()
