from __future__ import annotations

import uuid

from sqlalchemy import insert, select
from sqlalchemy.orm import Session

from app.tables import api_keys


def insert_key(session: Session, *, key_id: uuid.UUID, tenant: str, role: str, prefix: str,
               key_hash: str, label: str | None) -> None:
    session.execute(insert(api_keys).values(id=key_id, tenant=tenant, role=role, prefix=prefix,
                                            key_hash=key_hash, label=label))


def find_by_prefix(session: Session, prefix: str):
    return session.execute(
        select(api_keys).where(api_keys.c.prefix == prefix, api_keys.c.revoked_at.is_(None))
    ).mappings().first()


def find_by_hash(session: Session, key_hash: str):
    return session.execute(select(api_keys).where(api_keys.c.key_hash == key_hash)).mappings().first()
