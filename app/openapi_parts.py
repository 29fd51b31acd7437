"""Pieces of route declarations that several domains share, so the OpenAPI document says the
same thing the same way everywhere: binary response bodies and the shared parameters (ids,
paging, a download's format, Idempotency-Key)."""

from __future__ import annotations

import uuid
from typing import Annotated, Any, Literal

from fastapi import Header, Path, Query
from pydantic import ConfigDict

TABLE_MEDIA = ("text/csv", "application/x-ndjson", "application/vnd.apache.parquet")
MEDIA_BY_FORMAT = dict(zip(("csv", "jsonl", "parquet"), TABLE_MEDIA))  # a download's ?format=


# An answer's model: the service sends every field, so its schema declares every one required,
# defaults or not (a generated client would type a field with a default as `Unset | …`).
SENT_WHOLE = ConfigDict(json_schema_serialization_defaults_required=True)


def binary_content(*media: str) -> dict[str, Any]:
    """A response body of raw bytes: a client generator reads it as a file (with no schema it
    reads nothing)."""
    return {m: {"schema": {"type": "string", "format": "binary"}} for m in media}


def table_content() -> dict[str, Any]:
    """A table download (``?format=csv|jsonl|parquet``): CSV and JSON Lines are text, Parquet
    bytes. (Text declared as binary makes openapi-python-client wrap a str in BytesIO.)"""
    csv, jsonl, parquet = TABLE_MEDIA
    # Parquet first (as in the committed, key-sorted document): a generator that reads one media
    # type per response takes the first it knows, and mapping Parquet to bytes gets every format
    return {**binary_content(parquet), jsonl: {"schema": {"type": "string"}}, csv: {"schema": {"type": "string"}}}


CURSOR = "the `next` value of the previous page; omit for the first page"
Cursor = Annotated[str | None, Query(description=CURSOR)]


def _path_id(what: str) -> Any:
    return Annotated[uuid.UUID, Path(description=f"the {what}'s id")]


DatasetId = _path_id("dataset")
ReleaseId = _path_id("release")
JobId = _path_id("job")
ModelId = _path_id("model")
ReportId = _path_id("report")
KeyId = _path_id("API key")
HierarchyColumn = Annotated[str, Path(description="the column the hierarchy generalizes")]

PageSize = Annotated[int, Query(ge=1, le=200, description="items per page (the last page may have fewer)")]
TableFormat = Annotated[Literal["csv", "jsonl", "parquet"],
                        Query(description="csv, jsonl (JSON Lines) or parquet; the Content-Type follows")]
SpreadsheetSafe = Annotated[bool, Query(
    description="csv only: a text cell starting with =, +, -, @, a tab or a carriage return gets a "
    "leading ' so a spreadsheet shows it instead of running it as a formula (OWASP's CSV "
    "injection advice), and the file starts with a UTF-8 byte-order mark (Excel needs it to read "
    "non-ASCII text); the cells then differ from the data, so it is off by default")]
IfNoneMatch = Annotated[str | None, Header(
    max_length=4096, description="the ETag of a copy kept from an earlier download (or a list, or *): "
    "a 304 without a body when it is this representation's")]
IdempotencyKey = Annotated[str | None, Header(
    min_length=1, max_length=200, description="a retry with the same key and the same request answers the original "
    "(200) instead of creating another; the same key with another request is a 409")]
