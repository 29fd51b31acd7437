from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Header, Request

from app.auth.schemas import Principal, Role
from app.auth.service import authenticate
from app.deps import SessionDep
from app.errors import Forbidden


def current_principal(request: Request, session: SessionDep,
                      authorization: Annotated[str | None, Header(include_in_schema=False)] = None
                      ) -> Principal:
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

