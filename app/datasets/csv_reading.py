"""Reading a CSV or TSV upload into an Arrow table: the delimiter and header checks, the values
kept as written (integers beyond float64, dates and times), text that is not UTF-8, and the
reader's errors named by row without quoting the data. Separate from parsing.py (which picks the
reader by format) because it is the largest reader and read on its own when a CSV is wrong.
"""

from __future__ import annotations

import re
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv

from app.datasets.quotes import line_of, unclosed_quote_offset
from app.datasets.upload_limits import BLOCK, Limits, beyond_exact
from app.errors import Unprocessable

NULL_VALUES = ["", "?", "NA", "N/A", "NaN", "nan", "NULL", "null", "#N/A", "None"]


def _delimiter(path: Path, fmt: str, limits: Limits) -> tuple[str, int]:
    """The delimiter and the header's field count, read from the first line only (so a
    10^6-column file is refused before it is parsed)."""
    cap = max(1 << 20, limits.max_columns * 1024)
    with open(path, "rb") as f:
        head = f.read(cap)
    newline = head.find(b"\n")
    line = head if newline < 0 else head[:newline]
    if newline < 0 and len(head) == cap:
        raise Unprocessable(f"the header line is longer than {cap} bytes")
    if re.fullmatch(rb"(\xef\xbb\xbf)?sep=[,;\t|]\r?", line, flags=re.IGNORECASE):
        raise Unprocessable("the first line is Excel's separator hint ('sep=…'), not the header: "
                            "remove that line and upload the file again")
    delimiter = "\t" if fmt == "tsv" or (b"\t" in line and b"," not in line) else ","
    if delimiter == "," and b"," not in line and b";" in line:
        following = head[newline + 1:].split(b"\n", 1)[0] if newline >= 0 else b""
        if following.count(b";") == line.count(b";"):  # not a one-column file whose name holds ';'
            raise Unprocessable("the header and the first row are separated by ';': Veil reads "
                                "comma-separated values (or tab-separated: a .tsv name or tabs in the "
                                "header); save the table with commas (and decimal points) or send it "
                                "as Parquet")
    fields = line.count(delimiter.encode()) + 1
    if fields > limits.max_columns:
        raise Unprocessable(f"the file has {fields} columns; the limit is {limits.max_columns}")
    return delimiter, fields


def read_csv(path: Path, fmt: str, limits: Limits, text_columns: frozenset[str] = frozenset()) -> pa.Table:
    delimiter, _ = _delimiter(path, fmt, limits)
    opened = unclosed_quote_offset(path, delimiter)
    if opened is not None:  # pyarrow would take the rest of the file for that one cell
        raise Unprocessable(f"unparsable CSV: the quoted field that starts on line "
                            f"{line_of(path, opened)} (the header is line 1) is never closed")
    parse_opts = pacsv.ParseOptions(delimiter=delimiter)
    # Text columns are dictionary-encoded while parsing: pandas then gets Categoricals
    # without creating a Python string per cell.
    convert = pacsv.ConvertOptions(null_values=NULL_VALUES, strings_can_be_null=True,
                                   auto_dict_encode=True, auto_dict_max_cardinality=2**31 - 1,
                                   column_types={n: pa.string() for n in text_columns})
    read = pacsv.ReadOptions(block_size=BLOCK)
    try:
        table = pacsv.read_csv(path, read_options=read, parse_options=parse_opts, convert_options=convert)
    except pa.ArrowInvalid as exc:
        message = str(exc)
        if "conversion error" in message.lower():
            # Types inferred from the first block did not hold later on: read every column as
            # text and infer per column (see _infer_types).
            names = pacsv.read_csv(path, read_options=pacsv.ReadOptions(block_size=BLOCK),
                                   parse_options=parse_opts,
                                   convert_options=pacsv.ConvertOptions(include_columns=[])).column_names
            return _read_csv_as_text(path, parse_opts, names, text_columns)
        raise _csv_problem(path, parse_opts, message) from None
    _refuse_text_not_utf8(table)
    return _as_written(path, parse_opts, table)


def _refuse_text_not_utf8(table: pa.Table) -> None:
    """The reader takes a column holding bytes that are not UTF-8 for binary: a spreadsheet's
    CSV saved in Windows-1252 or Latin-1 (José as 'Jos\\xe9'). Named with its first such row."""
    for name, t in zip(table.column_names, table.schema.types):
        t = t.value_type if pa.types.is_dictionary(t) else t  # text is read dictionary-encoded
        if not (pa.types.is_binary(t) or pa.types.is_large_binary(t)):
            continue
        row = 1
        for chunk in table.column(name).chunks:
            chunk = chunk.dictionary_decode() if pa.types.is_dictionary(chunk.type) else chunk
            try:
                pc.cast(chunk, pa.string())
            except pa.ArrowInvalid:  # the first bad cell is looked for in this chunk only
                row += next(i for i, v in enumerate(chunk.to_pylist()) if v is not None and not _utf8(v))
                raise Unprocessable(f"column {name!r}, row {row} holds text that is not UTF-8 (Windows-"
                                    "1252 or Latin-1?): save the file as UTF-8 (a spreadsheet's 'CSV UTF-8')")
            row += len(chunk)


