"""Pure ASGI middleware: request id + access log + latency metric, HEAD answered as GET
without its body, the body size limit (enforced while the body streams in, so an oversized
upload is refused early), and the limit on requests in flight (so a burst waits in the event
loop instead of starving the threads)."""

from __future__ import annotations

import asyncio
import json
import logging
import time
import uuid
import weakref

from app.audit.service import head_only
from app.errors import PayloadTooLarge, RequestTimeout, ServiceUnavailable, UnsupportedMediaType, VeilError
from app.logging_setup import request_id_var
from app.ops.metrics import REQUEST_LATENCY

log = logging.getLogger("veil.http")
PROBE_PATHS = frozenset({"/healthz", "/readyz"})


class RequestContext:
    def __init__(self, app) -> None:
        self.app = app

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        headers = dict(scope.get("headers") or [])
        rid = headers.get(b"x-request-id", b"").decode("latin-1")[:100] or uuid.uuid4().hex
        token = request_id_var.set(rid)
        scope.setdefault("state", {})["request_id"] = rid
        started = time.perf_counter()
        status = {"code": 500}

        async def send_with_id(message):
            if message["type"] == "http.response.start":
                status["code"] = message["status"]
                message["headers"] = list(message.get("headers", [])) + [(b"x-request-id", rid.encode())]
            await send(message)

        try:
            await self.app(scope, receive, send_with_id)
        finally:
            elapsed = time.perf_counter() - started
            route = scope.get("route")
            template = getattr(route, "path", "unmatched")
            REQUEST_LATENCY.labels(scope["method"], template, str(status["code"])).observe(elapsed)
            # Probes (an orchestrator every few seconds, `veil serve`'s ready line twice a second
            # while it starts) would bury the requests people read the log for; /metrics counts them.
            level = logging.DEBUG if template in PROBE_PATHS else logging.INFO
            extra = {"method": scope["method"], "path": template, "status": status["code"],
                     "duration_ms": round(elapsed * 1000, 2)}
            # whose request it was (set by current_principal once the key is authenticated):
            # the tenant and the key's id, never the key
            if (principal := scope.get("state", {}).get("principal")) is not None:
                extra |= {"tenant": principal.tenant, "key_id": principal.actor}
            log.log(level, "request", extra=extra)
            request_id_var.reset(token)


class HeadAsGet:
    """HEAD wherever GET works (RFC 9110 §9.3.2): FastAPI routes declare GET only. The GET runs
    and its headers (Content-Length, Content-Type, …) are sent; its body is not."""

    def __init__(self, app) -> None:
        self.app = app

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        if scope["method"] != "HEAD":
            # Set, not left to the default: asyncio can hand a request task the context of the
            # previous request on the same keep-alive connection (cpython#140947; uvicorn
            # resumes reading inside the HEAD's task), and a GET after a HEAD was then audited
            # as head_only — a real download of raw data recorded as headers only.
            token = head_only.set(False)
            try:
                return await self.app(scope, receive, send)
            finally:
                head_only.reset(token)
        finished = False

        async def headers_only(message):
            nonlocal finished
            if message["type"] == "http.response.body":
                if finished or message.get("more_body", False):
                    return  # a streamed body's chunks are dropped; its last message ends the answer
                finished = True
                message = {"type": "http.response.body", "body": b"", "more_body": False}
            await send(message)

        token = head_only.set(True)
        try:
            await self.app({**scope, "method": "GET"}, receive, headers_only)
        finally:
            head_only.reset(token)


def is_upload(scope) -> bool:
    """Requests whose body may be large and slow: dataset and hierarchy uploads."""
    path = scope["path"].rstrip("/")
    return ((scope["method"] == "POST" and path == "/v1/datasets")
            or (scope["method"] == "PUT" and path.startswith("/v1/datasets/") and "/hierarchies/" in path))


def runs_a_parse_child(scope) -> bool:
    """Requests that run a child process under the upload memory limit (app/datasets/isolated.py):
    the uploads, and a stored table's schema change. They share the upload slots, so one API
    process has at most that many such children (each up to VEIL_UPLOAD_MEMORY_LIMIT_MB)."""
    path = scope["path"].rstrip("/")
    return is_upload(scope) or (scope["method"] == "PUT" and path.startswith("/v1/datasets/")
                                and path.endswith("/schema"))


