"""What every table upload (CSV/TSV, Parquet, JSON Lines) goes through once read: Arrow columns to
a pandas frame with Veil's types (text as categories, integers beyond float64 as text, nullable
integers, booleans), and the checks on names, cell lengths and infinite numbers. Separate from
the format readers, which hand it their Arrow table.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from app.datasets.schema import first_row
from app.datasets.upload_limits import Limits, beyond_exact
from app.errors import Unprocessable


def finish_table(table: pa.Table, limits: Limits) -> pd.DataFrame:
    if table.num_columns == 0:
        raise Unprocessable("the file has no columns")
    if table.num_rows == 0:
        raise Unprocessable("the file has a header but no rows")
    if table.num_rows > limits.max_rows:
        raise Unprocessable(f"the file has {table.num_rows} rows; the limit is {limits.max_rows}")
    names = table.column_names
    check_names(names)
    columns = {}
    for name in names:
        col = table.column(name)
        t = col.type
        if pa.types.is_dictionary(t) and not pa.types.is_string(t.value_type):
            col = pc.cast(col, t.value_type)
            t = col.type
        if (pa.types.is_integer(t) or (pa.types.is_decimal(t) and t.scale == 0)) and beyond_exact(col):
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


def check_names(names: list[str]) -> None:
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
