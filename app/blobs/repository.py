"""Large payloads (uploaded data, releases, plots, models) stored as 4 MiB chunks."""

from __future__ import annotations

import uuid

from sqlalchemy import delete, insert, select
from sqlalchemy.orm import Session

from app.tables import blob_chunks

CHUNK = 4 * 1024 * 1024


def write(session: Session, data: bytes) -> uuid.UUID:
    blob_id = uuid.uuid4()
    view = memoryview(data)
    rows = [{"blob_id": blob_id, "seq": i, "data": bytes(view[off:off + CHUNK])}
            for i, off in enumerate(range(0, max(len(data), 1), CHUNK))]
    session.execute(insert(blob_chunks), rows)
    return blob_id


def read(session: Session, blob_id: uuid.UUID) -> bytes:
    chunks = session.execute(
        select(blob_chunks.c.data).where(blob_chunks.c.blob_id == blob_id).order_by(blob_chunks.c.seq)
    ).scalars().all()
    return b"".join(chunks)


def remove(session: Session, blob_id: uuid.UUID) -> None:
    session.execute(delete(blob_chunks).where(blob_chunks.c.blob_id == blob_id))
