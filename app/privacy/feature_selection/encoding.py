"""Binary features for k-anonymous feature selection (spec 04 §3).

RFKA and Greedy_Hamdist select among binary features, as in the paper's evaluation: numeric
attributes are cut into equal-width bins, every attribute is one-hot encoded, and each
indicator ``attribute=value`` is one candidate feature. Selecting a subset of indicators
is a projection of the encoded table; keeping one indicator of an attribute and dropping
the others is a coarse generalization of that attribute ({value, other}).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from app.privacy.binning import edge_texts, edges_increase, narrow_bins, value_texts
from app.privacy.data import ColumnInfo, first_shared_name
from app.privacy.registry import MethodInputError, declared_bounds

MISSING = "<missing>"
MAX_INDICATORS = 2000  # beyond this the forest and the greedy loop stop being interactive


@dataclass
class BinaryFeatures:
    """The one-hot table: ``matrix[:, j]`` is 1 where the record has ``names[j]``."""

    names: list[str]
    attributes: list[str]  # the source attribute of each indicator
    matrix: np.ndarray  # uint8, records × indicators
    encoding: dict[str, Any] = field(default_factory=dict)  # per attribute: how it was coded


def _numeric_codes(values: pd.Series, info: ColumnInfo, bins: int,
                   discrete_max: int) -> tuple[np.ndarray, list[str], dict]:
    """Integer codes (-1 = missing) and their labels for a numeric column.

    A column with at most max(``bins``, ``discrete_max``) distinct values is discrete and keeps
    its values (seed 004 one-hot encodes discrete attributes such as Breast Cancer's 1..10
    scores as they are and discretizes only continuous ones); otherwise ``bins`` equal-width
    bins over the declared bounds, or over the data's min..max when none are declared (the
    edges then disclose the min and max)."""
    x = pd.to_numeric(values, errors="coerce").to_numpy(dtype=float)
    present = ~np.isnan(x)
    if not present.any():
        return np.full(len(x), -1), [], {"binning": "none", "reason": "no values"}
    distinct = np.unique(x[present])
    if len(distinct) <= max(bins, discrete_max):
        codes = np.full(len(x), -1)
        codes[present] = np.searchsorted(distinct, x[present])
        # texts distinct as the values are: 6 digits made 1 and 1 + 4e-16 one indicator's name
        return codes, value_texts(distinct.tolist()), {"binning": "values", "values": len(distinct)}
    if (declared := declared_bounds(info)) is not None:  # their width is finite and > 0
        (lo, hi), source = declared, "declared bounds"
    else:
        lo, hi, source = float(distinct[0]), float(distinct[-1]), "data min and max"
    edges = np.linspace(lo, hi, bins + 1)
    if not edges_increase(edges.tolist()):  # the data's range too: [1, 1 + 1e-14] in 10 bins
        raise MethodInputError(narrow_bins(f"column {info.name!r}: bins", bins, lo, hi))
    text = edge_texts(edges.tolist())
    codes = np.full(len(x), -1)
    # Values outside declared bounds join the end bins.
    codes[present] = np.clip(np.floor((x[present] - lo) / (hi - lo) * bins), 0, bins - 1).astype(int)
    labels = [f"[{text[i]}, {text[i + 1]}{']' if i == bins - 1 else ')'}" for i in range(bins)]
    return codes, labels, {"binning": "equal_width", "bins": bins, "edges": edges.tolist(),
                           "edges_from": source}


def _categorical_codes(values: pd.Series) -> tuple[np.ndarray, list[str], dict]:
    present = values.notna().to_numpy()
    as_text = values[present].astype(str)
    labels = sorted(as_text.unique())
    codes = np.full(len(values), -1)
    codes[present] = pd.Categorical(as_text, categories=labels).codes
    return codes, labels, {"binning": "categories"}


def encode(frame: pd.DataFrame, columns: list[ColumnInfo], attributes: list[str],
           bins: int, discrete_max: int = 0) -> BinaryFeatures:
    """One-hot encode ``attributes`` (numeric ones binned first). Missing is a value of its
    own. An attribute with two values gives one indicator (the second is its complement);
    values that never occur give none; a constant attribute gives none."""
    by_name = {c.name: c for c in columns}
    names: list[str] = []
    owners: list[str] = []
    blocks: list[np.ndarray] = []
    encoding: dict[str, Any] = {}
    for attr in attributes:
        info = by_name[attr]
        if info.type == "numeric":
            codes, labels, how = _numeric_codes(frame[attr], info, bins, discrete_max)
        else:
            codes, labels, how = _categorical_codes(frame[attr])
        if (codes < 0).any():
            codes = np.where(codes < 0, len(labels), codes)
            labels = [*labels, MISSING]
        counts = np.bincount(codes, minlength=len(labels))
        occurring = np.flatnonzero(counts)
        if len(occurring) == 2:
            occurring = occurring[1:]  # the first value is "not the second"
        elif len(occurring) < 2:
            occurring = occurring[:0]  # constant: carries nothing, identifies nobody
        indicator_names = [f"{attr}={labels[c]}" for c in occurring]
        names += indicator_names
        owners += [attr] * len(occurring)
        if len(occurring):
            blocks.append((codes[:, None] == occurring[None, :]).astype(np.uint8))
        encoding[attr] = {**how, "type": info.type, "features": indicator_names}
        if len(names) > MAX_INDICATORS:
            raise MethodInputError(
                f"the one-hot encoding exceeds {MAX_INDICATORS} indicators at column {attr!r} "
                f"({len(indicator_names)} indicators); leave high-cardinality columns out of "
                "quasi_identifiers or lower bins")
    shared = first_shared_name(names, owners)
    if shared and shared[0] == shared[1]:  # it said to rename columns holding '=' when none did
        raise MethodInputError(f"column {shared[0]!r} holds a value spelled {MISSING!r}, the name of "
                               "its missing cells' indicator: rename that value")
    if shared:
        raise MethodInputError(f"columns {shared[0]!r} and {shared[1]!r} give indicators of the same "
                               "name (attribute=value): rename a column so that no column name contains '='")
    matrix = np.hstack(blocks) if blocks else np.zeros((len(frame), 0), dtype=np.uint8)
    return BinaryFeatures(names=names, attributes=owners, matrix=matrix, encoding=encoding)
