from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from app.auth import service
from app.auth.dependencies import AdminPrincipal
from app.auth.schemas import KeyCreate, KeyCreated, KeyInfo, KeyPage
from app.deps import OffLoopRoute, SessionDep
from app.errors import problem_responses
from app.openapi_parts import Cursor, KeyId, PageSize

router = APIRouter(prefix="/v1/keys", tags=["auth"], route_class=OffLoopRoute)


@router.post("", status_code=201, response_model=KeyCreated,
             responses=problem_responses(401, 403, 422, 503))
def create_key(body: KeyCreate, principal: AdminPrincipal, session: SessionDep) -> KeyCreated:
    """Create an API key for a tenant (admins only). The key is shown once."""
    key_id, key = service.create_key(session, tenant=body.tenant, role=body.role, label=body.label,
                                     actor=principal.actor)
    return KeyCreated(id=key_id, tenant=body.tenant, role=body.role, key=key)


@router.get("", response_model=KeyPage, responses=problem_responses(401, 403, 422, 503))
def list_keys(principal: AdminPrincipal, session: SessionDep,
              tenant: Annotated[str | None, Query(description="only this tenant's keys")] = None,
              cursor: Cursor = None, limit: PageSize = 50) -> KeyPage:
    """Every key (admins only), newest first, revoked ones included; never a secret."""
    return KeyPage(**service.list_page(session, tenant=tenant, cursor=cursor, limit=limit))


@router.delete("/{key_id}", response_model=KeyInfo, responses=problem_responses(401, 403, 404, 409, 422, 503))
def revoke_key(key_id: KeyId, principal: AdminPrincipal, session: SessionDep) -> KeyInfo:
    """Revoke a key (admins only): refused from the next request on. Kept in the list with its
    revocation time; a revoked key cannot be restored (create a new one)."""
    return KeyInfo(**service.revoke_key(session, key_id, actor=principal.actor))
