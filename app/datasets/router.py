from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import Annotated

from fastapi import APIRouter, Depends, Request, Response
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import PlainTextResponse, StreamingResponse
from starlette.convertors import PathConvertor, register_url_convertor
from starlette.datastructures import UploadFile

from app.auth.dependencies import OwnerPrincipal
from app.conditional import ETAG_HEADER, NOT_MODIFIED, not_modified
from app.datasets import service
from app.datasets.parsing import FORMATS
from app.datasets.schema import BARE_OR_WRAPPED, SchemaUpdate, schema_json, schema_update_from
from app.datasets.schemas import Dataset, DatasetPage, Hierarchy, Profile, SyntheticRequest
from app.deps import OffLoopRoute, SessionDep, is_json, not_json
from app.errors import Unprocessable, UnsupportedMediaType, problem_responses
from app.openapi_parts import (MEDIA_BY_FORMAT, Cursor, DatasetId, HierarchyColumn, IdempotencyKey, IfNoneMatch,
                               PageSize, SpreadsheetSafe, TableFormat, table_content)
from app.privacy.anonymity.builders import HierarchyBuild


class ColumnName(PathConvertor):
    """A column name in the path: anything, slashes and line breaks included (Starlette's
    ``path`` convertor stops at a line break, so such a column could not take a hierarchy and
    the request was a 404 before its key was checked)."""
    regex = r"[\s\S]*"


register_url_convertor("column", ColumnName())

router = APIRouter(prefix="/v1/datasets", tags=["datasets"], route_class=OffLoopRoute)
FORM_MEDIA = ("multipart/form-data", "application/x-www-form-urlencoded")

_UPLOAD_BODY = {
    "requestBody": {
        "required": True,
        "content": {"multipart/form-data": {"schema": {
            "type": "object", "required": ["file"],
            "properties": {
                "file": {"type": "string", "format": "binary",
                         "description": "CSV, TSV, Parquet, JSON Lines, or a transaction file "
                                        "(one transaction of item ids per line)"},
                "schema": {"type": "string", "description": "JSON: {column: {type, role, bounds, "
                           "categories, integer}}, optionally wrapped in {\"columns\": …}"},
                "format": {"type": "string", "enum": list(FORMATS), "description":
                           "default: from the file (Parquet's magic bytes) or its name's extension; "
                           "transactions: items separated by white space (.dat, .txt); baskets: "
                           "items separated by commas (items may hold spaces); a Parquet or JSON "
                           "Lines file of one column of item lists is read as transactions"},
                "name": {"type": "string"},
            }}}},
    }
}


def _copy_to(spooled, path: Path) -> None:
    """The spooled body to a file of its own, in a worker thread: a 1 MiB write took up to 8 ms
    on a loaded disk, and on the event loop every other request of this process waited for it."""
    with open(path, "wb") as out:
        shutil.copyfileobj(spooled, out, 1 << 20)


@router.post("", status_code=201, response_model=Dataset, openapi_extra=_UPLOAD_BODY,
             responses={201: {"description": "the dataset is stored",
                              "headers": {"Location": {"description": "the dataset's address",
                                                       "schema": {"type": "string"}}}},
                        200: {"model": Dataset, "description": "a replay: the same Idempotency-Key "
                              "and request as before; the original dataset"},
                        **problem_responses(401, 403, 408, 409, 413, 415, 422, 503)})
async def upload_dataset(request: Request, response: Response, principal: OwnerPrincipal,
                         session: SessionDep, idempotency_key: IdempotencyKey = None) -> Dataset:
    """Upload a dataset (multipart field `file`; optional `schema`, `format`, `name`).
    The size limit is enforced while the body streams in; nothing is kept on a 4xx."""
    content_type = request.headers.get("content-type", "")
    if not content_type.startswith("multipart/form-data"):
        raise UnsupportedMediaType("upload the file as multipart/form-data with a field named 'file'")
    await run_in_threadpool(session.commit)  # authenticated: hold no connection while the body streams in
    with tempfile.TemporaryDirectory(prefix="veil-upload-") as tmp:
        async with request.form(max_files=1, max_fields=10) as form:
            for field in ("file", "schema", "format", "name"):  # one value each, not the last of several
                if (given := len(form.getlist(field))) > 1:
                    raise Unprocessable(f"the field {field!r} is given {given} times; it takes one value")
            upload_file = form.get("file")
            if not isinstance(upload_file, UploadFile):
                raise Unprocessable("the multipart body has no file field named 'file'")
            path = Path(tmp) / "upload"
            await run_in_threadpool(_copy_to, upload_file.file, path)
            fields = {k: form.get(k) for k in ("schema", "format", "name")}
            for k, v in fields.items():
                if v is not None and not isinstance(v, str):
                    raise Unprocessable(f"the field {k!r} must be text")
        upload = await run_in_threadpool(
            service.receive, session, principal, path=path, filename=upload_file.filename,
            name=fields["name"], declared_format=fields["format"], schema_raw=fields["schema"],
            idempotency_key=idempotency_key)
        if upload.replay is not None:
            dataset, created = upload.replay, False
        else:  # the replay check read the database: hold no connection while the child parses
            await run_in_threadpool(session.commit)
            dataset, created = await run_in_threadpool(service.store, session, principal, upload)
    response.status_code = 201 if created else 200
    response.headers["Location"] = f"/v1/datasets/{dataset['id']}"
    return Dataset(**dataset)


