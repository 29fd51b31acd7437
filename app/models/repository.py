from __future__ import annotations

import uuid
from typing import Any

from sqlalchemy import insert, select
from sqlalchemy.orm import Session

from app.tables import models


def insert_model(session: Session, **values: Any) -> None:
    session.execute(insert(models).values(**values))


def get(session: Session, model_id: uuid.UUID, tenant: str):
    return session.execute(select(models).where(models.c.id == model_id,
                                                models.c.tenant == tenant)).mappings().first()
