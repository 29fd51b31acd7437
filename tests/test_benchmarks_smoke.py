"""The benchmark runner's modules still run (`python -m benchmarks --quick`): nothing in the
suite ran them, so a refactor could break `make bench` unseen. Figures are not asserted (speed
is measured by the runner, not by tests): only that every row of the fast families is a
finite measurement with a unit, and that the slow families import and expose `cases`."""

from __future__ import annotations

import importlib
import math
import pkgutil

import pytest

import benchmarks
from benchmarks.__main__ import table

FAST = ["bench_anonymity", "bench_feature_selection", "bench_itemsets", "bench_rr"]


def test_every_benchmark_module_exposes_cases():
    modules = [m.name for m in pkgutil.iter_modules(benchmarks.__path__) if m.name.startswith("bench_")]
    assert set(FAST) <= set(modules)
    for name in modules:
        assert callable(importlib.import_module(f"benchmarks.{name}").cases), name


@pytest.mark.parametrize("name", FAST)
def test_fast_families_run_in_quick_mode(name):
    rows = importlib.import_module(f"benchmarks.{name}").cases(quick=True)
    assert rows
    for row in rows:
        assert row.unit and row.veil is not None and math.isfinite(row.veil) and row.veil > 0, row
    assert table([(name, r) for r in rows]).count("\n") == len(rows) + 1
