from __future__ import annotations

import uuid
from typing import Annotated

from fastapi import APIRouter, Query
from fastapi.responses import Response, StreamingResponse
from pydantic import AfterValidator

from app.auth.dependencies import ReaderPrincipal
from app.conditional import ETAG_HEADER, NOT_MODIFIED, not_modified
from app.deps import OffLoopRoute, SessionDep, known_method
from app.errors import problem_responses
from app.openapi_parts import (MEDIA_BY_FORMAT, Cursor, IfNoneMatch, PageSize, ReleaseId, SpreadsheetSafe,
                               TableFormat, table_content)
from app.releases import service
from app.releases.schemas import Release, ReleasePage

router = APIRouter(prefix="/v1/releases", tags=["releases"], route_class=OffLoopRoute)


@router.get("", response_model=ReleasePage, responses=problem_responses(401, 403, 422, 503))
def list_releases(principal: ReaderPrincipal, session: SessionDep,
                  dataset_id: Annotated[uuid.UUID | None, Query(description="releases made from this dataset")] = None,
                  method: Annotated[str | None, Query(description="releases of this method"), AfterValidator(known_method)] = None,
                  cursor: Cursor = None, limit: PageSize = 50) -> ReleasePage:
    """The tenant's releases, newest first, paginated by `next` (as datasets and jobs are): summaries
    with guarantees and provenance; a release's metadata, chain and columns are at its URL."""
    return ReleasePage(**service.list_page(session, principal, dataset_id=dataset_id, method=method,
                                           cursor=cursor, limit=limit))


@router.get("/{release_id}", response_model=Release, responses=problem_responses(401, 403, 404, 422, 503))
def get_release(release_id: ReleaseId, principal: ReaderPrincipal, session: SessionDep) -> Release:
    """A release's guarantees, metrics, published metadata, chain and provenance."""
    return Release(**service.get(session, principal, release_id))


@router.get("/{release_id}/data", response_class=StreamingResponse,
            responses={200: {"description": "the release's rows", "content": table_content(),
                             "headers": ETAG_HEADER},
                       **NOT_MODIFIED, **problem_responses(401, 403, 404, 422, 503)})
def download_release(release_id: ReleaseId, principal: ReaderPrincipal, session: SessionDep,
                     format: TableFormat = "csv", spreadsheet_safe: SpreadsheetSafe = False,
                     if_none_match: IfNoneMatch = None) -> Response:
    """Stream the release's rows as CSV, JSON Lines or Parquet. A release never changes: the
    answer's ETag names this representation, and a caller that kept a copy sends it back in
    If-None-Match to get a 304 without the rows (the answer stays `Cache-Control: no-store`:
    no browser or proxy cache keeps a release, the caller's own copy is its business)."""
    etag, body = service.download(session, principal, release_id, format, spreadsheet_safe, if_none_match)
    if body is None:
        return not_modified(etag)
    return StreamingResponse(body, media_type=MEDIA_BY_FORMAT[format], headers={
        "ETag": etag, "Content-Disposition": f'attachment; filename="release-{release_id}.{format}"'})
