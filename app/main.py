"""The FastAPI application: routers by domain, one problem+json error handler."""

from __future__ import annotations

import contextlib
import gc
import logging
import re
import tempfile

from fastapi import Depends, FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic.json_schema import models_json_schema
from sqlalchemy.exc import DataError, DBAPIError, InterfaceError, OperationalError
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.requests import ClientDisconnect

from app import logging_setup
from app.audit.router import router as audit_router
from app.auth.router import router as keys_router
from app.budgets.router import router as budgets_router
from app.config import get_settings
from app.db import POOL_OVERFLOW, POOL_SIZE, UPLOAD_CONNECTIONS
from app.datasets import isolated
from app.datasets.router import BODY_MODELS
from app.datasets.router import router as datasets_router
from app.deps import database_problem, declared_query, is_json, known_query_only, not_json
from app.errors import (PROBLEM_MEDIA, TEMP_FULL, BadRequest, FrameworkError, InsufficientStorage,
                        InternalError, MethodNotAllowed, NotFound, ProblemDetail, Unprocessable,
                        VeilError, out_of_disk_space, problem_response)
from app.jobs.router import router as jobs_router
from app.methods.router import router as methods_router
from app.middleware import BodyLimit, HeadAsGet, InFlightLimit, RequestContext
from app.models.router import router as models_router
from app.ops.router import router as ops_router
from app.privacy.registry import MethodContractError
from app.releases.router import router as releases_router
from app.reports.router import router as reports_router
from app.security_headers import SecurityHeaders
from app.version import code_version

log = logging.getLogger("veil.api")

DESCRIPTION = """Privacy transforms as a service: randomized response, differentially private
release, k-anonymity and itemset randomization, with reconstruction, mining, an ε budget per
dataset and an append-only audit trail. Authenticate with `Authorization: Bearer <key>`.
Every error is RFC 9457 problem+json."""

TAGS = [
    {"name": "operations", "description": "Liveness, readiness and Prometheus metrics (no key)."},
    {"name": "methods", "description": "The method catalogue: parameters, guarantees, papers (no key)."},
    {"name": "datasets", "description": "Upload, inspect, describe (schema, hierarchies) and delete raw data."},
    {"name": "budgets", "description": "A dataset's ε cap and its ledger of debits and refunds."},
    {"name": "jobs", "description": "Run a method on a dataset or a release; poll, cancel, retry."},
    {"name": "releases", "description": "Privatized data and the guarantees it was released under."},
    {"name": "reports", "description": "Analyses' results: tables and plots."},
    {"name": "models", "description": "Classifiers trained on releases, and their predictions."},
    {"name": "audit", "description": "The append-only audit trail."},
    {"name": "auth", "description": "API keys (admins)."},
]


def _problem(exc: VeilError, request: Request) -> JSONResponse:
    body = exc.problem(request.url.path).model_dump(exclude_none=True)
    return JSONResponse(body, status_code=exc.status, media_type=PROBLEM_MEDIA, headers=exc.headers)


def _methods_of_path(request: Request, fallback: str | None) -> str:
    """The methods the served document gives the request's path (+ HEAD wherever GET works:
    HeadAsGet), or Starlette's own Allow for a path outside the document."""
    methods: set[str] = set()
    for template, operations in request.app.openapi()["paths"].items():
        pattern = "".join("[^/]+" if part.startswith("{") else re.escape(part)
                          for part in re.split(r"(\{[^}/]+\})", template))
        if re.fullmatch(pattern, request.url.path):
            methods |= {m.upper() for m in operations}
    if "GET" in methods:
        methods.add("HEAD")
    return ", ".join(sorted(methods)) or fallback or ""


MAX_LISTED_ERRORS = 100


def _validation_errors(exc: RequestValidationError) -> tuple[list[dict], int]:
    """The first ``MAX_LISTED_ERRORS`` errors and how many there are: a body of 500,000
    unknown keys made as many errors, 56 MB of answer and ~20 s of this process's event loop."""
    # loc, msg and type only: pydantic's "input" would echo the caller's data back.
    errors = exc.errors()
    return [_readable(e) for e in errors[:MAX_LISTED_ERRORS]], len(errors)


def _most_specific(errors: list[dict]) -> dict:
    """The error the detail sums up: the deepest (the first of those). A value that fits no
    member of a union gets one error per member, and the deepest is the one inside the member
    of the value's own shape — an edge list holding NaN was summed up as "bins.int: Input
    should be a valid integer" where "….age.list[float].1: Input should be a finite number"
    was listed too."""
    return max(errors, key=lambda e: len(e["loc"]))


_UNION_TAG = re.compile(r"(int|float|str|bool|none|(list|dict|tuple|set|union)\[.*\])")


def _union_tag(part) -> bool:
    """A member tag pydantic puts in a union error's loc (``int``, ``list[float]``, …): kept in
    ``errors``, left out of the detail's path, which reads as the body's own keys."""
    return isinstance(part, str) and _UNION_TAG.fullmatch(part) is not None


