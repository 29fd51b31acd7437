"""The audit trail: append-only (a trigger in the database rejects UPDATE, DELETE and
TRUNCATE). Events carry ids and hashes, never data values."""

from __future__ import annotations

import uuid
from contextvars import ContextVar
from typing import Any

from sqlalchemy.orm import Session

from app.audit import repository
from app.jsonsafe import jsonable


# Set for a HEAD request (app.middleware.HeadAsGet runs it as a GET and drops the body): an
# event it records (a download's) says the caller got the headers only.
head_only: ContextVar[bool] = ContextVar("head_only", default=False)


def record(session: Session, *, tenant: str, actor: str, action: str, subject_type: str,
           subject_id: str | uuid.UUID, dataset_id: uuid.UUID | None = None,
           release_id: uuid.UUID | None = None, details: dict[str, Any] | None = None) -> None:
    details = {**(details or {}), **({"head_only": True} if head_only.get() else {})}
    repository.insert_event(session, tenant=tenant, actor=actor, action=action,
                            subject_type=subject_type, subject_id=str(subject_id),
                            dataset_id=dataset_id, release_id=release_id,
                            details=jsonable(details))


def record_job(session: Session, job, *, actor: str, action: str,
               details: dict[str, Any] | None = None) -> None:
    """An event about a job (a row with id, tenant, dataset_id, release_id): it names the job's
    input dataset and release, so the trail filtered by either tells the job's whole story."""
    record(session, tenant=job["tenant"], actor=actor, action=action, subject_type="job",
           subject_id=job["id"], dataset_id=job["dataset_id"], release_id=job["release_id"],
           details=details)
