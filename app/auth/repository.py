from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from sqlalchemy import bindparam, func, insert, select, update
from sqlalchemy.orm import Session

from app.pagination import newest_first, where_given
from app.tables import api_keys


def insert_key(session: Session, *, key_id: uuid.UUID, tenant: str, role: str, prefix: str,
               key_hash: str, label: str | None) -> None:
    session.execute(insert(api_keys).values(id=key_id, tenant=tenant, role=role, prefix=prefix,
                                            key_hash=key_hash, label=label))


# Built once: every request authenticates, and building a statement (and its cache key) each
# time cost more CPU than executing it (see app/sql.py).
_BY_PREFIX = select(api_keys).where(api_keys.c.prefix == bindparam("prefix"))
_LIVE_BY_PREFIX = _BY_PREFIX.where(api_keys.c.revoked_at.is_(None))


def find_by_prefix(session: Session, prefix: str, *, include_revoked: bool = False):
    """The key with this public prefix; a revoked one only when asked (authentication never asks)."""
    q = _BY_PREFIX if include_revoked else _LIVE_BY_PREFIX
    return session.execute(q, {"prefix": prefix}).mappings().first()


def find_by_hash(session: Session, key_hash: str):
    return session.execute(select(api_keys).where(api_keys.c.key_hash == key_hash)).mappings().first()


def get(session: Session, key_id: uuid.UUID):
    return session.execute(select(api_keys).where(api_keys.c.id == key_id)).mappings().first()


def list_page(session: Session, *, tenant: str | None, after: tuple[datetime, uuid.UUID] | None,
              limit: int) -> list[dict[str, Any]]:
    q = where_given(select(api_keys), api_keys, tenant=tenant)
    return [dict(r) for r in session.execute(newest_first(q, api_keys, after, limit)).mappings()]


def revoke(session: Session, key_id: uuid.UUID):
    """Set revoked_at once; None when the key is unknown or already revoked."""
    return session.execute(
        update(api_keys).where(api_keys.c.id == key_id, api_keys.c.revoked_at.is_(None))
        .values(revoked_at=func.now()).returning(api_keys)).mappings().first()
