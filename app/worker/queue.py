"""The job queue: procrastinate on the same PostgreSQL.

The API defers a task inside the request's own transaction (the psycopg connection under the
SQLAlchemy session), so a rolled-back submission leaves no queue entry behind.
"""

from __future__ import annotations

import uuid
from functools import lru_cache

import procrastinate
from procrastinate import sql
from sqlalchemy import text
from sqlalchemy.orm import Session

from app.db import database_url, to_libpq_conninfo
from app.jobs import repository as jobs_repo

TASK_NAME = "veil.run_job"
QUEUE = "jobs"
# procrastinate keeps every entry it ran, and its events, for ever; the jobs table is a job's
# record, so the workers delete an entry (its events with it) this long after it finished
FINISHED_ENTRY_RETENTION_S = 3600.0
PRUNE_INTERVAL_S = 60.0
PRUNE_BATCH = 10_000


def _register(app: procrastinate.App) -> procrastinate.App:
    @app.task(name=TASK_NAME, queue=QUEUE, pass_context=True)
    def run_job(context: procrastinate.JobContext, job_id: str) -> None:
        from app.worker.runner import execute  # the heavy imports happen in the worker only

        # procrastinate asks a synchronous task to abort by this flag only: when the worker's
        # shutdown grace period is over (we never abort entries otherwise; cancelling a job is
        # our own `cancel_requested`)
        execute(uuid.UUID(job_id), shutting_down=context.should_abort)

    return app


def conninfo() -> str:
    """The database of DATABASE_URL as the SQLAlchemy engine reads it."""
    return to_libpq_conninfo(database_url())


@lru_cache
def defer_app() -> procrastinate.App:
    return _register(procrastinate.App(connector=procrastinate.SyncPsycopgConnector(conninfo=conninfo())))


def worker_app() -> procrastinate.App:
    return _register(procrastinate.App(connector=procrastinate.PsycopgConnector(conninfo=conninfo())))


def _driver_connection(session: Session):
    return session.connection().connection.driver_connection


def fair_priority(active_others: int, lowest_waiting: int | None) -> int:
    """Fair queueing between tenants on procrastinate's priority (a worker takes the highest
    priority, then the oldest entry). A job goes behind as many of its tenant's jobs as are
    active, so each tenant's n-th job competes with the other tenants' n-th, and one tenant's
    backlog never holds the others back; and never ahead of its own tenant's waiting entries
    (first in, first out within a tenant). Bounded by the tenant's active jobs (the cap)."""
    priority = -active_others
    return priority if lowest_waiting is None else min(priority, lowest_waiting)


def enqueue(session: Session, job_id: uuid.UUID, tenant: str,
            standing: tuple[int, int | None] | None = None) -> None:
    """Queue a run of the job (already queued in the jobs table, so counted as active) in the
    session's transaction at its fair priority. ``standing`` is the tenant's
    ``jobs_repo.queue_standing`` when the caller has just read it."""
    active, lowest_waiting = standing or jobs_repo.queue_standing(session, tenant, job_id)
    priority = fair_priority(active - 1, lowest_waiting)
    jobs_repo.set_queue_entry(session, job_id, defer(session, job_id, priority=priority), priority)


def defer(session: Session, job_id: uuid.UUID, priority: int = 0) -> int:
    """Queue a run of the job in the session's transaction; returns the queue's job id. Jobs
    are queued with ``enqueue``; this alone is a (re-)delivery, as the fault tests make one."""
    task = defer_app().tasks[TASK_NAME].configure(connection=_driver_connection(session),
                                                  priority=priority)
    return task.defer(job_id=str(job_id))


def cancel_queued(session: Session, queue_job_id: int) -> None:
    defer_app().job_manager.cancel_job_by_id(queue_job_id, connection=_driver_connection(session))


def fail_abandoned(session: Session, stalled_after_s: float) -> list[int]:
    """Queue entries left ``doing`` by a worker process that died (its queue heartbeat older than
    ``stalled_after_s``, or its worker row pruned) are marked failed, with procrastinate's own
    queries, as its docs advise for stalled jobs. The jobs table is the truth — ``reap_stalled``
    requeues or fails the job itself — this keeps the queue's view from showing ghosts.
    Serialized by a transaction-scoped advisory lock: two workers never finish one entry twice."""
    conn = _driver_connection(session)
    with conn.cursor() as cur:
        cur.execute("SELECT pg_try_advisory_xact_lock(hashtext('veil.fail_abandoned'))")
        if not cur.fetchone()[0]:
            return []  # another worker is doing it now
        cur.execute(sql.queries["select_stalled_jobs_by_heartbeat"],
                    {"queue": QUEUE, "task_name": TASK_NAME, "seconds_since_heartbeat": stalled_after_s})
        ids = [row[0] for row in cur.fetchall()]
        for queue_job_id in ids:
            finish_entry(session, queue_job_id, "failed")
    return ids


def prune_finished(session: Session, older_than_s: float, batch: int = PRUNE_BATCH) -> int:
    """Delete the queue entries finished (succeeded, failed, cancelled, aborted) more than
    ``older_than_s`` ago — their last event older — with their events (ON DELETE CASCADE), at
    most ``batch`` at a time. A queued job whose entry is gone is queued again by the reaper
    (``jobs_repo.orphaned_queued``), as one whose entry finished. One worker at a time."""
    if not session.execute(text("SELECT pg_try_advisory_xact_lock(hashtext('veil.prune_queue'))")).scalar_one():
        return 0
    return session.execute(text(
        "DELETE FROM procrastinate_jobs WHERE id IN ("
        "  SELECT q.id FROM procrastinate_jobs q "
        "  WHERE q.queue_name = :queue AND q.status IN ('succeeded', 'failed', 'cancelled', 'aborted') "
        "  AND NOT EXISTS (SELECT 1 FROM procrastinate_events e WHERE e.job_id = q.id "
        "                  AND e.at > now() - make_interval(secs => :s)) "
        "  ORDER BY q.id LIMIT :batch)"), {"queue": QUEUE, "s": older_than_s, "batch": batch}).rowcount


def finish_entry(session: Session, queue_job_id: int, status: str) -> None:
    """Mark a queue entry finished with procrastinate's own query."""
    with _driver_connection(session).cursor() as cur:
        cur.execute(sql.queries["finish_job"], {"job_id": queue_job_id, "status": status, "delete_job": False})
