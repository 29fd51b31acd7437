"""`risk` with a sampling fraction reports the estimated k-map level: per estimator the largest
k_map whose derived k (kanonymity's k_map_estimator, the same model and significance) the
table's smallest class meets — checked against the estimate at that k_map and the next one,
against an independent scan, on a kanonymity release made with that estimator, and with the
wording of an estimate; `significance` without a sampling fraction, or out of range, is a 422."""

from __future__ import annotations

import io

import numpy as np
import pandas as pd
import pytest

from app.privacy.anonymity.kmap_estimate import estimate
from tests.api.test_raw_data_reports import _done
from tests.privacy.test_anonymity_kmap_estimate import _largest_by_scan
from tests.support.api import assert_problem, auth, submit, upload

ESTIMATORS = ("poisson", "zero_truncated_poisson")
QIS = ["a", "b", "c"]


def _table() -> bytes:
    """3,000 records over 6 × 5 × 2 cells, skewed: classes from a handful of records to
    hundreds (a smallest class above 1, so the level is more than the certain part)."""
    rng = np.random.default_rng(5)
    n = 3_000
    frame = pd.DataFrame({"a": np.minimum(rng.geometric(0.25, n), 6), "b": rng.integers(0, 5, n),
                          "c": rng.choice(["x", "y"], n, p=[0.8, 0.2])})
    return frame.to_csv(index=False).encode()


def _report(client, key, params, **source) -> dict:
    job = _done(client, key, "risk", params, **source)
    return client.get(f"/v1/reports/{job['result']['report_id']}", headers=auth(key)).json()


@pytest.mark.parametrize("significance", [None, 0.05])
def test_the_level_per_estimator(client, owner, significance):
    ds = upload(client, owner, _table(), "cells.csv").json()
    params = {"quasi_identifiers": QIS, "sampling_fraction": 0.02}
    if significance is not None:
        params["significance"] = significance
    data = _report(client, owner, params, dataset_id=ds["id"])["data"]
    alpha = significance or 0.01
    block = data["population"]["k_map_estimate"]
    smallest = data["smallest_class"]
    assert smallest > 1 and block["smallest_class"] == smallest and block["significance"] == alpha
    assert set(block["estimators"]) == set(ESTIMATORS)
    for name in ESTIMATORS:
        level = block["estimators"][name]
        k_map = level["k_map"]
        at, after = (estimate(k, name, alpha, 3_000, sampling_fraction=0.02) for k in (k_map, k_map + 1))
        assert at.derived_k == level["derived_k"] <= smallest < after.derived_k == level["next_derived_k"]
        assert k_map == _largest_by_scan(smallest, 0.02, alpha, name, 150_000)
        assert level["type_i_error"] == pytest.approx(at.type_i_error) and level["type_i_error"] <= alpha
        assert level["expected_sample_size"] == pytest.approx(0.02 * k_map)
        assert k_map > smallest  # at π = 0.02 the estimate reaches past the certain part
        statement = level["statement"]
        assert statement.startswith("estimated, not counted: read as a random sample") and \
            f"estimated k-map for every k_map ≤ {k_map}" in statement and \
            f"k_map = {k_map + 1} would need classes of {after.derived_k} records" in statement and \
            f"for k_map ≤ {smallest} it holds for certain" in statement, statement
    assert "not a count" in block["note"] and "random-sampling model" in block["note"]
    table = data["tables"]["k_map_estimate"]
    assert [row["estimator"] for row in table] == list(ESTIMATORS)
    assert [row["k_map"] for row in table] == [block["estimators"][e]["k_map"] for e in ESTIMATORS]


def test_the_table_as_its_population_is_certain(client, owner):
    ds = upload(client, owner, _table(), "cells.csv").json()
    data = _report(client, owner, {"quasi_identifiers": QIS, "sampling_fraction": 1}, dataset_id=ds["id"])["data"]
    for level in data["population"]["k_map_estimate"]["estimators"].values():
        smallest = data["smallest_class"]  # k_map one above needs classes of that many: π = 1 estimates nothing
        assert (level["k_map"], level["capped_at_k_map"], level["next_derived_k"]) == (smallest, True, smallest + 1)
        assert level["statement"].startswith("certain, not estimated")


def test_a_kanonymity_release_meets_the_k_map_it_was_made_for(client, owner):
    ds = upload(client, owner, _table(), "cells.csv").json()
    made = {"quasi_identifiers": QIS, "k": 1, "k_map": 300, "k_map_estimator": "zero_truncated_poisson",
            "sampling_fraction": 0.02, "algorithm": "mondrian"}
    job = _done(client, owner, "kanonymity", made, dataset_id=ds["id"])
    rid = job["result"]["release_ids"][0]
    release = client.get(f"/v1/releases/{rid}", headers=auth(owner)).json()
    derived = release["metadata"]["k_map_estimate"]["derived_k"]
    frame = pd.read_csv(io.BytesIO(client.get(f"/v1/releases/{rid}/data", headers=auth(owner)).content), dtype=str)
    data = _report(client, owner, {"sampling_fraction": 0.02}, release_id=rid)["data"]
    assert data["smallest_class"] == frame.groupby(QIS).size().min() >= derived
    assert data["population"]["k_map_estimate"]["estimators"]["zero_truncated_poisson"]["k_map"] >= 300


@pytest.mark.parametrize("params, named", [
    ({"significance": 0.05}, "significance is read with sampling_fraction or population_size only"),
    ({"sampling_fraction": 0.1, "significance": 0.9}, "significance"),
    ({"sampling_fraction": 0.1, "significance": 0}, "significance"),
])
def test_significance_refused_where_it_means_nothing(client, owner, params, named):
    ds = upload(client, owner, _table(), "cells.csv").json()
    r = submit(client, owner, "risk", {"quasi_identifiers": QIS, **params}, dataset_id=ds["id"])
    assert_problem(r, 422, named)
