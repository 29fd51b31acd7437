"""Reading a JSON Lines upload into an Arrow table: nesting refused before the reader sees it,
what the reader parsed beyond the text (timestamps, integers beyond int64) given back as written,
and the reader's errors named by row and column without quoting the data. Separate from
parsing.py, which picks the reader by format.
"""

from __future__ import annotations

import json
import re
from itertools import islice
from pathlib import Path

import pyarrow as pa
import pyarrow.json as pajson

from app.datasets.jsonl_depth import first_row_deeper_than
from app.datasets.transaction_files import is_item_lists
from app.datasets.upload_limits import BLOCK, Limits, beyond_exact
from app.errors import Unprocessable


_JSONL_DEPTH = 2  # a record (1) holding an object or array (2): named by the reader's column below


def read_jsonl(path: Path, limits: Limits) -> pa.Table:
    deep = first_row_deeper_than(path, _JSONL_DEPTH)  # before the reader: deep nesting crashes it
    if deep is not None:
        raise Unprocessable(f"unparsable JSON Lines at row {deep}: it holds nested values (objects or "
                            "arrays inside a value); only scalars are supported")
    try:
        table = pajson.read_json(path, read_options=pajson.ReadOptions(block_size=BLOCK))
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
        text = pajson.read_json(path, read_options=pajson.ReadOptions(block_size=BLOCK),
                                parse_options=pajson.ParseOptions(explicit_schema=schema))
        for name in temporal:
            table = table.set_column(names.index(name), name, text.column(name))
    wide = [n for i, n in enumerate(names) if pa.types.is_floating(types[i]) and beyond_exact(table.column(i))]
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
        return Unprocessable(f"unparsable JSON Lines: a line is longer than {BLOCK // (1024 * 1024)} MiB")
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
