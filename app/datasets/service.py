"""Datasets: upload (parsed in a child process: app/datasets/isolated.py; stored here), read, update schema, hierarchies, delete."""

from __future__ import annotations

import hashlib
import json
import tempfile
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from app import codec, pagination
from app.audit.service import record
from app.auth.schemas import Principal
from app.blobs import repository as blobs
from app.budgets import service as budgets
from app.config import get_settings
from app.datasets import isolated, parsing, repository
from app.datasets.schema import (
    SchemaUpdate, infer_columns, normalize, public_columns, schema_json, schema_update_from,
)
from app.errors import Conflict, NotFound, Unprocessable
from app.jobs import repository as jobs_repository


def limits() -> parsing.Limits:
    s = get_settings()
    return parsing.Limits(max_rows=s.max_rows, max_columns=s.max_columns,
                          max_cell_length=s.max_cell_length)


def parse_schema_field(raw: str | None) -> SchemaUpdate | None:
    if raw is None or not raw.strip():
        return None
    return schema_update_from(schema_json(raw, "the schema field"), "the schema field")


def to_response(row, hierarchy_columns: list[str] | None = None,
                budget: dict[str, Any] | None = None) -> dict[str, Any]:
    return {**to_summary({**row, "column_count": len(row["columns"])}, hierarchy_columns, budget),
            "columns": public_columns(row["columns"])}


def to_summary(row, hierarchy_columns: list[str] | None = None,
               budget: dict[str, Any] | None = None) -> dict[str, Any]:
    """``budget``: its figures (budgets.figures_of); None for a dataset just stored (none yet)."""
    return {"id": row["id"], "name": row["name"], "format": row["format"], "shape": row["shape"],
            "rows": row["rows"], "column_count": row["column_count"], "sha256": row["sha256"],
            "size_bytes": row["size_bytes"], "hierarchies": sorted(hierarchy_columns or []),
            "deleted": row["deleted_at"] is not None, "budget": budget or budgets.NO_BUDGET,
            "created_at": row["created_at"], "links": _links(row["id"])}


def _links(dataset_id: uuid.UUID) -> dict[str, str]:
    """Where the dataset's data, profile, budget and what was made from it are (a client that
    follows links had none to follow from a dataset)."""
    url = f"/v1/datasets/{dataset_id}"
    return {"self": url, "data": f"{url}/data?format=csv", "profile": f"{url}/profile",
            "budget": f"{url}/budget", "jobs": f"/v1/jobs?dataset_id={dataset_id}",
            "releases": f"/v1/releases?dataset_id={dataset_id}"}


def _stored(session: Session, row) -> dict[str, Any]:
    """A stored dataset's answer: its hierarchies and budget read for it."""
    return to_response(row, _hierarchy_columns(session, row["id"]),
                       budgets.figures_of(session, [row["id"]])[row["id"]])


@dataclass(frozen=True)
class Upload:
    """A received upload, checked and fingerprinted; ``replay`` is the dataset an earlier request
    with the same Idempotency-Key stored (then nothing is parsed or stored)."""
    path: Path
    filename: str | None
    name: str | None
    fmt: str
    update: Any
    sha: str
    request_hash: str
    idempotency_key: str | None
    replay: dict[str, Any] | None


def receive(session: Session, principal: Principal, *, path: Path, filename: str | None,
            name: str | None, declared_format: str | None, schema_raw: str | None,
            idempotency_key: str | None) -> Upload:
    """The checks that need no parsing, and the Idempotency-Key's replay (the only read)."""
    if name is not None and len(name) > repository.NAME_LENGTH:
        raise Unprocessable(f"name: at most {repository.NAME_LENGTH} characters (got {len(name)})")
    if name is not None and "\x00" in name:
        raise Unprocessable("name: a NUL character cannot be stored")
    filename = filename.replace("\x00", "") if filename else filename
    sha = _sha256(path)
    request_hash = hashlib.sha256(json.dumps([sha, name, filename, declared_format, schema_raw]).encode()).hexdigest()
    replay = None
    if idempotency_key:
        existing = repository.by_idempotency_key(session, principal.tenant, idempotency_key)
        if existing is not None:
            replay = _replay(session, existing, request_hash)
    return Upload(path=path, filename=filename, name=name,
                  fmt=parsing.detect_format(path, filename, declared_format) if replay is None else "",
                  update=parse_schema_field(schema_raw) if replay is None else None, sha=sha,
                  request_hash=request_hash, idempotency_key=idempotency_key, replay=replay)


