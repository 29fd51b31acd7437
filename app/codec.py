"""How tables and transaction sets are stored: Parquet bytes.

A table keeps its pandas dtypes (categoricals as dictionary columns). A transaction set is
one column ``items`` of list<int32> (Arrow's list layout is CSR: offsets + values) with the
item labels in the file's key-value metadata.
"""

from __future__ import annotations

import io
import json

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from app.privacy.data import TransactionData

_LABELS_KEY = b"veil.item_labels"


# Rows per Parquet row group: a download decodes one group at a time (pandas' default, 1,000,000,
# made one download of a 1,000,000-row release decode the whole table: +125–240 MiB each)
ROW_GROUP_ROWS = 65_536


def table_to_parquet(frame: pd.DataFrame) -> bytes:
    buf = io.BytesIO()
    frame.to_parquet(buf, index=False, compression="snappy",  # fastest to read back
                     row_group_size=ROW_GROUP_ROWS)
    return buf.getvalue()


class StoredTable:
    """Stored table bytes read a row group at a time, with the part of pa.Table's interface the
    download writers use (schema, num_columns, to_batches)."""

    def __init__(self, payload: bytes) -> None:
        self._file = pq.ParquetFile(io.BytesIO(payload))
        self.schema = self._file.schema_arrow
        self.num_columns = len(self.schema)

    def to_batches(self, max_chunksize: int):
        return self._file.iter_batches(batch_size=max_chunksize)


def parquet_to_table(data: bytes) -> pd.DataFrame:
    frame = pd.read_parquet(io.BytesIO(data))
    # the decoding's temporary Arrow buffers are freed but kept by Arrow's allocator for reuse:
    # a job's process held 340 MiB more than its 269 MiB table after reading 4,950,000 × 15 rows
    pa.default_memory_pool().release_unused()
    return frame


def parquet_column(data: bytes, name: str) -> pd.Series:
    """One column of a stored table, the others left undecoded, as methods read it (for_methods)."""
    return for_methods(pd.read_parquet(io.BytesIO(data), columns=[name]))[name]


EXACT_LIMIT = 2.0 ** 53  # the integers a float64 holds exactly


def nullable_integers(frame: pd.DataFrame) -> list[str]:
    """The columns held as pandas' nullable integers: an integer column with missing cells is
    stored so (int64 with nulls), and its downloads write integers (34, not 34.0)."""
    return [n for n in frame.columns if isinstance(frame[n].dtype, pd.api.extensions.ExtensionDtype)
            and pd.api.types.is_integer_dtype(frame[n].dtype)]


def for_methods(frame: pd.DataFrame) -> pd.DataFrame:
    """A stored table as the methods read it: nullable integer columns as float64 with NaN
    where missing (numpy's arrays of them hold pd.NA objects, which np.isnan and arithmetic
    refuse); every other column as stored. The worker's child reads its input through this,
    and restore_integers undoes it on what the method hands back."""
    names = nullable_integers(frame)
    return frame.astype({n: "float64" for n in names}) if names else frame


def restore_integers(frame: pd.DataFrame, names: list[str]) -> pd.DataFrame:
    """The columns of ``names`` (the input's nullable integers) that a method handed back as
    float64 of whole values (a column published as it is) stored as nullable integers again,
    as the dataset stores them; a column whose values changed to fractions stays float64."""
    keep = []
    for name in names:
        if name in frame.columns and frame[name].dtype == np.float64:
            values = frame[name].to_numpy()
            finite = values[~np.isnan(values)]
            if np.all(finite == np.round(finite)) and np.all(np.abs(finite) <= EXACT_LIMIT):
                keep.append(name)
    return frame.astype({n: "Int64" for n in keep}) if keep else frame


def transactions_to_parquet(tx: TransactionData) -> bytes:
    offsets = pa.array(np.asarray(tx.indptr, dtype=np.int32))
    values = pa.array(np.asarray(tx.indices, dtype=np.int32))
    items = pa.ListArray.from_arrays(offsets, values)
    table = pa.table({"items": items})
    table = table.replace_schema_metadata({_LABELS_KEY: json.dumps(list(tx.labels)).encode()})
    buf = io.BytesIO()
    pq.write_table(table, buf, compression="zstd")
    return buf.getvalue()