@router.post("/synthetic", status_code=201, response_model=Dataset,
             responses=problem_responses(401, 403, 422, 503))
def generate_dataset(body: SyntheticRequest, response: Response, principal: OwnerPrincipal,
                     session: SessionDep) -> Dataset:
    """Create a dataset from a generator (the paper's synthetic bank-card customers); its
    sha256 is that of the stored Parquet bytes."""
    dataset = service.create_synthetic(session, principal, generator=body.generator,
                                       rows=body.rows, seed=body.seed, name=body.name)
    response.headers["Location"] = f"/v1/datasets/{dataset['id']}"
    return Dataset(**dataset)


@router.get("", response_model=DatasetPage, responses=problem_responses(401, 403, 422, 503))
def list_datasets(principal: OwnerPrincipal, session: SessionDep,
                  cursor: Cursor = None, limit: PageSize = 50) -> DatasetPage:
    """The tenant's datasets, newest first (paginated by `next`): summaries that count the columns
    (`column_count`); a dataset's columns are at GET /v1/datasets/{id}."""
    return DatasetPage(**service.list_page(session, principal, cursor, limit))


@router.get("/{dataset_id}", response_model=Dataset, responses=problem_responses(401, 403, 404, 422, 503))
def get_dataset(dataset_id: DatasetId, principal: OwnerPrincipal, session: SessionDep) -> Dataset:
    """A dataset's columns (inferred types and roles, overrides applied), size, format and sha256."""
    return Dataset(**service.get(session, principal, dataset_id))


@router.get("/{dataset_id}/data", response_class=StreamingResponse,
            responses={200: {"description": "the raw rows", "content": table_content(), "headers": ETAG_HEADER},
                       **NOT_MODIFIED, **problem_responses(401, 403, 404, 422, 503)})
def download_dataset(dataset_id: DatasetId, principal: OwnerPrincipal, session: SessionDep,
                     format: TableFormat = "csv", spreadsheet_safe: SpreadsheetSafe = False,
                     if_none_match: IfNoneMatch = None) -> Response:
    """The raw data as stored (owners only; every download is audited). The ETag names these
    bytes in this format, until a schema change re-codes them (a role change does not): a
    caller that kept a copy sends it in If-None-Match for a 304 without the rows."""
    etag, body = service.download(session, principal, dataset_id, format, spreadsheet_safe, if_none_match)
    if body is None:
        return not_modified(etag)
    return StreamingResponse(body, media_type=MEDIA_BY_FORMAT[format], headers={
        "ETag": etag, "Content-Disposition": f'attachment; filename="dataset-{dataset_id}.{format}"'})


@router.get("/{dataset_id}/profile", response_model=Profile,
            responses=problem_responses(401, 403, 404, 422, 503))
def get_profile(dataset_id: DatasetId, principal: OwnerPrincipal, session: SessionDep) -> Profile:
    """Per-column statistics of the raw data (owners only)."""
    return Profile(**service.profile(session, principal, dataset_id))


async def schema_body(request: Request) -> SchemaUpdate:
    """PUT …/schema's body: the overrides map, bare (as the upload's ``schema`` field is usually
    written) or wrapped in {"columns": …}. Read by hand because a pydantic union of the two
    forms answers a bad bare map with the wrapped form's errors ("columns: Field required")."""
    raw = await request.body()
    if not raw.strip():
        raise Unprocessable(f"the request body is empty: send the overrides as JSON, {BARE_OR_WRAPPED}")
    media = request.headers.get("content-type", "")
    if not is_json(media):  # as every JSON operation answers (it read any media type as JSON)
        raise not_json(media)
    # parsed and validated in a thread: a large map would hold this process's event loop
    return await run_in_threadpool(lambda: schema_update_from(schema_json(raw, "the request body"), "the schema"))


BODY_MODELS = (SchemaUpdate,)  # _SCHEMA_BODY refers to them; app.main publishes them
_SCHEMA_BODY = {"requestBody": {"required": True, "content": {"application/json": {"schema": {
    "anyOf": [{"$ref": "#/components/schemas/SchemaUpdate"},
              {"type": "object", "title": "bare overrides map",
               "additionalProperties": {"$ref": "#/components/schemas/ColumnOverride"}}]}}}}}


