"""Reading uploads: CSV/TSV, Parquet, JSON Lines and transaction files, within limits.

Errors name the problem (row, column, limit) and never quote the data: the parser's own
messages (which echo row text) are translated, not passed on.

The readers live in their own modules: csv_reading, parquet_reading, jsonl_reading,
transaction_files; table_finishing makes a table's frame and upload_limits holds Limits.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import pyarrow as pa

from app.datasets.csv_reading import read_csv
from app.datasets.jsonl_reading import read_jsonl
from app.datasets.parquet_reading import read_parquet
from app.datasets.table_finishing import finish_table
from app.datasets.transaction_files import (ITEM_SEPARATORS, lists_to_transactions, read_transactions,
                                            is_item_lists)
from app.datasets.upload_limits import Limits
from app.errors import Unprocessable, UnsupportedMediaType
from app.privacy.data import TransactionData

# transactions and baskets: see transaction_files.ITEM_SEPARATORS
FORMATS = ("csv", "tsv", "parquet", "jsonl", "transactions", "baskets")
_EXTENSIONS = {".csv": "csv", ".tsv": "tsv", ".tab": "tsv", ".parquet": "parquet", ".pq": "parquet",
               ".jsonl": "jsonl", ".ndjson": "jsonl", ".dat": "transactions", ".txt": "transactions"}


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
        return Parsed(fmt, frame=finish_table(read_csv(path, fmt, limits, text_columns), limits))
    if fmt in ("parquet", "jsonl"):
        table = read_parquet(path, limits) if fmt == "parquet" else read_jsonl(path, limits)
        if is_item_lists(table.schema):  # what a transaction set's download holds: it uploads again
            return Parsed(fmt, transactions=lists_to_transactions(table.column(0), limits))
        return Parsed(fmt, frame=finish_table(table, limits))
    return Parsed(fmt, transactions=read_transactions(path, limits, ITEM_SEPARATORS[fmt]))


def _require_utf8_like(path: Path) -> None:
    """UTF-16 and UTF-32 text (a spreadsheet's \"Unicode text\" export) parses as one field per
    line with NULs between the characters: name the encoding instead of a row's field count."""
    with open(path, "rb") as f:
        head = f.read(4096)
    if head[:2] in (b"\xff\xfe", b"\xfe\xff") or b"\x00" in head:
        raise Unprocessable("the file is not UTF-8 text (it looks like UTF-16 or UTF-32, or holds NUL "
                            "bytes); save it as UTF-8")