def _readable(error: dict) -> dict:
    """A body that is not JSON at all comes as loc ['body', <character offset>], msg 'JSON
    decode error' (rendered '0: JSON decode error'): say what and where, from the parser's
    own words (they describe the syntax, not the caller's data)."""
    loc, msg = list(error.get("loc", ())), error.get("msg", "")
    if error.get("type") == "json_invalid" and len(loc) == 2 and isinstance(loc[1], int):
        reason = str((error.get("ctx") or {}).get("error", "")).strip()
        msg = f"the body is not valid JSON ({reason or 'decode error'} at character {loc[1]})"
        loc = ["body"]
    return {"loc": loc, "msg": msg, "type": error.get("type", "")}


def _publish_models(app: FastAPI, models) -> None:
    """Add ``models`` to the document's components: FastAPI publishes the models it validates
    itself, not those a hand-written request body (``openapi_extra``) or a problem response
    (``errors.problem_response``) refers to. Then declare the app-wide answers."""
    build = app.openapi

    def openapi() -> dict:
        if app.openapi_schema is None:
            doc = build()
            _, defs = models_json_schema([(m, "validation") for m in models],
                                         ref_template="#/components/schemas/{model}")
            schemas = doc.setdefault("components", {}).setdefault("schemas", {})
            for name, schema in defs.get("$defs", {}).items():
                schemas.setdefault(name, schema)
            _declare_app_wide_problems(doc)
        return app.openapi_schema

    app.openapi = openapi


_FASTAPI_422 = "#/components/schemas/HTTPValidationError"  # FastAPI's default 422 response


def _declare_app_wide_problems(doc: dict) -> None:
    """Problems that no route raises itself, declared where they can happen: a query parameter
    the operation does not take (``known_query_only``: 422, any operation), the in-flight limit
    (503, any operation but /healthz), a full disk (507, the same), the body limit, the stalled-body timeout and a compressed
    body (413, 408, 415, any operation with a request body), the key check (401, any operation with security).
    An operation that takes no key says so (``security: []``) rather than leaving it unsaid."""
    for path, ops in doc["paths"].items():
        for op in ops.values():
            op.setdefault("security", [])
            statuses = [422] + ([503, 507] if path not in InFlightLimit.EXEMPT else [])
            if "requestBody" in op:
                statuses += [408, 413, 415]
            if op.get("security"):
                statuses.append(401)
            for status in statuses:
                declared = problem_response(status)
                response = op["responses"].get(str(status))
                if response is None or _FASTAPI_422 in str(response):
                    op["responses"][str(status)] = declared
                else:  # the route's own (readyz's 503 has its own body): add the problem's
                    response.setdefault("content", {}).setdefault(PROBLEM_MEDIA, declared["content"][PROBLEM_MEDIA])
    # FastAPI's own 422 shape, which the validation handler never sends (it answers problem+json)
    for name in ("HTTPValidationError", "ValidationError"):
        doc["components"]["schemas"].pop(name, None)


@contextlib.asynccontextmanager
async def _warm_up(app: FastAPI):
    """Build the OpenAPI document (and the query check's table from it, ~0.3 s) before the
    first request, not during it. Then move everything alive after start-up (the app, the
    method registry, numpy/pandas/scikit-learn modules: ~300,000 objects) out of the garbage
    collector's reach: a full collection traversed them all, ~0.2 s with every request of the
    process stopped, several times a minute under load (4,000 concurrent in-process requests
    saw 5, each 166-240 ms; 13-22 ms once frozen). Start the forkserver uploads are read
    from (it imports the parsing modules in the background)."""
    declared_query(app)
    isolated.warm_up()
    gc.collect()  # what start-up left as garbage is freed, not frozen
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()  # collectable again once the app is shut down (tests make several)


