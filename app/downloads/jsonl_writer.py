"""Arrow record batches as JSON Lines, a column at a time.

Each cell becomes its JSON text with Arrow's compute kernels (a float's shortest exact
representation, strings escaped as JSON requires, nulls, NaN and infinities as null), then
each row's line is joined element-wise and the batch's bytes are read straight out of the
joined array's data buffer: no Python object per row or cell. Measured on 200,000 rows × 16
columns (8 float, 8 text): 9.7 s with Python's json a row at a time, 1.2 s here (2 busy cores).
A list of text (a transaction's items) is its escaped labels joined in Arrow too (1,000,000
transactions of ~11 items: 9.5 s a row at a time, 2.0 s). Columns of other types (dates) take the
row-at-a-time path.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from app import codec

_SHORT_ESCAPES = {"\n": "\\n", "\r": "\\r", "\t": "\\t", "\b": "\\b", "\f": "\\f"}
_CELLS_PER_BATCH = 2_000_000  # keeps a batch's joined lines far below Arrow's 2 GiB string limit


def jsonl_batches(table: pa.Table | codec.StoredTable | codec.StoredTransactions) -> Iterator[bytes]:
    rows = max(1, min(50_000, _CELLS_PER_BATCH // max(1, table.num_columns)))
    vectorized = all(_columnar(t) for t in table.schema.types)
    for batch in table.to_batches(max_chunksize=rows):
        if batch.num_rows:
            yield _lines(batch) if vectorized else _lines_row_by_row(batch)


def _columnar(t: pa.DataType) -> bool:
    if pa.types.is_dictionary(t):
        return _is_text(t.value_type)
    if pa.types.is_list(t):
        return _is_text(t.value_type)
    return pa.types.is_floating(t) or pa.types.is_integer(t) or pa.types.is_boolean(t) or _is_text(t)


def _is_text(t: pa.DataType) -> bool:
    return pa.types.is_string(t) or pa.types.is_large_string(t)


def _lines(batch: pa.RecordBatch) -> bytes:
    pieces: list[Any] = []
    for i, (name, column) in enumerate(zip(batch.schema.names, batch.columns)):
        key = ("{" if i == 0 else ",") + json.dumps(name, ensure_ascii=False) + ":"
        pieces += [pa.scalar(key, pa.large_string()), pc.cast(_json_values(column), pa.large_string())]
    pieces.append(pa.scalar("}\n", pa.large_string()))
    lines = pc.binary_join_element_wise(*pieces, pa.scalar("", pa.large_string()))
    offsets = np.frombuffer(lines.buffers()[1], dtype=np.int64)[lines.offset:lines.offset + len(lines) + 1]
    return lines.buffers()[2].to_pybytes()[offsets[0]:offsets[-1]]


def _json_values(column: pa.Array) -> pa.Array:
    """Each cell's JSON text; a missing cell (and a NaN or infinite float) is null."""
    t = column.type
    if pa.types.is_list(t):  # ["a","b c"]: the labels escaped, joined within each list
        offsets = pc.subtract(column.offsets, column.offsets[0])  # a slice's offsets start past 0
        labels = _json_values(pc.dictionary_encode(column.flatten()))  # each distinct label escaped once
        lists = pa.ListArray.from_arrays(offsets, labels, mask=column.is_null())
        joined = pc.binary_join(lists, pa.scalar(",", t.value_type))
        bracket = [pa.scalar(b, t.value_type) for b in ("[", "]", "")]
        return pc.fill_null(pc.binary_join_element_wise(bracket[0], joined, *bracket[1:]), "null")
    if pa.types.is_dictionary(t):  # escape the distinct values once
        return pc.fill_null(pc.take(_json_strings(column.dictionary), column.indices), "null")
    if _is_text(t):
        return pc.fill_null(_json_strings(column), "null")
    if pa.types.is_boolean(t):
        return pc.fill_null(pc.if_else(column, "true", "false"), "null")
    if pa.types.is_integer(t):
        return pc.fill_null(pc.cast(column, pa.string()), "null")
    column = pc.cast(column, pa.float64())  # float32 cells as their exact double, as before
    text = pc.cast(column, pa.string())  # the shortest representation that reads back exactly
    whole = pc.match_substring_regex(text, r"^-?[0-9]+$")  # 5.0 is written 5: keep it a float
    text = pc.if_else(whole, pc.binary_join_element_wise(text, ".0", ""), text)
    return pc.fill_null(pc.if_else(pc.is_finite(column), text, None), "null")


def _json_strings(values: pa.Array) -> pa.Array:
    """JSON string literals: backslash, quote and the control characters escaped (as
    Python's json does with ensure_ascii=False: other characters stay as they are)."""
    s = pc.replace_substring(pc.replace_substring(values, "\\", "\\\\"), '"', '\\"')
    if pc.any(pc.match_substring_regex(s, r"[\x00-\x1f]")).as_py():  # rare: a loop over 32 characters
        for code in range(32):
            ch = chr(code)
            s = pc.replace_substring(s, ch, _SHORT_ESCAPES.get(ch, f"\\u{code:04x}"))
    quote = pa.scalar('"', s.type)  # the column's own string type: no kernel mixes string and large_string
    return pc.binary_join_element_wise(quote, s, quote, pa.scalar("", s.type))


# Python's json writes a float as its shortest exact repr (pandas' to_json kept 10 decimal
# places: 1.2345e-11 was downloaded as 0.0; #7 acceptance check).
_encode_row = json.JSONEncoder(ensure_ascii=False, allow_nan=False, separators=(",", ":"),
                               default=str).encode


def _lines_row_by_row(batch: pa.RecordBatch) -> bytes:
    names = batch.schema.names
    rows = zip(*(_python_cells(column) for column in batch.columns))
    return ("\n".join(_encode_row(dict(zip(names, row))) for row in rows) + "\n").encode()


def _python_cells(column: pa.Array) -> list[Any]:
    values = column.to_pylist()
    if pa.types.is_floating(column.type):
        return [v if v is None or math.isfinite(v) else None for v in values]
    return values