@router.put("/{dataset_id}/schema", response_model=Dataset, openapi_extra=_SCHEMA_BODY,
            responses=problem_responses(401, 403, 404, 409, 422, 503))
def put_schema(dataset_id: DatasetId, principal: OwnerPrincipal,  # the key is checked before the body
               body: Annotated[SchemaUpdate, Depends(schema_body)], session: SessionDep) -> Dataset:
    """Override column types, roles, numeric bounds or declared categories: a map of column
    name → overrides, bare or wrapped in {"columns": …} (like the upload's ``schema`` field)."""
    return Dataset(**service.update_schema(session, principal, dataset_id, body))


@router.put("/{dataset_id}/hierarchies/{column:column}", response_model=Hierarchy,
            responses=problem_responses(401, 403, 404, 408, 413, 415, 422, 503),
            openapi_extra={"requestBody": {"required": True, "content": {
                "text/csv": {"schema": {"type": "string"}},
                "text/plain": {"schema": {"type": "string"}},
                # any media type but a form is read as the file: generated clients send bytes so
                "application/octet-stream": {"schema": {"type": "string", "format": "binary"}}}}})
async def put_hierarchy(dataset_id: DatasetId, column: HierarchyColumn, request: Request,
                        principal: OwnerPrincipal, session: SessionDep) -> Hierarchy:
    """Upload a generalization hierarchy for a column in ARX's CSV format
    (`value;level1;…;*`, one row per value). Every data value must appear exactly once."""
    media = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if media in FORM_MEDIA:  # curl -F / -d: a form, not the file (-d also drops the newlines)
        raise UnsupportedMediaType(f"send the hierarchy file itself as the body, not as a form ({media}): "
                                   "curl -X PUT -H 'Content-Type: text/csv' --data-binary @FILE.csv …")
    await run_in_threadpool(session.commit)  # authenticated: hold no connection while the body streams in
    raw = await request.body()
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise Unprocessable("the hierarchy must be UTF-8 text") from None
    if not text.strip():
        raise Unprocessable("the hierarchy is empty")
    return Hierarchy(**await run_in_threadpool(service.put_hierarchy, session, principal,
                                               dataset_id, column, text))


@router.post("/{dataset_id}/hierarchies/{column:column}/build", response_model=Hierarchy,
             responses=problem_responses(401, 403, 404, 415, 422, 503))
def build_hierarchy(dataset_id: DatasetId, column: HierarchyColumn, body: HierarchyBuild,
                    principal: OwnerPrincipal, session: SessionDep) -> Hierarchy:
    """Generate a column's hierarchy from a builder's specification — `redaction` (codes such as
    ZIP codes, masked one more character per level), `date` (ISO dates → month → year → decade),
    `intervals` (a numeric column's cells of the widths given per level) or `groups` (the
    owner's groups per level) — and store it as an upload is: checked against the data, read
    back as ARX CSV by GET, replaced by the next upload or build, audited
    (`dataset.hierarchy_set`, with the builder's name). docs/hierarchies.md has examples."""
    return Hierarchy(**service.build_hierarchy(session, principal, dataset_id, column, body))


@router.get("/{dataset_id}/hierarchies/{column:column}", response_class=PlainTextResponse,
            responses={200: {"description": "the hierarchy as uploaded (ARX CSV)",
                             "content": {"text/csv": {"schema": {"type": "string"}}}},
                       **problem_responses(401, 403, 404, 422, 503)})
def get_hierarchy(dataset_id: DatasetId, column: HierarchyColumn, principal: OwnerPrincipal,
                  session: SessionDep) -> PlainTextResponse:
    """A column's hierarchy as it was uploaded (owners only; audited like a download)."""
    return PlainTextResponse(service.get_hierarchy(session, principal, dataset_id, column),
                             media_type="text/csv")


@router.delete("/{dataset_id}/hierarchies/{column:column}", status_code=204,
               responses=problem_responses(401, 403, 404, 422, 503))
def delete_hierarchy(dataset_id: DatasetId, column: HierarchyColumn, principal: OwnerPrincipal,
                     session: SessionDep) -> Response:
    """Remove a column's hierarchy (audited); anonymity jobs that start afterwards use the
    automatic one (intervals for numeric columns, a flat one for categorical columns)."""
    service.delete_hierarchy(session, principal, dataset_id, column)
    return Response(status_code=204)


@router.delete("/{dataset_id}", status_code=204, responses=problem_responses(401, 403, 404, 422, 503))
def delete_dataset(dataset_id: DatasetId, principal: OwnerPrincipal, session: SessionDep) -> Response:
    """Delete a dataset: its data is purged; releases made from it and the audit trail stay."""
    service.delete(session, principal, dataset_id)
    return Response(status_code=204)