def store(session: Session, principal: Principal, upload: Upload) -> tuple[dict[str, Any], bool]:
    """Parse the upload (in a child process: no database work meanwhile) and store it. Returns
    (dataset, created): created is False when a concurrent request with the same
    Idempotency-Key stored it first."""
    path, idempotency_key = upload.path, upload.idempotency_key
    payload_path = path.with_name(path.name + ".parquet")
    encoded = isolated.encode(path, upload.fmt, limits(), upload.update, payload_path)
    payload, shape, columns = payload_path.read_bytes(), encoded.shape, encoded.columns
    dataset_id = uuid.uuid4()
    name = upload.name or (upload.filename or "")[:repository.NAME_LENGTH] or str(dataset_id)
    values = dict(id=dataset_id, tenant=principal.tenant, name=name, format=upload.fmt, shape=shape,
                  rows=encoded.rows, columns=columns, sha256=upload.sha, size_bytes=path.stat().st_size,
                  created_by=principal.key_id, idempotency_key=idempotency_key,
                  request_hash=upload.request_hash)
    try:
        with session.begin_nested():
            values["blob_id"] = blobs.write(session, payload)
            repository.insert_dataset(session, **values)
    except IntegrityError:
        # A concurrent request with the same Idempotency-Key won the race.
        existing = repository.by_idempotency_key(session, principal.tenant, idempotency_key or "")
        if existing is None:
            raise
        return _replay(session, existing, upload.request_hash), False
    record(session, tenant=principal.tenant, actor=principal.actor, action="dataset.uploaded",
           subject_type="dataset", subject_id=dataset_id, dataset_id=dataset_id,
           details={"sha256": upload.sha, "format": upload.fmt, "rows": encoded.rows, "columns": len(columns)})
    row = repository.get(session, principal.tenant, dataset_id)
    return to_response(row), True


def create_synthetic(session: Session, principal: Principal, *, generator: str, rows: int, seed: int,
                     name: str | None) -> dict[str, Any]:
    """A generated dataset (no upload): the synthetic bank-card customers of seed 000."""
    from app.privacy.synthetic import generate_bank_customers

    frame = normalize(generate_bank_customers(rows, seed))
    columns = infer_columns(frame)
    label = next((c for c in columns if c["name"] == "customer_value"), None)
    if label is not None:
        label["role"] = "label"
    payload = codec.table_to_parquet(frame)
    dataset_id = uuid.uuid4()
    sha = hashlib.sha256(payload).hexdigest()
    repository.insert_dataset(
        session, id=dataset_id, tenant=principal.tenant, name=name or f"{generator}-{rows}-{seed}",
        format="synthetic", shape="table", rows=len(frame), columns=columns, sha256=sha,
        size_bytes=len(payload), blob_id=blobs.write(session, payload), created_by=principal.key_id)
    record(session, tenant=principal.tenant, actor=principal.actor, action="dataset.generated",
           subject_type="dataset", subject_id=dataset_id, dataset_id=dataset_id,
           details={"generator": generator, "rows": rows, "seed": seed, "sha256": sha})
    return to_response(repository.get(session, principal.tenant, dataset_id))


def _replay(session: Session, existing, request_hash: str) -> dict[str, Any]:
    if existing["request_hash"] != request_hash:
        raise Conflict("this Idempotency-Key was used for a different upload")
    return _stored(session, existing)


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _hierarchy_columns(session: Session, dataset_id: uuid.UUID) -> list[str]:
    return repository.hierarchy_columns(session, [dataset_id]).get(dataset_id, [])


