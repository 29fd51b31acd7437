"""Getting items: transaction files (FIMI .dat) and one-hot encoding of table columns.

One-hot items are named ``column=value`` (``education=Bachelors``); numeric columns with
declared bounds become ``bins`` equal-width intervals (``age=[17,35.6)``), so no boundary is
read from the data. A missing cell yields no item of that column.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from app.privacy.arrays import distinct_sorted
from app.privacy.binning import edge_texts, edges_increase, narrow_bins
from app.privacy.data import ColumnInfo, TransactionData, first_shared_name
from app.privacy.registry import MethodInputError, declared_bounds

MAX_VALUES_PER_COLUMN = 1000  # one-hot items of one column; beyond that, generalize first
MAX_UNBOUNDED_NUMERIC_VALUES = 64  # a numeric column without bounds is one-hot by value up to this


@dataclass
class Encoded:
    transactions: TransactionData
    columns: list[str]  # the table columns encoded (empty for transaction input)
    warnings: list[str] = field(default_factory=list)
    details: dict[str, Any] = field(default_factory=dict)
    # published items per encoded column, in column order (their items come in that order)
    items_per_column: list[int] = field(default_factory=list)

    @property
    def max_differing_bits(self) -> int:
        """How many bits two records can differ in: per one-hot column 2 when it publishes two
        items or more (one value's bit goes off, another's on), 1 when it publishes one (it is
        set or not: a missing cell sets none), 0 when it publishes none; every item for
        free-form transactions."""
        if not self.columns:
            return self.transactions.n_items
        return int(np.minimum(self.items_per_column, 2).sum())


def read_fimi(source: str | Path | bytes) -> TransactionData:
    """Parse a FIMI transaction file: one transaction of integer item ids per line. Items are
    labelled by their ids (as text), coded in increasing id order; repeats inside a line count once."""
    raw = Path(source).read_bytes() if not isinstance(source, bytes) else source
    if not raw.endswith(b"\n"):
        raw += b"\n"
    buf = np.frombuffer(raw, dtype=np.uint8)
    newlines = np.flatnonzero(buf == ord("\n"))
    is_space = (buf == ord(" ")) | (buf == ord("\t")) | (buf == ord("\r")) | (buf == ord("\n"))
    token_start = np.flatnonzero(~is_space & np.concatenate([[True], is_space[:-1]]))
    tokens = raw.split()
    try:
        ids = np.array(tokens, dtype=np.bytes_).astype(np.int64) if tokens else np.zeros(0, np.int64)
    except ValueError:
        bad = int(np.searchsorted(newlines, token_start[_first_non_integer(tokens)])) + 1
        raise MethodInputError(f"transaction file: line {bad} holds something other than item ids") from None
    line = np.searchsorted(newlines, token_start)
    n = len(newlines)
    item_ids, codes = np.unique(ids, return_inverse=True)
    key = distinct_sorted(line * len(item_ids) + codes)
    line, codes = np.divmod(key, max(len(item_ids), 1))
    indptr = np.concatenate([[0], np.cumsum(np.bincount(line, minlength=n))]).astype(np.int64)
    return TransactionData(indptr=indptr, indices=codes.astype(np.int32),
                           labels=tuple(str(i) for i in item_ids))


def _first_non_integer(tokens: list[bytes]) -> int:
    for i, tok in enumerate(tokens):  # only reached on a malformed file, to name the line
        if not tok.lstrip(b"-").isdigit():
            return i
    return 0


def default_item_columns(columns: list[ColumnInfo]) -> list[str]:
    """Every categorical or boolean column that is not an identifier (labels included:
    association rules often have the label as consequent)."""
    return [c.name for c in columns if c.type in ("categorical", "boolean") and c.role != "identifier"]


def check_item_columns(chosen: list[str], columns: list[ColumnInfo]) -> None:
    by_name = {c.name: c for c in columns}
    repeated = sorted({name for name in chosen if chosen.count(name) > 1})
    if repeated:  # it would publish two independently randomized copies under the same labels
        raise MethodInputError(f"columns names {repeated[0]!r} more than once")
    for name in chosen:
        if name not in by_name:
            raise MethodInputError(f"unknown column {name!r}")
        if by_name[name].role == "identifier":
            raise MethodInputError(f"column {name!r} is an identifier; it cannot become items")


NO_ITEM_COLUMNS = ("no column to encode into items: name them in 'columns' (by default every "
                   "categorical or boolean column that is not an identifier; a numeric column named "
                   "there is binned over its declared bounds)")


def check_chosen_columns(given: list[str] | None, columns: list[ColumnInfo]) -> None:
    """At submission: the columns a job would encode (``given``, else the default) exist, can
    become items, and are not none — a table without a categorical column was accepted and its
    job failed (coilbank acceptance check)."""
    if given is not None:
        check_item_columns(given, columns)
    elif not default_item_columns(columns):
        raise MethodInputError(NO_ITEM_COLUMNS)


def declared_bin_edges(info: ColumnInfo, bins: int) -> list[float] | None:
    """The edges of a numeric column's ``bins`` items over its declared bounds (None without
    bounds); a MethodInputError naming the column when the bounds are unusable (registry.
    declared_bounds) or the bins narrower than the floats there (they would share a name)."""
    if (bounds := declared_bounds(info)) is None:
        return None
    lo, hi = bounds
    width = (hi - lo) / bins
    edges = [lo + i * width for i in range(bins + 1)]  # the codes' own cuts: floor((x − lo)/width)
    if not edges_increase(edges):
        raise MethodInputError(narrow_bins(f"column {info.name!r}: bins", bins, lo, hi))
    return edges


def check_numeric_bins(chosen: list[str], columns: list[ColumnInfo], bins: int) -> None:
    """At submission: the numeric columns to encode have usable bounds and bins (no data read)."""
    for info in columns:
        if info.name in chosen and info.type == "numeric":
            declared_bin_edges(info, bins)


def one_hot(frame: pd.DataFrame, columns: list[ColumnInfo], chosen: list[str], bins: int) -> Encoded:
    """Encode the chosen columns into items; CSR rows keep the frame's row order."""
    check_item_columns(chosen, columns)
    if not chosen:
        raise MethodInputError(NO_ITEM_COLUMNS)
    by_name = {c.name: c for c in columns}
    labels: list[str] = []
    code_columns: list[np.ndarray] = []
    warnings: list[str] = []
    details: dict[str, Any] = {}
    for name in chosen:
        codes, values, how = _encode_column(frame[name], by_name[name], bins)
        if len(values) > MAX_VALUES_PER_COLUMN:
            raise MethodInputError(f"column {name!r} would become {len(values)} items (limit "
                                   f"{MAX_VALUES_PER_COLUMN}): generalize it first")
        if how == "values_from_data":
            warnings.append(f"column {name!r}: its values were read from the data (no declared "
                            "categories or bounds), so the set of values that occur is disclosed")
        details[name] = {"encoding": how, "items": len(values)}
        code_columns.append(np.where(codes >= 0, codes + len(labels), -1))
        labels.extend(f"{name}={v}" for v in values)
    shared = first_shared_name(labels, [n for n in chosen for _ in range(details[n]["items"])])
    if shared:  # the release would publish one item label for two items: neither can be read
        raise MethodInputError(f"columns {shared[0]!r} and {shared[1]!r} give items of the same name "
                               "(column=value): rename a column so that no column name contains '='")
    stacked = np.stack(code_columns, axis=1)  # (n, c); -1 = missing cell, no item
    present = stacked >= 0
    indptr = np.concatenate([[0], np.cumsum(present.sum(axis=1))]).astype(np.int64)
    indices = stacked[present].astype(np.int32)  # row-major: rows in order, items ascending
    return Encoded(TransactionData(indptr=indptr, indices=indices, labels=tuple(labels)),
                   columns=list(chosen), warnings=warnings, details=details,
                   items_per_column=[details[n]["items"] for n in chosen])


