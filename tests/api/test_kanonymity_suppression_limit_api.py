"""kanonymity's lattice suppression limit reaches 1 (ARX's 100 %): on a table where meeting k at
the raw level means suppressing 60 % of the records, a limit of 1 releases the raw level (the
optimum: NCP 0.6 against 1 for the generalized table), 0.5 forces the generalization, and a limit
above 1 is a 422 naming the field."""

from __future__ import annotations

import io

import pandas as pd

from tests.api.test_raw_data_reports import _done
from tests.support.api import assert_problem, auth, submit, upload


def _table() -> pd.DataFrame:
    # 40 records of 'a' (one class of k = 40) and 60 of distinct values (each a class of one)
    return pd.DataFrame({"g": ["a"] * 40 + [f"u{i}" for i in range(60)], "v": range(100)})


def _release(client, owner, ds_id: str, suppression: float) -> tuple[dict, pd.DataFrame]:
    params = {"quasi_identifiers": ["g"], "k": 40, "algorithm": "lattice", "suppression": suppression}
    job = _done(client, owner, "kanonymity", params, dataset_id=ds_id)
    rid = job["result"]["release_ids"][0]
    release = client.get(f"/v1/releases/{rid}", headers=auth(owner)).json()
    data = client.get(f"/v1/releases/{rid}/data", headers=auth(owner)).content
    return release, pd.read_csv(io.BytesIO(data), dtype=str, keep_default_na=False)


def test_a_limit_of_one_lets_the_optimum_suppress_most_of_the_table(client, owner):
    ds = upload(client, owner, _table().to_csv(index=False).encode(), "sup.csv").json()
    release, frame = _release(client, owner, ds["id"], 1.0)
    assert frame["g"].tolist() == ["a"] * 40  # the raw level, the 60 singletons suppressed
    assert frame.groupby("g").size().min() >= 40 == release["guarantees"]["k"]
    assert release["guarantees"]["suppressed"] == 60
    release, frame = _release(client, owner, ds["id"], 0.5)
    assert len(frame) == 100 and set(frame["g"]) == {"*"}  # 60 > 50 allowed: generalized instead
    assert release["guarantees"]["suppressed"] == 0
    over = {"quasi_identifiers": ["g"], "k": 40, "algorithm": "lattice", "suppression": 1.01}
    assert_problem(submit(client, owner, "kanonymity", over, dataset_id=ds["id"]), 422, "suppression")


def test_a_limit_of_one_never_releases_nothing_when_a_node_keeps_records(client, owner):
    """100 distinct values and k = 100: the bottom node suppresses all 100 records (NCP 1, as '*'
    for all) and, with a limit of 1, passed first — an empty release stated private with k = 0.
    Whatever the metric (entropy_monotonic charges suppression nothing, so the empty release
    was strictly cheapest), the release is the one node that keeps records: every value '*'; and
    so is the greedy climb's (max_lattice_nodes 1), which stopped at the bottom node."""
    table = pd.DataFrame({"g": [f"u{i}" for i in range(100)], "v": range(100)})
    ds = upload(client, owner, table.to_csv(index=False).encode(), "all.csv").json()
    for metric, nodes in (("ncp", 200_000), ("entropy_monotonic", 200_000), ("ncp", 1)):
        params = {"quasi_identifiers": ["g"], "k": 100, "algorithm": "lattice", "suppression": 1.0,
                  "metric": metric, "max_lattice_nodes": nodes}
        job = _done(client, owner, "kanonymity", params, dataset_id=ds["id"])
        rid = job["result"]["release_ids"][0]
        release = client.get(f"/v1/releases/{rid}", headers=auth(owner)).json()
        data = client.get(f"/v1/releases/{rid}/data", headers=auth(owner)).content
        frame = pd.read_csv(io.BytesIO(data), dtype=str, keep_default_na=False)
        assert len(frame) == 100 and set(frame["g"]) == {"*"}, metric
        assert release["guarantees"]["k"] == 100 and release["guarantees"]["suppressed"] == 0
