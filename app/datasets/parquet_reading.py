"""Reading a Parquet upload into an Arrow table, refused from its metadata alone when it would
decode beyond the limits (run-length and dictionary "bombs"), holds nested columns (other than a
transaction set's one column of item lists) or repeats a column name. Separate from parsing.py,
which picks the reader by format.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from app.datasets.table_finishing import check_names
from app.datasets.transaction_files import is_item_lists
from app.datasets.upload_limits import Limits
from app.errors import PayloadTooLarge, Unprocessable


def read_parquet(path: Path, limits: Limits) -> pa.Table:
    try:
        meta = pq.ParquetFile(path).metadata
    except (pa.ArrowInvalid, OSError):
        raise Unprocessable("not a readable Parquet file") from None
    if meta.num_columns > limits.max_columns:
        raise Unprocessable(f"the file has {meta.num_columns} columns; the limit is {limits.max_columns}")
    if meta.num_rows > limits.max_rows:
        raise Unprocessable(f"the file has {meta.num_rows} rows; the limit is {limits.max_rows}")
    # What reading will allocate, from the metadata alone: the encoded pages (which hold the
    # dictionaries) plus, per row, each column's decoded width. The encoded size alone misses
    # run-length and dictionary "bombs" (a few KB declaring gigabytes of repeated values).
    declared = [meta.row_group(i).total_byte_size for i in range(meta.num_row_groups)]
    if meta.num_rows < 0 or any(size < 0 for size in declared):  # would pass any budget below
        raise Unprocessable("the Parquet file is corrupt or inconsistent with its metadata "
                            "(a negative row count or size)")
    declared = sum(declared)
    per_row = sum(_decoded_width(meta.schema.column(i)) for i in range(meta.num_columns))
    decoded = declared + meta.num_rows * per_row
    budget = limits.max_rows * min(limits.max_columns, 64) * 16
    if decoded > budget:
        raise PayloadTooLarge(f"the Parquet file would decode to about {decoded} bytes; the "
                              f"limit is {budget}")
    try:
        schema = pq.ParquetFile(path).schema_arrow
    except (pa.ArrowException, OSError):
        raise Unprocessable("the Parquet file is corrupt or inconsistent with its metadata") from None
    check_names(schema.names)  # before reading: the reader fails on a repeated name
    for field in schema:
        if pa.types.is_nested(field.type) and not is_item_lists(schema):
            raise Unprocessable(f"column {field.name!r} holds nested values ({field.type}); only "
                                "columns of numbers, text, booleans, dates or times are accepted, "
                                "or a single column of lists of items (transactions)")
    try:
        # Text read as dictionaries: memory follows the distinct values, not rows × length.
        text = [f.name for f in schema
                if pa.types.is_string(f.type) or pa.types.is_large_string(f.type)
                or pa.types.is_binary(f.type) or pa.types.is_large_binary(f.type)]
        return pq.read_table(path, read_dictionary=text)
    except (pa.ArrowInvalid, OSError, MemoryError):
        raise Unprocessable("the Parquet file is corrupt or inconsistent with its metadata") from None


_PHYSICAL_WIDTH = {"BOOLEAN": 1, "INT32": 4, "INT64": 8, "INT96": 12, "FLOAT": 4, "DOUBLE": 8,
                   "BYTE_ARRAY": 4}  # byte arrays: a dictionary index per row (values are in the pages)


def _decoded_width(column) -> int:
    if column.physical_type == "FIXED_LEN_BYTE_ARRAY":
        return max(int(column.length or 0), 1)
    return _PHYSICAL_WIDTH.get(column.physical_type, 8)
