"""All SQL about jobs, including the worker's fenced state transitions."""

from __future__ import annotations

import uuid
from collections import Counter
from datetime import datetime
from typing import Any

from sqlalchemy import bindparam, func, insert, literal, null, select, text, union_all, update
from sqlalchemy.dialects.postgresql import UUID
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.orm import Session

from app.pagination import newest_first, where_given
from app.sql import any_of
from app.tables import budget_entries, job_outcomes, jobs, models, releases, reports

ACTIVE = ("queued", "running")
# Upper bounds (seconds) of the run-time buckets counted in job_outcomes; a finish whose run took
# longer counts under +Infinity, one that never ran (cancelled while queued) under -Infinity.
DURATION_BOUNDS = (0.1, 0.5, 1, 2, 5, 10, 30, 60, 300, 900)


def insert_job(session: Session, **values: Any) -> None:
    session.execute(insert(jobs).values(**values))


_GET = select(jobs).where(jobs.c.id == bindparam("id"))  # built once: every job read runs it
_GET_OF_TENANT = _GET.where(jobs.c.tenant == bindparam("tenant"))


def get(session: Session, job_id: uuid.UUID, tenant: str | None = None, *, for_update: bool = False):
    q = _GET if tenant is None else _GET_OF_TENANT
    if for_update:
        q = q.with_for_update()
    params = {"id": job_id} if tenant is None else {"id": job_id, "tenant": tenant}
    return session.execute(q, params).mappings().first()


def by_idempotency_key(session: Session, tenant: str, key: str):
    return session.execute(select(jobs).where(jobs.c.tenant == tenant,
                                              jobs.c.idempotency_key == key)).mappings().first()


def lock_tenant_submissions(session: Session, tenant: str) -> None:
    """Serialize this tenant's job submissions until the transaction ends, so that the
    active-job count read next cannot be passed by a concurrent submission."""
    session.execute(text("SELECT pg_advisory_xact_lock(hashtextextended(:key, 0))"),
                    {"key": f"veil.tenant-jobs:{tenant}"})


# The tenant's active jobs (the cap counts them) and the lowest queue priority among its other
# waiting jobs (fair queueing): two index lookups (ix_jobs_tenant_active, ix_jobs_tenant_waiting).
_STANDING = text("""
    SELECT (SELECT count(*) FROM jobs WHERE tenant = :tenant AND status IN ('queued', 'running')) AS active,
           (SELECT min(queue_priority) FROM jobs WHERE tenant = :tenant AND status = 'queued'
            AND id <> :job) AS lowest_waiting""")


def queue_standing(session: Session, tenant: str, job_id: uuid.UUID) -> tuple[int, int | None]:
    """(active jobs of the tenant, the lowest priority of its waiting jobs but ``job_id``)."""
    row = session.execute(_STANDING, {"tenant": tenant, "job": job_id}).one()
    return row.active, row.lowest_waiting


def count_active_on_raw_data(session: Session, dataset_id: uuid.UUID) -> int:
    """Queued or running jobs that read (or will read) the dataset's own data and schema."""
    return session.execute(select(func.count()).select_from(jobs).where(
        jobs.c.dataset_id == dataset_id, jobs.c.release_id.is_(None),
        jobs.c.status.in_(ACTIVE))).scalar_one()


def list_page(session: Session, *, tenant: str | None, status: str | None, method: str | None,
              dataset_id: uuid.UUID | None, after: tuple[datetime, uuid.UUID] | None, limit: int,
              release_id: uuid.UUID | None = None):
    q = where_given(select(jobs), jobs, tenant=tenant, status=status, method=method,
                    dataset_id=dataset_id, release_id=release_id)
    return [dict(r) for r in session.execute(newest_first(q, jobs, after, limit)).mappings()]


def results_of(session: Session, job_ids: list[uuid.UUID]) -> dict[uuid.UUID, dict[str, Any]]:
    """Per job, what it produced (``result``: release ids, report id, model id) and whether the
    ledger gave its ε back (``epsilon_refunded``: as many refunds as debits, and one at least)."""
    out: dict[uuid.UUID, dict[str, Any]] = {
        j: {"result": {"release_ids": [], "report_id": None, "model_id": None}, "ledger": Counter()}
        for j in job_ids}
    if job_ids:
        for kind, job_id, object_id in session.execute(_RESULTS, {"ids": job_ids}):
            if kind in ("debit", "refund", "reconciliation"):  # a reconciliation spends as a debit does
                out[job_id]["ledger"]["refund" if kind == "refund" else "debit"] += 1
            elif kind == "release":
                out[job_id]["result"]["release_ids"].append(object_id)
            else:
                out[job_id]["result"][f"{kind}_id"] = object_id
    for entry in out.values():
        ledger = entry.pop("ledger")
        entry["epsilon_refunded"] = 0 < ledger["debit"] <= ledger["refund"]
    return out


