from __future__ import annotations

import uuid
from typing import Annotated

from fastapi import APIRouter, Path, Query, Response
from pydantic import AfterValidator

from app.auth.dependencies import ReaderPrincipal
from app.conditional import ETAG_HEADER, NOT_MODIFIED, not_modified
from app.deps import OffLoopRoute, SessionDep
from app.errors import NotFound, problem_responses
from app.openapi_parts import Cursor, IfNoneMatch, PageSize, ReportId
from app.openapi_parts import binary_content
from app.reports import service
from app.reports.schemas import Report, ReportPage

router = APIRouter(prefix="/v1/reports", tags=["reports"], route_class=OffLoopRoute)


@router.get("", response_model=ReportPage, responses=problem_responses(401, 403, 422, 503))
def list_reports(principal: ReaderPrincipal, session: SessionDep,
                 dataset_id: Annotated[uuid.UUID | None, Query(description="reports on this dataset")] = None,
                 release_id: Annotated[uuid.UUID | None, Query(description="reports on this release")] = None,
                 kind: Annotated[str | None, Query(description="reports of this kind: the analysis' name "
                                                   "(`reconstruct`'s reports say `reconstruction`; either is taken)"),
                                 AfterValidator(service.known_kind)] = None,
                 cursor: Cursor = None, limit: PageSize = 50) -> ReportPage:
    """The tenant's reports, newest first, paginated by `next`. An analyst's list leaves out the
    reports computed from a raw dataset (owners only)."""
    return ReportPage(**service.list_page(session, principal, dataset_id=dataset_id, release_id=release_id,
                                          kind=kind, cursor=cursor, limit=limit))


@router.get("/{report_id}", response_model=Report, responses=problem_responses(401, 403, 404, 422, 503))
def get_report(report_id: ReportId, principal: ReaderPrincipal, session: SessionDep) -> Report:
    """A report's data (tables as lists of records) and the addresses of its plots. A report
    computed from a raw dataset (an analysis given `dataset_id`) describes the data with no ε:
    its plots and data are for the tenant's owners only (403 for an analyst)."""
    return Report(**service.to_response(service.get_row(session, principal, report_id)))


@router.get("/{report_id}/plots/{filename}", response_class=Response,
            responses={200: {"description": "the plot", "content": binary_content("image/png", "image/svg+xml"),
                             "headers": ETAG_HEADER},
                       **NOT_MODIFIED, **problem_responses(401, 403, 404, 422, 503)})
def get_plot(report_id: ReportId,
             filename: Annotated[str, Path(description="`{name}.png` or `{name}.svg`, as in the report's `plots`")], principal: ReaderPrincipal,
             session: SessionDep, if_none_match: IfNoneMatch = None) -> Response:
    """A plot as PNG or SVG: `{name}.png` or `{name}.svg`. A stored plot never changes: send
    its ETag back in If-None-Match for a 304 without the image."""
    name, _, fmt = filename.rpartition(".")
    if fmt not in ("png", "svg") or not name:
        raise NotFound("plots are served as {name}.png or {name}.svg")
    etag, data = service.plot(session, principal, report_id, name, fmt, if_none_match)
    if data is None:
        return not_modified(etag)
    return Response(data, media_type="image/png" if fmt == "png" else "image/svg+xml", headers={"ETag": etag})
