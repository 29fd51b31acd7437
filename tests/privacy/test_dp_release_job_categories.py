"""Categories a DP job declares in its params are not checked against the data (the schema's
are, at upload): a value outside them was a failed job — and whether the job failed said,
outside ε, that such a value exists (leakage acceptance check). It is now a missing cell, and
every release made with job-declared categories says so, whatever the data holds."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from app.privacy import registry
from app.privacy.context import RunContext
from app.privacy.data import ColumnInfo, MethodInput
from app.privacy.rng import SecureRandom

COLUMNS = [ColumnInfo("a", "categorical"), ColumnInfo("x", "numeric", bounds=(0.0, 10.0))]
PARAMS = {"epsilon": 2.0, "categories": {"a": ["u", "v"]}}
SAID = "outside the categories this job declares are released as missing cells"


def _table(stray: bool) -> pd.DataFrame:
    g = np.random.default_rng(0)
    frame = pd.DataFrame({"a": g.choice(["u", "v"], 400), "x": g.uniform(0, 10, 400)})
    if stray:
        frame.loc[0, "a"] = "w"  # a value one record holds, outside the job's categories
    return frame


@pytest.mark.parametrize("method", ["mst", "aim", "icahdp", "dppro"])
def test_a_value_outside_the_jobs_categories_is_a_missing_cell_said_either_way(method):
    spec = registry.get(method)
    params = spec.params(**PARAMS)
    warnings = {}
    for stray in (False, True):
        result = spec.run(MethodInput(COLUMNS, _table(stray)), params, RunContext(rng=SecureRandom(seed=3)))
        warnings[stray] = result.guarantees["warnings"]
        released = result.frame["a"]
        assert set(released.dropna().astype(str)) <= {"u", "v"}, method
    assert warnings[False] == warnings[True], method  # the neighbours' releases say the same
    assert any(SAID in w and "'a'" in w for w in warnings[True]), warnings[True]


def test_the_schemas_categories_are_not_said_to_be_open():
    spec = registry.get("mst")
    cols = [ColumnInfo("a", "categorical", categories=("u", "v")), COLUMNS[1]]
    result = spec.run(MethodInput(cols, _table(False)), spec.params(epsilon=2.0), RunContext(rng=SecureRandom(seed=3)))
    assert not any(SAID in w for w in result.guarantees["warnings"])
