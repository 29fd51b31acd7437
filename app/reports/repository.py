from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from sqlalchemy import insert, or_, select
from sqlalchemy.orm import Session

from app.pagination import newest_first, where_given
from app.tables import reports


def insert_report(session: Session, **values: Any) -> None:
    session.execute(insert(reports).values(**values))


def get(session: Session, report_id: uuid.UUID, tenant: str):
    return session.execute(select(reports).where(reports.c.id == report_id,
                                                 reports.c.tenant == tenant)).mappings().first()


def list_page(session: Session, tenant: str, *, dataset_id: uuid.UUID | None, release_id: uuid.UUID | None,
              kind: str | None, after: tuple[datetime, uuid.UUID] | None, limit: int,
              raw_data: bool = True) -> list[dict[str, Any]]:
    """``raw_data=False`` leaves out the reports computed from a raw dataset (see service.readable)."""
    # the summary columns only: a report's data can be large (an experiment's tables)
    q = where_given(select(reports.c.id, reports.c.kind, reports.c.job_id, reports.c.dataset_id,
                           reports.c.release_id, reports.c.plots, reports.c.created_at), reports,
                    tenant=tenant, dataset_id=dataset_id, release_id=release_id, kind=kind)
    if not raw_data:
        q = q.where(or_(reports.c.release_id.is_not(None), reports.c.dataset_id.is_(None)))
    return [dict(r) for r in session.execute(newest_first(q, reports, after, limit)).mappings()]
