from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from sqlalchemy import bindparam, func, insert, select, text, update
from sqlalchemy.orm import Session

from app.pagination import newest_first
from app.sql import any_of
from app.tables import datasets, hierarchies

NAME_LENGTH: int = datasets.c.name.type.length  # the longest dataset name the table holds


def insert_dataset(session: Session, **values: Any) -> None:
    session.execute(insert(datasets).values(**values))


_GET = select(datasets).where(datasets.c.id == bindparam("id"), datasets.c.tenant == bindparam("tenant"))


_GET_FOR_UPDATE = _GET.with_for_update()
# FOR KEY SHARE: taken by a job submission, it conflicts only with FOR UPDATE (a schema
# change, a delete), not with other submissions.
_GET_FOR_KEY_SHARE = _GET.with_for_update(read=True, key_share=True)


def get(session: Session, tenant: str, dataset_id: uuid.UUID, *, for_update: bool = False,
        for_key_share: bool = False):
    q = _GET_FOR_UPDATE if for_update else _GET_FOR_KEY_SHARE if for_key_share else _GET  # built once (see app/sql.py)
    return session.execute(q, {"id": dataset_id, "tenant": tenant}).mappings().first()


def by_idempotency_key(session: Session, tenant: str, key: str):
    return session.execute(select(datasets).where(datasets.c.tenant == tenant,
                                                  datasets.c.idempotency_key == key)).mappings().first()


def list_page(session: Session, tenant: str, *, after: tuple[datetime, uuid.UUID] | None,
              limit: int) -> list[dict[str, Any]]:
    """Summaries: every field but the columns' descriptions (their count instead)."""
    q = (select(*(c for c in datasets.c if c.name not in ("columns", "tenant")),
                func.jsonb_array_length(datasets.c.columns).label("column_count"))
         .where(datasets.c.tenant == tenant, datasets.c.deleted_at.is_(None)))
    return [dict(r) for r in session.execute(newest_first(q, datasets, after, limit)).mappings()]


def set_columns(session: Session, dataset_id: uuid.UUID, columns: list[dict], blob_id=None) -> None:
    values: dict[str, Any] = {"columns": columns}
    if blob_id is not None:
        values["blob_id"] = blob_id
    session.execute(update(datasets).where(datasets.c.id == dataset_id).values(**values))


def mark_deleted(session: Session, dataset_id: uuid.UUID) -> None:
    session.execute(update(datasets).where(datasets.c.id == dataset_id)
                    .values(blob_id=None, deleted_at=func.now()))


def lock_hierarchy(session: Session, dataset_id: uuid.UUID, column: str) -> None:
    """Serialize the changes of one column's hierarchy until the transaction ends. Taken before
    any other statement: a transaction's id (the audit trail's order) is then taken after the
    previous change committed, so the trail lists the changes in the order they took effect."""
    session.execute(text("SELECT pg_advisory_xact_lock(hashtextextended(:key, 0))"),
                    {"key": f"veil.hierarchy:{dataset_id}:{column}"})


def upsert_hierarchy(session: Session, dataset_id: uuid.UUID, column: str, text: str, levels: int) -> None:
    from sqlalchemy.dialects.postgresql import insert as pg_insert

    stmt = pg_insert(hierarchies).values(dataset_id=dataset_id, column_name=column, text=text,
                                         levels=levels)
    session.execute(stmt.on_conflict_do_update(
        index_elements=[hierarchies.c.dataset_id, hierarchies.c.column_name],
        set_={"text": text, "levels": levels, "created_at": func.now()}))


def hierarchy_texts(session: Session, dataset_id: uuid.UUID) -> dict[str, str]:
    rows = session.execute(select(hierarchies.c.column_name, hierarchies.c.text)
                           .where(hierarchies.c.dataset_id == dataset_id)).all()
    return {r[0]: r[1] for r in rows}


def hierarchy_text(session: Session, dataset_id: uuid.UUID, column: str) -> str | None:
    return session.execute(select(hierarchies.c.text).where(
        hierarchies.c.dataset_id == dataset_id, hierarchies.c.column_name == column)).scalar_one_or_none()


_HIERARCHY_COLUMNS = select(hierarchies.c.dataset_id, hierarchies.c.column_name).where(
    hierarchies.c.dataset_id == any_of("ids"))


def hierarchy_columns(session: Session, dataset_ids: list[uuid.UUID]) -> dict[uuid.UUID, list[str]]:
    rows = session.execute(_HIERARCHY_COLUMNS, {"ids": dataset_ids}).all()
    out: dict[uuid.UUID, list[str]] = {}
    for ds, col in rows:
        out.setdefault(ds, []).append(col)
    return out


def delete_hierarchy(session: Session, dataset_id: uuid.UUID, column: str) -> bool:
    from sqlalchemy import delete

    return session.execute(delete(hierarchies).where(
        hierarchies.c.dataset_id == dataset_id, hierarchies.c.column_name == column)).rowcount > 0


def delete_hierarchies(session: Session, dataset_id: uuid.UUID) -> None:
    from sqlalchemy import delete

    session.execute(delete(hierarchies).where(hierarchies.c.dataset_id == dataset_id))
