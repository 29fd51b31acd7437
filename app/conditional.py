"""Conditional GETs of stored bytes (a release's rows and a report's plots, which never change;
a dataset's rows, until a schema change re-codes them): the answer's ETag comes back in
If-None-Match and a 304 replaces the body. Answers keep the API's
`Cache-Control: no-store`, so only a caller that keeps its own copy (a dashboard's backend)
revalidates; no browser or proxy stores a tenant's data."""

from __future__ import annotations

from typing import Any

from fastapi.responses import Response

# The OpenAPI parts both routes declare: the 200's ETag header and the 304.
ETAG_HEADER = {"ETag": {"description": "this representation's validator", "schema": {"type": "string"}}}
NOT_MODIFIED: dict[int | str, dict[str, Any]] = {304: {
    "description": "If-None-Match holds the ETag: the copy the caller kept is current (no body)"}}


def not_modified(etag: str) -> Response:
    return Response(status_code=304, headers={"ETag": etag})


def matches(if_none_match: str | None, etag: str) -> bool:
    """If-None-Match's weak comparison (RFC 9110 §13.1.2): '*' or any listed tag, W/ ignored."""
    if not if_none_match:
        return False
    if if_none_match.strip() == "*":
        return True
    opaque = etag.removeprefix("W/")
    return any(tag.strip().removeprefix("W/") == opaque for tag in if_none_match.split(","))
