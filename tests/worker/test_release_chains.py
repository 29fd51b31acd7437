"""Chains of release methods through the API with real workers: what the last release's
analyses say about the steps before it (chains acceptance audit)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from tests.support.api import auth, submit, upload, wait_job


@pytest.fixture(scope="module")
def table(client, make_key, workers):
    headers = make_key("owner")
    g = np.random.default_rng(5)
    n = 2000
    frame = pd.DataFrame({"education": g.choice(["Bachelors", "HS-grad", "Masters"], n, p=[0.2, 0.7, 0.1]),
                          "sex": g.choice(["Female", "Male"], n)})
    schema = {"education": {"categories": ["Bachelors", "HS-grad", "Masters"]},
              "sex": {"categories": ["Female", "Male"]}}
    ds = upload(client, headers, frame.to_csv(index=False).encode(), "edu.csv", schema=schema).json()
    return headers, ds


def _release(client, headers, method, params, **on):
    job = wait_job(client, headers, submit(client, headers, method, params, **on).json()["id"])
    assert job["status"] == "succeeded", job
    return job["result"]["release_ids"][0]


def _report(client, headers, method, params, release_id):
    job = wait_job(client, headers, submit(client, headers, method, params, release_id=release_id).json()["id"])
    assert job["status"] == "succeeded", job
    return client.get(f"/v1/reports/{job['result']['report_id']}", headers=auth(headers)).json()["data"]


def test_analyses_of_a_mask_release_of_a_randomized_table_name_the_earlier_step(client, table):
    """errph → mask: reconstruct was accepted, then failed as invalid_input 'reconstruct needs a
    table release' (it tried to invert errph on the transactions); frequent_itemsets gave the
    mask-reconstructed supports — estimates of the errph release's, workclass=Private at 0.41
    where Adult holds 0.70 — as if they were the data's, without a word (chains audit)."""
    headers, ds = table
    randomized = _release(client, headers, "errph", {"p0": 0.5, "columns": ["education"]}, dataset_id=ds["id"])
    masked = _release(client, headers, "mask", {"p": 0.9, "columns": ["education", "sex"]},
                      release_id=randomized)
    data = _report(client, headers, "reconstruct", {"max_len": 1}, masked)
    assert [s["method"] for s in data["steps"]] == ["mask"]
    notes = [n for n in data["steps"][0]["notes"] if "education (errph)" in n]
    assert len(notes) == 1 and "not of the original data" in notes[0], data["steps"][0]["notes"]
    assert not any("sex (" in n for n in data["steps"][0]["notes"])  # errph left it alone
    mined = _report(client, headers, "frequent_itemsets", {"minsup": 0.1, "max_len": 1}, masked)
    notes = [n for n in mined["notes"] if "education (errph)" in n]
    assert len(notes) == 1 and "not of the original data" in notes[0], mined["notes"]
    # a mask release of the dataset itself has no such note
    direct = _release(client, headers, "mask", {"p": 0.9, "columns": ["education", "sex"]}, dataset_id=ds["id"])
    data = _report(client, headers, "reconstruct", {"max_len": 1}, direct)
    assert not any("(errph)" in n for n in data["steps"][0].get("notes", []))