def get_row(session: Session, principal: Principal, dataset_id: uuid.UUID, *, live: bool = False,
            for_update: bool = False, for_key_share: bool = False):
    row = repository.get(session, principal.tenant, dataset_id, for_update=for_update,
                         for_key_share=for_key_share)
    if row is None:
        raise NotFound(f"dataset {dataset_id} not found")
    if live and row["deleted_at"] is not None:
        raise NotFound(f"dataset {dataset_id} was deleted; its data is purged")
    return row


def get(session: Session, principal: Principal, dataset_id: uuid.UUID) -> dict[str, Any]:
    return _stored(session, get_row(session, principal, dataset_id))


def list_page(session: Session, principal: Principal, cursor: str | None, limit: int) -> dict[str, Any]:
    after = pagination.decode(cursor)
    rows = repository.list_page(session, principal.tenant, after=after, limit=limit)
    ids = [r["id"] for r in rows]
    hier = repository.hierarchy_columns(session, ids) if rows else {}
    figures = budgets.figures_of(session, ids)
    return pagination.page(rows, limit, lambda r: to_summary(r, hier.get(r["id"], []), figures[r["id"]]))


def profile(session: Session, principal: Principal, dataset_id: uuid.UUID) -> dict[str, Any]:
    row = get_row(session, principal, dataset_id, live=True)
    record(session, tenant=principal.tenant, actor=principal.actor, action="dataset.profile_read",
           subject_type="dataset", subject_id=dataset_id, dataset_id=dataset_id)
    return {"id": row["id"], "rows": row["rows"], "columns": row["columns"]}


def download_etag(row, fmt: str, spreadsheet_safe: bool) -> str:
    """A weak validator of one representation of a dataset's rows: stored bytes are never
    overwritten (a re-coding schema change stores new ones, under a new blob id), so the blob's
    id with the format asked for names them (weak: as a release's)."""
    from app.downloads import representation_etag

    return representation_etag(row["blob_id"], fmt, spreadsheet_safe)


def download(session: Session, principal: Principal, dataset_id: uuid.UUID, fmt: str,
             spreadsheet_safe: bool = False, if_none_match: str | None = None):
    """The raw data (owners only), audited like a release download: (its ETag, a generator of
    the encoded rows), no generator and nothing recorded when ``if_none_match`` holds the ETag."""
    from app.conditional import matches
    from app.downloads import check_spreadsheet_safe, download_details, encode_table

    check_spreadsheet_safe(fmt, spreadsheet_safe)
    # FOR KEY SHARE until the data is read (the transaction ends before the answer streams): a
    # delete or a re-coding schema change committed between reading the row and its bytes left
    # no bytes, and the download was a 500 or an empty 200; now it waits, or is seen (404)
    row = get_row(session, principal, dataset_id, live=True, for_key_share=True)
    etag = download_etag(row, fmt, spreadsheet_safe)
    if matches(if_none_match, etag):
        return etag, None
    payload = blobs.read(session, row["blob_id"])
    record(session, tenant=principal.tenant, actor=principal.actor, action="dataset.downloaded",
           subject_type="dataset", subject_id=dataset_id, dataset_id=dataset_id,
           details=download_details(fmt, spreadsheet_safe))
    return etag, encode_table(payload, row["shape"], fmt, spreadsheet_safe)


