"""Releases: stored by the worker (once per job), read and downloaded by owners and analysts."""

from __future__ import annotations

import hashlib
import io
import json
import uuid
from collections.abc import Iterator
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv
import pyarrow.parquet as pq
from sqlalchemy.orm import Session

from app import codec, pagination
from app.audit.service import record
from app.auth.schemas import Principal
from app.blobs import repository as blobs
from app.errors import NotFound, Unprocessable
from app.jsonl_writer import jsonl_batches
from app.releases import repository
from app.version import code_version


def store(session: Session, *, job, encoded: dict[str, Any], input_sha256: str,
          source_release, hierarchies_sha256: dict[str, str] | None = None) -> uuid.UUID:
    """Store a release in the caller's transaction (the worker's final commit)."""
    release_id = uuid.uuid4()
    payload = encoded["payload"]
    # the hash a client can check: that of the Parquet download (codec.parquet_download). The
    # job's child computes it, outside this transaction (a transaction set is re-encoded for
    # it); an encoded result made elsewhere is hashed here
    output_sha256 = encoded.get("output_sha256") or \
        hashlib.sha256(codec.parquet_download(payload, encoded["shape"])).hexdigest()
    chain: list[dict[str, Any]] = []
    if source_release is not None:
        chain = list(source_release["chain"]) + [{
            "release_id": str(source_release["id"]), "method": source_release["method"],
            "params": source_release["params"], "guarantees": source_release["guarantees"],
            "metadata": source_release["metadata"], "output_sha256": source_release["output_sha256"]}]
    repository.insert_release(
        session, id=release_id, tenant=job["tenant"], job_id=job["id"], dataset_id=job["dataset_id"],
        source_release_id=job["release_id"], method=job["method"], params=job["params"],
        guarantees=encoded["guarantees"], metrics=encoded["metrics"], metadata=encoded["metadata"],
        chain=chain, shape=encoded["shape"], columns=encoded["columns"], rows=encoded["rows"],
        blob_id=blobs.write(session, payload), input_sha256=input_sha256,
        output_sha256=output_sha256, code_version=code_version(), created_by=job["created_by"])
    record(session, tenant=job["tenant"], actor="worker", action="release.created",
           subject_type="release", subject_id=release_id, dataset_id=job["dataset_id"],
           release_id=release_id,
           details={"job_id": str(job["id"]), "method": job["method"],
                    "output_sha256": output_sha256,
                    "epsilon": encoded["guarantees"].get("epsilon"),
                    "private": encoded["guarantees"].get("private"),
                    # the uploaded hierarchies the release was generalized with (by column)
                    **({"hierarchies_sha256": hierarchies_sha256} if hierarchies_sha256 else {})})
    return release_id


def get_row(session: Session, principal: Principal, release_id: uuid.UUID):
    row = repository.get(session, release_id, principal.tenant)
    if row is None:
        raise NotFound(f"release {release_id} not found")
    return row


def to_response(row) -> dict[str, Any]:
    return {"id": row["id"], "job_id": row["job_id"], "dataset_id": row["dataset_id"],
            "source_release_id": row["source_release_id"], "method": row["method"],
            "params": row["params"], "guarantees": row["guarantees"], "metrics": row["metrics"],
            "metadata": row["metadata"], "chain": row["chain"], "shape": row["shape"],
            "rows": row["rows"], "columns": row["columns"],
            "provenance": {"input_sha256": row["input_sha256"], "output_sha256": row["output_sha256"],
                           "code_version": row["code_version"], "created_by": str(row["created_by"]),
                           "created_at": row["created_at"], "job_id": str(row["job_id"])},
            "links": {"self": f"/v1/releases/{row['id']}",
                      "data": f"/v1/releases/{row['id']}/data?format=csv"}}


def get(session: Session, principal: Principal, release_id: uuid.UUID) -> dict[str, Any]:
    return to_response(get_row(session, principal, release_id))


