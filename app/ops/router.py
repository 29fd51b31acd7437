from __future__ import annotations

import hmac
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor

from fastapi import APIRouter, Request, Response
from fastapi.responses import JSONResponse
from pydantic import BaseModel

from app.config import get_settings
from app.db import get_engine, transaction
from app.deps import OffLoopRoute
from app.errors import RETRY_AFTER, RETRY_AFTER_DECLARED, Unauthorized, problem_response
from app.migrate import current_revision, head_revision
from app.ops import repository
from app.ops.metrics import render

router = APIRouter(tags=["operations"], route_class=OffLoopRoute)


class Health(BaseModel):
    status: str


class Readiness(BaseModel):
    status: str
    checks: dict[str, str]


@router.get("/healthz", response_model=Health)
def healthz() -> Health:
    """Alive (the process answers)."""
    return Health(status="ok")


@router.get("/readyz", response_model=Readiness,
            responses={503: {"model": Readiness, "description": "not ready: the failing checks say why",
                             "headers": RETRY_AFTER_DECLARED}})
def readyz():
    """Ready: the database answers, migrations are at head, a worker heartbeat is recent. The
    answer comes within 5 s: a database that does not answer by then is a 503 saying so."""
    global _pending
    with _pending_lock:
        if _pending is None or _pending[0].done():
            _pending = (_checker.submit(_checks), time.monotonic())
        future, started = _pending
    waited = time.monotonic() - started
    if waited >= READY_TIMEOUT_S:  # one check already waits on the database: answer at once
        return _answer({"database": f"no answer for {waited:.0f} s"})
    try:  # a probe that finds a check running shares its answer, until that check's time is up
        checks = future.result(timeout=READY_TIMEOUT_S - waited)
    except TimeoutError:
        checks = {"database": f"no answer within {READY_TIMEOUT_S:g} s"}
    return _answer(checks)


# A PostgreSQL whose processes are stopped (hung, not dead) takes connections and never answers:
# /readyz hung with it, each probe holding an API thread. The checks run in one thread of
# their own: a probe waits for them at most READY_TIMEOUT_S from when they began (a probe that
# arrives while they run shares their answer: two probes at once are not a hung database), and
# once they have waited longer the next probes answer at once (no second check piles up).
READY_TIMEOUT_S = 5.0
_checker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="readyz")
_pending_lock = threading.Lock()
_pending: tuple[Future, float] | None = None


def _answer(checks: dict[str, str]):
    ready = all(v.startswith("ok") for v in checks.values()) and len(checks) == 3
    body = Readiness(status="ready" if ready else "not ready", checks=checks)
    return body if ready else JSONResponse(body.model_dump(), status_code=503, headers=RETRY_AFTER)


def _checks() -> dict[str, str]:
    checks: dict[str, str] = {}
    # Each check says how it failed: one handler for all put every failure under "database",
    # which had already passed when the heartbeat query met a database without Veil's tables
    # (not migrated): the 503 read {"database": "ok"}, naming nothing.
    try:
        with transaction() as session:
            repository.database_answers(session)
    except Exception as exc:
        checks["database"] = f"unavailable ({type(exc).__name__})"
    else:
        checks["database"] = "ok"
        checks["migrations"] = _migrations_check()
        checks["workers"] = _workers_check()
    return checks


def _migrations_check() -> str:
    try:
        current, head = current_revision(get_engine()), head_revision()
    except Exception as exc:
        return f"unknown ({type(exc).__name__})"
    if current == head:
        return "ok"
    return "no Veil schema: run `veil migrate`" if current is None else f"at {current}, head is {head}"


def _workers_check() -> str:
    try:
        with transaction() as session:
            recent = repository.live_workers(session, max(3 * get_settings().heartbeat_interval_s, 10))
    except Exception as exc:
        return f"unknown ({type(exc).__name__})"
    return f"ok ({recent} alive)" if recent else "no worker heartbeat"


@router.get("/metrics", response_class=Response,
            responses={200: {"content": {"text/plain": {"schema": {"type": "string"}}},
                             "description": "Prometheus text format"},
                       401: {**problem_response(401),
                             "description": "VEIL_METRICS_TOKEN is set and the request did not send it"}})
def metrics(request: Request) -> Response:
    """Prometheus metrics: request latency, jobs by state, queue depth, finished jobs by method and
    outcome and their durations, and whether the database answered (`veil_database_up`). No API
    key; when the service sets `VEIL_METRICS_TOKEN`, send `Authorization: Bearer <that token>`."""
    token = get_settings().metrics_token
    if token is not None and not hmac.compare_digest(
            request.headers.get("authorization", "").encode(), f"Bearer {token}".encode()):
        raise Unauthorized("/metrics needs 'Authorization: Bearer <VEIL_METRICS_TOKEN>' "
                           "(the service's metrics token, not an API key)",
                           headers={"WWW-Authenticate": "Bearer"})
    return Response(render(), media_type="text/plain; version=0.0.4; charset=utf-8")
