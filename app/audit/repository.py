from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from sqlalchemy import insert, select
from sqlalchemy.orm import Session

from app.tables import audit_events


def insert_event(session: Session, **values: Any) -> None:
    session.execute(insert(audit_events).values(**values))


def list_events(session: Session, *, tenant: str | None, dataset_id: uuid.UUID | None,
                release_id: uuid.UUID | None, actor: str | None, action: str | None,
                since: datetime | None, until: datetime | None, after_id: int | None,
                limit: int) -> list[dict[str, Any]]:
    """Up to ``limit`` + 1 events after ``after_id``, oldest first (the extra row: whether a
    page follows; ``pagination.id_page``)."""
    q = select(audit_events).order_by(audit_events.c.id).limit(limit + 1)
    c = audit_events.c
    conditions = [
        (tenant, lambda: c.tenant == tenant),
        (dataset_id, lambda: c.dataset_id == dataset_id),
        (release_id, lambda: c.release_id == release_id),
        (actor, lambda: c.actor == actor),
        (action, lambda: c.action == action),
        (since, lambda: c.at >= since),
        (until, lambda: c.at < until),
        (after_id, lambda: c.id > after_id),
    ]
    for value, condition in conditions:
        if value is not None:
            q = q.where(condition())
    return [dict(r) for r in session.execute(q).mappings()]
