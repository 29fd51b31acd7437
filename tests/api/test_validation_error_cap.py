"""A body with very many invalid fields lists the first 100 errors and counts the rest (#7
acceptance check: 500,000 unknown keys in a budget or predict body answered 56 MB of errors
after ~20 s of the API process's event loop, long enough for the server to kill the process)."""

from __future__ import annotations

from tests.support.api import assert_problem, auth, upload


def test_the_errors_listed_are_capped_and_the_rest_counted(client, owner):
    dataset = upload(client, owner, b"a,b\n1,2\n").json()["id"]
    body = {"epsilon_total": 1, **{f"unknown{i}": 1 for i in range(1000)}}
    r = client.put(f"/v1/datasets/{dataset}/budget", headers=auth(owner), json=body)
    problem = assert_problem(r, 422, "unknown0: Extra inputs are not permitted",
                             "(and 999 more errors; the first 100 are listed)")
    assert len(problem["errors"]) == 100
    assert problem["errors"][0]["loc"] == ["body", "unknown0"]


def test_a_few_errors_are_all_listed(client, owner):
    dataset = upload(client, owner, b"a,b\n1,2\n").json()["id"]
    r = client.put(f"/v1/datasets/{dataset}/budget", headers=auth(owner), json={"epsilon_total": -1, "x": 1})
    problem = assert_problem(r, 422)
    assert len(problem["errors"]) == 2 and "more errors" not in problem["detail"]
