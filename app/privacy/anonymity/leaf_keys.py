"""How data values and hierarchy leaves are written and matched: ``normalize_value`` /
``leaf_key`` and their vectorized forms (``normalize_values``, ``leaf_keys``, ``full_match``,
``format_numbers``), and the two reserved labels (``ROOT``, ``MISSING_LEAF``). Moved out of
hierarchies.py, which re-exports the public names."""

from __future__ import annotations

import math
import re

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

ROOT = "*"
MISSING_LEAF = "<missing>"  # a missing cell of a categorical QI is this leaf, directly under the root


_INTEGRAL_TEXT = re.compile(r"(-?(?:0|[1-9][0-9]*))(?:\.0*)?")


def normalize_value(value) -> str | None:
    """The text a data value is matched on: integral numbers lose their '.0'; None for missing."""
    if value is None:
        return None
    if isinstance(value, (bool, np.bool_)):
        return str(bool(value))
    if isinstance(value, (float, np.floating)):
        if math.isnan(value):
            return None
        return str(int(value)) if float(value).is_integer() else repr(float(value))
    if isinstance(value, (int, np.integer)):
        return str(int(value))
    if value is pd.NA or value is pd.NaT:
        return None
    # Text: only an integer written with a zero fraction ('39.0', '39.') loses it. '007', '+7' and
    # a 20-digit identifier stay as written: read as numbers they became '7' (one leaf with '7',
    # released so) or lost their last digits.
    text = str(value).strip()
    integral = _INTEGRAL_TEXT.fullmatch(text)
    return str(int(integral.group(1))) if integral else text


NUMBER = r"[-+]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][-+]?[0-9]+)?"
NUMBER_TEXT = re.compile(NUMBER)


def leaf_key(value, numeric: bool = False) -> str | None:
    """normalize_value, and in a numeric column a leaf written as a number is that number:
    '017', '7.50' and '1e3' match the data's 17, 7.5 and 1000 (read as numbers, the data kept
    no leading or trailing zeros). Text that is not a number is kept (it matches no value)."""
    key = normalize_value(value)
    if numeric and key is not None and NUMBER_TEXT.fullmatch(key):
        number = float(key)
        if math.isfinite(number):
            return normalize_value(number)
    return key




# The same keys for many values at once: a hierarchy has a leaf per distinct value, and an
# automatic one over a numeric column of 1,000,000 rows had 328,176 — keyed one by one, the
# tree of that one column took 9.4 s (0.45 s for Adult's 15,610 fnlwgt values). The regular
# expressions run in Arrow (RE2, anchored: the same strings match as with fullmatch), str.strip
# and float() are Python's own, applied by map and numpy's object casts.
NUMBER_ANCHORED = rf"^{NUMBER}$"
_INTEGRAL_DIGITS = r"^(?P<digits>-?(?:0|[1-9][0-9]*))(?:\.0*)?$"  # _INTEGRAL_TEXT, its group named
_PLAIN_INTEGER = r"^(?:0|-?[1-9][0-9]{0,14})$"  # below 10^15 < 2^53
# the integral texts normalize_value writes otherwise: with a fraction, or '-0' (int() writes the
# others as they are; a hierarchy of 600,000 integer leaves then extracts nothing)
_REWRITTEN_ANCHORED = r"^(?:-?(?:0|[1-9][0-9]*)\.0*|-0)$"


def _object_array(values) -> np.ndarray:
    if isinstance(values, (pd.Index, pd.Series)):
        values = values.to_numpy()
    if isinstance(values, np.ndarray) and values.dtype.kind in "biufO":
        return values
    return np.array(list(values), dtype=object)


def all_text(values: np.ndarray) -> bool:
    return values.dtype.kind == "O" and set(map(type, values)) <= {str}


def full_match(pattern: str, texts: np.ndarray) -> np.ndarray:
    """Whether each text (an object array of str) matches the anchored ``pattern`` whole."""
    if not len(texts):
        return np.zeros(0, dtype=bool)
    try:
        arrow = pa.array(texts, pa.string())
    except UnicodeEncodeError:  # a lone surrogate ('\ud800') has no UTF-8: Python's re reads it
        return np.fromiter(map(bool, map(re.compile(pattern).fullmatch, texts)), dtype=bool, count=len(texts))
    return pc.match_substring_regex(arrow, pattern).to_numpy(zero_copy_only=False)


def format_numbers(x: np.ndarray) -> np.ndarray:
    """``_fmt`` of each number (object array of str): an integral one without its '.0', else
    its repr."""
    x = np.asarray(x, dtype=float)
    out = np.empty(len(x), dtype=object)
    integral = np.isfinite(x) & (np.floor(x) == x)
    small = integral & (np.abs(x) < 2.0**63)  # exact in an int64
    out[small] = x[small].astype(np.int64).astype(str).tolist()
    big = np.flatnonzero(integral & ~small)
    out[big] = [str(int(v)) for v in x[big].tolist()]
    rest = ~integral
    out[rest] = list(map(repr, x[rest].tolist()))
    return out


def normalize_values(values) -> np.ndarray:
    """normalize_value of each value, as an object array (str, or None for a missing one)."""
    arr = _object_array(values)
    if arr.dtype.kind in "iu":
        out = np.empty(len(arr), dtype=object)
        out[:] = arr.astype(str).tolist()
        return out
    if arr.dtype.kind == "f":
        out = format_numbers(arr)
        out[np.isnan(arr)] = None
        return out
    if arr.dtype.kind == "b":
        return np.where(arr, "True", "False").astype(object)
    if not all_text(arr):
        out = np.empty(len(arr), dtype=object)
        out[:] = [normalize_value(v) for v in arr]
        return out
    out = np.empty(len(arr), dtype=object)
    out[:] = list(map(str.strip, arr))
    integral = np.flatnonzero(full_match(_REWRITTEN_ANCHORED, out))
    if len(integral):  # '39.0' → '39', '-0' → '0' (the digits group is already int()'s writing)
        digits = pc.extract_regex(pa.array(out[integral], pa.string()), _INTEGRAL_DIGITS).field(0)
        digits = pc.if_else(pc.equal(digits, "-0"), "0", digits)
        out[integral] = digits.to_pylist()
    return out


def leaf_keys(values, numeric: bool = False) -> np.ndarray:
    """leaf_key of each value, as an object array (str, or None)."""
    keys = normalize_values(values)
    if not numeric:
        return keys
    text = np.flatnonzero(keys != None)  # noqa: E711 (elementwise)
    # an integer of up to 15 digits written plainly is its own key (a float holds it exactly and
    # format_numbers writes it so): most leaves of a numeric hierarchy, left as they are instead
    # of floated and written again (0.6 s of build_tree's 5.5 s on 600,000 integer leaves)
    text = text[~full_match(_PLAIN_INTEGER, keys[text])]
    number = text[full_match(NUMBER_ANCHORED, keys[text])]
    x = keys[number].astype(float)  # float() of each text
    finite = np.isfinite(x)
    keys[number[finite]] = format_numbers(x[finite])
    return keys

def cell_texts(cells: np.ndarray) -> np.ndarray:
    """str() of each cell, an object array of the same shape (the cells themselves when text)."""
    if all_text(cells.ravel()):
        return cells
    out = np.empty(cells.shape, dtype=object)
    out.ravel()[:] = [str(x) for x in cells.ravel()]
    return out
