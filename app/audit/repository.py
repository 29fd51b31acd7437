from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from sqlalchemy import insert, select, text, tuple_
from sqlalchemy.orm import Session

from app.tables import audit_events


def insert_event(session: Session, **values: Any) -> None:
    session.execute(insert(audit_events).values(**values))


# An event is listed once every transaction that began writing before its own has ended
# (its txn below the oldest still running): one committing late can no longer appear before
# a cursor that already passed it. Within that, (txn, id) is the order of the list.
_SETTLED = text("txn < veil_settled_below()")  # the snapshot's xmin + service_state.txn_offset


def list_events(session: Session, *, tenant: str | None, dataset_id: uuid.UUID | None,
                release_id: uuid.UUID | None, actor: str | None, action: str | None,
                since: datetime | None, until: datetime | None, after: tuple[int, int] | None,
                limit: int, settled: bool = False) -> list[dict[str, Any]]:
    """Up to ``limit`` + 1 events after the (txn, id) position ``after``, in (txn, id) order
    (the extra row: whether a page follows); ``settled``: only those no event still to commit
    can precede."""
    c = audit_events.c
    q = select(audit_events).order_by(c.txn, c.id).limit(limit + 1)
    if settled:
        q = q.where(_SETTLED)
    conditions = [
        (tenant, lambda: c.tenant == tenant),
        (dataset_id, lambda: c.dataset_id == dataset_id),
        (release_id, lambda: c.release_id == release_id),
        (actor, lambda: c.actor == actor),
        (action, lambda: c.action == action),
        (since, lambda: c.at >= since),
        (until, lambda: c.at < until),
        (after, lambda: tuple_(c.txn, c.id) > tuple_(*after)),
    ]
    for value, condition in conditions:
        if value is not None:
            q = q.where(condition())
    return [dict(r) for r in session.execute(q).mappings()]
