"""Fair queueing between tenants: one tenant's backlog does not hold another tenant's job back,
and each tenant's own jobs still start in the order they were submitted."""

from __future__ import annotations

from sqlalchemy import text

from app.db import transaction
from app.worker.queue import fair_priority
from tests.support.api import submit, upload, wait_job
from tests.support.workers import WorkerPool, drain_leftovers

SMALL = b"a,b\n" + b"".join(f"x{i % 3},y{i % 2}\n".encode() for i in range(60))


def test_fair_priority_interleaves_tenants_and_keeps_each_tenants_order():
    assert fair_priority(0, None) == 0  # nothing else active: the front
    assert fair_priority(3, None) == -3  # behind the tenant's three others
    # some of the tenant's jobs finished, but it still has entries waiting at -5: never ahead of them
    assert fair_priority(2, -5) == -5
    assert fair_priority(7, -5) == -7


def test_a_tenants_backlog_does_not_hold_back_another_tenants_jobs(client, make_key, database):
    drain_leftovers()  # other tests' queued jobs would run first
    heavy, light = make_key("owner"), make_key("owner")
    submitted = {}
    for name, headers, count in (("heavy", heavy, 4), ("light", light, 2)):
        ds = upload(client, headers, SMALL).json()
        for _ in range(count):
            job = submit(client, headers, "errph", {"p0": 0.5}, dataset_id=ds["id"])
            assert job.status_code == 202, job.text
            submitted[job.json()["id"]] = (name, headers)
    pool = WorkerPool(1, {})  # one worker: jobs start strictly one after another
    try:
        pool.wait_ready()
        for job_id, (_, headers) in submitted.items():
            assert wait_job(client, headers, job_id)["status"] == "succeeded"
    finally:
        pool.stop()
    with transaction() as s:
        order = s.execute(text("SELECT id::text FROM jobs WHERE id = ANY(CAST(:ids AS uuid[])) "
                               "ORDER BY started_at"), {"ids": list(submitted)}).scalars().all()
    # first in, first out would run heavy ×4 then light ×2; fair queueing alternates while both wait
    assert [submitted[j][0] for j in order] == ["heavy", "light", "heavy", "light", "heavy", "heavy"]
    heavy_jobs = [j for j in submitted if submitted[j][0] == "heavy"]
    assert [j for j in order if submitted[j][0] == "heavy"] == heavy_jobs  # submission order kept


def test_a_new_job_never_goes_ahead_of_its_tenants_waiting_jobs(client, make_key, database):
    """Four queued jobs sit at priorities 0, -1, -2, -3; once the first two have finished, a new
    one counts two others (-2) but goes to -3, behind the fourth, not ahead of it."""
    owner = make_key("owner")
    ds = upload(client, owner, SMALL).json()
    ids = [submit(client, owner, "errph", {"p0": 0.5}, dataset_id=ds["id"]).json()["id"] for _ in range(4)]
    with transaction() as s:
        s.execute(text("UPDATE jobs SET status = 'succeeded', finished_at = now() "
                       "WHERE id = ANY(CAST(:ids AS uuid[]))"), {"ids": ids[:2]})
    ids.append(submit(client, owner, "errph", {"p0": 0.5}, dataset_id=ds["id"]).json()["id"])
    with transaction() as s:
        rows = dict(s.execute(text("SELECT j.id::text, q.priority FROM jobs j JOIN procrastinate_jobs q "
                                   "ON q.id = j.queue_job_id WHERE j.id = ANY(CAST(:ids AS uuid[]))"),
                              {"ids": ids}).all())
    assert [rows[i] for i in ids] == [0, -1, -2, -3, -3]  # ties go by entry id: after the fourth
