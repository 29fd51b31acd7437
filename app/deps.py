"""Request dependencies: the unit of work (one transaction per request) and the caller."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Annotated

from fastapi import Depends, Request
from sqlalchemy.exc import OperationalError, InterfaceError
from sqlalchemy.orm import Session

from app.db import _sessionmaker
from app.errors import ServiceUnavailable, Unprocessable


def get_session() -> Iterator[Session]:
    """The request's transaction: committed when the endpoint returns, rolled back when it
    raises. Declared with scope="function" so the commit happens before the response is sent:
    a client never sees a 2xx for work that was not committed."""
    session = _sessionmaker()()
    try:
        yield session
        session.commit()
    except (OperationalError, InterfaceError) as exc:
        session.rollback()
        raise ServiceUnavailable("the database is unavailable; retry later") from exc
    except BaseException:
        session.rollback()
        raise
    finally:
        session.close()


SessionDep = Annotated[Session, Depends(get_session, scope="function")]


def request_id(request: Request) -> str:
    return getattr(request.state, "request_id", "")


async def known_query_only(request: Request) -> None:
    """A query parameter the operation does not take is a 422 naming it (``?limt=5`` or
    ``?datset_id=…`` used to be ignored: a filter the caller believed in silently did nothing).
    "Takes" is what the served OpenAPI document declares. App-wide, before the key is checked:
    the answer depends on the URL alone."""
    route = request.scope.get("route")
    if route is None or not request.query_params:
        return
    known = declared_query(request.app).get((route.path_format, request.method.lower()), frozenset())
    unknown = sorted(set(request.query_params) - known)
    if unknown:
        allowed = ", ".join(sorted(known)) or "none"
        raise Unprocessable(f"unknown query parameter {unknown[0]!r} (this operation takes: {allowed})",
                            errors=[{"loc": ["query", name], "msg": "unknown query parameter",
                                     "type": "extra_forbidden"} for name in unknown])


def declared_query(app) -> dict[tuple[str, str], frozenset[str]]:
    declared = getattr(app.state, "declared_query", None)
    if declared is None:
        declared = {(path, method): frozenset(p["name"] for p in op.get("parameters", []) if p["in"] == "query")
                    for path, ops in app.openapi()["paths"].items() for method, op in ops.items()}
        app.state.declared_query = declared
    return declared