def list_page(session: Session, principal: Principal, *, dataset_id: uuid.UUID | None,
              method: str | None, cursor: str | None, limit: int) -> dict[str, Any]:
    rows = repository.list_page(session, principal.tenant, dataset_id=dataset_id, method=method,
                                after=pagination.decode(cursor), limit=limit)
    return pagination.page(rows, limit, to_response)


def download(session: Session, principal: Principal, release_id: uuid.UUID, fmt: str,
             spreadsheet_safe: bool = False) -> Iterator[bytes]:
    """Load the release (in the request's transaction) and return a generator that encodes
    it in record batches, so a large release streams without a second full copy."""
    check_spreadsheet_safe(fmt, spreadsheet_safe)
    row = get_row(session, principal, release_id)
    payload = blobs.read(session, row["blob_id"])
    record(session, tenant=principal.tenant, actor=principal.actor, action="release.downloaded",
           subject_type="release", subject_id=release_id, dataset_id=row["dataset_id"],
           release_id=release_id, details=download_details(fmt, spreadsheet_safe))
    return encode_table(payload, row["shape"], fmt, spreadsheet_safe)


def check_spreadsheet_safe(fmt: str, spreadsheet_safe: bool) -> None:
    if spreadsheet_safe and fmt != "csv":
        raise Unprocessable(f"spreadsheet_safe applies to format=csv only, not {fmt}")


def download_details(fmt: str, spreadsheet_safe: bool) -> dict[str, Any]:
    return {"format": fmt, **({"spreadsheet_safe": True} if spreadsheet_safe else {})}


def encode_table(payload: bytes, shape: str, fmt: str, spreadsheet_safe: bool = False) -> Iterator[bytes]:
    """Stored Parquet bytes as a stream of csv / jsonl / parquet chunks."""
    if fmt == "parquet":
        return iter([codec.parquet_download(payload, shape)])
    if shape == "transactions":
        table = codec.transactions_table(codec.parquet_to_transactions(payload), lists=fmt == "jsonl")
    else:
        table = pq.read_table(io.BytesIO(payload))
    return _csv_batches(table, spreadsheet_safe) if fmt == "csv" else jsonl_batches(table)


def _csv_batches(table: pa.Table, spreadsheet_safe: bool = False) -> Iterator[bytes]:
    table = _plain_columns(table)
    if spreadsheet_safe:
        table = _formula_cells_escaped(table)
    first = True
    for batch in table.to_batches(max_chunksize=50_000):
        buf = io.BytesIO()
        pacsv.write_csv(batch, buf, write_options=pacsv.WriteOptions(include_header=first))
        first = False
        yield buf.getvalue()
    if first:  # no rows: still send the header
        buf = io.BytesIO()
        pacsv.write_csv(table, buf)
        yield buf.getvalue()


_FORMULA_START = r"^[=+\-@\t\r]"


def _formula_cells_escaped(table: pa.Table) -> pa.Table:
    """Text cells a spreadsheet would run as a formula get a leading apostrophe (numbers are
    written as numbers and never start a formula)."""
    cols = []
    for col in table.columns:
        if pa.types.is_string(col.type) or pa.types.is_large_string(col.type):
            risky = pc.fill_null(pc.match_substring_regex(col, _FORMULA_START), False)
            quote, joiner = pa.scalar("'", col.type), pa.scalar("", col.type)
            col = pc.if_else(risky, pc.binary_join_element_wise(quote, col, joiner), col)
        cols.append(col)
    return pa.table(cols, names=table.column_names)


def _plain_columns(table: pa.Table) -> pa.Table:
    """Dictionary (categorical) columns as plain text, which the CSV writer needs."""
    cols = [pa.compute.cast(c, c.type.value_type) if pa.types.is_dictionary(c.type) else c
            for c in table.columns]
    return pa.table(cols, names=table.column_names)


def metadata_json(row) -> str:
    return json.dumps(to_response(row), default=str)
