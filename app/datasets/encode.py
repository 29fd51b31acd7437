"""An upload read and encoded for storage: parse, infer the columns, apply the schema field's
overrides, write the Parquet payload to a file; and a stored table's schema changed the same
way (PUT …/schema). No database: both run in a child process (app/datasets/isolated.py), so
what decoding a table allocates is not kept by the API process."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from app import codec
from app.datasets import parsing
from app.datasets.schema import SchemaUpdate, apply_overrides, infer_columns, transaction_columns
from app.errors import Unprocessable


@dataclass(frozen=True)
class Encoded:
    shape: str  # "table" or "transactions"
    rows: int
    columns: list[dict[str, Any]]


def encode_upload(path: Path, fmt: str, limits: parsing.Limits, update: SchemaUpdate | None,
                  payload_path: Path) -> Encoded:
    """Read ``path`` as ``fmt``; write the Parquet payload to ``payload_path``."""
    text = frozenset(n for n, o in update.columns.items() if o.type == "categorical") if update else frozenset()
    parsed = parsing.parse(path, fmt, limits, text)
    if parsed.frame is not None:
        frame = parsed.frame
        columns = infer_columns(frame)
        if update is not None:
            frame, columns, _ = apply_overrides(frame, columns, update)
        payload, shape = codec.table_to_parquet(frame), "table"
    else:
        if update is not None:
            raise Unprocessable("a transaction file has no columns to describe; omit the schema field")
        tx = parsed.transactions
        columns = transaction_columns(tx.n_items, tx.n_transactions)
        payload, shape = codec.transactions_to_parquet(tx), "transactions"
    payload_path.write_bytes(payload)
    return Encoded(shape=shape, rows=parsed.rows, columns=columns)


def apply_schema_update(payload_path: Path, columns: list[dict[str, Any]], update: SchemaUpdate,
                        out_path: Path) -> tuple[list[dict[str, Any]], bool]:
    """A stored table's schema changed: returns the new column entries and whether the data was
    re-coded (a type change), in which case its new Parquet payload is written to ``out_path``."""
    frame = codec.parquet_to_table(payload_path.read_bytes())
    frame, columns, changed = apply_overrides(frame, columns, update)
    if changed:
        out_path.write_bytes(codec.table_to_parquet(frame))
    return columns, changed
