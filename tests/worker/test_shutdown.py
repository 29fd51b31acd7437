"""A worker told to stop (SIGTERM) lets its running job finish within its grace period; a job
still running then is stopped and queued again at once, without using one of its attempts (it
used one and waited for the stall timeout before)."""

from __future__ import annotations

import os
import signal
import subprocess
import time

import pytest
from sqlalchemy import text

from app.db import transaction

from tests.support.api import auth, submit, upload, wait_job
from tests.support.workers import WorkerPool

GRACE_S = 3


@pytest.fixture(scope="module")
def worker_env():
    return {"count": 1, "VEIL_WORKER_SHUTDOWN_GRACE_S": str(GRACE_S)}


@pytest.fixture(scope="module")
def owner_and_dataset(client, make_key, workers):
    headers = make_key("owner")
    return headers, upload(client, headers, b"a,b\n1,x\n2,y\n", "s.csv").json()


def _stop(pool: WorkerPool, pid: int, *, twice: bool = False) -> int:
    pool.kill(pid, signal.SIGTERM)
    if twice:  # `veil serve` sends SIGTERM after a Ctrl-C reached the whole process group
        pool.kill(pid, signal.SIGTERM)
    proc = next(p for p in pool.procs if p.pid == pid)
    status = proc.wait(GRACE_S + 30)
    pool.procs.remove(proc)
    return status


def test_a_job_that_ends_within_the_grace_period_succeeds_on_its_attempt(client, workers, owner_and_dataset):
    headers, ds = owner_and_dataset
    job = submit(client, headers, "diag_sleep", {"seconds": 1.0}, dataset_id=ds["id"]).json()
    wait_job(client, headers, job["id"], until={"running"})
    pid = workers.pid_of_job(job["id"])
    with transaction() as s:  # its connections are named in pg_stat_activity
        names = s.execute(text("SELECT DISTINCT application_name FROM pg_stat_activity WHERE "
                               "application_name LIKE 'veil-%'")).scalars().all()
    assert "veil-worker" in names, names
    assert _stop(workers, pid, twice=True) == 0
    done = client.get(f"/v1/jobs/{job['id']}", headers=auth(headers)).json()
    assert done["status"] == "succeeded" and done["attempt"] == 1, done
    with transaction() as s:  # a clean exit leaves /readyz's count at once (the row aged out in 10 s)
        assert s.execute(text("SELECT count(*) FROM worker_heartbeats WHERE pid = :p"), {"p": pid}).scalar_one() == 0


def test_a_job_still_running_after_the_grace_period_is_queued_again_without_using_an_attempt(
        client, workers, owner_and_dataset, tmp_path):
    headers, ds = owner_and_dataset
    _one_idle_worker(workers)  # another would take the job back
    # it sleeps until the test lets it end (GRACE_S + 4 s left 4 s for the steps up to the SIGTERM)
    done_file = str(tmp_path / "job-may-end")
    job = submit(client, headers, "diag_sleep", {"seconds": 60, "until_file": done_file},
                 dataset_id=ds["id"]).json()
    wait_job(client, headers, job["id"], until={"running"})
    assert _stop(workers, workers.pid_of_job(job["id"])) == 0
    stopped = client.get(f"/v1/jobs/{job['id']}", headers=auth(headers)).json()
    assert stopped["status"] == "queued" and stopped["attempt"] == 1, stopped
    assert "worker shutdown" in stopped["stage"]
    events = client.get("/v1/audit", params={"action": "job.requeued"}, headers=auth(headers)).json()["items"]
    assert [e["details"] for e in events if e["subject"] == job["id"]] == [
        {"attempt": 1, "reason": "worker shutdown"}]

    open(done_file, "w").close()
    workers.add()  # the next worker takes it at once (no stall timeout to wait for)
    done = wait_job(client, headers, job["id"], timeout=60)
    assert done["status"] == "succeeded" and done["attempt"] == 2, done
    with transaction() as s:  # the stopped attempt was given back
        assert s.execute(text("SELECT max_attempts FROM jobs WHERE id = :j"), {"j": job["id"]}).scalar_one() == 4


def _one_idle_worker(workers: WorkerPool) -> subprocess.Popen:
    """Exactly one worker, idle and leading its own process group (as `veil serve` is under
    systemd or `kill -- -PGID`: a stop signal to the group reaches the worker, its forkserver
    and the job's process). The one the test before left when it is so (a start costs ~10 s of
    CPU), else a new one: no other worker may take the job."""
    workers.own_session = True
    (proc, *others) = workers.procs or [None]
    if (proc is None or others or proc.poll() is not None or os.getpgid(proc.pid) != proc.pid
            or workers.busy() or workers.heartbeating() != {proc.pid}):
        workers.stop()
        workers.add()
        workers.wait_ready()
    return workers.procs[0]


