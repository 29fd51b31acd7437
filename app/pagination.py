"""Keyset pagination over (created_at, id), newest first: the `next` cursor of a page."""

from __future__ import annotations

import uuid
from datetime import datetime, timezone
from collections.abc import Callable
from typing import Any

from sqlalchemy import tuple_

from app.errors import Unprocessable


# UTC to the microsecond (PostgreSQL's precision) in URL-safe characters: a cursor pasted into a
# URL as it is must work (an ISO offset's "+" arrives as a space).
_CURSOR_TIME = "%Y%m%dT%H%M%S.%fZ"


def decode(cursor: str | None) -> tuple[datetime, uuid.UUID] | None:
    if not cursor:
        return None
    try:
        ts, ident = cursor.split("_", 1)
        at = datetime.strptime(ts, _CURSOR_TIME).replace(tzinfo=timezone.utc)  # only what next_cursor writes
        return at, uuid.UUID(ident)
    except ValueError:
        raise Unprocessable("cursor must be the `next` value of a previous page") from None


def _bigint(text: str) -> bool:
    return text.isascii() and text.isdigit() and int(text) <= 2**63 - 1


def decode_id(cursor: str | None) -> int | None:
    """A `next` cursor that is a ledger entry's id (a positive bigint); empty is none given, as
    on the other lists (a URL template's `?cursor=` with no value yet)."""
    if not cursor:
        return None
    if not _bigint(cursor):
        raise Unprocessable("cursor must be the `next` value of a previous page")
    return int(cursor)


def decode_position(cursor: str | None) -> tuple[int, int] | None:
    """A `next` cursor of the audit trail: ``<txn>.<id>``, an event's ``position``. A bare id is
    the `next` of a version before migration 0003, which gave the events of that time txn 0: a
    follower that kept one across the upgrade resumes after that event. Empty is none given."""
    if not cursor:
        return None
    if _bigint(cursor):
        return 0, int(cursor)
    parts = cursor.split(".")
    if len(parts) != 2 or not all(_bigint(part) for part in parts):
        raise Unprocessable("cursor must be the `next` value of a previous page")
    return int(parts[0]), int(parts[1])


def position(row: dict[str, Any]) -> str:
    """An audit event's place in the trail's order, as a cursor: ``<txn>.<id>``."""
    return f"{row['txn']}.{row['id']}"


def _keyset_page(rows: list[dict[str, Any]], limit: int, render: Callable[[dict[str, Any]], Any],
                 cursor_of: Callable[[dict[str, Any]], str]) -> dict[str, Any]:
    """The first ``limit`` of up to ``limit`` + 1 rows rendered, and the cursor of the last shown
    one — None when no row is left, so a page that is exactly full is not followed by an empty one."""
    shown = rows[:limit]
    return {"items": [render(r) for r in shown], "next": cursor_of(shown[-1]) if len(rows) > limit else None}


def page(rows: list[dict[str, Any]], limit: int, render: Callable[[dict[str, Any]], Any]) -> dict[str, Any]:
    """A list answer from the rows of ``newest_first``: the cursor is the last row's (created_at, id)."""
    return _keyset_page(rows, limit, render, lambda last: (
        f"{last['created_at'].astimezone(timezone.utc).strftime(_CURSOR_TIME)}_{last['id']}"))


def id_page(rows: list[dict[str, Any]], limit: int, render: Callable[[dict[str, Any]], Any]) -> dict[str, Any]:
    """``page`` for the ledger, paged by id, oldest first."""
    return _keyset_page(rows, limit, render, lambda last: str(last["id"]))


def position_page(rows: list[dict[str, Any]], limit: int, render: Callable[[dict[str, Any]], Any]) -> dict[str, Any]:
    """``page`` for the audit trail, in (txn, id) order: the cursor is the last event's position."""
    return _keyset_page(rows, limit, render, position)


def newest_first(query, table, after: tuple[datetime, uuid.UUID] | None, limit: int):
    """``query`` over ``table`` as one keyset page: newest first by (created_at, id), after the
    cursor's row, one row more than the page shows (whether another page follows). The
    repositories' list queries share it; ``page`` renders the answer."""
    query = query.order_by(table.c.created_at.desc(), table.c.id.desc()).limit(limit + 1)
    # a SQL row comparison: a Python tuple's < would compare created_at alone (SQLAlchemy's ==
    # is never "equal" to Python) and skip the rows sharing the cursor row's created_at
    return query if after is None else query.where(tuple_(table.c.created_at, table.c.id) < tuple_(*after))


def where_given(query, table, **equals):
    """``query`` restricted to ``table.c[name] == value`` for every filter a caller gave (not None)."""
    for name, value in equals.items():
        if value is not None:
            query = query.where(table.c[name] == value)
    return query
