"""All SQL about the service's own operation: worker heartbeats and the readiness probe."""

from __future__ import annotations

from sqlalchemy import delete, func, select, text
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.orm import Session

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


def live_workers(session: Session, within_seconds: float) -> int:
    """Workers that heartbeat within the last ``within_seconds``."""
    return session.execute(
        select(func.count()).select_from(worker_heartbeats)
        .where(worker_heartbeats.c.seen_at > func.now() - func.make_interval(0, 0, 0, 0, 0, 0, within_seconds))
    ).scalar_one()