@pytest.mark.parametrize("seconds, status", [(1.5, "succeeded"), (60, "queued")])
def test_sigterm_to_the_whole_process_group_keeps_the_grace_period(client, workers, owner_and_dataset,
                                                                   seconds, status, tmp_path):
    """SIGTERM to the worker's process group (systemd's default KillMode, `kill -- -PGID`) also
    reached the forkserver the job's process comes from: it died, the worker read the job's
    exit code as 255 and recorded it `crashed` at once (an attempt used, retried or failed),
    while the job's process ran on unseen (operator acceptance check)."""
    headers, ds = owner_and_dataset
    proc = _one_idle_worker(workers)
    # the 60-second job runs until the grace period is over (GRACE_S + 4 s left 4 s for the steps
    # up to the SIGTERM), then its second attempt ends at once
    done_file = str(tmp_path / "job-may-end")
    job = submit(client, headers, "diag_sleep", {"seconds": seconds, "until_file": done_file},
                 dataset_id=ds["id"]).json()
    wait_job(client, headers, job["id"], until={"running"})
    time.sleep(0.3)
    os.killpg(proc.pid, signal.SIGTERM)
    assert proc.wait(GRACE_S + 30) == 0
    workers.procs.remove(proc)
    stopped = client.get(f"/v1/jobs/{job['id']}", headers=auth(headers)).json()
    assert stopped["status"] == status and stopped["attempt"] == 1, stopped
    events = client.get("/v1/audit", params={"action": "job.requeued"}, headers=auth(headers)).json()["items"]
    assert [e["details"] for e in events if e["subject"] == job["id"]] == (
        [] if status == "succeeded" else [{"attempt": 1, "reason": "worker shutdown"}])
    open(done_file, "w").close()
    workers.add()
    workers.wait_ready()
    assert wait_job(client, headers, job["id"], timeout=60)["status"] == "succeeded"


def test_a_heartbeat_the_database_does_not_answer_leaves_the_job_running(monkeypatch):
    """One failed heartbeat killed the job's process and lost its work; the job then waited for
    the stall timeout and used an attempt (topology acceptance check, PostgreSQL restarted)."""
    from contextlib import contextmanager

    from sqlalchemy.exc import OperationalError

    from app.worker import runner

    @contextmanager
    def away():
        raise OperationalError("UPDATE jobs", {}, Exception("server closed the connection"))
        yield

    monkeypatch.setattr(runner, "transaction", away)
    assert runner._beat({"id": "j", "attempt": 1}, 0.5, "running") is False  # not None: not fenced


def test_storing_an_outcome_is_retried_while_the_database_is_away(monkeypatch):
    """A long job's result was lost to a blip at its final commit (then retried from scratch
    after the stall timeout); the commit is now retried for up to that timeout."""
    from sqlalchemy.exc import OperationalError

    from app.worker import runner

    calls = []

    def finish(job, inputs, outcome):
        calls.append(1)
        if len(calls) < 3:
            raise OperationalError("COMMIT", {}, Exception("server closed the connection"))
        return None, "succeeded"

    monkeypatch.setattr(runner, "_finish", finish)
    monkeypatch.setattr(runner.time, "sleep", lambda s: None)
    assert runner._finish_when_the_database_answers({"id": "j", "attempt": 1}, {}, {}) == (None, "succeeded")
    assert len(calls) == 3


def test_the_workers_heartbeat_says_why_it_failed(monkeypatch, caplog):
    """It logged only the exception's class ("OperationalError"): not whether the database
    refused, went away or timed out, and a defect in the reaping looked like an outage."""
    import threading

    from sqlalchemy.exc import OperationalError

    from app.worker import main

    stop = threading.Event()
    import contextlib

    import psycopg

    errors = iter([OperationalError("SELECT 1", {"p": 1}, Exception("connection refused\nIs it running?")),
                   psycopg.OperationalError("server closed the connection unexpectedly"),  # the reaper's raw cursor
                   KeyError("attempt")])

    def beat(*args):
        error = next(errors, None)
        if error is None:
            stop.set()
            return
        raise error

    monkeypatch.setattr(main, "_stop_if_schema_changed", lambda: None)
    monkeypatch.setattr(main.ops_repo, "heartbeat", beat)
    monkeypatch.setattr(main, "reap_stalled", lambda timeout: None)
    monkeypatch.setattr(main, "transaction", contextlib.nullcontext)  # no database in this test
    monkeypatch.setattr(main.queue, "prune_finished", lambda session, age: None)
    monkeypatch.setattr(main.ops_repo, "forget_silent_workers", lambda session, age: None)
    monkeypatch.setattr(main, "get_settings", lambda: type("S", (), {"heartbeat_interval_s": 0,
                                                                      "stall_timeout_s": 1})())
    with caplog.at_level("WARNING", logger="veil.worker"):
        main.beat_and_reap(stop)
    outage, raw, defect = [r for r in caplog.records if r.name == "veil.worker"]
    assert outage.getMessage() == "heartbeat failed: OperationalError: connection refused"
    assert raw.getMessage() == "heartbeat failed: OperationalError: server closed the connection unexpectedly"
    assert defect.getMessage() == "heartbeat failed" and defect.exc_info[0] is KeyError
