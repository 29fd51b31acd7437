"""kanonymity's risk thresholds (ARX's average re-identification risk with highest risk and
records at risk, and sample uniqueness) through the API: the figures recomputed from the
downloaded CSV against the thresholds and the release's guarantee, and the 422s of bad
combinations (no job)."""

from __future__ import annotations

import io

import numpy as np
import pandas as pd

from tests.api.test_raw_data_reports import _done
from tests.support.api import assert_problem, auth, submit, upload


def _table() -> pd.DataFrame:
    rng = np.random.default_rng(5)
    n = 3_000
    return pd.DataFrame({"age": rng.integers(18, 90, n), "zip": rng.choice([f"z{i}" for i in range(40)], n),
                         "v": rng.integers(0, 100, n)})


def test_average_risk_and_records_at_risk_recomputed_from_the_download(client, owner):
    ds = upload(client, owner, _table().to_csv(index=False).encode(), "risk.csv",
                schema={"age": {"bounds": [18, 90]}}).json()
    params = {"quasi_identifiers": ["age", "zip"], "k": 1, "algorithm": "lattice", "suppression": 0.1,
              "average_risk": 0.05, "highest_risk": 0.1, "records_at_risk": 0.02, "sample_uniqueness": 0.0}
    job = _done(client, owner, "kanonymity", params, dataset_id=ds["id"])
    rid = job["result"]["release_ids"][0]
    release = client.get(f"/v1/releases/{rid}", headers=auth(owner)).json()
    frame = pd.read_csv(io.BytesIO(client.get(f"/v1/releases/{rid}/data", headers=auth(owner)).content), dtype=str)
    sizes = frame.groupby(["age", "zip"]).size().to_numpy()
    average, at_risk, uniques = len(sizes) / sizes.sum(), sizes[sizes < 10].sum() / sizes.sum(), (sizes == 1).sum()
    assert average <= 0.05 and at_risk <= 0.02 and uniques == 0
    g = release["guarantees"]
    found = g["risk_thresholds"]
    assert found["achieved"]["average_risk"] == average and found["achieved"]["records_at_risk"] == at_risk
    assert found["smallest_size_not_at_risk"] == 10 and found["requested"]["highest_risk"] == 0.1
    assert g["suppressed"] == 3000 - len(frame) <= 300 and g["private"] is True
    assert any(s.startswith("verified on the released table (prosecutor model, ARX's risk-based models")
               and "classes smaller than 10" in s for s in g["statements"])


def test_bad_combinations_are_422s_naming_the_fields(client, owner):
    table = _table().assign(s=lambda f: np.where(f.index % 2 == 0, "yes", "no"))
    ds = upload(client, owner, table.to_csv(index=False).encode(), "risk.csv").json()
    base = {"quasi_identifiers": ["age", "zip"], "k": 2}
    for params, words in [({"average_risk": 0.1}, "average_risk = 0.1 applies to algorithm 'lattice' only"),
                          ({"algorithm": "lattice", "highest_risk": 0.1}, "highest_risk is half of a threshold"),
                          ({"algorithm": "lattice", "sample_uniqueness": -0.1}, "sample_uniqueness"),
                          ({"algorithm": "lattice", "average_risk": 0.1, "research_subset": "s", "k_map": 2},
                           "which they are not implemented for"),
                          # 1 / 3,000 is the least average risk a non-empty release can show
                          ({"algorithm": "lattice", "average_risk": 0.0003, "suppression": 1.0},
                           "with 3000 records no release but the empty one meets the risk thresholds: even the "
                           "whole table as one class fails (average re-identification risk 0.000333333 is above "
                           "0.0003)"),
                          ({"algorithm": "lattice", "highest_risk": 1 / 3001, "records_at_risk": 0.5},
                           "share of records in classes smaller than 3001 1 is above 0.5"),
                          # 1 / 1e-320 overflows a float: was an OverflowError, a 500
                          ({"algorithm": "lattice", "highest_risk": 1e-320, "records_at_risk": 0.5},
                           "share of records in classes smaller than 9007199254740992 1 is above 0.5")]:
        assert_problem(submit(client, owner, "kanonymity", {**base, **params}, dataset_id=ds["id"]), 422, words)
    assert client.get("/v1/jobs", headers=auth(owner)).json()["items"] == []