def update_schema(session: Session, principal: Principal, dataset_id: uuid.UUID,
                  update: SchemaUpdate) -> dict[str, Any]:
    # Read unlocked: the child below runs for up to the parse time limit, and a row lock held
    # that long made every submission on the dataset wait (a 503 past the statement timeout).
    row = get_row(session, principal, dataset_id, live=True)
    if row["shape"] != "table":
        raise Unprocessable("a transaction dataset has no columns to describe")
    _refuse_under_active_jobs(session, dataset_id)  # early: no child for a change that cannot land
    # decoded, checked and re-coded in a child process (the API process would keep the memory)
    with tempfile.TemporaryDirectory(prefix="veil-schema-") as tmp:
        payload_path, out_path = Path(tmp) / "stored.parquet", Path(tmp) / "recoded.parquet"
        payload_path.write_bytes(blobs.read(session, row["blob_id"]))
        # the bytes are the row's only if it is unchanged now: a delete or a re-coding change
        # committed between the two reads left none, and the child's failure was a 422
        _refuse_if_changed(session, principal, row)
        columns, changed = isolated.apply_schema(payload_path, row["columns"], update, out_path)
        # Now lock, and land the change only on the data and schema the child worked from.
        _refuse_if_changed(session, principal, row, for_update=True)
        _refuse_under_active_jobs(session, dataset_id)
        if changed:  # under the lock: no hierarchy upload is checking against the old values
            _refuse_unfitting_hierarchies(session, dataset_id, row["columns"], columns, out_path)
        blob_id = None
        if changed:  # types changed: store the re-coded data, drop the old copy
            blob_id = blobs.write(session, out_path.read_bytes())
            blobs.remove(session, row["blob_id"])
    repository.set_columns(session, dataset_id, columns, blob_id)
    record(session, tenant=principal.tenant, actor=principal.actor, action="dataset.schema_updated",
           subject_type="dataset", subject_id=dataset_id, dataset_id=dataset_id,
           details={"columns": sorted(update.columns)})
    return get(session, principal, dataset_id)


def _refuse_unfitting_hierarchies(session: Session, dataset_id: uuid.UUID, before: list[dict[str, Any]],
                                  after: list[dict[str, Any]], recoded: Path) -> None:
    """A column whose type changes keeps its hierarchy only if that fits its re-coded values
    (a numeric column's leaves match as numbers, a categorical one's as written: '07' holds
    the number 7, not the text '7'). The change was accepted, and every job along the hierarchy
    failed later naming the values."""
    from app.privacy.anonymity.hierarchies import hierarchy_findings, parse_arx_hierarchy
    from app.privacy.registry import MethodInputError

    old = {c["name"]: c["type"] for c in before}
    retyped = [c for c in after if old.get(c["name"]) != c["type"]]
    texts = repository.hierarchy_texts(session, dataset_id) if retyped else {}
    for col in (c for c in retyped if c["name"] in texts):
        name, kind = col["name"], col["type"]
        advice = (f"delete it first (DELETE /v1/datasets/{dataset_id}/hierarchies/{name}) or upload "
                  "one that fits both ways")
        try:
            hierarchy = parse_arx_hierarchy(texts[name], max_cell_length=get_settings().max_cell_length)
        except MethodInputError as exc:  # stored before a parsing rule changed: name it too
            raise Unprocessable(f"column {name!r} has a hierarchy that no longer reads: {exc}; {advice}") from None
        values = _value_strings(pd.read_parquet(recoded, columns=[name])[name])
        found = hierarchy_findings(hierarchy, values, kind == "numeric")
        if problems := found.sentences():
            raise Unprocessable(f"column {name!r} has a hierarchy that would not fit its values as {kind}: "
                                + "; ".join(problems) + f"; {advice}", errors=found.issues())


def _refuse_if_changed(session: Session, principal: Principal, row, *, for_update: bool = False) -> None:
    """404 if the dataset was deleted since ``row`` was read, 409 if its data or schema changed."""
    now = get_row(session, principal, row["id"], live=True, for_update=for_update)
    if (now["blob_id"], now["columns"]) != (row["blob_id"], row["columns"]):
        raise Conflict(f"the schema of dataset {row['id']} changed while this change was being "
                       "applied; read it again and retry")