def create_app() -> FastAPI:
    settings = get_settings()
    if not logging.getLogger().handlers:  # an API process spawned by `veil serve` (uvicorn workers)
        logging_setup.configure(settings.log_level)
    app = FastAPI(title="Veil", version=code_version().split("+")[0], description=DESCRIPTION,
                  openapi_url="/openapi.json", openapi_tags=TAGS, redirect_slashes=False,
                  # operationIds are the endpoint functions' names (unique: the test checks),
                  # not FastAPI's name_path_verb that changes with every path edit
                  generate_unique_id_function=lambda route: route.name,
                  dependencies=[Depends(known_query_only)], lifespan=_warm_up)

    @app.exception_handler(VeilError)
    async def veil_error(request: Request, exc: VeilError):
        return _problem(exc, request)

    @app.exception_handler(RequestValidationError)
    async def validation_error(request: Request, exc: RequestValidationError):
        errors, total = _validation_errors(exc)
        first = _most_specific(errors) if errors else {"loc": [], "msg": "invalid request"}
        where = ".".join(str(p) for p in first["loc"] if p != "body" and not _union_tag(p)) or "request"
        detail = f"{where}: {first['msg']}"
        if total > len(errors):
            detail += f" (and {total - 1} more errors; the first {len(errors)} are listed)"
        media = request.headers.get("content-type", "")
        if first["loc"] == ["body"] and not is_json(media):
            # `curl -d '{…}'` without the header sends a form: FastAPI then validates the raw
            # bytes and says "Input should be a valid dictionary", which names nothing. A body
            # of the wrong media type is a 415, as an upload or a hierarchy sent as a form is.
            return _problem(not_json(media), request)
        return _problem(Unprocessable(detail, errors=errors), request)

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException):
        detail = exc.detail if isinstance(exc.detail, str) else "request refused"
        if exc.status_code == 400:
            # Starlette/FastAPI raise 400 for a body they cannot parse (not UTF-8, a broken
            # multipart); FastAPI itself answers invalid JSON with 422, and every route with a
            # body declares 422: answer alike.
            return _problem(Unprocessable(f"the request body cannot be parsed: {detail}"), request)
        headers = getattr(exc, "headers", None)
        if exc.status_code == 422:  # raised before validation (deps.StrictJsonRequest)
            return _problem(Unprocessable(detail, headers=headers), request)
        if exc.status_code == 404:
            path = request.url.path
            if detail == "Not Found":  # no route. No slash redirect: a 307 to http:// breaks behind TLS
                detail = f"no resource at {path}"
                if len(path) > 1 and path.endswith("/"):
                    detail += f"; paths take no trailing slash: {path.rstrip('/')}"
            return _problem(NotFound(detail, headers=headers), request)
        if exc.status_code == 405:
            # Starlette's Allow names the methods of the first route on the path only (GET and
            # POST /v1/jobs are two routes: it said "POST"): gather them from every route
            allow = _methods_of_path(request, (headers or {}).get("Allow"))
            detail = f"{request.method} is not allowed on {request.url.path}; this path takes {allow}"
            return _problem(MethodNotAllowed(detail, headers={**(headers or {}), "Allow": allow}), request)
        return _problem(FrameworkError(exc.status_code, detail, headers), request)

    @app.exception_handler(OperationalError)
    @app.exception_handler(InterfaceError)
    async def database_down(request: Request, exc: DBAPIError):
        return _problem(database_problem(exc), request)

    @app.exception_handler(OSError)
    async def disk_full(request: Request, exc: OSError):
        # the upload's body or the reading child's table in a full temporary folder (an
        # OSError the handler below answered 500 "an unexpected error occurred")
        if out_of_disk_space(exc):
            log.error("out of disk space in the temporary folder %s (%s)", tempfile.gettempdir(),
                      exc.strerror)
            return _problem(InsufficientStorage(TEMP_FULL), request)
        return await unexpected(request, exc)

    @app.exception_handler(DataError)
    async def value_refused(request: Request, exc: DataError):
        # PostgreSQL refused a value that came with the request (a NUL character in a text
        # parameter, a time zone offset or a number outside its range): the request's fault.
        log.warning("the database refused a request value (%s)", type(getattr(exc, "orig", exc)).__name__)
        return _problem(Unprocessable("a value in the request cannot be processed (a NUL character, "
                                      "or a number, date or time zone out of range)"), request)

    @app.exception_handler(ClientDisconnect)
    async def client_gone(request: Request, exc: ClientDisconnect):
        # The client went away mid-body, or the body limit cut it off (the 413 is already
        # sent): nobody reads this answer, and it is not a server error.
        log.info("the client disconnected before the request body was complete")
        return _problem(BadRequest("the request body was not received completely"), request)

    @app.exception_handler(Exception)
    async def unexpected(request: Request, exc: Exception):
        if isinstance(exc, MethodContractError):  # a method's own fault, said without data: its message
            log.error("unhandled %s: %s", type(exc).__name__, exc, exc_info=exc)
        else:
            log.error("unhandled %s", type(exc).__name__, exc_info=exc)
        return _problem(InternalError("an unexpected error occurred; it has been logged"), request)

    for router in (ops_router, methods_router, datasets_router, budgets_router, jobs_router,
                   releases_router, reports_router, models_router, audit_router, keys_router):
        app.include_router(router)
    _publish_models(app, (*BODY_MODELS, ProblemDetail))

    # inside the body limit; the two kinds of slots together never exceed the connection pool
    uploads = min(settings.max_concurrent_uploads, UPLOAD_CONNECTIONS)
    app.add_middleware(InFlightLimit, limit=POOL_SIZE + POOL_OVERFLOW - uploads, upload_limit=uploads)
    app.add_middleware(BodyLimit, upload_limit=settings.max_upload_bytes,
                       default_limit=32 * 1024 * 1024, hierarchy_limit=settings.max_hierarchy_bytes,
                       idle_timeout_s=settings.body_idle_timeout_s)
    app.add_middleware(HeadAsGet)
    app.add_middleware(RequestContext)
    app.add_middleware(SecurityHeaders)  # outermost: the middleware's own answers (413, 503) get them too
    return app
