"""jsonable: what a method returns, as JSONB can store it — the exact built-in types take a
short path (by type identity), everything else the general one; both give the same JSON."""

from __future__ import annotations

import datetime as dt
import json
import math
from collections import OrderedDict

import numpy as np
import pytest

from app.jsonsafe import jsonable


class Label(str):
    pass


class Count(int):
    pass


@pytest.mark.parametrize(("value", "expected"), [
    (1.5, 1.5), (float("nan"), None), (float("inf"), "Infinity"), (-math.inf, "-Infinity"),
    (np.float32(0.5), 0.5), (np.float64("nan"), None), (np.float64("-inf"), "-Infinity"),
    (np.int64(7), 7), (np.uint8(255), 255), (True, True), (np.bool_(False), False),
    (None, None), ("x", "x"),
    ((1, (2.0, float("nan"))), [1, [2.0, None]]), ({3: {np.int64(1)}}, {"3": [1]}),
    (OrderedDict(a=np.arange(3)), {"a": [0, 1, 2]}),
    (np.array([[1.0, np.inf], [np.nan, -0.0]]), [[1.0, "Infinity"], [None, -0.0]]),
    (dt.date(2026, 11, 28), "2026-11-28"), (frozenset({"b"}), ["b"]),
])
def test_every_kind_of_value_becomes_storable_json(value, expected):
    out = jsonable(value)
    assert out == expected and type(out) is type(expected)
    json.dumps(out, allow_nan=False)  # no NaN or ∞ left for PostgreSQL's JSONB to refuse


def test_a_bool_stays_a_bool_and_subclasses_pass_as_they_are():
    """bool is an int subclass: the short path checks the exact type, so True is not read as 1;
    an int or str subclass (an enum's value) passes as it is, which JSON writes as its value."""
    out = jsonable({"flag": True, "n": Count(2), "k": Label("v")})
    assert [type(v) for v in out.values()] == [bool, Count, Label]
    assert json.dumps(out) == '{"flag": true, "n": 2, "k": "v"}'
