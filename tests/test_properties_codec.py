"""Property-based round trips of a table through Veil's codec: an upload (CSV, JSON Lines or
Parquet, written as a spreadsheet or a program would write it) is parsed, stored as Parquet
and downloaded as CSV, JSON Lines and Parquet; each download uploads again to the same table,
and the first upload reads the file as written — random text (unicode, quotes, commas, line
ends, leading zeros, '=' cells), integers, floats and missing cells."""

from __future__ import annotations

import csv
import io
import json
import math

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
from hypothesis import assume, given, note
from hypothesis import strategies as st

from app import codec
from app.datasets.csv_reading import NULL_VALUES
from app.datasets.parsing import Limits, parse
from app.downloads import encode_table
from tests.support.properties import bounded

LIMITS = Limits(max_rows=10_000, max_columns=100, max_cell_length=65_536)
_NULLS = set(NULL_VALUES)

# text cells: printable unicode, quotes, separators, line ends, formula starts, leading zeros
text_cells = st.one_of(
    st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), min_size=1, max_size=8),
    st.sampled_from(['=1+1', '"', '""', 'a,b', 'line\nbreak', 'cr\rlf\r\n', '007', ' x ', '+3', '-',
                     '@SUM(A1)', 'é', '日本', '\t', "'quoted'", '1e5', 'true', '2024-01-31']),
).filter(lambda s: s not in _NULLS and s.strip() != "")


@st.composite
def tables(draw):
    n = draw(st.integers(1, 12))
    columns: dict[str, list] = {}
    kinds: dict[str, str] = {}
    for i in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(["text", "int", "float"]))
        name = draw(st.sampled_from([f"c{i}", f"col {i}", f"é{i}", f'q"{i}', f"n,{i}"]))
        missing = draw(st.booleans())
        if kind == "text":
            cell = text_cells
        elif kind == "int":
            cell = st.integers(-(2**53) + 1, 2**53 - 1)
        else:
            cell = st.floats(allow_nan=False, allow_infinity=False, width=64)
        cells = draw(st.lists(st.none() | cell if missing else cell, min_size=n, max_size=n))
        assume(any(c is not None for c in cells))
        columns[name] = cells
        kinds[name] = kind
    return columns, kinds


def _write(columns: dict[str, list], kinds: dict[str, str], fmt: str) -> bytes:
    names = list(columns)
    n = len(columns[names[0]])
    if fmt == "csv":  # as a spreadsheet writes it: minimal quoting, CRLF line ends (a field
        buf = io.StringIO()  # holding a CR or an LF is quoted)
        writer = csv.writer(buf, lineterminator="\r\n")
        writer.writerow(names)
        for r in range(n):
            row = []
            for c in names:
                v = columns[c][r]
                row.append("" if v is None else repr(v) if kinds[c] == "float" else str(v))
            writer.writerow(row)
        return buf.getvalue().encode()
    if fmt == "jsonl":
        return "".join(json.dumps({c: columns[c][r] for c in names}, ensure_ascii=False) + "\n"
                       for r in range(n)).encode()
    types = {"text": pa.string(), "int": pa.int64(), "float": pa.float64()}
    table = pa.table({c: pa.array(columns[c], types[kinds[c]]) for c in names})
    buf = io.BytesIO()
    pq.write_table(table, buf)
    return buf.getvalue()


def _upload(tmp_path, payload: bytes, fmt: str, text_columns: frozenset[str]) -> pd.DataFrame:
    path = tmp_path / f"upload.{fmt}"
    path.write_bytes(payload)
    return parse(path, fmt, LIMITS, text_columns).frame


def _cells(series: pd.Series) -> list:
    """A column's cells as Python values, a missing cell None (NaN, None and pd.NA alike)."""
    return [None if (v is None or v is pd.NA or (isinstance(v, float) and math.isnan(v))) else v
            for v in series.astype(object)]


def _same_table(a: pd.DataFrame, b: pd.DataFrame) -> None:
    """Same columns, cells and types — but a float column of whole numbers may come back as
    integers from CSV, which writes 5.0 as 5 (equal numbers; JSON Lines keeps 5.0)."""
    assert list(a.columns) == list(b.columns)
    for c in a.columns:
        assert _cells(a[c]) == _cells(b[c]), c
        numbers = a[c].dtype.kind in "if" and b[c].dtype.kind in "if"
        assert a[c].dtype == b[c].dtype or numbers, (c, a[c].dtype, b[c].dtype)


def _written(columns, kinds, fmt) -> dict[str, list]:
    """What the upload should hold: every cell as written (integers with a missing cell are
    floats in pandas, equal as numbers)."""
    return columns


@bounded(100)
@given(tables(), st.sampled_from(["csv", "jsonl", "parquet"]))
def test_an_upload_reads_as_written_and_every_download_uploads_to_the_same_table(tmp_path_factory, case, fmt):
    columns, kinds = case
    tmp_path = tmp_path_factory.mktemp("codec")
    text = frozenset(c for c, k in kinds.items() if k == "text")
    note(f"format={fmt} columns={columns!r} kinds={kinds}")
    frame = _upload(tmp_path, _write(columns, kinds, fmt), fmt, text if fmt == "csv" else frozenset())
    expected = _written(columns, kinds, fmt)
    assert list(frame.columns) == list(columns)
    for c in columns:
        assert _cells(frame[c]) == expected[c], c
    stored = codec.table_to_parquet(frame)
    _same_table(codec.parquet_to_table(stored), frame)
    for download in ("csv", "jsonl", "parquet"):
        payload = b"".join(encode_table(stored, "table", download))
        again = _upload(tmp_path, payload, download, text if download == "csv" else frozenset())
        note(f"download={download} payload={payload[:300]!r}")
        _same_table(again, frame)
