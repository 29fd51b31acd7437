from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from sqlalchemy import bindparam, insert, select
from sqlalchemy.orm import Session

from app.pagination import newest_first, where_given
from app.tables import releases


def insert_release(session: Session, **values: Any) -> None:
    session.execute(insert(releases).values(**values))


_GET = select(releases).where(releases.c.id == bindparam("id"), releases.c.tenant == bindparam("tenant"))


def get(session: Session, release_id: uuid.UUID, tenant: str):
    return session.execute(_GET, {"id": release_id, "tenant": tenant}).mappings().first()  # built once


def list_page(session: Session, tenant: str, *, dataset_id: uuid.UUID | None, method: str | None,
              after: tuple[datetime, uuid.UUID] | None, limit: int) -> list[dict[str, Any]]:
    q = where_given(select(releases), releases, tenant=tenant, dataset_id=dataset_id, method=method)
    return [dict(r) for r in session.execute(newest_first(q, releases, after, limit)).mappings()]
