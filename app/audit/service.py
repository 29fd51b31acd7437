"""The audit trail: append-only (a trigger in the database rejects UPDATE, DELETE and
TRUNCATE). Events carry ids and hashes, never data values."""

from __future__ import annotations

import uuid
from contextvars import ContextVar
from datetime import datetime, timezone
from typing import Any

from sqlalchemy.orm import Session

from app import pagination
from app.audit import repository
from app.auth.schemas import Principal, Role
from app.errors import Forbidden, Unprocessable
from app.jsonsafe import jsonable


# Set for a HEAD request (app.middleware.HeadAsGet runs it as a GET and drops the body): an
# event it records (a download's) says the caller got the headers only.
head_only: ContextVar[bool] = ContextVar("head_only", default=False)


def record(session: Session, *, tenant: str, actor: str, action: str, subject_type: str,
           subject_id: str | uuid.UUID, dataset_id: uuid.UUID | None = None,
           release_id: uuid.UUID | None = None, details: dict[str, Any] | None = None) -> None:
    if session.in_nested_transaction():
        # a row inserted in a savepoint has the subtransaction's xmin, not the transaction its
        # txn names: the restore check (app/ops/restore.py) would read it as copied in by a
        # restore, fail every job in flight and freeze every budget at the next start
        raise RuntimeError(f"audit event {action!r} recorded inside a savepoint; record it after the savepoint ends")
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


def list_page(session: Session, principal: Principal, *, dataset_id: uuid.UUID | None,
              release_id: uuid.UUID | None, actor: str | None, action: str | None,
              since: datetime | None, until: datetime | None, cursor: str | None, limit: int,
              tenant: str | None, settled: bool) -> dict[str, Any]:
    """A page of the trail: owners read their tenant's, admins any tenant's (``tenant``),
    analysts none."""
    if principal.role == Role.analyst:
        raise Forbidden("the audit trail is readable by owners and admins")
    if since is not None and until is not None and _utc(since) > _utc(until):
        raise Unprocessable(f"since ({since.isoformat()}) is after until ({until.isoformat()}): "
                            "no event can be in that range")
    from app.auth.service import tenant_scope  # here: app.auth.service records its events through this module

    rows = repository.list_events(session, tenant=tenant_scope(principal, tenant), dataset_id=dataset_id,
                                  release_id=release_id, actor=actor, action=action, since=since,
                                  until=until, after=pagination.decode_position(cursor), limit=limit,
                                  settled=settled)
    return pagination.position_page(rows, limit, lambda r: {
        "subject": r["subject_id"], "position": pagination.position(r),
        **{k: v for k, v in r.items() if k not in ("subject_id", "txn")}})


def _utc(moment: datetime) -> datetime:
    """A time without an offset is UTC (as the database reads it)."""
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=timezone.utc)
