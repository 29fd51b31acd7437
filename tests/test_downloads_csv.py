"""The CSV writer encodes a batch at a time: a download holds the stored table and one
batch's text, never a second copy of the whole table."""

from __future__ import annotations

import io

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv

from app.downloads.csv_writer import csv_batches


def _categorical_table(rows: int) -> pa.Table:
    words = pa.array([f"category-{i:02d}-with-a-long-name" for i in range(40)])
    codes = np.arange(rows) % 40
    return pa.table({f"c{j}": pa.DictionaryArray.from_arrays(pa.array(codes, pa.int8()), words)
                     for j in range(4)} | {"n": pa.array(codes)})


def test_dictionary_columns_are_decoded_a_batch_at_a_time():
    # the dictionary columns were cast to plain text for the whole table before the first
    # batch: a 1,000,000-row release of 23 MiB took 230 MiB more in the API process
    # (#scale acceptance check)
    table = _categorical_table(400_000)
    before = pa.total_allocated_bytes()
    chunks = csv_batches(table, spreadsheet_safe=True)
    first = next(chunks)
    held = pa.total_allocated_bytes() - before
    plain_size = 4 * 400_000 * len("category-00-with-a-long-name")
    assert held < plain_size / 4, (held, plain_size)
    back = pacsv.read_csv(io.BytesIO(first + b"".join(chunks)))
    assert back.num_rows == 400_000 and back.column_names == table.column_names
    assert back.column("c3").to_pylist() == table.column("c3").cast(pa.string()).to_pylist()


def test_formula_cells_are_escaped_in_every_batch_and_the_header_comes_once():
    values = pa.array(["=1+1", "ok", None, "-x"] * 30_000)
    table = pa.table({"s": values, "d": values.dictionary_encode()})
    text = b"".join(csv_batches(table, spreadsheet_safe=True)).decode("utf-8-sig")
    lines = text.splitlines()
    assert lines[0] == '"s","d"' and text.count('"s","d"') == 1 and len(lines) == 120_001
    assert lines[1:5] == ['"\'=1+1","\'=1+1"', '"ok","ok"', ",", '"\'-x","\'-x"']
    assert b"".join(csv_batches(table.slice(0, 0))).decode() == '"s","d"\n'


def test_a_spreadsheet_safe_csv_starts_with_a_utf8_byte_order_mark():
    """Excel reads a CSV without a byte-order mark in the system's code page: the file made to
    be opened in a spreadsheet showed 'café' as 'cafÃ©' and 東京 as 'æ\x9d±äº¬' (roundtrip
    acceptance check). The mark comes once, before the header, also when there are no rows;
    the plain CSV, for pipelines, has none."""
    table = pa.table({"café": pa.array(["東京", "=x"] * 40_000)})
    safe = b"".join(csv_batches(table, spreadsheet_safe=True))
    assert safe.startswith(b"\xef\xbb\xbf\"caf\xc3\xa9\"\n") and safe.count(b"\xef\xbb\xbf") == 1
    assert b"".join(csv_batches(table.slice(0, 0), spreadsheet_safe=True)) == "\ufeff\"café\"\n".encode()
    assert b"".join(csv_batches(table)).startswith('"café"\n'.encode())



def test_a_stored_table_is_read_a_row_group_at_a_time(monkeypatch):
    """Tables are stored in row groups of ROW_GROUP_ROWS and a download decodes one at a time:
    pandas' default group of 1,000,000 rows and a whole-table read made one CSV download of a
    1,000,000-row string release take 240 MiB of Arrow memory (now 26; scale acceptance check)."""
    import pandas as pd
    import pyarrow.parquet as pq

    from app import codec
    from app.downloads import encode_table

    rows = 2 * codec.ROW_GROUP_ROWS + 5
    frame = pd.DataFrame({"g": np.array([f"[{i % 7}-{i % 7 + 5}[" for i in range(rows)], dtype=object),
                          "cat": pd.Categorical(np.arange(rows) % 3), "x": np.arange(rows)})
    payload = codec.table_to_parquet(frame)
    assert pq.ParquetFile(io.BytesIO(payload)).metadata.num_row_groups == 3

    def whole_table(*args, **kwargs):
        raise AssertionError("the download decoded the whole stored table")

    monkeypatch.setattr(pq, "read_table", whole_table)
    for fmt in ("csv", "jsonl"):
        text = b"".join(encode_table(payload, "table", fmt))
        back = (pd.read_csv(io.BytesIO(text)) if fmt == "csv"
                else pd.read_json(io.BytesIO(text), lines=True))
        assert len(back) == rows and back["g"].tolist() == frame["g"].tolist()
        assert back["cat"].tolist() == frame["cat"].astype(int).tolist() and back["x"].tolist() == list(range(rows))
    empty = b"".join(encode_table(codec.table_to_parquet(frame.iloc[:0]), "table", "csv"))
    assert empty.decode().strip() == '"g","cat","x"'


