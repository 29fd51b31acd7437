"""Make method outputs storable as JSONB: numpy scalars to Python, ∞ to "Infinity"
(JSON has no infinity), NaN to null, tuples to lists."""

from __future__ import annotations

import math
from typing import Any

import numpy as np


def jsonable(obj: Any) -> Any:
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
        if math.isnan(x):
            return None
        if math.isinf(x):
            return "Infinity" if x > 0 else "-Infinity"
        return x
    if obj is None or isinstance(obj, (str, int)):
        return obj
    if hasattr(obj, "isoformat"):
        return obj.isoformat()
    return str(obj)
