"""k-map estimated from the table as a sample (k_map_estimator) through the API: the release is
k-anonymous with the derived k — read from the download, not from the job's figures — the
guarantee flags an estimate (k_map_estimated, the estimator, significance, derived k) and never
the counted k_map, Mondrian and the lattice; and the combinations that make no sense are 422s
naming the fields."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from app.privacy.anonymity.kmap_estimate import estimate
from tests.support.api import assert_problem, submit, upload
from tests.worker.test_population_models_api import _release as population_release

QIS = ["age", "zone", "kind"]


@pytest.fixture(scope="module")
def sample(client, make_key, workers):
    """4,000 records of three integer quasi-identifiers and a label, taken as a 5 % sample."""
    headers = make_key("owner")
    rng = np.random.default_rng(11)
    n = 4_000
    raw = pd.DataFrame({"age": np.minimum(rng.geometric(0.04, n), 90), "zone": rng.zipf(1.6, n) % 40,
                        "kind": rng.integers(0, 3, n), "y": rng.integers(0, 2, n)})
    schema = {"y": {"role": "label"}, "age": {"bounds": [0, 90]}, "zone": {"bounds": [0, 40]},
              "kind": {"bounds": [0, 2]}}
    ds = upload(client, headers, raw.to_csv(index=False).encode(), "sample.csv", schema=schema).json()
    return headers, ds, raw


def _release(client, headers, ds, params):
    rel, frame = population_release(client, headers, ds, {"quasi_identifiers": QIS, **params})
    return rel, frame.astype(str)


@pytest.mark.parametrize("algorithm, estimator, population", [
    ("mondrian", "zero_truncated_poisson", {"sampling_fraction": 0.05}),
    ("lattice", "poisson", {"population_size": 80_000}),
])
def test_release_is_k_anonymous_with_the_derived_k(client, sample, algorithm, estimator, population):
    headers, ds, raw = sample
    rel, frame = _release(client, headers, ds, {"k": 1, "k_map": 20, "k_map_estimator": estimator,
                                                "algorithm": algorithm, **population})
    derived = estimate(20, estimator, 0.01, len(raw), sampling_fraction=0.05).derived_k
    assert derived == 5  # λ = 0.05 · 20 = 1: both estimators (ARX's Poisson search: 6)
    smallest = int(frame.groupby(QIS).size().min())
    assert smallest >= derived
    g, meta = rel["guarantees"], rel["metadata"]["k_map_estimate"]
    assert g["k_map_estimated"] is True and "k_map" not in g and "k_map_requested" not in g
    assert g["k_map_estimate"] == {key: value for key, value in meta.items() if key != "release_k"}
    assert meta["derived_k"] == derived and meta["release_k"] == derived and meta["estimator"] == estimator
    assert meta["significance"] == 0.01 and meta["sampling_fraction"] == pytest.approx(0.05)
    assert meta["population_size"] == 80_000 and meta["records"] == len(raw)
    assert g["k"] == smallest and g["k_requested"] == derived and g["private"] is True
    assert any(s.startswith("k-map estimated, not counted (no population table was given)") and
               f"the derived k = {derived}" in s for s in g["statements"]), g["statements"]
    assert not any(s.startswith("k-map: every released class") for s in g["statements"])
    assert any(s.startswith(f"verified independently on the released table: every class of the "
                            f"quasi-identifiers ({', '.join(QIS)}) has at least {smallest} records")
               for s in g["statements"])


def test_default_k_above_the_derived_k_is_said(client, sample):
    headers, ds, raw = sample
    rel, frame = _release(client, headers, ds, {"k_map": 10, "k_map_estimator": "zero_truncated_poisson",
                                                "sampling_fraction": 0.05})
    assert rel["metadata"]["k_map_estimate"]["derived_k"] == 4
    assert rel["metadata"]["k_map_estimate"]["release_k"] == 5
    assert frame.groupby(QIS).size().min() >= 5
    assert any(w.startswith("k = 5 (5 by default) is above the derived k = 4") for w in rel["guarantees"]["warnings"])


def test_capped_at_k_map_is_certain(client, sample):
    headers, ds, raw = sample
    rel, frame = _release(client, headers, ds, {"k": 1, "k_map": 5, "k_map_estimator": "poisson",
                                                "sampling_fraction": 0.5})
    meta = rel["metadata"]["k_map_estimate"]
    assert meta["derived_k"] == 5 and meta["capped_at_k_map"] is True and meta["type_i_error"] == 0.0
    assert frame.groupby(QIS).size().min() >= 5
    assert any(s.startswith("k-map implied, not estimated") for s in rel["guarantees"]["statements"])


def test_bad_combinations_are_422_naming_the_fields(client, sample):
    headers, ds, raw = sample
    base = {"quasi_identifiers": QIS, "k_map": 20, "k_map_estimator": "poisson"}
    for params, named in [
        ({**base}, "give exactly one of sampling_fraction (the table's share of it) and population_size"),
        ({**base, "sampling_fraction": 0.05, "population_size": 80_000}, "(both were given)"),
        ({**base, "sampling_fraction": 0.05, "research_subset": "y"}, "drop k_map_estimator"),
        ({"quasi_identifiers": QIS, "k_map_estimator": "poisson", "sampling_fraction": 0.05},
         "k_map_estimator estimates k-map: give k_map"),
        ({"quasi_identifiers": QIS, "k_map": 20, "sampling_fraction": 0.05},
         "sampling_fraction is read by k_map_estimator only"),
        ({"quasi_identifiers": QIS, "significance": 0.05}, "significance is read by k_map_estimator only"),
        ({**base, "sampling_fraction": 0.05, "significance": 0.9}, "significance"),
        ({**base, "k_map_estimator": "binomial", "sampling_fraction": 0.05}, "k_map_estimator"),
        # known once the table's records are: a population smaller than the sample, a derived k
        # above the records
        ({**base, "population_size": 3_999}, "population_size = 3999 is below the table's 4000 records"),
        ({**base, "k": 1, "k_map": 10_000, "sampling_fraction": 0.9},
         "derives k = 9222, above the table's 4000 records"),
    ]:
        r = submit(client, headers, "kanonymity", params, dataset_id=ds["id"])
        assert_problem(r, 422, named)
