"""A worker process: takes jobs from the queue one at a time (concurrency 1; run more
processes to scale), heartbeats, and reaps stalled jobs of dead workers."""

from __future__ import annotations

import logging
import os
import signal
import socket
import threading
import time

import psycopg
from procrastinate.exceptions import ConnectorException

from app.audit.service import record_job
from app.config import get_settings
from app.db import DATABASE_AWAY, get_engine, transaction
from app.jobs import repository as jobs_repo
from app.migrate import schema_mismatch
from app.ops import repository as ops_repo
from app.version import code_version
from app.worker import queue, runner

log = logging.getLogger("veil.worker")


def beat_and_reap(stop: threading.Event) -> None:
    settings = get_settings()
    next_prune = 0.0
    while not stop.is_set():
        try:
            _stop_if_schema_changed()
            with transaction() as session:
                ops_repo.heartbeat(session, runner.WORKER_ID, socket.gethostname(), os.getpid())
            reap_stalled(settings.stall_timeout_s)
            if time.monotonic() >= next_prune:  # finished queue entries: the jobs table keeps the record
                with transaction() as session:
                    queue.prune_finished(session, queue.FINISHED_ENTRY_RETENTION_S)
                    ops_repo.forget_silent_workers(session, queue.FINISHED_ENTRY_RETENTION_S)
                next_prune = time.monotonic() + queue.PRUNE_INTERVAL_S
        except _DATABASE_AWAY as exc:  # the database briefly away; keep beating
            log.warning("heartbeat failed: %s: %s", type(exc).__name__, _first_line(exc))
        except Exception:  # a defect in the reaping: its traceback, and keep beating
            log.exception("heartbeat failed")
        stop.wait(settings.heartbeat_interval_s)


# what the database being away raises here: through SQLAlchemy (the heartbeat, the jobs),
# psycopg's own (reap_stalled's raw cursor), procrastinate's (re-queueing through its connector)
_DATABASE_AWAY = (*DATABASE_AWAY, psycopg.OperationalError, psycopg.InterfaceError, ConnectorException)


def _first_line(exc: BaseException) -> str:
    """The driver's reason ("connection refused", "terminating connection …"), without the SQL
    and parameters SQLAlchemy appends to its message."""
    text = str(getattr(exc, "orig", None) or exc).strip()
    return text.splitlines()[0][:300] if text else ""


_schema_changed = threading.Event()


def _stop_if_schema_changed() -> None:
    """The database migrated under this worker (an upgrade that did not stop the old workers
    first): it stops as on SIGTERM — the running job has its grace period, then is queued again
    — and exits with status 3. An old worker took jobs against a newer schema and failed them,
    charged, with internal errors (the upgrade acceptance check)."""
    if _schema_changed.is_set():
        return
    problem = schema_mismatch(get_engine())
    if problem is not None:
        _schema_changed.set()
        log.error("%s; this worker stops taking jobs and exits", problem)
        os.kill(os.getpid(), signal.SIGTERM)


def reap_stalled(stall_timeout_s: float) -> None:
    """Jobs whose attempt stopped heartbeating: requeue (a new, fenced attempt) while
    attempts remain, else fail them; queued jobs whose queue entry was lost: queue them again.
    Safe to run in every worker at once."""
    with transaction() as session:
        for job in jobs_repo.requeue_stalled(session, stall_timeout_s):
            queue.enqueue(session, job["id"], job["tenant"])
            record_job(session, job, actor="worker", action="job.requeued",
                       details={"attempt": job["attempt"], "reason": "stalled"})
        for job in jobs_repo.orphaned_queued(session, stall_timeout_s):
            if job["queue_status"] == "doing":
                queue.finish_entry(session, job["queue_job_id"], "failed")
            queue.enqueue(session, job["id"], job["tenant"])
            record_job(session, job, actor="worker", action="job.requeued",
                       details={"attempt": job["attempt"], "reason": "queue entry lost"})
        for job in jobs_repo.fail_stalled(session, stall_timeout_s):
            record_job(session, job, actor="worker", action="job.failed",
                       details={"attempt": job["attempt"], "error": "stalled"})
        queue.fail_abandoned(session, stall_timeout_s)


def _handle_stop_signals_after_the_first() -> None:
    """procrastinate stops on the first SIGTERM or SIGINT and then puts back the handlers it
    found (these): a second SIGTERM is ignored — `veil serve` sends one after a Ctrl-C already
    reached the whole process group, and it must not cut the running job's grace period; a
    second SIGINT (Ctrl-C twice on `veil worker`) stops at once."""
    def ignore_term(signum, frame) -> None:
        log.info("already stopping: the running job has up to %g s to finish",
                 get_settings().worker_shutdown_grace_s)

    signal.signal(signal.SIGTERM, ignore_term)


def lower_priority(increment: int) -> None:
    """Run this worker (and the job processes it forks) below the API's CPU priority: a
    backlog of heavy jobs then slows the jobs, not the requests."""
    if increment > 0:
        try:
            os.nice(increment)
        except OSError as exc:  # not permitted in some sandboxes: run at normal priority
            log.warning("could not lower the worker's priority: %s", exc)


def run() -> None:
    settings = get_settings()
    problem = schema_mismatch(get_engine())
    if problem is not None:  # before taking any job
        log.error("%s; the worker does not start", problem)
        raise SystemExit(3)
    from app.ops import restore

    with transaction() as session:  # a restored database: its jobs in flight at the backup are not run
        if (found := restore.check(session)) is not None:
            log.warning("the database was restored from a backup (its last event at %s); ε debits are "
                        "refused until `veil restore-accept`", found["backup_last_event"]["at"])
    runner.warm_up()  # before the first heartbeat: a worker counts as ready once it can take jobs
    stop = threading.Event()
    beat = threading.Thread(target=beat_and_reap, args=(stop,), daemon=True, name="heartbeat")
    beat.start()
    app = queue.worker_app()
    # read now, not at the first release: the checkout may have moved on by then
    log.info("worker %s starting (code %s)", runner.WORKER_ID, code_version())
    _handle_stop_signals_after_the_first()
    try:
        # the queue's own worker heartbeat on our schedule: fail_abandoned reads it with our
        # stall timeout, so a live worker must beat well inside it
        app.run_worker(queues=[queue.QUEUE], concurrency=1, install_signal_handlers=True,
                       name=runner.WORKER_ID, update_heartbeat_interval=settings.heartbeat_interval_s,
                       stalled_worker_timeout=settings.stall_timeout_s,
                       shutdown_graceful_timeout=settings.worker_shutdown_grace_s)
    except ConnectorException as exc:
        # PostgreSQL went away under the queue's own loop (it does not reconnect): exit in one
        # line, not a traceback; `veil serve` (or the container's restart policy) starts a new
        # worker, and a job this one held is reaped as stalled
        log.error("queue connection lost (%s): the worker exits to be restarted",
                  type(exc.__cause__ or exc).__name__)
        raise SystemExit(1) from None
    finally:
        stop.set()
        beat.join(10)  # its last beat must not bring the row back
        try:
            with transaction() as session:
                ops_repo.forget_worker(session, runner.WORKER_ID)
        except Exception as exc:  # the database is away: the row ages out instead
            log.warning("could not remove this worker's heartbeat: %s", type(exc).__name__)
    if _schema_changed.is_set():
        raise SystemExit(3)
