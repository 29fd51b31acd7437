"""All SQL about the service's own operation: worker heartbeats, the readiness probe and the
restore check."""

from __future__ import annotations

from sqlalchemy import delete, func, select, text, update
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.orm import Session

from app import tables
from app.tables import worker_heartbeats


def database_answers(session: Session) -> None:
    session.execute(text("SELECT 1"))


def heartbeat(session: Session, worker_id: str, host: str, pid: int) -> None:
    session.execute(pg_insert(worker_heartbeats).values(worker_id=worker_id, host=host, pid=pid)
                    .on_conflict_do_update(index_elements=[worker_heartbeats.c.worker_id],
                                           set_={"seen_at": func.now()}))


def forget_worker(session: Session, worker_id: str) -> None:
    """A worker that stops cleanly leaves /readyz's count at once (not after its row ages out)."""
    session.execute(delete(worker_heartbeats).where(worker_heartbeats.c.worker_id == worker_id))


def forget_silent_workers(session: Session, silent_seconds: float) -> int:
    """The rows of workers that have not heartbeat for ``silent_seconds``: a worker killed
    (SIGKILL, the OOM killer, a lost host) cannot remove its own, and each death left one."""
    return session.execute(delete(worker_heartbeats).where(
        worker_heartbeats.c.seen_at < func.now() - func.make_interval(0, 0, 0, 0, 0, 0, silent_seconds))).rowcount


def live_workers(session: Session, within_seconds: float) -> int:
    """Workers that heartbeat within the last ``within_seconds``."""
    return session.execute(
        select(func.count()).select_from(worker_heartbeats)
        .where(worker_heartbeats.c.seen_at > func.now() - func.make_interval(0, 0, 0, 0, 0, 0, within_seconds))
    ).scalar_one()


# --- the restore check (app/ops/restore.py) ---------------------------------------------------

def service_state(session: Session, *, for_update: bool = False):
    q = select(tables.service_state).where(tables.service_state.c.id == 1)
    return session.execute(q.with_for_update() if for_update else q).mappings().first()


def restore_pending(session: Session) -> bool:
    """A restore was detected and not yet accepted (every ε debit waits for it)."""
    return bool(session.execute(text(
        "SELECT restore_detected_at IS NOT NULL AND restore_accepted_at IS NULL FROM service_state "
        "WHERE id = 1")).scalar())


def newest_events_since(session: Session, after_id: int, limit: int) -> list[dict]:
    """The newest audit events with id > after_id: id, txn and the inserting xid (xmin)."""
    return [dict(r) for r in session.execute(text(
        "SELECT id, txn, xmin::text::bigint AS xmin FROM audit_events WHERE id > :after "
        "ORDER BY id DESC LIMIT :limit"), {"after": after_id, "limit": limit}).mappings()]


def current_xid(session: Session) -> int:
    return session.execute(text("SELECT pg_current_xact_id()::text::bigint")).scalar()


def last_event(session: Session):
    """The trail's last event in its (txn, id) order."""
    return session.execute(text("SELECT id, txn, at FROM audit_events ORDER BY txn DESC, id DESC LIMIT 1")
                           ).mappings().first()


def max_event_id(session: Session) -> int:
    return session.execute(text("SELECT COALESCE(max(id), 0) FROM audit_events")).scalar()


def tenants(session: Session) -> list[str]:
    return list(session.execute(text(
        "SELECT tenant FROM api_keys UNION SELECT tenant FROM datasets UNION SELECT tenant FROM jobs "
        "ORDER BY 1")).scalars())


def set_service_state(session: Session, **values) -> None:
    session.execute(update(tables.service_state).where(tables.service_state.c.id == 1).values(**values))


def fail_in_flight_jobs(session: Session, error: dict) -> list[dict]:
    """Every queued or running job, failed with ``error``; its ε kept (randomness_drawn)."""
    from app.jobs.repository import count_outcomes
    from app.tables import jobs

    rows = [dict(r) for r in session.execute(
        update(jobs).where(jobs.c.status.in_(("queued", "running")))
        .values(status="failed", error=error, finished_at=func.now(), heartbeat_at=None,
                worker_id=None, randomness_drawn=True, stage="restored from a backup")
        .returning(jobs)).mappings()]
    count_outcomes(session, [(r["method"], r["status"], r["started_at"], r["finished_at"]) for r in rows])
    return rows


def now(session: Session):
    return session.execute(select(func.now())).scalar()
