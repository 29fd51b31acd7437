"""One error base class; one handler renders every error as RFC 9457 problem+json."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel


class ProblemDetail(BaseModel):
    type: str
    title: str
    status: int
    detail: str
    instance: str | None = None
    errors: list[dict[str, Any]] | None = None


class VeilError(Exception):
    status: int = 400
    title: str = "Bad request"
    slug: str = "bad-request"

    def __init__(self, detail: str, *, errors: list[dict[str, Any]] | None = None,
                 headers: dict[str, str] | None = None) -> None:
        super().__init__(detail)
        self.detail = detail
        self.errors = errors
        self.headers = headers

    def problem(self, instance: str | None) -> ProblemDetail:
        return ProblemDetail(type=f"https://veil.dev/problems/{self.slug}", title=self.title,
                             status=self.status, detail=self.detail, instance=instance,
                             errors=self.errors)


class BadRequest(VeilError):
    pass


class Unauthorized(VeilError):
    status, title, slug = 401, "Unauthorized", "unauthorized"


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


class InternalError(VeilError):
    status, title, slug = 500, "Internal server error", "internal"


class ServiceUnavailable(VeilError):
    status, title, slug = 503, "Service unavailable", "service-unavailable"


class FrameworkError(VeilError):
    """A status the framework raised that has no class of its own."""

    title, slug = "Error", "error"

    def __init__(self, status: int, detail: str, headers: dict[str, str] | None = None) -> None:
        super().__init__(detail, headers=headers)
        self.status = status


# Declared on every route so the OpenAPI document lists the problem responses.
def problem_responses(*statuses: int) -> dict[int | str, dict[str, Any]]:
    descriptions = {400: "Bad request", 401: "Missing or invalid API key",
                    403: "Role not allowed", 404: "Not found", 408: "The request body stalled",
                    409: "Conflict",
                    413: "Payload too large", 415: "Unsupported media type",
                    422: "Invalid input", 429: "Too many requests", 503: "Database unavailable"}
    return {s: {"model": ProblemDetail, "description": descriptions[s],
                "content": {"application/problem+json": {}}} for s in statuses}