# One round trip for the three kinds and the job's ledger entries (every job read pays it; the
# load test showed it); built once, with the ids as one array parameter (an IN list is
# re-rendered for every call).
_RESULTS = union_all(*[
    select(literal(kind).label("kind"), table.c.job_id, table.c.id).where(table.c.job_id == any_of("ids"))
    for kind, table in (("release", releases), ("report", reports), ("model", models))],
    select(budget_entries.c.kind, budget_entries.c.job_id, null().cast(UUID(as_uuid=True)))
    .where(budget_entries.c.job_id == any_of("ids")))


def set_queue_entry(session: Session, job_id: uuid.UUID, queue_job_id: int, priority: int) -> None:
    session.execute(update(jobs).where(jobs.c.id == job_id).values(queue_job_id=queue_job_id,
                                                                    queue_priority=priority))


# ------------------------------------------------------------------ worker transitions
def claim(session: Session, job_id: uuid.UUID, worker_id: str):
    """queued → running, starting a new attempt. None if the job is not queued (cancelled,
    already taken, finished): the delivery is then a no-op."""
    return session.execute(
        update(jobs).where(jobs.c.id == job_id, jobs.c.status == "queued")
        .values(status="running", attempt=jobs.c.attempt + 1, worker_id=worker_id,
                heartbeat_at=func.now(), started_at=func.coalesce(jobs.c.started_at, func.now()),
                stage="starting", progress=0.0)
        .returning(jobs)).mappings().first()


def heartbeat(session: Session, job_id: uuid.UUID, attempt: int, progress: float, stage: str | None):
    """Refresh this attempt's heartbeat; returns cancel_requested, or None when the attempt
    has been fenced off (requeued or finished by someone else)."""
    row = session.execute(
        update(jobs).where(jobs.c.id == job_id, jobs.c.attempt == attempt, jobs.c.status == "running")
        .values(heartbeat_at=func.now(), progress=progress, stage=stage)
        .returning(jobs.c.cancel_requested)).first()
    return None if row is None else bool(row[0])


def lock_attempt(session: Session, job_id: uuid.UUID, attempt: int):
    """Lock the job row if this attempt still owns it (the fence for the final commit)."""
    return session.execute(
        select(jobs).where(jobs.c.id == job_id, jobs.c.attempt == attempt, jobs.c.status == "running")
        .with_for_update()).mappings().first()


def finish(session: Session, job_id: uuid.UUID, status: str, *, error: dict | None = None,
           stage: str | None = None) -> None:
    values: dict[str, Any] = {"status": status, "finished_at": func.now(), "error": error,
                              "heartbeat_at": None}
    if status == "succeeded":
        values["progress"] = 1.0
    if stage is not None:
        values["stage"] = stage
    count_outcomes(session, session.execute(
        update(jobs).where(jobs.c.id == job_id).values(**values).returning(*_OUTCOME)).all())


_OUTCOME = (jobs.c.method, jobs.c.status, jobs.c.started_at, jobs.c.finished_at)


def count_outcomes(session: Session, finished) -> None:
    """Count jobs that just reached a terminal state (rows of method, status, started_at,
    finished_at) in the same transaction as their transition, so a rollback uncounts them."""
    counts: dict[tuple[str, str, float], list[float]] = {}
    for method, status, started, ended in finished:
        ran = started is not None and ended is not None
        seconds = max((ended - started).total_seconds(), 0.0) if ran else 0.0
        le = next((b for b in DURATION_BOUNDS if seconds <= b), float("inf")) if ran else float("-inf")
        cell = counts.setdefault((method, status, float(le)), [0, 0.0])
        cell[0] += 1
        cell[1] += seconds
    if not counts:
        return
    # sorted: concurrent finishes lock the counter rows in one order (no deadlock)
    rows = [{"method": m, "status": st, "le": le, "jobs": n, "seconds": sec}
            for (m, st, le), (n, sec) in sorted(counts.items())]
    stmt = pg_insert(job_outcomes).values(rows)
    session.execute(stmt.on_conflict_do_update(
        index_elements=[job_outcomes.c.method, job_outcomes.c.status, job_outcomes.c.le],
        set_={"jobs": job_outcomes.c.jobs + stmt.excluded.jobs,
              "seconds": job_outcomes.c.seconds + stmt.excluded.seconds}))


def outcome_counts(session: Session) -> list[tuple[str, str, float, int, float]]:
    """Every (method, status, le, jobs, seconds) counted since the service began."""
    return [tuple(r) for r in session.execute(select(
        job_outcomes.c.method, job_outcomes.c.status, job_outcomes.c.le, job_outcomes.c.jobs,
        job_outcomes.c.seconds).order_by(job_outcomes.c.method, job_outcomes.c.status, job_outcomes.c.le))]


def note_randomness_drawn(session: Session, job_id: uuid.UUID) -> None:
    session.execute(update(jobs).where(jobs.c.id == job_id).values(randomness_drawn=True))