def _utf8(value: bytes) -> bool:
    try:
        value.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def _as_written(path: Path, parse_opts, table: pa.Table) -> pa.Table:
    """Columns whose parsed values would not give the text back are read again as text.
    pyarrow reads an integer beyond int64 (a 20-digit identifier) as a double and its digits
    are gone: such a column is kept as text when every value is an integer literal. A date or
    time it parses is rewritten (2024-01-31T10:00:00+02:00 became 2024-01-31 08:00:00Z, 10:00
    10:00:00), while Veil keeps dates and times as text categories: they stay as written."""
    names, types = table.column_names, table.schema.types  # built once: a list per column was quadratic
    wide = [n for i, n in enumerate(names) if pa.types.is_floating(types[i]) and beyond_exact(table.column(i))]
    temporal = [n for i, n in enumerate(names) if pa.types.is_temporal(types[i])]
    if not (wide or temporal) or len(set(names)) < len(names):  # repeated names are refused later
        return table
    convert = pacsv.ConvertOptions(null_values=NULL_VALUES, strings_can_be_null=True,
                                   include_columns=wide + temporal,
                                   column_types={n: pa.string() for n in wide + temporal})
    text = pacsv.read_csv(path, read_options=pacsv.ReadOptions(block_size=BLOCK),
                          parse_options=parse_opts, convert_options=convert)
    for name in wide + temporal:
        if name in temporal or _integer_literals(text.column(name)):
            table = table.set_column(names.index(name), name, text.column(name))
    return table


def _integer_literals(col: pa.ChunkedArray) -> bool:
    return bool(pc.all(pc.match_substring_regex(col, r"^\s*[+-]?\d+\s*$")).as_py() is not False)


def _read_csv_as_text(path: Path, parse_opts, names: list[str], text_columns: frozenset[str]) -> pa.Table:
    convert = pacsv.ConvertOptions(null_values=NULL_VALUES, strings_can_be_null=True,
                                   column_types={n: pa.string() for n in names})
    table = pacsv.read_csv(path, read_options=pacsv.ReadOptions(block_size=BLOCK),
                           parse_options=parse_opts, convert_options=convert)
    return pa.table({n: table.column(n) if n in text_columns else _narrow_text_column(table.column(n))
                     for n in table.column_names})


def _narrow_text_column(col: pa.ChunkedArray) -> pa.ChunkedArray:
    """A text column whose every non-null value parses as a number becomes numeric — unless
    they are integer literals beyond ±2^53 (identifiers), which float64 would round."""
    try:
        numbers = pc.cast(col, pa.float64())
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return col
    return col if beyond_exact(numbers) and _integer_literals(col) else numbers


def _csv_problem(path: Path, parse_opts, message: str) -> Unprocessable:
    if "Empty CSV file" in message:  # a header line without a line end: pyarrow sees no rows
        return Unprocessable("the file has a header but no rows")
    if "straddling" in message:
        return Unprocessable(f"a row is longer than {BLOCK // (1024 * 1024)} MiB (or a quoted "
                             "field is not closed)")
    # Find the first bad row single-threaded, where the parser reports its line number.
    bad: list = []

    def handler(row):
        bad.append(row)
        return "error"

    try:
        # latin-1: the reader hands the row's text to the handler, and a row that is not
        # UTF-8 made that fail (the handler never ran; the row number was lost).
        pacsv.read_csv(path, read_options=pacsv.ReadOptions(block_size=BLOCK, use_threads=False,
                                                            encoding="latin-1"),
                       parse_options=pacsv.ParseOptions(delimiter=parse_opts.delimiter,
                                                        invalid_row_handler=handler))
    except pa.ArrowInvalid:
        pass
    if bad:
        row = bad[0]
        where = f"row {row.number - 1}" if row.number else "a row"  # data rows count from 1
        hint = (" (market baskets, one per line with items separated by commas? send format=baskets)"
                if parse_opts.delimiter == "," else "")
        return Unprocessable(f"unparsable {where}: expected {row.expected_columns} fields, "
                             f"found {row.actual_columns}{hint}")
    match = re.search(r"(Expected \d+ columns, got \d+)", message)
    return Unprocessable("unparsable CSV" + (f": {match.group(1)}" if match else ""))
