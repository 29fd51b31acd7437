from __future__ import annotations

from fastapi import APIRouter

from app.auth.dependencies import AdminPrincipal
from app.auth.schemas import KeyCreate, KeyCreated
from app.auth.service import create_key
from app.deps import SessionDep
from app.errors import problem_responses

router = APIRouter(prefix="/v1/keys", tags=["auth"])


@router.post("", status_code=201, response_model=KeyCreated,
             responses=problem_responses(401, 403, 422, 503))
def create(body: KeyCreate, principal: AdminPrincipal, session: SessionDep) -> KeyCreated:
    """Create an API key for a tenant (admins only). The key is shown once."""
    key_id, key = create_key(session, tenant=body.tenant, role=body.role, label=body.label,
                             actor=principal.actor)
    return KeyCreated(id=key_id, tenant=body.tenant, role=body.role, key=key)