def _encode_column(series: pd.Series, info: ColumnInfo, bins: int) -> tuple[np.ndarray, list[str], str]:
    if info.type == "numeric" and (edges := declared_bin_edges(info, bins)) is not None:
        lo, width = edges[0], (edges[-1] - edges[0]) / bins
        values = pd.to_numeric(series, errors="coerce").to_numpy(dtype=np.float64)
        codes = np.clip(np.floor((values - lo) / width), 0, bins - 1)
        codes = np.where(np.isnan(values), -1, codes).astype(np.int64)
        text = edge_texts(edges)  # 6 digits named every bin of [1, 1 + 1e-15] '[1,1)'
        names = [f"[{text[i]},{text[i + 1]}{']' if i == bins - 1 else ')'}" for i in range(bins)]
        return codes, names, "equal_width_bins_of_declared_bounds"
    if info.categories is not None:
        domain = list(info.categories)
        how = "declared_categories"
    elif info.type == "boolean":  # the type is the domain: both items, whatever occurs
        domain, how = ["False", "True"], "boolean_type"
    else:
        domain = sorted(pd.unique(series.dropna().astype(str)).tolist())
        how = "values_from_data"
        if info.type == "numeric" and len(domain) > MAX_UNBOUNDED_NUMERIC_VALUES:
            raise MethodInputError(f"numeric column {info.name!r} has more than "
                                   f"{MAX_UNBOUNDED_NUMERIC_VALUES} values: declare its bounds "
                                   "to bin it, or generalize it first")
    text = series.astype("string").to_numpy(dtype=object, na_value=None)
    codes = pd.Categorical(text, categories=[str(v) for v in domain]).codes.astype(np.int64)
    unknown = (codes < 0) & series.notna().to_numpy()
    if unknown.any():
        raise MethodInputError(f"column {info.name!r} holds values outside its declared categories")
    return codes, [str(v) for v in domain], how

