"""Column coding shared by ERRPH and Warner (warner.py): a categorical column's domain and
each cell's code in it, the published column, and the domain size planned from the profile.
Moved out of randomized_response.py, which re-exports these names."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from app.privacy.arrays import factorize
from app.privacy.data import ColumnInfo
from app.privacy.registry import MethodInputError
from app.privacy.rr_channels import label_of


def _sorted_values(values: list[Any]) -> list[Any]:
    try:
        return sorted(values)
    except TypeError:  # mixed types: order by label
        return sorted(values, key=label_of)


def code_dtype(k: int):
    return np.int8 if k < 127 else (np.int16 if k < 32_767 else np.int32)


def encode_column(series: pd.Series, info: ColumnInfo, missing: str) -> tuple[list[Any], np.ndarray, bool]:
    """The column's domain (declared categories, {False, True} for a boolean column, else the
    sorted distinct values, then the missing category when asked for and present) and each cell's code in it (-1 = a missing
    cell left out). Also whether the domain was read from the data.

    One pass counts the distinct values (and the missing cells); the per-cell recoding is
    skipped when the column's own codes already are the domain's."""
    if isinstance(series.dtype, pd.CategoricalDtype):
        uniques, codes = list(series.cat.categories), series.cat.codes.to_numpy()
    else:
        codes, uniques = factorize(series)
    per_value = np.bincount(codes.astype(np.intp) + 1, minlength=len(uniques) + 1)
    n_missing, present = int(per_value[0]), per_value[1:] > 0
    if info.categories is not None:
        domain: list[Any] = list(info.categories)
        from_data = False
    elif info.type == "boolean":  # the type is the domain (as warner and mst read it)
        domain, from_data = [False, True], False
    else:
        domain = _sorted_values([u for u, seen in zip(uniques, present) if seen])
        from_data = True
    pos = {label_of(v): i for i, v in enumerate(domain)}
    lut = np.array([pos.get(label_of(u), -2) for u in uniques], dtype=np.int64)
    if ((lut == -2) & present).any():
        raise MethodInputError(f"column {info.name!r} holds values outside its declared categories")
    as_missing = len(domain) if missing == "category" and n_missing else -1
    if as_missing >= 0:
        domain.append(None)
    dtype = code_dtype(len(domain))
    if np.array_equal(lut[present], np.flatnonzero(present)) and as_missing < 0:
        return domain, codes.astype(dtype, copy=False), from_data  # already the domain's codes
    table = np.append(lut, as_missing).astype(dtype)
    return domain, table[codes], from_data  # a missing cell (code -1) takes the last entry


def domain_labels(domain: list[Any]) -> list[str]:
    return [label_of(v) for v in domain]


def publish_codes(codes: np.ndarray, domain: list[Any]) -> pd.Categorical:
    """The published column: codes into the domain; the missing category and left-out
    missing cells are published as missing."""
    values = [v for v in domain if v is not None]
    if len(values) < len(domain):
        codes = np.where(codes >= len(values), -1, codes).astype(codes.dtype)
    return pd.Categorical.from_codes(codes, dtype=pd.CategoricalDtype(values), validate=False)


def planned_k(info: ColumnInfo, missing: str) -> int | None:
    """The domain size a run will use, from the schema and profile alone (no data read)."""
    if info.categories is not None:
        k = len(info.categories)
    elif info.type == "boolean":
        k = 2
    elif info.distinct is not None:
        k = int(info.distinct)
    else:
        return None
    return k + (1 if missing == "category" and info.missing > 0 else 0)
