"""One error base class; one handler renders every error as RFC 9457 problem+json."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field


class ProblemIssue(BaseModel):
    """One invalid thing in a 422: every ``errors`` item has exactly these keys."""
    loc: list[str | int] = Field(..., description="where: e.g. [\"body\", \"params\", \"p0\"] or [\"query\", \"limt\"]")
    msg: str = Field(..., description="what is wrong with it")
    type: str = Field(..., description="a machine-readable kind, e.g. `less_than_equal`, `extra_forbidden`")


class ProblemDetail(BaseModel):
    """RFC 9457 problem details, sent as application/problem+json."""
    type: str = Field(..., description=(
        "a URI per kind of problem, https://veil.dev/problems/<slug>, stable: `bad-request` (400), "
        "`unauthorized` (401), `forbidden` (403), `not-found` (404), `method-not-allowed` (405), "
        "`request-timeout` (408), `conflict` (409), `budget-exhausted` (409: the dataset's ε budget "
        "cannot pay the job; PUT …/budget raises the cap), `payload-too-large` (413), "
        "`unsupported-media-type` (415), `unprocessable` (422), `too-many-requests` (429), "
        "`internal` (500), `service-unavailable` (503), `insufficient-storage` (507: the server is out "
        "of disk space; nothing was stored), `error` (any other status)"))
    title: str = Field(..., description="the kind of problem, in words (the same for every problem of a `type`)")
    status: int = Field(..., description="the HTTP status")
    detail: str = Field(..., description="this occurrence, in words: names the parameter, column or resource")
    instance: str | None = Field(None, description="the request path")
    errors: list[ProblemIssue] | None = Field(None, description="422s: every invalid field")


class VeilError(Exception):
    status: int = 400
    title: str = "Bad request"
    slug: str = "bad-request"
    default_headers: dict[str, str] = {}

    def __init__(self, detail: str, *, errors: list[dict[str, Any]] | None = None,
                 headers: dict[str, str] | None = None) -> None:
        super().__init__(detail)
        self.detail = detail
        self.errors = errors
        self.headers = {**self.default_headers, **(headers or {})} or None

    def problem(self, instance: str | None) -> ProblemDetail:
        return ProblemDetail(type=f"https://veil.dev/problems/{self.slug}", title=self.title,
                             status=self.status, detail=self.detail, instance=instance,
                             errors=self.errors)


class BadRequest(VeilError):
    pass


class Unauthorized(VeilError):
    status, title, slug = 401, "Unauthorized", "unauthorized"

    @classmethod
    def missing_key(cls) -> Unauthorized:
        return cls("missing API key: send 'Authorization: Bearer <key>'",
                   headers={"WWW-Authenticate": "Bearer"})

    @classmethod
    def invalid_key(cls) -> Unauthorized:
        return cls("invalid API key", headers={"WWW-Authenticate": "Bearer"})


class Forbidden(VeilError):
    status, title, slug = 403, "Forbidden", "forbidden"


class NotFound(VeilError):
    status, title, slug = 404, "Not found", "not-found"


class Conflict(VeilError):
    status, title, slug = 409, "Conflict", "conflict"


class BudgetExhausted(Conflict):
    title, slug = "Privacy budget exhausted", "budget-exhausted"


class MethodNotAllowed(VeilError):
    status, title, slug = 405, "Method not allowed", "method-not-allowed"


class RequestTimeout(VeilError):
    status, title, slug = 408, "Request timeout", "request-timeout"


class PayloadTooLarge(VeilError):
    status, title, slug = 413, "Payload too large", "payload-too-large"


class UnsupportedMediaType(VeilError):
    status, title, slug = 415, "Unsupported media type", "unsupported-media-type"


class Unprocessable(VeilError):
    status, title, slug = 422, "Unprocessable content", "unprocessable"


class TooManyRequests(VeilError):
    status, title, slug = 429, "Too many requests", "too-many-requests"
    # The tenant's cap on active jobs: a slot frees when one of its jobs finishes, which takes
    # seconds, so a client that backs off this long retries about when one may have.
    default_headers = {"Retry-After": "5"}


class InternalError(VeilError):
    status, title, slug = 500, "Internal server error", "internal"


# Every 503 is a passing state (the database, the load, readiness): each says when to ask again,
# and the OpenAPI document declares the header wherever a 503 is declared.
RETRY_AFTER = {"Retry-After": "2"}
RETRY_AFTER_DECLARED = {"Retry-After": {"description": "seconds to wait before retrying",
                                        "schema": {"type": "integer"}}}


class ServiceUnavailable(VeilError):
    status, title, slug = 503, "Service unavailable", "service-unavailable"
    default_headers = RETRY_AFTER


class InsufficientStorage(VeilError):
    """The server is out of disk space (its temporary folder, or the database's): nothing was
    stored, and asking again helps only once an operator has freed space, so no Retry-After."""
    status, title, slug = 507, "Insufficient storage", "insufficient-storage"


NO_SPACE_ERRNOS = (28, 122)  # ENOSPC, EDQUOT (a quota): the disk is full for this process
DISK_FULL_SQLSTATE = "53100"  # PostgreSQL's disk_full


def out_of_disk_space(exc: BaseException) -> bool:
    """An OSError of a full disk or quota, or PostgreSQL's disk_full (SQLAlchemy wraps it)."""
    if isinstance(exc, OSError):
        return exc.errno in NO_SPACE_ERRNOS
    return getattr(getattr(exc, "orig", None), "sqlstate", None) == DISK_FULL_SQLSTATE


class FrameworkError(VeilError):
    """A status the framework raised that has no class of its own."""

    title, slug = "Error", "error"

    def __init__(self, status: int, detail: str, headers: dict[str, str] | None = None) -> None:
        super().__init__(detail, headers=headers)
        self.status = status


DATABASE_FULL = ("the database is out of disk space: nothing was stored; ask again once an operator "
                 "has freed space")
TEMP_FULL = ("the server is out of disk space for the request's temporary files: nothing was "
             "stored; ask again once an operator has freed space")

PROBLEM_MEDIA = "application/problem+json"
PROBLEM_SCHEMA = {"$ref": "#/components/schemas/ProblemDetail"}  # app.main publishes the model

# What each status means in the OpenAPI document, and the class whose problem it is (its
# ``type`` and ``title`` make the example).
_DECLARED: dict[int, tuple[str, type[VeilError], str]] = {
    400: ("Bad request", BadRequest, "the request body was not received completely"),
    401: ("Missing or invalid API key", Unauthorized, "missing API key: send 'Authorization: Bearer <key>'"),
    403: ("Role not allowed", Forbidden, "this operation needs the role owner; your key has the role analyst"),
    404: ("Not found", NotFound, "no such resource in your tenant"),
    408: ("The request body stalled", RequestTimeout, "no part of the request body arrived for 30 s"),
    409: ("Conflict", Conflict, "the resource is not in a state that allows this"),
    413: ("Payload too large", PayloadTooLarge, "the request body is larger than the limit"),
    415: ("Unsupported media type", UnsupportedMediaType, "the body's Content-Type is not accepted here"),
    422: ("Invalid input", Unprocessable, "limit: Input should be less than or equal to 200"),
    429: ("Too many requests", TooManyRequests,
          "the tenant already has 20 queued or running jobs; wait for some to finish"),
    503: ("Database unavailable or the service busy", ServiceUnavailable,
          "the database is unavailable; retry later"),
    507: ("The server is out of disk space", InsufficientStorage, DATABASE_FULL),
}


def problem_response(status: int) -> dict[str, Any]:
    """One problem+json response for the OpenAPI document: the schema is declared under the
    media type the error handler actually sends (not FastAPI's default application/json)."""
    description, cls, detail = _DECLARED[status]
    example = cls(detail).problem(None).model_dump(exclude_none=True)
    out: dict[str, Any] = {"description": description,
                           "content": {PROBLEM_MEDIA: {"schema": PROBLEM_SCHEMA, "example": example}}}
    if "Retry-After" in cls.default_headers:
        out["headers"] = RETRY_AFTER_DECLARED
    return out


def budget_conflict(conflicts: str) -> dict[str, Any]:
    """The 409 of an operation that debits a budget: its own conflicts, or the budget's."""
    return {**problem_response(409), "description": (
        f"{conflicts}; or the dataset's ε budget cannot pay the job: type "
        "https://veil.dev/problems/budget-exhausted (PUT …/budget raises the cap)")}


# Declared on every route so the OpenAPI document lists the problem responses.
def problem_responses(*statuses: int) -> dict[int | str, dict[str, Any]]:
    return {s: problem_response(s) for s in statuses}
