from __future__ import annotations

import uuid
from typing import Any

from sqlalchemy.orm import Session

from app import pagination
from app.audit.service import record
from app.auth.schemas import Principal, Role
from app.blobs import repository as blobs
from app.conditional import matches
from app.errors import Forbidden, NotFound
from app.privacy import registry
from app.reports import repository

def store(session: Session, *, job, encoded: dict[str, Any]) -> uuid.UUID:
    report_id = uuid.uuid4()
    plots = {name: {fmt: str(blobs.write(session, data)) for fmt, data in files.items()}
             for name, files in encoded["plots"].items()}
    repository.insert_report(session, id=report_id, tenant=job["tenant"], job_id=job["id"],
                             kind=encoded["report_kind"], dataset_id=job["dataset_id"],
                             release_id=job["release_id"], data=encoded["data"], plots=plots)
    record(session, tenant=job["tenant"], actor="worker", action="report.created",
           subject_type="report", subject_id=report_id, dataset_id=job["dataset_id"],
           release_id=job["release_id"], details={"job_id": str(job["id"]), "kind": encoded["report_kind"]})
    return report_id


def get_row(session: Session, principal: Principal, report_id: uuid.UUID):
    row = repository.get(session, report_id, principal.tenant)
    if row is None:
        raise NotFound(f"report {report_id} not found")
    if not _readable(principal, row):
        raise Forbidden(f"report {report_id} was computed from the raw dataset {row['dataset_id']}: "
                        "like the dataset, it is readable by the tenant's owners only")
    return row


def _readable(principal: Principal, row) -> bool:
    """A report computed from a raw dataset (an analysis given `dataset_id`: risk's class sizes,
    frequent_itemsets' exact supports) describes the raw data with no ε: owners only, as the
    dataset, its profile and a raw-data job's failure message are. Reports made from a release
    (post-processing) or by an experiment (public data) are the tenant's readers'."""
    return principal.reads_what_came_from(row)


def summary(row) -> dict[str, Any]:
    base = f"/v1/reports/{row['id']}/plots"
    return {"id": row["id"], "kind": row["kind"], "job_id": row["job_id"],
            "dataset_id": row["dataset_id"], "release_id": row["release_id"],
            "plots": {name: {fmt: f"{base}/{name}.{fmt}" for fmt in files}
                      for name, files in row["plots"].items()},
            "created_at": row["created_at"], "links": {"self": f"/v1/reports/{row['id']}"}}


def to_response(row) -> dict[str, Any]:
    return {**summary(row), "data": row["data"]}


def known_kind(name: str | None) -> str | None:
    """The list's `kind` filter: the analysis' name, as documented, or the `kind` a report shows.
    `?kind=reconstruct` answered an empty page (its reports say "reconstruction"), and so did a
    typo, as if there were no such reports."""
    if name is None:
        return None
    # a report's `kind` is the name of the analysis that made it, or the spec's report_kind
    kinds = {s.name: s.report_kind or s.name for s in registry.all_methods() if s.kind != registry.MethodKind.release}
    kind = kinds.get(name, name)
    if kind not in kinds.keys() | kinds.values():
        raise ValueError(f"unknown report kind {name!r}: the name of an analysis or experiment "
                         "(GET /v1/methods lists them)")
    return kind


def list_page(session: Session, principal: Principal, *, dataset_id: uuid.UUID | None,
              release_id: uuid.UUID | None, kind: str | None, cursor: str | None,
              limit: int) -> dict[str, Any]:
    rows = repository.list_page(session, principal.tenant, dataset_id=dataset_id, release_id=release_id,
                                kind=kind, after=pagination.decode(cursor), limit=limit,
                                raw_data=principal.role == Role.owner)
    return pagination.page(rows, limit, summary)


def plot(session: Session, principal: Principal, report_id: uuid.UUID, name: str, fmt: str,
         if_none_match: str | None = None) -> tuple[str, bytes | None]:
    """The plot's ETag (its blob's id: a stored plot never changes) and its bytes, or None when
    ``if_none_match`` holds the ETag — after the same authorization as the plot itself."""
    row = get_row(session, principal, report_id)
    files = row["plots"].get(name)
    if not files or fmt not in files:
        raise NotFound(f"report {report_id} has no plot {name}.{fmt}")
    etag = f'"{files[fmt]}"'
    if matches(if_none_match, etag):
        return etag, None
    return etag, blobs.read(session, uuid.UUID(files[fmt]))
