"""Uploads that cost the API process far more than their size, found by the #7 acceptance
check: a transaction file of millions of distinct items was encoded whole (and a Python string
made per label) before the distinct-item limit refused it (118 MB: +2.6 GB, 30 s); a Parquet
footer declaring a negative row count or size passed the decoded-size budget (any file would)."""

from __future__ import annotations

import io
import struct

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.support.api import assert_problem, upload


def test_too_many_distinct_items_are_refused_before_the_items_are_encoded(client, owner, monkeypatch, tmp_path):
    import app.datasets.parsing as parsing
    import app.datasets.transaction_files as transaction_files
    from app.datasets.service import limits
    from app.errors import Unprocessable

    def encode_everything(*args, **kwargs):
        raise AssertionError("every item was dictionary-encoded before the limit was checked")

    items = 200_001  # the distinct-item limit is 200,000
    data = b"1 2 3\n" + " ".join(str(i) for i in range(items)).encode() + b"\n"
    assert_problem(upload(client, owner, data, "t.dat"), 422, "more than 200000 distinct items")
    # the upload is read in a child process, which this patch does not reach: the parser here
    monkeypatch.setattr(transaction_files.pc, "dictionary_encode", encode_everything)
    path = tmp_path / "t.dat"
    path.write_bytes(data)
    with pytest.raises(Unprocessable, match="more than 200000 distinct items"):
        parsing.parse(path, "transactions", limits())


def test_transaction_files_within_the_item_limit_are_still_read(client, owner):
    r = upload(client, owner, b"1 2 3\n2 3\n3 4 4\n", "t.dat")
    assert r.status_code == 201, r.text
    assert r.json()["rows"] == 3


def _parquet_with_negative_row_count(rows: int = 50) -> bytes:
    """A valid file whose footer (FileMetaData.num_rows, Thrift compact: field header 0x16, then
    the zigzag varint) says -rows: the first such field after the schema, one byte either way."""
    buf = io.BytesIO()
    pq.write_table(pa.table({"a": list(range(rows))}), buf)
    data = bytearray(buf.getvalue())
    footer_length = struct.unpack("<I", data[-8:-4])[0]
    start = len(data) - 8 - footer_length
    at = data.index(bytes([0x16, 2 * rows]), start)
    data[at + 1] = 2 * rows - 1  # zigzag(-rows)
    return bytes(data)


def test_parquet_declaring_a_negative_row_count_is_refused(client, owner):
    data = _parquet_with_negative_row_count()
    assert pq.ParquetFile(io.BytesIO(data)).metadata.num_rows == -50  # the crafted footer reads
    assert_problem(upload(client, owner, data, "neg.parquet"), 422, "negative row count or size")