def _refuse_under_active_jobs(session: Session, dataset_id: uuid.UUID) -> None:
    """A job on the raw data was checked and priced (its ε debited) against the schema it was
    submitted with, but reads the schema when it starts: a change in between ran errph with a
    label turned into a randomized column, releasing more ε than was debited. Submissions hold
    the row FOR KEY SHARE, so under the caller's FOR UPDATE none slips in before the commit."""
    active = jobs_repository.count_active_on_raw_data(session, dataset_id)
    if active:
        raise Conflict(f"dataset {dataset_id} has {active} queued or running job(s) on its data, "
                       "checked and priced against its current schema; wait for them to finish "
                       "or cancel them, then change the schema")


def _hierarchy_target(session: Session, principal: Principal, dataset_id: uuid.UUID, column: str):
    """Lock the column's hierarchy and read the dataset row (FOR KEY SHARE): (row, column types)."""
    # First, one change of the column's hierarchy at a time: the row lock below takes this
    # transaction's id, which orders the audit trail, and an upload that took it first but
    # finished its check last overwrote a later one listed after it (race acceptance check)
    repository.lock_hierarchy(session, dataset_id, column)
    # FOR KEY SHARE until commit: a concurrent delete (FOR UPDATE) waits, or has committed and
    # this answers 404 — a hierarchy lists the column's values and must not outlive the data.
    row = get_row(session, principal, dataset_id, live=True, for_key_share=True)
    types = {c["name"]: c["type"] for c in row["columns"]}
    if row["shape"] != "table" or column not in types:
        raise NotFound(f"dataset {dataset_id} has no column {column!r}")
    return row, types


def put_hierarchy(session: Session, principal: Principal, dataset_id: uuid.UUID, column: str,
                  text: str) -> dict[str, Any]:
    from app.privacy.anonymity.hierarchies import parse_arx_hierarchy
    from app.privacy.registry import MethodInputError

    row, types = _hierarchy_target(session, principal, dataset_id, column)
    try:
        hierarchy = parse_arx_hierarchy(text, max_cell_length=get_settings().max_cell_length)
    except MethodInputError as exc:
        raise Unprocessable(f"hierarchy for {column!r}: {exc}") from None
    # that column only: the whole table decoded here stayed in the API process's memory
    values = codec.parquet_column(blobs.read(session, row["blob_id"]), column)
    return _store_hierarchy(session, principal, dataset_id, column, hierarchy, text, values,
                            numeric=types[column] == "numeric")


def build_hierarchy(session: Session, principal: Principal, dataset_id: uuid.UUID, column: str,
                    spec) -> dict[str, Any]:
    """A hierarchy generated from a builder's specification (app/privacy/anonymity/builders.py),
    then checked, stored and audited exactly as an uploaded one (its ARX text is what GET
    answers)."""
    from app.privacy.anonymity.builders import BuildError, to_arx_text
    from app.privacy.anonymity.builders import build_hierarchy as build

    row, types = _hierarchy_target(session, principal, dataset_id, column)
    described = next(c for c in row["columns"] if c["name"] == column)
    values = codec.parquet_column(blobs.read(session, row["blob_id"]), column)
    numeric = types[column] == "numeric"
    try:
        hierarchy = build(spec, values, numeric=numeric,
                          lower_bound=(described.get("bounds") or [None])[0] if numeric else None)
        text = to_arx_text(hierarchy)
    except BuildError as exc:
        loc = ["body", spec.builder, *exc.field.split(".")] if exc.field else ["hierarchy", "level_0"]
        raise Unprocessable(f"{spec.builder} hierarchy for {column!r}: {exc}", errors=exc.issues(loc)) from None
    size, limit = len(text.encode()), get_settings().max_hierarchy_bytes
    if size > limit:  # what an upload could have sent: every job along it parses it when it starts
        raise Unprocessable(f"{spec.builder} hierarchy for {column!r}: the built hierarchy is {size} bytes of ARX "
                            f"text, above the limit of {limit} bytes an uploaded one may have "
                            "(VEIL_MAX_HIERARCHY_BYTES)")
    return _store_hierarchy(session, principal, dataset_id, column, hierarchy, text, values, numeric=numeric,
                            builder=spec.builder)


