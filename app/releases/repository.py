from __future__ import annotations

import uuid
from typing import Any

from sqlalchemy import insert, select
from sqlalchemy.orm import Session

from app.tables import releases


def insert_release(session: Session, **values: Any) -> None:
    session.execute(insert(releases).values(**values))


def get(session: Session, release_id: uuid.UUID, tenant: str):
    return session.execute(select(releases).where(releases.c.id == release_id,
                                                  releases.c.tenant == tenant)).mappings().first()


def list_for_dataset(session: Session, tenant: str, dataset_id: uuid.UUID | None, limit: int,
                     offset: int) -> list[dict[str, Any]]:
    q = (select(releases).where(releases.c.tenant == tenant)
         .order_by(releases.c.created_at.desc()).limit(limit).offset(offset))
    if dataset_id is not None:
        q = q.where(releases.c.dataset_id == dataset_id)
    return [dict(r) for r in session.execute(q).mappings()]
