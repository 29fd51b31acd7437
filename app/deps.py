"""Request dependencies: the unit of work (one transaction per request) and the caller."""

from __future__ import annotations

import collections
import functools
import inspect
import json
import logging
from collections.abc import AsyncIterator
from typing import Annotated

import anyio.to_thread
from fastapi import Depends, HTTPException, Request
from fastapi.routing import APIRoute
from fastapi.security.base import SecurityBase
from starlette.concurrency import run_in_threadpool
from sqlalchemy.orm import Session

from app.db import DATABASE_AWAY, new_sessionmaker
from app.errors import (DATABASE_FULL, DISK_FULL_SQLSTATE, InsufficientStorage, ServiceUnavailable,
                        Unprocessable, UnsupportedMediaType, VeilError, out_of_disk_space)

log = logging.getLogger("veil.api")


def database_problem(exc: BaseException) -> VeilError:
    """What a request that the database failed is told: out of disk space (it answers but
    cannot write: 507, not a passing state) or unavailable (503, ask again)."""
    if out_of_disk_space(exc):
        log.error("the database is out of disk space (SQLSTATE %s): writes fail until space is freed",
                  DISK_FULL_SQLSTATE)
        return InsufficientStorage(DATABASE_FULL)
    return ServiceUnavailable("the database is unavailable; retry later")


async def get_session() -> AsyncIterator[Session]:
    """The request's transaction: committed when the endpoint returns, rolled back when it
    raises. Declared with scope="function" so the commit happens before the response is sent:
    a client never sees a 2xx for work that was not committed.

    Async, with its end in one thread-pool hop: making the Session object takes no I/O (the
    connection is checked out by the first query, in the thread that runs it), so entering
    needs no thread; commit or rollback, then close, take one. (A sync generator took a hop
    for each end: ~0.1 ms of CPU per hop.)"""
    session = new_sessionmaker()()
    try:
        yield session
    except BaseException as exc:
        await _in_thread(_rollback_and_close, session)
        if isinstance(exc, DATABASE_AWAY):
            raise database_problem(exc) from exc
        raise
    await _in_thread(_commit_and_close, session)


async def _in_thread(fn, session: Session) -> None:
    # Not limited by the shared thread pool's capacity (as FastAPI runs a sync dependency's
    # exit): ending a transaction must never wait for a thread held by a request waiting for
    # this transaction's connection or locks.
    await anyio.to_thread.run_sync(fn, session, limiter=anyio.CapacityLimiter(1))


def _commit_and_close(session: Session) -> None:
    try:
        session.commit()
    except DATABASE_AWAY as exc:
        session.rollback()
        raise database_problem(exc) from exc
    except BaseException:
        session.rollback()
        raise
    finally:
        session.close()


def _rollback_and_close(session: Session) -> None:
    try:
        session.rollback()
    finally:
        session.close()


SessionDep = Annotated[Session, Depends(get_session, scope="function")]


class OffLoopRoute(APIRoute):
    """Every router's route class. A plain (sync) endpoint is run in the thread pool by an
    async wrapper instead of by FastAPI: FastAPI would then validate the returned model
    against ``response_model`` in a second thread-pool hop (~0.1 ms of CPU per request); the
    wrapped endpoint is a coroutine, so that check runs in the event loop (it is cheap: the
    endpoint returns an instance of the model). The endpoint itself still runs in a worker
    thread, with the same context variables; its signature, name and docstring (the OpenAPI
    document) are unchanged."""

    def __init__(self, path: str, endpoint, **kwargs) -> None:
        super().__init__(path, _off_loop(endpoint), **kwargs)

    def get_route_handler(self):
        handler = super().get_route_handler()
        needs_key = self.body_field is not None and _needs_key(self.dependant)

        from app.auth.service import refuse_malformed

        async def with_strict_json(request: Request):
            if needs_key:
                # before the body is read: FastAPI parses it before any dependency runs, so a
                # caller without a key, or with a header that holds none, got the body's 422
                # and could make it parse 32 MiB (a well-formed key is looked up afterwards)
                refuse_malformed(request.headers.get("authorization"))
            return await handler(StrictJsonRequest(request.scope, request.receive))

        return with_strict_json


def _needs_key(dependant) -> bool:
    return isinstance(dependant.call, SecurityBase) or any(_needs_key(d) for d in dependant.dependencies)


def is_json(media: str) -> bool:
    kind = media.split(";", 1)[0].strip().lower()
    return kind == "application/json" or kind.endswith("+json")


def not_json(media: str) -> UnsupportedMediaType:
    """The 415 of a JSON operation whose body came with another Content-Type (or none)."""
    needed = "the body must be JSON sent with 'Content-Type: application/json'"
    return UnsupportedMediaType(f"{needed}; this request's Content-Type is {media[:100]!r}" if media else needed)


