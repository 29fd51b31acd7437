"""The DP release methods (mst, aim, dppro, icahdp) refuse at submission — 422 naming the
parameter, nothing debited — the inputs the bad-input sweep saw fail in the worker after the
debit: a δ or ε the samplers cannot serve (F2), categories of mixed kinds (F3), bounds too wide
to decode (F4)."""

from __future__ import annotations

import json

from tests.support.api import assert_problem, auth, submit, upload

TABLE = ("age,sex,zip,disease,income\n" + "\n".join(
    f"{20 + i % 30},{'M' if i % 2 else 'F'},{1000 + i % 7},{['flu', 'cold', 'hiv'][i % 3]},"
    f"{'hi' if i % 4 == 0 else 'lo'}" for i in range(40)) + "\n").encode()
DECLARED = {"bounds": {"age": [0, 100], "zip": [1000, 1010]},
            "categories": {"sex": ["M", "F"], "disease": ["flu", "cold", "hiv"], "income": ["hi", "lo"]}}


def test_bad_dp_release_inputs_are_422_at_submit_and_debit_nothing(client, owner):
    r = upload(client, owner, TABLE, "small.csv", schema={"income": {"role": "label"}})
    assert r.status_code == 201, r.text
    ds = r.json()["id"]
    assert client.put(f"/v1/datasets/{ds}/budget", headers=auth(owner),
                      json={"epsilon_total": 10.0}).status_code == 200
    cases = [
        ("mst", {"epsilon": 1, "delta": 1e-250}, "delta = 1e-250 is too small for this job"),
        ("aim", {"epsilon": 1e-4}, "epsilon = 0.0001 is too small for this job"),
        ("dppro", {"epsilon": 1, "delta": 1e-250}, "delta must lie in ["),
        ("icahdp", {"epsilon": 1e-6}, "epsilon must lie in ["),
        ("mst", {"epsilon": 1, "categories": {**DECLARED["categories"], "sex": ["M", "F", 2]}},
         "categories of 'sex': mix integers and text"),
        ("icahdp", {"epsilon": 1, "bounds": {**DECLARED["bounds"], "age": [-1e308, 1e308]}},
         "bounds of 'age'"),
        ("dppro", {"epsilon": 1, "bounds": {**DECLARED["bounds"], "age": [0, 1e300]}},
         "column 'age': bounds must lie within ±2^53"),
    ]
    for method, params, fragment in cases:
        assert_problem(submit(client, owner, method, {**DECLARED, **params}, dataset_id=ds),
                       422, fragment)
    budget = client.get(f"/v1/datasets/{ds}/budget", headers=auth(owner)).json()
    assert budget["epsilon_spent"] == 0
    ok = submit(client, owner, "dppro", {**DECLARED, "epsilon": 1, "delta": 1e-12}, dataset_id=ds)
    assert ok.status_code == 202, ok.text
    for method in ("mst", "aim"):  # a tiny δ is served (the sampler's own tail costs ~1e-236)
        tiny = submit(client, owner, method, {**DECLARED, "epsilon": 1, "delta": 1e-15}, dataset_id=ds)
        assert tiny.status_code == 202, tiny.text


def test_a_422_names_the_most_specific_error_first(client, owner):
    """A column's bins are a number or a list of edges: an edge list holding NaN was summed up
    by the int branch's 'Input should be a valid integer' (#8 acceptance run); the error inside
    the list, deeper, is the one that says what is wrong. Every branch's error stays listed."""
    ds = upload(client, owner, TABLE, "small.csv").json()["id"]
    body = {"method": "mst", "dataset_id": ds, "params": {**DECLARED, "epsilon": 1, "bins": {"age": [0, 50, 100]}}}
    text = json.dumps(body).replace("[0, 50, 100]", "[0, NaN, 100]")  # Python's parser reads NaN
    r = client.post("/v1/jobs", headers={**auth(owner), "Content-Type": "application/json"}, content=text)
    body = assert_problem(r, 422, "mst.params.bins.age.1: Input should be a finite number")
    assert any(e["msg"] == "Input should be a valid integer" for e in body["errors"])
