from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from sqlalchemy import insert, select
from sqlalchemy.orm import Session

from app.pagination import newest_first, where_given
from app.tables import models


def insert_model(session: Session, **values: Any) -> None:
    session.execute(insert(models).values(**values))


def get(session: Session, model_id: uuid.UUID, tenant: str):
    return session.execute(select(models).where(models.c.id == model_id,
                                                models.c.tenant == tenant)).mappings().first()


def list_page(session: Session, tenant: str, *, release_id: uuid.UUID | None, method: str | None,
              after: tuple[datetime, uuid.UUID] | None, limit: int) -> list[dict[str, Any]]:
    q = where_given(select(models), models, tenant=tenant, release_id=release_id, method=method)
    return [dict(r) for r in session.execute(newest_first(q, models, after, limit)).mappings()]