class BodyLimit:
    """Refuse bodies over the limit: at once from Content-Length, or as soon as the streamed
    body passes the limit (the client gets 413 problem+json; the app sees a disconnect).
    A body that stalls for ``idle_timeout_s`` between two chunks gets 408 the same way."""

    def __init__(self, app, upload_limit: int, default_limit: int, idle_timeout_s: float = 30.0,
                 hierarchy_limit: int | None = None) -> None:
        self.app = app
        self.upload_limit = upload_limit
        self.default_limit = default_limit
        self.hierarchy_limit = default_limit if hierarchy_limit is None else hierarchy_limit
        self.idle_timeout_s = idle_timeout_s

    def _limit(self, scope) -> int:
        if scope["method"] == "POST" and scope["path"].rstrip("/") == "/v1/datasets":
            return self.upload_limit
        if is_upload(scope):  # a hierarchy file
            return self.hierarchy_limit
        return self.default_limit

    def _too_large(self, scope, limit: int) -> PayloadTooLarge:
        """The 413, naming the limit's setting and, for a dataset, what makes the file smaller."""
        detail = f"the request body is larger than the limit of {limit} bytes"
        if scope["method"] == "POST" and scope["path"].rstrip("/") == "/v1/datasets":
            detail += (f" ({_mib(limit)}VEIL_MAX_UPLOAD_BYTES): send the table as Parquet, several "
                       "times smaller than CSV (1,000,000 Adult rows: 103 MiB as CSV, 11 MiB as Parquet)")
        elif is_upload(scope):
            detail += " (VEIL_MAX_HIERARCHY_BYTES)"
        return PayloadTooLarge(detail)

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http" or scope["method"] in ("GET", "HEAD", "OPTIONS", "DELETE"):
            return await self.app(scope, receive, send)
        limit = self._limit(scope)
        headers = dict(scope.get("headers") or [])
        coding = headers.get(b"content-encoding", b"").strip().lower()
        if coding not in (b"", b"identity"):  # never decoded: the body would reach the app compressed
            return await _send_problem(send, scope, UnsupportedMediaType(
                f"compressed uploads are not accepted (Content-Encoding {coding.decode('latin-1')!r}): send "
                "the request body uncompressed (Parquet is compressed internally)"), {b"connection": b"close"})
        declared = headers.get(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > limit:
            return await _send_problem(send, scope, self._too_large(scope, limit), {b"connection": b"close"})
        state = {"received": 0, "refused": False, "started": False, "complete": False}

        async def refuse(error: VeilError) -> dict:
            state["refused"] = True
            if not state["started"]:
                await _send_problem(send, scope, error, {b"connection": b"close"})
                state["started"] = True
            return {"type": "http.disconnect"}

        async def limited_receive():
            if state["refused"]:
                return {"type": "http.disconnect"}
            if state["complete"]:  # after the body: waiting for a disconnect is not a stall
                return await receive()
            try:
                message = await asyncio.wait_for(receive(), self.idle_timeout_s)
            except TimeoutError:
                return await refuse(RequestTimeout(
                    f"no part of the request body arrived for {self.idle_timeout_s:g} s"))
            if message["type"] == "http.request":
                state["received"] += len(message.get("body", b""))
                state["complete"] = not message.get("more_body", False)
                if state["received"] > limit:
                    return await refuse(self._too_large(scope, limit))
            return message

        async def guarded_send(message):
            if state["refused"]:
                return  # the 413 has been sent; drop whatever the app answers
            if message["type"] == "http.response.start":
                state["started"] = True
            await send(message)

        await self.app(scope, limited_receive, guarded_send)


class InFlightLimit:
    """At most ``limit`` requests past this point at once; the others wait here, in the event
    loop, holding neither a worker thread nor a database connection (503 after ``wait_s``).

    Why: a request holds its database connection from authentication to the commit, across
    several hops through the thread pool (dependency, endpoint, response validation). Without
    a bound, a burst larger than the connection pool fills every thread with requests blocked
    in the pool's checkout or on a row lock (concurrent job submissions on one budget), while
    the requests that hold the connections and the lock wait for a thread: nothing moves until
    the pool's 30 s timeout turns them into 500s. With ``limit`` ≤ the connection pool and
    below the thread pool's size, every admitted request always finds both.

    Uploads have their own ``upload_limit`` slots instead (``is_upload``): their body may
    stream in for a long time, and they hold no connection meanwhile (the endpoint commits
    after authentication), so slow uploads cannot take the slots of other requests. A schema
    change takes one too (``runs_a_parse_child``): it runs the same child process, and without
    a slot 30 of them on different datasets could each hold the upload memory limit. The
    connection pool has room for both (``limit + upload_limit``)."""

    EXEMPT = ("/healthz",)  # liveness answers even when every slot is taken

    def __init__(self, app, limit: int, upload_limit: int = 4, wait_s: float = 30.0,
                 exempt: tuple[str, ...] = EXEMPT) -> None:
        self.app = app
        self.limits = {"general": limit, "upload": upload_limit}
        self.wait_s = wait_s
        self.exempt = exempt
        self._semaphores: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()

    def _semaphore(self, kind: str) -> asyncio.Semaphore:
        loop = asyncio.get_running_loop()  # one set per event loop (the test client runs several)
        sems = self._semaphores.get(loop)
        if sems is None:
            sems = self._semaphores[loop] = {k: asyncio.Semaphore(n) for k, n in self.limits.items()}
        return sems[kind]

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http" or scope["path"] in self.exempt:
            return await self.app(scope, receive, send)
        sem = self._semaphore("upload" if runs_a_parse_child(scope) else "general")
        try:
            await asyncio.wait_for(sem.acquire(), self.wait_s)
        except TimeoutError:
            return await _send_problem(send, scope, ServiceUnavailable("the service is busy; retry later"))
        try:
            await self.app(scope, receive, send)
        finally:
            sem.release()


def _mib(n: int) -> str:
    """512 MiB, followed by a comma; nothing under a MiB (the byte count says it)."""
    return f"{n / (1024 * 1024):.4g} MiB, " if n >= 1024 * 1024 else ""


async def _send_problem(send, scope, error: VeilError, headers: dict[bytes, bytes] | None = None) -> None:
    headers = {**{k.lower().encode("latin-1"): v.encode("latin-1") for k, v in (error.headers or {}).items()},
               **(headers or {})}
    body = json.dumps(error.problem(scope["path"]).model_dump(exclude_none=True)).encode()
    await send({"type": "http.response.start", "status": error.status,
                "headers": [(b"content-type", b"application/problem+json"),
                            (b"content-length", str(len(body)).encode()), *headers.items()]})
    await send({"type": "http.response.body", "body": body})
