from __future__ import annotations

import uuid
from datetime import datetime
from typing import Annotated

from fastapi import APIRouter, Query
from pydantic import AfterValidator

from app.audit import service
from app.audit.schemas import AuditPage, known_action
from app.auth.dependencies import AnyPrincipal
from app.deps import OffLoopRoute, SessionDep
from app.errors import problem_responses
from app.openapi_parts import Cursor

router = APIRouter(prefix="/v1/audit", tags=["audit"], route_class=OffLoopRoute)


@router.get("", response_model=AuditPage, responses=problem_responses(401, 403, 422, 503))
def list_audit(
    principal: AnyPrincipal, session: SessionDep,
    dataset_id: Annotated[uuid.UUID | None, Query(description="events about this dataset")] = None,
    release_id: Annotated[uuid.UUID | None, Query(description="events about this release")] = None,
    actor: Annotated[str | None, Query(description="events by this actor: an API key's id, `worker`, `cli` or `system`")] = None,
    action: Annotated[str | None, Query(description="events of this action, e.g. `dataset.downloaded` (an "
                                                     "unknown one is a 422 listing them)"),
                      AfterValidator(known_action)] = None,
    since: Annotated[datetime | None, Query(description="events at or after this time (ISO 8601; UTC when it "
                                                          "has no offset)")] = None,
    until: Annotated[datetime | None, Query(description="events before this time (ISO 8601; UTC when it "
                                                          "has no offset)")] = None,
    cursor: Cursor = None,
    limit: Annotated[int, Query(ge=1, le=1000, description="items per page")] = 100,
    tenant: Annotated[str | None, Query(description="admins only: another tenant")] = None,
    settled: Annotated[bool, Query(description="only events no event still to commit can precede: "
                                   "to follow the trail with `cursor` without missing one (an event "
                                   "shows once every transaction that began writing before it has "
                                   "ended, usually milliseconds later)")] = False,
) -> AuditPage:
    """The append-only audit trail of the caller's tenant (owners; admins across tenants), oldest
    first in the order the events' transactions began writing (then by event id), paginated by
    `next`. Every committed event is listed at once; an event can still commit after a later
    one is listed, so a client that follows the trail with `cursor` (the last `next`, or the last
    event's `position`) passes `settled=true`, and misses none."""
    return AuditPage(**service.list_page(session, principal, dataset_id=dataset_id, release_id=release_id,
                                         actor=actor, action=action, since=since, until=until,
                                         cursor=cursor, limit=limit, tenant=tenant, settled=settled))