def parquet_to_transactions(data: bytes) -> TransactionData:
    table = pq.read_table(io.BytesIO(data))
    labels = tuple(json.loads(table.schema.metadata[_LABELS_KEY]))
    return _list_to_transactions(table.column("items").combine_chunks(), labels)


def _list_to_transactions(items: pa.ListArray, labels: tuple[str, ...]) -> TransactionData:
    offsets = items.offsets.to_numpy()
    start = offsets[0]
    values = items.values.to_numpy()[start:offsets[-1]]
    return TransactionData(indptr=(offsets - start).astype(np.int64),
                           indices=values.astype(np.int32), labels=labels)


# Item occurrences per slice of a transaction download: its labels and joined rows stay ~10-40 MB
DOWNLOAD_OCCURRENCES = 1 << 21


class StoredTransactions:
    """A stored transaction set's labelled rows (``transactions_table``) a slice of rows at a
    time, with the interface of StoredTable the download writers use. Decoded whole, a mask
    release of 10^8 occurrences took the API process 1.3 GiB more to stream."""

    def __init__(self, payload: bytes, *, lists: bool) -> None:
        self._file = pq.ParquetFile(io.BytesIO(payload))
        self._labels = tuple(json.loads(self._file.schema_arrow.metadata[_LABELS_KEY]))
        self._lists = lists
        self.schema = pa.schema([("items", pa.list_(pa.string()) if lists else pa.string())])
        self.num_columns = 1

    def to_batches(self, max_chunksize: int):
        meta = self._file.metadata  # a list column's values: its occurrences (+ empty rows)
        values = sum(meta.row_group(g).column(0).num_values for g in range(meta.num_row_groups))
        rows = max(1, min(max_chunksize, DOWNLOAD_OCCURRENCES * meta.num_rows // max(values, 1)))
        for batch in self._file.iter_batches(batch_size=rows):
            tx = _list_to_transactions(batch.column(0), self._labels)
            yield from transactions_table(tx, lists=self._lists).to_batches()


def transactions_to_label_lists(tx: TransactionData, labels: list[str] | None = None) -> pa.ListArray:
    """One list of item labels per transaction (the stored form holds item codes); ``labels``
    replaces the release's labels (their JSON form, say)."""
    # each label converted once, then taken by the item codes in Arrow: numpy text of every
    # occurrence came back from pa.array in 16 MiB chunks, which ListArray refuses
    words = pa.array(list(labels or tx.labels), type=pa.string()).take(np.asarray(tx.indices, dtype=np.int32))
    return pa.ListArray.from_arrays(pa.array(np.asarray(tx.indptr, dtype=np.int32)), words)


def transactions_table(tx: TransactionData, *, lists: bool) -> pa.Table:
    """One row per transaction: its item labels as a list (JSON Lines), or as one text cell
    (CSV) — joined by spaces, FIMI's convention, when no label holds whitespace (item ids, most
    one-hot labels); else as a JSON array, since 'city=New York kind=a b' could not be split
    back. Vectorized over the transactions: only the labels are escaped one by one."""
    import pyarrow.compute as pc

    if lists:
        return pa.table({"items": transactions_to_label_lists(tx)})
    if not any(not label or any(c.isspace() for c in label) for label in tx.labels):
        return pa.table({"items": pc.binary_join(transactions_to_label_lists(tx), " ")})
    escaped = [json.dumps(label, ensure_ascii=False) for label in tx.labels]
    inner = pc.binary_join(transactions_to_label_lists(tx, escaped), ", ")
    return pa.table({"items": pc.binary_join_element_wise("[", inner, "]", "")})


def parquet_download(payload: bytes, shape: str) -> bytes:
    """What ?format=parquet serves (and what a release's output_sha256 hashes): the stored
    bytes, but for a transaction set its labelled form, written the same way every time — the
    stored transactions hold item codes (0, 1, …) with the labels in the file's metadata, which
    a reader would take for the items: one list<string> of labels per transaction."""
    if shape != "transactions":
        return payload
    buf = io.BytesIO()
    pq.write_table(pa.table({"items": transactions_to_label_lists(parquet_to_transactions(payload))}),
                   buf, compression="zstd")
    # built whole (~1.4 GiB of Arrow memory for 9·10⁷ occurrences), and Arrow's allocator keeps
    # freed memory for reuse: the API process stayed 1.6 GiB larger after one such download
    pa.default_memory_pool().release_unused()
    return buf.getvalue()
