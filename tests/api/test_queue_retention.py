"""Queue entries of finished jobs do not pile up. procrastinate keeps every entry it ran, with
its events (deferred, started, succeeded: three rows a job), for ever; the jobs table is the
record of a job, so the entries only grew: a soak's 242 jobs left all 242 entries and 724
events. The workers now delete the entries finished more than
``queue.FINISHED_ENTRY_RETENTION_S`` ago (their events go with them), and the heartbeat rows
of workers gone as long."""

from __future__ import annotations

import threading

from sqlalchemy import text

from app.db import transaction
from app.ops import repository as ops_repo
from app.worker import main as worker_main
from app.worker import queue, runner
from tests.support.api import submit, upload


def _entry(job_id: str) -> int:
    with transaction() as s:
        return s.execute(text("SELECT queue_job_id FROM jobs WHERE id = :j"), {"j": job_id}).scalar_one()


def _finish(entry: int, status: str, seconds_ago: float) -> None:
    """The entry ran and ended ``seconds_ago`` (its events dated so)."""
    with transaction() as s:
        s.execute(text("UPDATE procrastinate_jobs SET status = 'doing' WHERE id = :i"), {"i": entry})
        s.execute(text("UPDATE procrastinate_jobs SET status = CAST(:st AS procrastinate_job_status) "
                       "WHERE id = :i"), {"st": status, "i": entry})
        s.execute(text("UPDATE procrastinate_events SET at = now() - make_interval(secs => :a) "
                       "WHERE job_id = :i"), {"i": entry, "a": seconds_ago})


def _rows(entry: int) -> tuple[int, int]:
    with transaction() as s:
        return (s.execute(text("SELECT count(*) FROM procrastinate_jobs WHERE id = :i"), {"i": entry}).scalar_one(),
                s.execute(text("SELECT count(*) FROM procrastinate_events WHERE job_id = :i"),
                          {"i": entry}).scalar_one())


def _jobs(client, owner, n: int) -> list[str]:
    ds = upload(client, owner, b"a,b\n1,x\n2,y\n3,x\n", "q.csv").json()
    return [submit(client, owner, "errph", {"p0": 0.5}, dataset_id=ds["id"]).json()["id"] for _ in range(n)]


class _OneBeat(threading.Event):
    """A stop event that lets beat_and_reap run one pass."""
    def __init__(self) -> None:
        super().__init__()
        self.checks = 0

    def is_set(self) -> bool:
        self.checks += 1
        return self.checks > 1

    def wait(self, timeout=None) -> bool:
        return True


def _one_beat() -> None:
    """One pass of a worker's heartbeat loop (heartbeat, reaping, pruning) from this process."""
    try:
        worker_main.beat_and_reap(_OneBeat())
    finally:
        with transaction() as s:  # this test is no worker: /readyz must not count it
            ops_repo.forget_worker(s, runner.WORKER_ID)


def test_entries_finished_longer_ago_than_the_retention_are_deleted_with_their_events(client, owner):
    old_ok, old_failed, old_cancelled, recent, waiting, running = (_entry(j) for j in _jobs(client, owner, 6))
    retention = queue.FINISHED_ENTRY_RETENTION_S
    _finish(old_ok, "succeeded", retention + 60)
    _finish(old_failed, "failed", retention + 60)
    with transaction() as s:
        s.execute(text("UPDATE procrastinate_jobs SET status = 'cancelled' WHERE id = :i"), {"i": old_cancelled})
        s.execute(text("UPDATE procrastinate_events SET at = now() - make_interval(secs => :a) "
                       "WHERE job_id = :i"), {"i": old_cancelled, "a": retention + 60})
    _finish(recent, "succeeded", retention / 2)
    with transaction() as s:  # deferred long ago, never taken: waiting, whatever its age
        s.execute(text("UPDATE procrastinate_events SET at = now() - make_interval(secs => :a) "
                       "WHERE job_id = :i"), {"i": waiting, "a": retention + 60})
    with transaction() as s:  # taken long ago and still running (a job of hours): its worker holds it
        s.execute(text("UPDATE procrastinate_jobs SET status = 'doing' WHERE id = :i"), {"i": running})
        s.execute(text("UPDATE procrastinate_events SET at = now() - make_interval(secs => :a) "
                       "WHERE job_id = :i"), {"i": running, "a": retention + 60})
    with transaction() as s:
        queue.prune_finished(s, retention)
    for gone in (old_ok, old_failed, old_cancelled):
        assert _rows(gone) == (0, 0)
    assert _rows(recent)[0] == 1 and _rows(waiting)[0] == 1 and _rows(running)[0] == 1


def test_the_workers_heartbeat_loop_prunes_the_queue(client, owner, monkeypatch):
    entry = _entry(_jobs(client, owner, 1)[0])
    _finish(entry, "succeeded", queue.FINISHED_ENTRY_RETENTION_S + 60)

    _one_beat()
    assert _rows(entry) == (0, 0)


def test_the_heartbeat_rows_of_workers_gone_longer_than_the_retention_are_deleted(client):
    """A worker killed (SIGKILL, the OOM killer, a lost host) cannot remove its row: each such
    death left one for ever (a soak's SIGKILLed worker: `vm:4157` beside its successor's)."""
    with transaction() as s:
        s.execute(text("INSERT INTO worker_heartbeats (worker_id, host, pid, seen_at) VALUES "
                       "('gone:1', 'gone', 1, now() - make_interval(secs => :old)), "
                       "('quiet:2', 'quiet', 2, now() - make_interval(secs => :recent))"),
                  {"old": queue.FINISHED_ENTRY_RETENTION_S + 60, "recent": 60})

    try:
        _one_beat()
        with transaction() as s:
            left = set(s.execute(text("SELECT worker_id FROM worker_heartbeats WHERE worker_id IN "
                                      "('gone:1', 'quiet:2')")).scalars())
    finally:
        with transaction() as s:
            s.execute(text("DELETE FROM worker_heartbeats WHERE worker_id IN ('gone:1', 'quiet:2')"))
    assert left == {"quiet:2"}
