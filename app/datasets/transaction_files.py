"""Transaction sets from an upload: a transaction file (one per line, items split by white space
or by commas) or a Parquet / JSON Lines column of item lists, read into TransactionData with
items ordered naturally and checked against the item limits. Separate from parsing.py, which
picks the reader by format; the table readers ask is_item_lists whether a table is one.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from app.datasets.upload_limits import Limits
from app.errors import Unprocessable
from app.privacy.arrays import distinct_sorted
from app.privacy.data import TransactionData

# transactions: one per line, items separated by white space (FIMI .dat); baskets: one per
# line, items separated by commas, each trimmed (market-basket exports such as Groceries, whose
# items hold spaces: "whole milk,rolls/buns") — a .csv name cannot tell it from a table
ITEM_SEPARATORS = {"transactions": r"\s+", "baskets": r"\s*,\s*"}


def is_item_lists(schema: pa.Schema) -> bool:
    """One column of lists of text or integers: a transaction set (a Parquet or JSON Lines
    download of one reads back as transactions, whatever its labels hold: commas, spaces)."""
    if len(schema) != 1 or not (pa.types.is_list(schema[0].type) or pa.types.is_large_list(schema[0].type)):
        return False
    item = schema[0].type.value_type
    return pa.types.is_string(item) or pa.types.is_large_string(item) or pa.types.is_integer(item) \
        or pa.types.is_null(item)


def read_transactions(path: Path, limits: Limits, separator: str = r"\s+") -> TransactionData:
    """One transaction per line, items split by the ``separator`` pattern (white space for FIMI
    .dat); empty items (a line's ends, two separators in a row) are dropped."""
    # a byte-order mark (Windows editors write one) is not part of the first item
    text = path.read_bytes().removeprefix(b"\xef\xbb\xbf")
    newlines = text.count(b"\n")  # before splitting: a Python string per line costs ~50 bytes
    if newlines > limits.max_rows + 1:
        raise Unprocessable(f"the file has more than {limits.max_rows} transactions (the limit)")
    try:
        text.decode("utf-8")
    except UnicodeDecodeError:
        raise Unprocessable("a transaction file must be UTF-8 text") from None
    lines = pa.array(text.decode("utf-8").splitlines(), type=pa.string())
    if len(lines) > limits.max_rows:
        raise Unprocessable(f"the file has {len(lines)} transactions; the limit is {limits.max_rows}")
    lines = pc.utf8_trim_whitespace(lines)
    if separator == ITEM_SEPARATORS["transactions"] and _every_line_has_a_comma(lines):
        # a basket file sent as .dat became one item "1,2,3" per line, silently
        raise Unprocessable("every transaction holds a comma, and a FIMI transaction file separates "
                            "its items by spaces: comma-separated market baskets? send them with "
                            "format=baskets")
    return _item_lists(pc.split_pattern_regex(lines, separator), limits)


def _every_line_has_a_comma(lines: pa.Array) -> bool:
    filled = lines.filter(pc.not_equal(lines, ""))
    return len(filled) > 0 and bool(pc.all(pc.match_substring(filled, ",")).as_py())


def lists_to_transactions(column: pa.ChunkedArray, limits: Limits) -> TransactionData:
    if len(column) > limits.max_rows:
        raise Unprocessable(f"the file has {len(column)} transactions; the limit is {limits.max_rows}")
    lists = column.combine_chunks() if column.num_chunks != 1 else column.chunk(0)
    if not pa.types.is_string(lists.type.value_type):  # integers (or nulls only) as their text
        lists = lists.cast(pa.list_(pa.string()))
    return _item_lists(lists, limits)


def _item_lists(tokens: pa.Array, limits: Limits) -> TransactionData:
    """Transactions from one list of item labels per transaction: empty and null items are
    dropped (a line's ends, two separators in a row), so is a repeated item; a null list is an
    empty transaction."""
    n = len(tokens)
    lengths = pc.fill_null(pc.list_value_length(tokens), 0).to_numpy(zero_copy_only=False)
    flat = pc.list_flatten(tokens)
    row_of = np.repeat(np.arange(n), lengths)
    keep = pc.fill_null(pc.not_equal(flat, ""), False).to_numpy(zero_copy_only=False)
    flat = flat.filter(pa.array(keep))
    row_of = row_of[keep]
    if len(flat) == 0:
        raise Unprocessable("the transaction file holds no items")
    if pc.max(pc.utf8_length(flat)).as_py() > limits.max_cell_length:
        raise Unprocessable(f"an item name is longer than {limits.max_cell_length} characters")
    _check_distinct_items(flat, limits)
    encoded = pc.dictionary_encode(flat).combine_chunks() if isinstance(flat, pa.ChunkedArray) \
        else pc.dictionary_encode(flat)
    labels = encoded.dictionary.to_pylist()
    # Order items naturally (numerically when every label is an integer).
    order = _natural_order(labels)
    rank = np.empty(len(labels), dtype=np.int32)
    rank[order] = np.arange(len(labels), dtype=np.int32)
    codes = rank[encoded.indices.to_numpy(zero_copy_only=False)]
    # Drop repeated items inside a transaction; sort items within each transaction.
    key = distinct_sorted(row_of.astype(np.int64) * len(labels) + codes)
    rows, codes = np.divmod(key, len(labels))
    indptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(rows, minlength=n), out=indptr[1:])
    return TransactionData(indptr=indptr, indices=codes.astype(np.int32),
                           labels=tuple(labels[i] for i in order))


_ITEM_SLICE = 1 << 20


def _check_distinct_items(flat: pa.Array | pa.ChunkedArray, limits: Limits) -> None:
    """Distinct items counted a slice at a time, stopping once past the limit: encoding every
    item of a file of millions of distinct ones (and a Python string per label) cost the API
    process about 20 times the file's size before it was refused (118 MB: +2.6 GB, 30 s)."""
    seen = pa.array([], type=flat.type)
    for start in range(0, len(flat), _ITEM_SLICE):
        part = pc.unique(flat.slice(start, _ITEM_SLICE))
        seen = pc.unique(pa.concat_arrays([seen, part]))
        if len(seen) > limits.max_items:
            raise Unprocessable(f"the file has more than {limits.max_items} distinct items (the limit)")


def _natural_order(labels: list[str]) -> np.ndarray:
    try:
        return np.argsort(np.array([int(x) for x in labels]), kind="stable")
    except ValueError:
        return np.argsort(np.array(labels, dtype=object), kind="stable")
