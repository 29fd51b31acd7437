"""Request dependencies: the unit of work (one transaction per request) and the caller."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Annotated

from fastapi import Depends, Request
from sqlalchemy.exc import OperationalError, InterfaceError
from sqlalchemy.orm import Session

from app.db import _sessionmaker
from app.errors import ServiceUnavailable


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
