"""The limits an upload is read within: the caller's Limits (rows, columns, cell length, distinct
items), the readers' block size (a CSV row or a JSON line must fit in one block) and the integers
a float64 holds exactly (beyond them a column is kept as text). Its own module because every
reader (csv_reading, jsonl_reading, parquet_reading, transaction_files) and table_finishing use
them, and parsing, which calls the readers, re-exports Limits.
"""

from __future__ import annotations

from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc

_EXACT_LIMIT = 2.0 ** 53  # the integers a float64 holds exactly
BLOCK = 4 * 1024 * 1024  # a CSV row must fit in one block; smaller blocks parse in parallel


@dataclass(frozen=True)
class Limits:
    max_rows: int
    max_columns: int
    max_cell_length: int
    max_items: int = 200_000


def beyond_exact(col: pa.ChunkedArray) -> bool:
    """Some value is a whole number beyond ±2^53, where float64 (Veil's numeric type) no
    longer holds every integer."""
    low, high = pc.min_max(col).values()
    return low.is_valid and max(abs(low.as_py()), abs(high.as_py())) >= _EXACT_LIMIT
