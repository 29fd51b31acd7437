"""Chains of release methods through the API with real workers: what the last release's
analyses say about the steps before it (chains acceptance audit)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from tests.support.api import assert_problem, auth, submit, upload, wait_job


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


def _guarantees(client, headers, release_id):
    return client.get(f"/v1/releases/{release_id}", headers=auth(headers)).json()["guarantees"]


def test_k_anonymity_of_a_randomized_release_says_its_classes_are_of_randomized_values(client, table):
    """errph → kanonymity: the release said 'every class of the quasi-identifiers (education,
    sex) has at least 5 records' and 'it limits linkage through the declared quasi-identifiers',
    with only the generic 'stated for that release's records' — not that education's values in
    the classes are errph's randomized ones, not the people's (chains audit). A column no earlier
    step changed is not named."""
    headers, ds = table
    randomized = _release(client, headers, "errph", {"p0": 0.5, "columns": ["education"]}, dataset_id=ds["id"])
    anonymous = _release(client, headers, "kanonymity", {"k": 5, "quasi_identifiers": ["education", "sex"]},
                         release_id=randomized)
    g = _guarantees(client, headers, anonymous)
    named = [w for w in g["warnings"] if w.startswith("education: changed by an earlier step")]
    assert len(named) == 1 and "(errph)" in named[0] and "not the people's true values" in named[0], g["warnings"]
    assert not any("sex: changed by an earlier step" in w for w in g["warnings"])  # errph left it alone
    # on the dataset itself: no such warning
    direct = _release(client, headers, "kanonymity", {"k": 5, "quasi_identifiers": ["education", "sex"]},
                      dataset_id=ds["id"])
    assert not any("earlier step" in w for w in _guarantees(client, headers, direct)["warnings"])


def test_reconstruct_after_a_step_it_cannot_undo_says_whose_distribution_it_estimates(client, table):
    """kanonymity → errph: the errph section gave education's distribution as if it were the
    original data's, while it is the k-anonymous release's (the input of errph), with no note
    (chains audit; mst → errph the same: the synthetic table's)."""
    headers, ds = table
    anonymous = _release(client, headers, "kanonymity", {"k": 5, "quasi_identifiers": ["education"]},
                         dataset_id=ds["id"])
    randomized = _release(client, headers, "errph", {"p0": 0.5, "columns": ["education", "sex"]},
                          release_id=anonymous)
    data = _report(client, headers, "reconstruct", {"plots": False}, randomized)
    [section] = data["steps"]
    notes = [n for n in section["notes"] if "education (kanonymity)" in n]
    assert len(notes) == 1 and "not the original data's" in notes[0], section["notes"]
    assert not any("sex (" in n for n in section["notes"])


def test_a_dp_synthesizer_on_a_release_without_domains_is_refused_with_a_fix_that_applies(client, table):
    """kanonymity → mst: 422 'no declared domain … give them in the parameters or in the dataset
    schema' — but a release keeps the schema it was made with, so declaring the dataset's did
    not help (chains audit). The refusal names the parameters and says so; nothing is debited."""
    headers, ds = table
    anonymous = _release(client, headers, "kanonymity", {"k": 5, "quasi_identifiers": ["education"]},
                         dataset_id=ds["id"])
    refused = submit(client, headers, "mst", {"epsilon": 1.0}, release_id=anonymous)
    body = assert_problem(refused, 422, "'education'", "'categories' parameter", "a release keeps the schema")
    assert "withheld" not in body["detail"]
