from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request
from fastapi.security import HTTPBearer

from app.auth.schemas import Principal, Role
from app.auth.service import authenticate
from app.deps import SessionDep
from app.errors import Forbidden, Unauthorized


class BearerKey(HTTPBearer):
    """Declares the API key as the OpenAPI document's bearer security scheme (applied to every
    operation that needs a key) and hands the raw Authorization header to ``authenticate``,
    which words its own 401s (FastAPI's HTTPBearer would answer its own, differently)."""

    async def __call__(self, request: Request) -> str | None:  # type: ignore[override]
        given = request.headers.getlist("authorization")
        if len(given) > 1:  # a singleton field (RFC 9110): which one counts is ambiguous
            raise Unauthorized(f"send one Authorization header; this request has {len(given)}",
                               headers={"WWW-Authenticate": "Bearer"})
        return given[0] if given else None


bearer_key = BearerKey(scheme_name="apiKey", bearerFormat="veil_<prefix>_<secret>", auto_error=False,
                       description="An API key (`veil keys create`, or POST /v1/keys by an admin), "
                                   "sent as `Authorization: Bearer <key>`.")


def current_principal(request: Request, session: SessionDep,
                      authorization: Annotated[str | None, Depends(bearer_key)]) -> Principal:
    principal = authenticate(session, authorization)
    request.state.principal = principal
    return principal


def require(*roles: Role):
    def check(principal: Annotated[Principal, Depends(current_principal)]) -> Principal:
        if principal.role not in roles:
            raise Forbidden(f"this operation needs the role {' or '.join(r.value for r in roles)}; "
                            f"your key has the role {principal.role.value}")
        return principal
    return check


AnyPrincipal = Annotated[Principal, Depends(current_principal)]
OwnerPrincipal = Annotated[Principal, Depends(require(Role.owner))]
ReaderPrincipal = Annotated[Principal, Depends(require(Role.owner, Role.analyst))]
AdminPrincipal = Annotated[Principal, Depends(require(Role.admin))]