def requeue(session: Session, job_id: uuid.UUID, stage: str, *, give_back_attempt: bool = False) -> None:
    values: dict[str, Any] = {"status": "queued", "worker_id": None, "heartbeat_at": None, "stage": stage}
    if give_back_attempt:
        values["max_attempts"] = jobs.c.max_attempts + 1
    session.execute(update(jobs).where(jobs.c.id == job_id).values(**values))


def cancel_if_queued(session: Session, job_id: uuid.UUID):
    row = session.execute(
        update(jobs).where(jobs.c.id == job_id, jobs.c.status == "queued")
        .values(status="cancelled", finished_at=func.now(), stage="cancelled before it ran",
                error={"type": "cancelled", "message": "cancelled before it ran"})
        .returning(jobs)).mappings().first()
    if row is not None:  # counted as never run (a retried job's earlier attempts are counted apart)
        count_outcomes(session, [(row["method"], row["status"], None, row["finished_at"])])
    return row


def request_cancel(session: Session, job_id: uuid.UUID) -> bool:
    row = session.execute(update(jobs).where(jobs.c.id == job_id, jobs.c.status == "running")
                          .values(cancel_requested=True).returning(jobs.c.id)).first()
    return row is not None


def requeue_for_retry(session: Session, job_id: uuid.UUID):
    """An admin's retry of a failed job: back to queued with a fresh attempt budget."""
    return session.execute(
        update(jobs).where(jobs.c.id == job_id, jobs.c.status == "failed")
        .values(status="queued", error=None, finished_at=None, stage="retry requested",
                max_attempts=jobs.c.attempt + jobs.c.max_attempts, cancel_requested=False)
        .returning(jobs)).mappings().first()


def requeue_stalled(session: Session, stall_seconds: float) -> list[dict[str, Any]]:
    """Running jobs whose heartbeat stopped: back to queued while attempts remain."""
    return [dict(r) for r in session.execute(text(
        "UPDATE jobs SET status = 'queued', worker_id = NULL, heartbeat_at = NULL, "
        "randomness_drawn = true, "  # the lost attempt may have drawn: no refund for this job
        "stage = 'requeued: attempt ' || attempt || ' stalled' "
        "WHERE status = 'running' AND heartbeat_at < now() - make_interval(secs => :s) "
        "AND attempt < max_attempts RETURNING id, tenant, attempt, dataset_id, release_id"),
        {"s": stall_seconds}).mappings()]


def orphaned_queued(session: Session, stall_seconds: float) -> list[dict[str, Any]]:
    """Queued jobs that no queue entry will run: the entry is finished (a worker took it but
    its claim failed — the database went away — and the queue recorded the failure), missing,
    or taken more than ``stall_seconds`` ago without a claim (claiming is the first thing a
    worker does). A job and its entry are written in one transaction, so a visible queued job
    normally has its entry waiting. Locked (SKIP LOCKED: a claim in progress is left alone)."""
    return [dict(r) for r in session.execute(text(
        "SELECT j.id, j.tenant, j.attempt, j.dataset_id, j.release_id, j.queue_job_id, "
        "q.status::text AS queue_status "
        "FROM jobs j LEFT JOIN procrastinate_jobs q ON q.id = j.queue_job_id "
        "WHERE j.status = 'queued' AND (q.id IS NULL OR q.status NOT IN ('todo', 'doing') "
        "  OR (q.status = 'doing' AND NOT EXISTS (SELECT 1 FROM procrastinate_events e "
        "      WHERE e.job_id = q.id AND e.type = 'started' "
        "      AND e.at > now() - make_interval(secs => :s)))) "
        "FOR UPDATE OF j SKIP LOCKED"), {"s": stall_seconds}).mappings()]


def fail_stalled(session: Session, stall_seconds: float) -> list[dict[str, Any]]:
    failed = [dict(r) for r in session.execute(text(
        "UPDATE jobs SET status = 'failed', finished_at = now(), heartbeat_at = NULL, "
        "randomness_drawn = true, "
        "error = jsonb_build_object('type', 'stalled', 'message', "
        "  'the worker stopped responding on attempt ' || attempt || ' of ' || max_attempts) "
        "WHERE status = 'running' AND heartbeat_at < now() - make_interval(secs => :s) "
        "AND attempt >= max_attempts "
        "RETURNING id, tenant, attempt, dataset_id, release_id, method, status, started_at, finished_at"),
        {"s": stall_seconds}).mappings()]
    count_outcomes(session, [tuple(r[c.name] for c in _OUTCOME) for r in failed])
    return [{k: r[k] for k in ("id", "tenant", "attempt", "dataset_id", "release_id")} for r in failed]


def queue_depth(session: Session) -> int:
    """Queue entries waiting for a worker."""
    return session.execute(text("SELECT count(*) FROM procrastinate_jobs WHERE status = 'todo'")).scalar_one()


def counts_by_status(session: Session) -> dict[str, int]:
    return {s: n for s, n in session.execute(select(jobs.c.status, func.count()).group_by(jobs.c.status))}
