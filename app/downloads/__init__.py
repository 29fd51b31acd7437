"""Tables as download streams: Parquet as stored, CSV and JSON Lines a record batch at a time
(datasets and releases alike). Arrow's writers and kernels do the work, never a Python loop over
rows or cells (JSON Lines' fallback for list and date columns aside)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from app import codec
from app.downloads.csv_writer import csv_batches
from app.downloads.jsonl_writer import jsonl_batches
from app.errors import Unprocessable


def check_spreadsheet_safe(fmt: str, spreadsheet_safe: bool) -> None:
    if spreadsheet_safe and fmt != "csv":
        raise Unprocessable(f"spreadsheet_safe applies to format=csv only, not {fmt}")


def download_details(fmt: str, spreadsheet_safe: bool) -> dict[str, Any]:
    return {"format": fmt, **({"spreadsheet_safe": True} if spreadsheet_safe else {})}


def representation_etag(stored: object, fmt: str, spreadsheet_safe: bool) -> str:
    """A weak ETag of stored bytes (``stored``: their hash or blob id) in one format, encoded by
    this code version: an encoder that changes (a one-column CSV's missing cells, 044cbc1)
    changes the tag, so a copy kept from before it is fetched again, not revalidated."""
    from app.version import code_version

    return f'W/"{stored}-{fmt}{"-safe" if spreadsheet_safe else ""}-{code_version()}"'


def encode_table(payload: bytes, shape: str, fmt: str, spreadsheet_safe: bool = False) -> Iterator[bytes]:
    """Stored Parquet bytes as a stream of csv / jsonl / parquet chunks."""
    if fmt == "parquet":
        return iter([codec.parquet_download(payload, shape)])
    if shape == "transactions":
        table = codec.StoredTransactions(payload, lists=fmt == "jsonl")
    else:
        table = codec.StoredTable(payload)
    return csv_batches(table, spreadsheet_safe) if fmt == "csv" else jsonl_batches(table)
