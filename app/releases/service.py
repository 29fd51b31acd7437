"""Releases: stored by the worker (once per job), read and downloaded by owners and analysts."""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Iterator
from typing import Any

from sqlalchemy.orm import Session

from app import codec, pagination
from app.conditional import matches
from app.audit.service import record
from app.auth.schemas import Principal, Role
from app.blobs import repository as blobs
from app.downloads import check_spreadsheet_safe, download_details, encode_table, representation_etag
from app.errors import NotFound
from app.releases import repository
from app.version import code_version


WITHHELD_INPUT_SHA256 = ("withheld: the SHA-256 of the raw upload is a function of the raw data outside any ε "
                        "(whoever knows the upload but for one record can test guesses of that record "
                        "against it); the tenant's owners see it")


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
                    # a chained release's source (the event's release_id is the new release)
                    **({"source_release_id": str(source_release["id"])} if source_release is not None else {}),
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


def _input_sha256(row, principal: Principal) -> str:
    """The hash of the raw upload for the tenant's owners (they hold the data); analysts, who
    never get raw data, get the release without it, as they get a raw-data job's error
    without its message (app/jobs/service.py)."""
    return row["input_sha256"] if principal.role == Role.owner else WITHHELD_INPUT_SHA256


def to_response(row, principal: Principal) -> dict[str, Any]:
    return {"id": row["id"], "job_id": row["job_id"], "dataset_id": row["dataset_id"],
            "source_release_id": row["source_release_id"], "method": row["method"],
            "params": row["params"], "guarantees": row["guarantees"], "metrics": row["metrics"],
            "metadata": row["metadata"], "chain": row["chain"], "shape": row["shape"],
            "rows": row["rows"], "columns": row["columns"], "created_at": row["created_at"],
            "provenance": {"input_sha256": _input_sha256(row, principal), "output_sha256": row["output_sha256"],
                           "code_version": row["code_version"], "created_by": str(row["created_by"]),
                           "created_at": row["created_at"], "job_id": str(row["job_id"])},
            "links": _links(row, principal)}


def _links(row, principal: Principal) -> dict[str, str]:
    """The release, its rows, the job that made it and what it was made from; the dataset for
    its owners only (an analyst's link to it answered 403)."""
    links = {"self": f"/v1/releases/{row['id']}", "data": f"/v1/releases/{row['id']}/data?format=csv",
             "job": f"/v1/jobs/{row['job_id']}"}
    if principal.role == Role.owner:
        links["dataset"] = f"/v1/datasets/{row['dataset_id']}"
    if row["source_release_id"] is not None:
        links["source_release"] = f"/v1/releases/{row['source_release_id']}"
    return links


def get(session: Session, principal: Principal, release_id: uuid.UUID) -> dict[str, Any]:
    return to_response(get_row(session, principal, release_id), principal)


def list_page(session: Session, principal: Principal, *, dataset_id: uuid.UUID | None,
              method: str | None, cursor: str | None, limit: int) -> dict[str, Any]:
    rows = repository.list_page(session, principal.tenant, dataset_id=dataset_id, method=method,
                                after=pagination.decode(cursor), limit=limit)
    return pagination.page(rows, limit, lambda row: summary(row, principal))


_DETAIL_ONLY = ("metadata", "chain", "columns")


def summary(row, principal: Principal) -> dict[str, Any]:
    """A list's item: the release without what only its own URL answers (a reconstruction's
    metadata and the earlier steps grow with the data and the chain: 3-18 KB a release)."""
    return {k: v for k, v in to_response(row, principal).items() if k not in _DETAIL_ONLY}


def download_etag(row, fmt: str, spreadsheet_safe: bool) -> str:
    """A weak validator of one representation of a release: its rows never change, so the hash
    of its Parquet download with the format asked for names the bytes — and the code version
    that encodes them (044cbc1 changed a one-column CSV's bytes; a copy from before it
    revalidated as current). Weak: another writer may lay out the same rows differently."""
    return representation_etag(row["output_sha256"], fmt, spreadsheet_safe)


def download(session: Session, principal: Principal, release_id: uuid.UUID, fmt: str,
             spreadsheet_safe: bool = False, if_none_match: str | None = None
             ) -> tuple[str, Iterator[bytes] | None]:
    """The download's ETag and a generator that encodes the release in record batches, so a
    large release streams without a second full copy (loaded in the request's transaction);
    no generator (and no download recorded: no rows leave) when ``if_none_match`` holds the
    ETag — after the same authorization as a download."""
    check_spreadsheet_safe(fmt, spreadsheet_safe)
    row = get_row(session, principal, release_id)
    etag = download_etag(row, fmt, spreadsheet_safe)
    if matches(if_none_match, etag):
        return etag, None
    payload = blobs.read(session, row["blob_id"])
    record(session, tenant=principal.tenant, actor=principal.actor, action="release.downloaded",
           subject_type="release", subject_id=release_id, dataset_id=row["dataset_id"],
           release_id=release_id, details=download_details(fmt, spreadsheet_safe))
    return etag, encode_table(payload, row["shape"], fmt, spreadsheet_safe)