def test_a_one_column_tables_missing_cells_are_not_blank_lines():
    """Found by tests/test_properties_codec.py: a one-column table's missing cell was written
    as a blank line, which CSV readers skip (Veil's upload, pandas): the download of
    [None, None, None, None, '0'] uploaded again as one row. Written as "" now, read back as a
    missing cell — text, numbers and a dictionary column, across batches."""
    import pandas as pd

    for column in (pa.array([None, None, None, None, "0"]), pa.array([None, 1.5, None]),
                   pa.array([True, None]), pa.array(["a\n\nb", None, ""]),
                   pa.array(["x", None] * 60_000).dictionary_encode()):
        table = pa.table({"c": column})
        payload = b"".join(csv_batches(table))
        back = pd.read_csv(io.BytesIO(payload), dtype=str)
        assert back["c"].isna().tolist() == [v in (None, "") for v in column.to_pylist()], payload[:80]


def test_blank_lines_are_quoted_as_the_line_by_line_reference_does():
    """_blank_lines_quoted (two bytes.replace passes) against the former loop over the lines, on
    every body of up to 8 lines of a value or blank, with and without the last line end, after
    a header line and without one (a batch after the first)."""
    import itertools

    from app.downloads.csv_writer import _blank_lines_quoted

    def reference(out: bytes) -> bytes:
        return b"".join(line if line != b"\n" else b'""\n' for line in io.BytesIO(out))

    for n in range(1, 9):
        for body in itertools.product([b"\n", b"1", b"1\n"], repeat=n):
            for out in (b'"v"\n' + b"".join(body), b"".join(body)):
                assert _blank_lines_quoted(out) == reference(out), out


def test_a_batch_that_starts_with_a_missing_cell_quotes_it_too():
    """A batch after the first has no header line: a one-column numeric or boolean table whose
    second batch (rows of 50,000) began with a missing cell began with a blank line, which the
    two-pass quoting (9e2b7c7) missed: pandas read 50,001 rows of 50,002, and the missing cell
    was gone."""
    import pandas as pd

    for column in (pa.array([1.5] * 50_000 + [None, 2.5]), pa.array([True] * 50_000 + [None])):
        payload = b"".join(csv_batches(pa.table({"c": column})))
        assert b"\n\n" not in payload
        back = pd.read_csv(io.BytesIO(payload), dtype=str)
        assert back["c"].isna().tolist() == [v is None for v in column.to_pylist()]


def test_a_float_column_of_whole_values_is_written_with_a_point():
    """Arrow's writer writes the float 34.0 as 34, so a float column whose values were all whole
    read back as integers (pandas, Veil's upload: stored as int64 where the original held
    float64). Written 34.0 it reads back as floats; integers stay 34, a fraction or a value
    written with an exponent is left as the writer writes it, missing cells stay empty."""
    table = pa.table({"f": pa.array([34.0, None, -3.0] * 40_000), "i": pa.array([34, None, -3] * 40_000),
                      "mixed": pa.array([1.0, 2.5, None] * 40_000), "big": pa.array([1e300, 2.0, 0.0] * 40_000),
                      "one": pa.array([None, 9007199254740992.0, None] * 40_000)})
    text = b"".join(csv_batches(table))
    assert text.decode().splitlines()[:4] == ['"f","i","mixed","big","one"', "34.0,34,1,1e+300,",
                                              ",,2.5,2,9007199254740992.0", "-3.0,-3,,0,"]
    back = pacsv.read_csv(io.BytesIO(text))
    assert back.schema.types == [pa.float64(), pa.int64(), pa.float64(), pa.float64(), pa.float64()]
    assert back.column("f").to_pylist() == table.column("f").to_pylist()
    assert back.column("one").to_pylist() == table.column("one").to_pylist()
    lone = b"".join(csv_batches(pa.table({"f": pa.array([None, 1.0, None])})))
    assert lone == b'"f"\n""\n1.0\n""\n'  # a one-column table's missing cell stays a quoted empty one
