"""Reading uploads: CSV/TSV, Parquet, JSON Lines and transaction files, within limits.

Errors name the problem (row, column, limit) and never quote the data: the parser's own
messages (which echo row text) are translated, not passed on.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from itertools import islice
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv
import pyarrow.json as pajson
import pyarrow.parquet as pq

from app.datasets.jsonl_depth import first_row_deeper_than
from app.datasets.quotes import line_of, unclosed_quote_offset
from app.datasets.schema import first_row
from app.errors import PayloadTooLarge, Unprocessable, UnsupportedMediaType
from app.privacy.arrays import distinct_sorted
from app.privacy.data import TransactionData

# transactions: one per line, items separated by white space (FIMI .dat); baskets: one per
# line, items separated by commas, each trimmed (market-basket exports such as Groceries, whose
# items hold spaces: "whole milk,rolls/buns") — a .csv name cannot tell it from a table
FORMATS = ("csv", "tsv", "parquet", "jsonl", "transactions", "baskets")
_ITEM_SEPARATORS = {"transactions": r"\s+", "baskets": r"\s*,\s*"}
NULL_VALUES = ["", "?", "NA", "N/A", "NaN", "nan", "NULL", "null", "#N/A", "None"]
_EXACT_LIMIT = 2.0 ** 53  # the integers a float64 holds exactly
_BLOCK = 4 * 1024 * 1024  # a CSV row must fit in one block; smaller blocks parse in parallel
_EXTENSIONS = {".csv": "csv", ".tsv": "tsv", ".tab": "tsv", ".parquet": "parquet", ".pq": "parquet",
               ".jsonl": "jsonl", ".ndjson": "jsonl", ".dat": "transactions", ".txt": "transactions"}


@dataclass(frozen=True)
class Limits:
    max_rows: int
    max_columns: int
    max_cell_length: int
    max_items: int = 200_000


@dataclass
class Parsed:
    format: str
    frame: pd.DataFrame | None = None
    transactions: TransactionData | None = None

    @property
    def rows(self) -> int:
        return len(self.frame) if self.frame is not None else self.transactions.n_transactions


def detect_format(path: Path, filename: str | None, declared: str | None) -> str:
    if declared and declared not in FORMATS:
        raise UnsupportedMediaType(f"unknown format {declared!r}; use one of {', '.join(FORMATS)}")
    with open(path, "rb") as f:
        first = f.read(512)
    head = first[:4]
    # checked whatever the declared format: with format=csv an .xlsx, .xls or gzip file was
    # 'not UTF-8 text (it looks like UTF-16…)', not what to do about it
    if _workbook(first, filename):
        raise UnsupportedMediaType("a spreadsheet workbook (Excel or OpenDocument) is not read: save the "
                                   "sheet as CSV UTF-8 (or the table as Parquet) and upload that")
    if _compressed(head):
        raise UnsupportedMediaType("compressed uploads are not accepted; upload the uncompressed "
                                   "file (Parquet is compressed internally)")
    if declared:
        return declared
    if head == b"PAR1":
        return "parquet"
    suffix = Path(filename or "").suffix.lower()
    if _EXTENSIONS.get(suffix) == "transactions" and _tab_separated_table(path):
        raise Unprocessable("every line holds the same number of tab-separated fields: a tab-separated "
                            "table (a spreadsheet's 'Text (Tab delimited)' .txt)? send it with format=tsv "
                            "or a .tsv name; transactions whose items are separated by tabs: send "
                            "format=transactions")
    if suffix in _EXTENSIONS:
        return _EXTENSIONS[suffix]
    raise UnsupportedMediaType("cannot tell the file's format from its name; send a `format` field "
                               f"({', '.join(FORMATS)})")


def _compressed(head: bytes) -> bool:
    """gzip, zip, bzip2 ('BZh' and its block size digit: a header 'BZh_score,…' is text) or zstd."""
    return (head[:2] == b"\x1f\x8b" or head == b"PK\x03\x04" or head == b"\x28\xb5\x2f\xfd"
            or (head[:3] == b"BZh" and head[3:4] in b"123456789" and len(head) == 4))


_OLE2 = bytes.fromhex("D0CF11E0A1B11AE1")  # an Office compound file: a legacy .xls
_WORKBOOK_SUFFIXES = (".xlsx", ".xlsm", ".xls", ".ods", ".numbers")
_WORKBOOK_FIRST_ENTRIES = (b"[Content_Types].xml", b"mimetype")  # Office Open XML, OpenDocument


def _workbook(first: bytes, filename: str | None) -> bool:
    """A spreadsheet file: a compound file, or a zip archive named as a workbook or whose first
    entry (its local header's name, at byte 30) is what Office Open XML and OpenDocument put first."""
    if first.startswith(_OLE2):
        return True
    if not first.startswith(b"PK\x03\x04"):
        return False
    name = first[30:30 + int.from_bytes(first[26:28], "little")]
    return name in _WORKBOOK_FIRST_ENTRIES or Path(filename or "").suffix.lower() in _WORKBOOK_SUFFIXES


def _tab_separated_table(path: Path) -> bool:
    """The file's first MiB of lines holds a table's shape: at least two lines, each with the
    same number of tabs (a transaction file's lines differ in length)."""
    with open(path, "rb") as f:
        head = f.read(1 << 20)
    lines = head.removeprefix(b"\xef\xbb\xbf").split(b"\n")
    if len(head) == 1 << 20:
        lines = lines[:-1]  # cut off by the read
    filled = [line for line in lines if line.strip()]
    return len(filled) >= 2 and b"\t" in filled[0] and len({line.count(b"\t") for line in filled}) == 1


def parse(path: Path, fmt: str, limits: Limits, text_columns: frozenset[str] = frozenset()) -> Parsed:
    """``text_columns``: columns the upload declares categorical; a CSV/TSV reads them as text,
    as written (a code '007' is not the number 7)."""
    if path.stat().st_size <= 64 and not path.read_bytes().removeprefix(b"\xef\xbb\xbf").strip():
        # a byte-order mark or line ends alone hold no header either
        raise Unprocessable("the uploaded file is empty")
    try:
        return _parse(path, fmt, limits, text_columns)
    except UnicodeDecodeError:
        raise Unprocessable("the file is not valid UTF-8 text (a column name or a text cell)") from None
    except pa.ArrowException as exc:  # the reader's own messages may quote the data: not passed on
        if "utf8" in str(exc).lower() or "utf-8" in str(exc).lower():
            raise Unprocessable("the file is not valid UTF-8 text (a column name or a text cell)") from None
        raise Unprocessable(f"the file cannot be read as {fmt}") from None


def _parse(path: Path, fmt: str, limits: Limits, text_columns: frozenset[str]) -> Parsed:
    if fmt != "parquet":
        _require_utf8_like(path)
    if fmt in ("csv", "tsv"):
        return Parsed(fmt, frame=_finish_table(_read_csv(path, fmt, limits, text_columns), limits))
    if fmt in ("parquet", "jsonl"):
        table = _read_parquet(path, limits) if fmt == "parquet" else _read_jsonl(path, limits)
        if is_item_lists(table.schema):  # what a transaction set's download holds: it uploads again
            return Parsed(fmt, transactions=_lists_to_transactions(table.column(0), limits))
        return Parsed(fmt, frame=_finish_table(table, limits))
    return Parsed(fmt, transactions=_read_transactions(path, limits, _ITEM_SEPARATORS[fmt]))


def is_item_lists(schema: pa.Schema) -> bool:
    """One column of lists of text or integers: a transaction set (a Parquet or JSON Lines
    download of one reads back as transactions, whatever its labels hold: commas, spaces)."""
    if len(schema) != 1 or not (pa.types.is_list(schema[0].type) or pa.types.is_large_list(schema[0].type)):
        return False
    item = schema[0].type.value_type
    return pa.types.is_string(item) or pa.types.is_large_string(item) or pa.types.is_integer(item) \
        or pa.types.is_null(item)


def _require_utf8_like(path: Path) -> None:
    """UTF-16 and UTF-32 text (a spreadsheet's \"Unicode text\" export) parses as one field per
    line with NULs between the characters: name the encoding instead of a row's field count."""
    with open(path, "rb") as f:
        head = f.read(4096)
    if head[:2] in (b"\xff\xfe", b"\xfe\xff") or b"\x00" in head:
        raise Unprocessable("the file is not UTF-8 text (it looks like UTF-16 or UTF-32, or holds NUL "
                            "bytes); save it as UTF-8")


# ------------------------------------------------------------------------------------- CSV
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


def _read_csv(path: Path, fmt: str, limits: Limits, text_columns: frozenset[str] = frozenset()) -> pa.Table:
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
    read = pacsv.ReadOptions(block_size=_BLOCK)
    try:
        table = pacsv.read_csv(path, read_options=read, parse_options=parse_opts, convert_options=convert)
    except pa.ArrowInvalid as exc:
        message = str(exc)
        if "conversion error" in message.lower():
            # Types inferred from the first block did not hold later on: read every column as
            # text and infer per column (see _infer_types).
            names = pacsv.read_csv(path, read_options=pacsv.ReadOptions(block_size=_BLOCK),
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
    wide = [n for i, n in enumerate(names) if pa.types.is_floating(types[i]) and _beyond_exact(table.column(i))]
    temporal = [n for i, n in enumerate(names) if pa.types.is_temporal(types[i])]
    if not (wide or temporal) or len(set(names)) < len(names):  # repeated names are refused later
        return table
    convert = pacsv.ConvertOptions(null_values=NULL_VALUES, strings_can_be_null=True,
                                   include_columns=wide + temporal,
                                   column_types={n: pa.string() for n in wide + temporal})
    text = pacsv.read_csv(path, read_options=pacsv.ReadOptions(block_size=_BLOCK),
                          parse_options=parse_opts, convert_options=convert)
    for name in wide + temporal:
        if name in temporal or _integer_literals(text.column(name)):
            table = table.set_column(names.index(name), name, text.column(name))
    return table


def _beyond_exact(col: pa.ChunkedArray) -> bool:
    """Some value is a whole number beyond ±2^53, where float64 (Veil's numeric type) no
    longer holds every integer."""
    low, high = pc.min_max(col).values()
    return low.is_valid and max(abs(low.as_py()), abs(high.as_py())) >= _EXACT_LIMIT


def _integer_literals(col: pa.ChunkedArray) -> bool:
    return bool(pc.all(pc.match_substring_regex(col, r"^\s*[+-]?\d+\s*$")).as_py() is not False)


def _read_csv_as_text(path: Path, parse_opts, names: list[str], text_columns: frozenset[str]) -> pa.Table:
    convert = pacsv.ConvertOptions(null_values=NULL_VALUES, strings_can_be_null=True,
                                   column_types={n: pa.string() for n in names})
    table = pacsv.read_csv(path, read_options=pacsv.ReadOptions(block_size=_BLOCK),
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
    return col if _beyond_exact(numbers) and _integer_literals(col) else numbers


def _csv_problem(path: Path, parse_opts, message: str) -> Unprocessable:
    if "Empty CSV file" in message:  # a header line without a line end: pyarrow sees no rows
        return Unprocessable("the file has a header but no rows")
    if "straddling" in message:
        return Unprocessable(f"a row is longer than {_BLOCK // (1024 * 1024)} MiB (or a quoted "
                             "field is not closed)")
    # Find the first bad row single-threaded, where the parser reports its line number.
    bad: list = []

    def handler(row):
        bad.append(row)
        return "error"

    try:
        # latin-1: the reader hands the row's text to the handler, and a row that is not
        # UTF-8 made that fail (the handler never ran; the row number was lost).
        pacsv.read_csv(path, read_options=pacsv.ReadOptions(block_size=_BLOCK, use_threads=False,
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


# --------------------------------------------------------------------------------- Parquet
def _read_parquet(path: Path, limits: Limits) -> pa.Table:
    try:
        meta = pq.ParquetFile(path).metadata
    except (pa.ArrowInvalid, OSError):
        raise Unprocessable("not a readable Parquet file") from None
    if meta.num_columns > limits.max_columns:
        raise Unprocessable(f"the file has {meta.num_columns} columns; the limit is {limits.max_columns}")
    if meta.num_rows > limits.max_rows:
        raise Unprocessable(f"the file has {meta.num_rows} rows; the limit is {limits.max_rows}")
    # What reading will allocate, from the metadata alone: the encoded pages (which hold the
    # dictionaries) plus, per row, each column's decoded width. The encoded size alone misses
    # run-length and dictionary "bombs" (a few KB declaring gigabytes of repeated values).
    declared = [meta.row_group(i).total_byte_size for i in range(meta.num_row_groups)]
    if meta.num_rows < 0 or any(size < 0 for size in declared):  # would pass any budget below
        raise Unprocessable("the Parquet file is corrupt or inconsistent with its metadata "
                            "(a negative row count or size)")
    declared = sum(declared)
    per_row = sum(_decoded_width(meta.schema.column(i)) for i in range(meta.num_columns))
    decoded = declared + meta.num_rows * per_row
    budget = limits.max_rows * min(limits.max_columns, 64) * 16
    if decoded > budget:
        raise PayloadTooLarge(f"the Parquet file would decode to about {decoded} bytes; the "
                              f"limit is {budget}")
    try:
        schema = pq.ParquetFile(path).schema_arrow
    except (pa.ArrowException, OSError):
        raise Unprocessable("the Parquet file is corrupt or inconsistent with its metadata") from None
    _check_names(schema.names)  # before reading: the reader fails on a repeated name
    for field in schema:
        if pa.types.is_nested(field.type) and not is_item_lists(schema):
            raise Unprocessable(f"column {field.name!r} holds nested values ({field.type}); only "
                                "columns of numbers, text, booleans, dates or times are accepted, "
                                "or a single column of lists of items (transactions)")
    try:
        # Text read as dictionaries: memory follows the distinct values, not rows × length.
        text = [f.name for f in schema
                if pa.types.is_string(f.type) or pa.types.is_large_string(f.type)
                or pa.types.is_binary(f.type) or pa.types.is_large_binary(f.type)]
        return pq.read_table(path, read_dictionary=text)
    except (pa.ArrowInvalid, OSError, MemoryError):
        raise Unprocessable("the Parquet file is corrupt or inconsistent with its metadata") from None


_PHYSICAL_WIDTH = {"BOOLEAN": 1, "INT32": 4, "INT64": 8, "INT96": 12, "FLOAT": 4, "DOUBLE": 8,
                   "BYTE_ARRAY": 4}  # byte arrays: a dictionary index per row (values are in the pages)


def _decoded_width(column) -> int:
    if column.physical_type == "FIXED_LEN_BYTE_ARRAY":
        return max(int(column.length or 0), 1)
    return _PHYSICAL_WIDTH.get(column.physical_type, 8)


# ------------------------------------------------------------------------------ JSON Lines
_JSONL_DEPTH = 2  # a record (1) holding an object or array (2): named by the reader's column below


def _read_jsonl(path: Path, limits: Limits) -> pa.Table:
    deep = first_row_deeper_than(path, _JSONL_DEPTH)  # before the reader: deep nesting crashes it
    if deep is not None:
        raise Unprocessable(f"unparsable JSON Lines at row {deep}: it holds nested values (objects or "
                            "arrays inside a value); only scalars are supported")
    try:
        table = pajson.read_json(path, read_options=pajson.ReadOptions(block_size=_BLOCK))
    except pa.ArrowInvalid as exc:
        raise _jsonl_problem(str(exc)) from None
    if table.num_columns > limits.max_columns:
        raise Unprocessable(f"the file has {table.num_columns} columns; the limit is {limits.max_columns}")
    table = _jsonl_as_written(path, table)
    for name in table.column_names:
        t = table.schema.field(name).type
        if pa.types.is_nested(t) and not is_item_lists(table.schema):
            raise Unprocessable(f"column {name!r} holds nested values; only scalars are supported, "
                                "or a single key whose values are lists of items (transactions)")
        if pa.types.is_string(t):  # the JSON reader does not check UTF-8 (the CSV reader does)
            try:
                table.column(name).validate(full=True)
            except pa.ArrowInvalid:
                raise Unprocessable(f"column {name!r} holds a value that is not valid UTF-8 "
                                    "text") from None
    return table


def _jsonl_as_written(path: Path, table: pa.Table) -> pa.Table:
    """What the JSON reader parsed beyond the file's text, given back as written: a string it
    took for a timestamp (2024-01-31 became 2024-01-31 00:00:00, 2024-01-31T10:00:00+02:00
    2024-01-31 08:00:00: its offset gone) is read again as text; an integer beyond int64 it
    took for a double (a 20-digit identifier, rounded) is kept as its digits when every value
    of the column is an integer literal, as in a CSV."""
    names, types = table.column_names, table.schema.types
    temporal = [n for i, n in enumerate(names) if pa.types.is_temporal(types[i])]
    if temporal:
        schema = pa.schema([(n, pa.string()) for n in temporal])
        text = pajson.read_json(path, read_options=pajson.ReadOptions(block_size=_BLOCK),
                                parse_options=pajson.ParseOptions(explicit_schema=schema))
        for name in temporal:
            table = table.set_column(names.index(name), name, text.column(name))
    wide = [n for i, n in enumerate(names) if pa.types.is_floating(types[i]) and _beyond_exact(table.column(i))]
    for name, digits in _integer_literal_texts(path, wide, table.num_rows).items():
        table = table.set_column(names.index(name), name, digits)
    return table


def _integer_literal_texts(path: Path, names: list[str], rows: int) -> dict[str, pa.Array]:
    """The columns of ``names`` whose every value is an integer literal (or null), as text.
    Read with Python's json — only for such columns, which are rare: the Arrow reader gives no
    number's text. The lines are decoded 65,536 at a time as one JSON array (the Arrow reader
    has read each as one object): a decode call per line cost 3× as much. A JSON integer
    literal is -?(0|[1-9][0-9]*), which Python's int writes back digit for digit (-0 alone
    comes back 0); a number with a fraction or an exponent decodes to a float and keeps the
    column numeric (a hook that kept each literal's text cost twice the decode)."""
    if not names:
        return {}
    kept: dict[str, list] = {n: [] for n in names}
    with open(path, "rb") as f:
        while lines := list(islice(f, _LITERAL_CHUNK)):
            lines = [line for line in lines if line.strip()]  # the Arrow reader skips blank lines too
            if not lines:
                continue
            records = _decoded("[" + b",".join(lines).decode("utf-8-sig") + "]")  # read as UTF-8, as Arrow did
            for name in list(kept):
                values = [record.get(name) for record in records]
                if all(v is None or type(v) in _LITERAL_TYPES for v in values):  # not bool, a subclass of int
                    kept[name].extend(values)
                else:
                    del kept[name]
            if not kept:
                return {}
    return {n: pa.array([None if v is None else str(v) for v in values], pa.string())
            for n, values in kept.items() if len(values) == rows}


_LITERAL_CHUNK = 65_536  # lines decoded at once: a few tens of MB of Python objects at most


class _IntegerLiteral(str):
    """A JSON integer literal as its text: for a chunk holding one Python's int refuses to read
    (more than sys.get_int_max_str_digits(), 4,300, digits), which is then decoded again keeping
    every literal's text (twice the cost, for that chunk only)."""


_LITERAL_TYPES = (int, _IntegerLiteral)
_DECODE = json.JSONDecoder().decode
_DECODE_KEEPING_LITERALS = json.JSONDecoder(parse_int=_IntegerLiteral).decode


def _decoded(text: str):
    try:
        return _DECODE(text)
    except ValueError as exc:
        if "integer string conversion" not in str(exc):
            raise
        return _DECODE_KEEPING_LITERALS(text)


def _jsonl_problem(message: str) -> Unprocessable:
    """The reader's message names a column (a JSON pointer) and a row, never a value."""
    if "straddling" in message:  # a line across more than one of the reader's blocks
        return Unprocessable(f"unparsable JSON Lines: a line is longer than {_BLOCK // (1024 * 1024)} MiB")
    match = re.search(r"[Rr]ow #?(\d+)", message)
    where = f" at row {int(match.group(1)) + 1}" if match else ""
    column = re.search(r"Column\(/(.*)\) (?:changed from (\w+) to (\w+)|was specified twice) in row", message)
    if column:
        name = column.group(1).replace("~1", "/").replace("~0", "~")
        if column.group(2):
            return Unprocessable(f"unparsable JSON Lines{where}: column {name!r} changes from "
                                 f"{column.group(2)} to {column.group(3)}; every value of a column "
                                 "must be of one JSON type (or null)")
        return Unprocessable(f"unparsable JSON Lines{where}: the key {name!r} appears twice in the object")
    if "too big to be stored in double" in message:
        return Unprocessable(f"unparsable JSON Lines{where}: a number is beyond ±1.8e308")
    return Unprocessable(f"unparsable JSON Lines{where}: every line must be one JSON object "
                         "with scalar values")


# ---------------------------------------------------------------------------- transactions
def _read_transactions(path: Path, limits: Limits, separator: str = r"\s+") -> TransactionData:
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
    if separator == _ITEM_SEPARATORS["transactions"] and _every_line_has_a_comma(lines):
        # a basket file sent as .dat became one item "1,2,3" per line, silently
        raise Unprocessable("every transaction holds a comma, and a FIMI transaction file separates "
                            "its items by spaces: comma-separated market baskets? send them with "
                            "format=baskets")
    return _item_lists(pc.split_pattern_regex(lines, separator), limits)


def _every_line_has_a_comma(lines: pa.Array) -> bool:
    filled = lines.filter(pc.not_equal(lines, ""))
    return len(filled) > 0 and bool(pc.all(pc.match_substring(filled, ",")).as_py())


def _lists_to_transactions(column: pa.ChunkedArray, limits: Limits) -> TransactionData:
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


# ------------------------------------------------------------------------ common finishing
def _finish_table(table: pa.Table, limits: Limits) -> pd.DataFrame:
    if table.num_columns == 0:
        raise Unprocessable("the file has no columns")
    if table.num_rows == 0:
        raise Unprocessable("the file has a header but no rows")
    if table.num_rows > limits.max_rows:
        raise Unprocessable(f"the file has {table.num_rows} rows; the limit is {limits.max_rows}")
    names = table.column_names
    _check_names(names)
    columns = {}
    for name in names:
        col = table.column(name)
        t = col.type
        if pa.types.is_dictionary(t) and not pa.types.is_string(t.value_type):
            col = pc.cast(col, t.value_type)
            t = col.type
        if (pa.types.is_integer(t) or (pa.types.is_decimal(t) and t.scale == 0)) and _beyond_exact(col):
            # identifiers, hashes: float64 would round them, so they are kept as text
            col = pc.cast(col, pa.string())
            t = col.type
        if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_dictionary(t):
            _check_cell_length(name, col, limits)
            # Dictionary-encoded in Arrow: pandas gets a Categorical without a Python
            # object per cell (≈ 10× faster than astype("category") on strings).
            encoded = col if pa.types.is_dictionary(t) else pc.dictionary_encode(col)
            columns[name] = encoded.to_pandas()
        elif pa.types.is_boolean(t):
            columns[name] = col.to_pandas().astype("boolean")
        elif pa.types.is_integer(t) and col.null_count:
            # integers with missing cells stay integers (pandas' nullable Int64, stored as int64
            # with nulls): as float64 their downloads held 34.0 and NaN (codec.for_methods hands
            # methods the float64 they read)
            columns[name] = col.cast(pa.int64()).to_pandas(types_mapper={pa.int64(): pd.Int64Dtype()}.get)
        elif pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_decimal(t):
            columns[name] = pd.to_numeric(col.to_pandas()).astype("float64") \
                if not pa.types.is_integer(t) else col.to_pandas()
            _check_finite(name, columns[name])
        else:  # dates, times, binary: kept as text categories
            try:
                columns[name] = pc.cast(col, pa.string()).to_pandas().astype("category")
            except pa.ArrowInvalid:  # bytes that are not UTF-8 text
                raise Unprocessable(f"column {name!r} holds a value that is not valid UTF-8 "
                                    "text") from None
    return pd.DataFrame(columns)


def _check_names(names: list[str]) -> None:
    if len(set(names)) != len(names):
        dup = next(n for n in names if names.count(n) > 1)
        raise Unprocessable(f"column {dup!r} appears more than once in the header")
    blank = next((i for i, n in enumerate(names) if not str(n).strip()), None)
    if blank is not None:
        cause = (" (the row labels pandas' to_csv and R's write.csv write by default: save with "
                 "to_csv(index=False) or write.csv(row.names = FALSE), or name the column)") if blank == 0 else ""
        raise Unprocessable(f"column {blank + 1} of {len(names)} has an empty name{cause}")


def _check_finite(name: str, series: pd.Series) -> None:
    """±inf ('inf' in a CSV, or a number beyond a 64-bit float) is no value any method can
    bound or count; NaN is a missing value and stays one."""
    infinite = np.isinf(series.to_numpy(dtype=float, na_value=np.nan))
    if infinite.any():
        raise Unprocessable(f"column {name!r}, row {first_row(infinite)}: an infinite number "
                            "('inf', or beyond ±1.8e308)")


def _check_cell_length(name: str, col: pa.ChunkedArray, limits: Limits) -> None:
    if pa.types.is_dictionary(col.type):  # the distinct values are enough to know
        longest = max((pc.max(pc.utf8_length(c.dictionary)).as_py() or 0 for c in col.chunks), default=0)
        if longest <= limits.max_cell_length:
            return
        col = pc.cast(col, col.type.value_type)
    lengths = pc.utf8_length(col)
    longest = pc.max(lengths).as_py()
    if longest is not None and longest > limits.max_cell_length:
        row = int(np.argmax(lengths.to_numpy(zero_copy_only=False) > limits.max_cell_length))
        raise Unprocessable(f"column {name!r}, row {row + 1}: a value is longer than "
                            f"{limits.max_cell_length} characters")
