"""Parquet columns Veil cannot hold are refused naming the column and the reason (found by
the #2 acceptance check: a list or struct column and non-UTF-8 binary answered "the file is
not valid UTF-8 text", a repeated column name "the Parquet file is corrupt")."""

from __future__ import annotations

import io

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.support.api import assert_problem, upload


def _parquet(table: pa.Table) -> bytes:
    buf = io.BytesIO()
    pq.write_table(table, buf)
    return buf.getvalue()


@pytest.mark.parametrize("table, fragments", [
    (pa.table({"a": [1, 2], "tags": [[1, 2], [3]]}), ("column 'tags' holds nested values", "list")),
    (pa.table({"a": [1, 2], "s": [{"x": 1}, {"x": 2}]}), ("column 's' holds nested values", "struct")),
    (pa.table({"a": [1, 2], "raw": pa.array([b"\xff\xfe", b"x"])}), ("column 'raw' holds a value that is not valid UTF-8",)),
    (pa.Table.from_arrays([pa.array([1]), pa.array([2])], names=["a", "a"]),
     ("column 'a' appears more than once",)),
])
def test_unsupported_parquet_columns_are_named(client, owner, table, fragments):
    assert_problem(upload(client, owner, _parquet(table), "p.parquet"), 422, *fragments)


def test_utf8_binary_columns_are_still_read_as_text(client, owner):
    r = upload(client, owner, _parquet(pa.table({"a": [1, 2], "b": pa.array([b"x", b"y"])})), "p.parquet")
    assert r.status_code == 201, r.text
    assert [(c["name"], c["type"]) for c in r.json()["columns"]] == [("a", "numeric"), ("b", "categorical")]
