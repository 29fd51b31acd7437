"""Make method outputs storable as JSONB: numpy scalars to Python, ∞ to "Infinity"
(JSON has no infinity), NaN to null, tuples to lists."""

from __future__ import annotations

import math
from typing import Any

import numpy as np


def jsonable(obj: Any) -> Any:
    # The exact built-in types first, by identity: a report's hundreds of thousands of strings,
    # numbers and small containers (itemsets and rules) went through the whole isinstance chain
    # each — chess's 5,356 itemsets and 10,000 rules took longer to encode than to mine.
    kind = type(obj)
    if kind is str or kind is int or obj is None:
        return obj
    if kind is float:
        return obj if math.isfinite(obj) else _non_finite(obj)
    if kind is dict:
        return {k if type(k) is str else str(k): jsonable(v) for k, v in obj.items()}
    if kind is list or kind is tuple:
        return [jsonable(v) for v in obj]
    if isinstance(obj, dict):
        return {str(k): jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple, set, frozenset)):
        return [jsonable(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return jsonable(obj.tolist())
    if isinstance(obj, (np.bool_, bool)):
        return bool(obj)
    if isinstance(obj, (np.integer,)):
        return int(obj)
    if isinstance(obj, (float, np.floating)):
        x = float(obj)
        return x if math.isfinite(x) else _non_finite(x)
    if isinstance(obj, (str, int)):
        return obj
    if hasattr(obj, "isoformat"):
        return obj.isoformat()
    return str(obj)


def _non_finite(x: float) -> Any:
    if math.isnan(x):
        return None
    return "Infinity" if x > 0 else "-Infinity"
