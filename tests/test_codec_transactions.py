"""A transaction set's labelled forms (the Parquet download, its hash, CSV and JSON Lines)."""

from __future__ import annotations

import io

import numpy as np
import pyarrow.parquet as pq

from app import codec
from app.privacy.data import TransactionData


def _long_labels(transactions: int) -> TransactionData:
    # one-hot labels may be long (a cell holds up to 65,536 characters): the occurrences'
    # text passes 16 MiB here with only 6,000 of them
    labels = ("y" * 3_000, "x" * 3_000)
    indptr = np.arange(0, 2 * transactions + 1, 2)
    return TransactionData(indptr=indptr, indices=np.tile([0, 1], transactions).astype(np.int32), labels=labels)


def test_labels_of_a_large_set_are_one_array():
    # numpy text converted to Arrow comes back in chunks of 16 MiB, which ListArray refused
    # (TypeError): a mask/png release of one-hot items with long labels failed the job when
    # its output hash was computed, and such a set could not be downloaded
    tx = _long_labels(3_000)
    got = pq.read_table(io.BytesIO(codec.parquet_download(codec.transactions_to_parquet(tx), "transactions")))
    rows = got.column("items").to_pylist()
    assert len(rows) == 3_000 and rows[0] == ["y" * 3_000, "x" * 3_000] and rows[-1] == rows[0]
    assert codec.transactions_table(tx, lists=False).num_rows == 3_000


def test_labelled_download_keeps_its_bytes():
    # a release's output_sha256 is the hash of these bytes: the same set writes the same file
    tx = TransactionData(indptr=np.array([0, 2, 2, 5]), indices=np.array([1, 0, 2, 1, 0], dtype=np.int32),
                         labels=("a", "b c", "d"))
    payload = codec.parquet_download(codec.transactions_to_parquet(tx), "transactions")
    assert pq.read_table(io.BytesIO(payload)).column("items").to_pylist() == [["b c", "a"], [], ["d", "b c", "a"]]
    assert codec.transactions_table(tx, lists=False).column("items").to_pylist() == [
        '["b c", "a"]', "[]", '["d", "b c", "a"]']