def _store_hierarchy(session: Session, principal: Principal, dataset_id: uuid.UUID, column: str,
                     hierarchy: pd.DataFrame, text: str, values: pd.Series, *, numeric: bool,
                     builder: str | None = None) -> dict[str, Any]:
    """Check ``hierarchy`` (``text`` parsed, or built) against the column's values, store its
    text and record the change: an upload's and a build's one path."""
    from app.privacy.anonymity.hierarchies import hierarchy_findings, not_number_warnings, top_warnings
    from app.privacy.anonymity.interval_labels import interval_label_warnings

    strings = _value_strings(values)
    # numeric: its leaves match as numbers, as the jobs match them
    found = hierarchy_findings(hierarchy, strings, numeric)
    if problems := found.sentences():
        raise Unprocessable(f"hierarchy for {column!r} does not fit the data: " + "; ".join(problems)
                            + " (errors names every value)", errors=found.issues())
    warnings = top_warnings(hierarchy, found.data, numeric) + (
        not_number_warnings(found, column) + interval_label_warnings(hierarchy, found.data) if numeric else [])
    repository.upsert_hierarchy(session, dataset_id, column, text, levels=int(hierarchy.shape[1]))
    details = {"column": column, "levels": int(hierarchy.shape[1]),
               "sha256": hashlib.sha256(text.encode()).hexdigest()}
    record(session, tenant=principal.tenant, actor=principal.actor, action="dataset.hierarchy_set",
           subject_type="dataset", subject_id=dataset_id, dataset_id=dataset_id,
           details={**details, "builder": builder} if builder else details)
    return {"dataset_id": dataset_id, "column": column, "levels": int(hierarchy.shape[1]),
            "values": int(hierarchy.shape[0]), "warnings": warnings}


def get_hierarchy(session: Session, principal: Principal, dataset_id: uuid.UUID, column: str) -> str:
    """The hierarchy as uploaded (it lists every value of the column: audited like a download)."""
    get_row(session, principal, dataset_id, live=True)
    text = repository.hierarchy_text(session, dataset_id, column)
    if text is None:
        raise NotFound(f"dataset {dataset_id} has no hierarchy for column {column!r}")
    record(session, tenant=principal.tenant, actor=principal.actor, action="dataset.hierarchy_downloaded",
           subject_type="dataset", subject_id=dataset_id, dataset_id=dataset_id, details={"column": column})
    return text


def delete_hierarchy(session: Session, principal: Principal, dataset_id: uuid.UUID, column: str) -> None:
    """Remove a column's hierarchy: anonymity jobs that start afterwards build the automatic one."""
    repository.lock_hierarchy(session, dataset_id, column)  # in turn with uploads (put_hierarchy)
    get_row(session, principal, dataset_id, live=True)
    if not repository.delete_hierarchy(session, dataset_id, column):
        raise NotFound(f"dataset {dataset_id} has no hierarchy for column {column!r}")
    record(session, tenant=principal.tenant, actor=principal.actor, action="dataset.hierarchy_deleted",
           subject_type="dataset", subject_id=dataset_id, dataset_id=dataset_id, details={"column": column})


def _value_strings(series: pd.Series) -> list[str]:
    values = series.dropna().unique()
    if pd.api.types.is_numeric_dtype(series.dtype):
        arr = pd.Series(values, dtype=float)
        if (arr == arr.round()).all():
            return [str(int(v)) for v in arr]
    return [str(v) for v in values]


def delete(session: Session, principal: Principal, dataset_id: uuid.UUID) -> None:
    row = get_row(session, principal, dataset_id, for_update=True)
    if row["deleted_at"] is not None:
        return
    if row["blob_id"] is not None:
        blobs.remove(session, row["blob_id"])
    repository.delete_hierarchies(session, dataset_id)
    repository.mark_deleted(session, dataset_id)
    record(session, tenant=principal.tenant, actor=principal.actor, action="dataset.deleted",
           subject_type="dataset", subject_id=dataset_id, dataset_id=dataset_id,
           details={"sha256": row["sha256"]})
