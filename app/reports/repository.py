from __future__ import annotations

import uuid
from typing import Any

from sqlalchemy import insert, select
from sqlalchemy.orm import Session

from app.tables import reports


def insert_report(session: Session, **values: Any) -> None:
    session.execute(insert(reports).values(**values))


def get(session: Session, report_id: uuid.UUID, tenant: str):
    return session.execute(select(reports).where(reports.c.id == report_id,
                                                 reports.c.tenant == tenant)).mappings().first()