class StrictJsonRequest(Request):
    """A JSON body that names a key twice in one object is refused: the parser kept the last
    value silently, so ``{"method": "errph", …, "method": "warner"}`` ran warner and a
    budget PUT with two totals set the second."""

    async def json(self):
        if not hasattr(self, "_json"):
            try:
                self._json = json.loads(await self.body(), object_pairs_hook=_unique_keys)
            except _RepeatedKey as e:
                raise HTTPException(422, f"the body is not valid JSON for Veil: the key {e.key!r} "
                                    "appears twice in one object") from None
            except _TooManyKeys as e:
                raise HTTPException(422, f"the body is not valid JSON for Veil: an object has {e.count} "
                                    f"keys (at most {MAX_KEYS_PER_OBJECT})") from None
        return self._json


class _TooManyKeys(ValueError):
    def __init__(self, count: int) -> None:
        super().__init__(count)
        self.count = count


class _RepeatedKey(ValueError):
    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.key = key


MAX_KEYS_PER_OBJECT = 10_000  # a schema or a params map names at most a table's columns (≤ 2,000)


def _unique_keys(pairs: list[tuple[str, object]]) -> dict:
    if len(pairs) > MAX_KEYS_PER_OBJECT:
        # validating them made one error per unknown key: 500,000 keys held the API ~20 s
        raise _TooManyKeys(len(pairs))
    out = dict(pairs)
    if len(out) < len(pairs):
        seen: set[str] = set()
        raise _RepeatedKey(next(k for k, _ in pairs if k in seen or seen.add(k)))
    return out


def _off_loop(endpoint):
    if (inspect.iscoroutinefunction(endpoint) or inspect.isgeneratorfunction(endpoint)
            or inspect.isasyncgenfunction(endpoint)):
        return endpoint

    @functools.wraps(endpoint)
    async def run_in_thread(**kwargs):
        return await run_in_threadpool(endpoint, **kwargs)

    return run_in_thread


def known_method(name: str | None) -> str | None:
    """A list's `method` filter names a registered method: a typo (`?method=errhp`) answered an
    empty page, as if there were no such jobs."""
    from app.privacy import registry

    if name is not None and registry.get(name) is None:
        raise ValueError(f"unknown method {name!r} (GET /v1/methods lists them)")
    return name


def request_id(request: Request) -> str:
    return getattr(request.state, "request_id", "")


async def known_query_only(request: Request) -> None:
    """A query parameter the operation does not take is a 422 naming it (``?limt=5`` or
    ``?datset_id=…`` used to be ignored: a filter the caller believed in silently did nothing),
    and so is one given twice when it takes one value (``?limit=5&limit=6`` used one of them,
    unsaid — like a key named twice in a JSON body). "Takes" is what the served OpenAPI document
    declares. App-wide, before the key is checked: the answer depends on the URL alone."""
    route = request.scope.get("route")
    if route is None or not request.query_params:
        return
    takes = declared_query(request.app).get((route.path_format, request.method.lower()), {})
    unknown = sorted(set(request.query_params) - set(takes))
    if unknown:
        allowed = ", ".join(sorted(takes)) or "none"
        raise Unprocessable(f"unknown query parameter {unknown[0]!r} (this operation takes: {allowed})",
                            errors=[{"loc": ["query", name], "msg": "unknown query parameter",
                                     "type": "extra_forbidden"} for name in unknown])
    counts = collections.Counter(name for name, _ in request.query_params.multi_items())
    repeated = sorted(name for name, n in counts.items() if n > 1 and not takes[name])
    if repeated:
        raise Unprocessable(f"query parameter {repeated[0]!r} is given {counts[repeated[0]]} times; "
                            "it takes one value",
                            errors=[{"loc": ["query", name], "msg": f"given {counts[name]} times; takes one value",
                                     "type": "repeated_parameter"} for name in repeated])


def declared_query(app) -> dict[tuple[str, str], dict[str, bool]]:
    """(path, method) → the operation's query parameters, each with whether it takes a list."""
    declared = getattr(app.state, "declared_query", None)
    if declared is None:
        declared = {(path, method): {p["name"]: _is_list(p.get("schema", {}))
                                     for p in op.get("parameters", []) if p["in"] == "query"}
                    for path, ops in app.openapi()["paths"].items() for method, op in ops.items()}
        app.state.declared_query = declared
    return declared


def _is_list(schema: dict) -> bool:
    return schema.get("type") == "array" or any(_is_list(s) for s in schema.get("anyOf", []))
