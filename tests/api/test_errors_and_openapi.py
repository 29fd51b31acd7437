"""problem+json everywhere, and the checked-in OpenAPI document equals the served one."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.api import assert_problem, auth, submit, upload

ROOT = Path(__file__).resolve().parents[2]


def test_unknown_route_and_method(client):
    assert assert_problem(client.get("/v1/nothing"), 404, "/v1/nothing")["type"].endswith("/not-found")
    assert assert_problem(client.delete("/v1/methods"), 405)["type"].endswith("/method-not-allowed")


def test_a_trailing_slash_is_a_404_naming_the_path_not_a_redirect(client, owner):
    r = client.get("/v1/datasets/", headers=auth(owner), follow_redirects=False)
    assert_problem(r, 404, "paths take no trailing slash: /v1/datasets")
    assert "location" not in r.headers


def test_an_unknown_query_parameter_is_named_not_ignored(client, owner):
    """`?limt=2` answered a page of 50 and `?datset_id=` every job: a filter the caller believed
    in did nothing. The declared parameters (the OpenAPI document's) are listed."""
    body = assert_problem(client.get("/v1/jobs", headers=auth(owner), params={"limt": 2}), 422,
                          "unknown query parameter 'limt'", "limit", "dataset_id")
    assert body["errors"] == [{"loc": ["query", "limt"], "msg": "unknown query parameter",
                               "type": "extra_forbidden"}]
    assert_problem(client.get("/v1/methods", params={"x": 1}), 422, "takes: none")
    assert_problem(client.get("/v1/jobs", params={"limt": 2}), 422)  # the URL alone decides
    assert client.get("/v1/jobs", headers=auth(owner), params={"limit": 2, "status": "queued"}).status_code == 200
    assert client.head("/v1/jobs", headers=auth(owner), params={"limit": 2}).status_code == 200


def test_a_query_parameter_given_twice_is_refused_not_resolved_silently(client, owner):
    """`?limit=5&limit=6` and `?action=a&action=b` were answered with one of the values, unsaid
    (found by the fuzzer: an object in the query is sent as its keys, the parameter repeated)."""
    body = assert_problem(client.get("/v1/audit?limit=5&limit=6&action=a", headers=auth(owner)), 422,
                          "query parameter 'limit' is given 2 times; it takes one value")
    assert body["errors"] == [{"loc": ["query", "limit"], "msg": "given 2 times; takes one value",
                               "type": "repeated_parameter"}]
    assert_problem(client.get("/v1/jobs?status=queued&status=running"), 422, "'status'")  # the URL alone
    assert client.get("/v1/audit?limit=5&action=job.submitted", headers=auth(owner)).status_code == 200


def test_head_works_wherever_get_does(client, owner):
    """RFC 9110: HEAD answers GET's status and headers without the body (FastAPI declares GET only)."""
    ds = upload(client, owner, b"a,b\n1,x\n2,y\n", "head.csv").json()
    for path, headers in (("/v1/methods", {}), (f"/v1/datasets/{ds['id']}/data?format=csv", auth(owner))):
        got, head = client.get(path, headers=headers), client.head(path, headers=headers)
        assert got.status_code == head.status_code == 200 and got.content and head.content == b""
        assert head.headers["content-type"] == got.headers["content-type"]
        assert head.headers.get("content-length") in (None, str(len(got.content)))
    assert client.head(f"/v1/datasets/{ds['id']}").status_code == 401
    # the download is audited as one, marked: the caller got the headers, not the data
    events = client.get("/v1/audit", headers=auth(owner), params={"action": "dataset.downloaded",
                                                                  "dataset_id": ds["id"]}).json()["items"]
    assert sorted(bool(e["details"].get("head_only")) for e in events) == [False, True]
    missing = client.head("/v1/nothing")
    assert missing.status_code == 404 and missing.content == b""
    assert client.head("/v1/jobs/00000000-0000-0000-0000-000000000000/cancel", headers=auth(owner)).status_code == 405


def test_one_problem_type_per_status_whoever_raises_it(client, owner):
    """A 422 from request validation, an unparsable body and the service's own checks are one
    kind of problem to a caller: the same ``type`` URI."""
    ds = upload(client, owner, b"num,cat\n1,x\n2,y\n", "p.csv").json()
    bodies = [
        assert_problem(client.post("/v1/jobs", headers=auth(owner), json={"method": "nope"}), 422),
        assert_problem(client.post("/v1/jobs", headers={**auth(owner), "Content-Type": "application/json"},
                                   content=b"{oops"), 422),
        assert_problem(submit(client, owner, "errph", {"p0": 1.5}, dataset_id=ds["id"]), 422, "p0"),
        assert_problem(submit(client, owner, "errph", {"columns": ["missing"]}, dataset_id=ds["id"]), 422),
    ]
    assert {b["type"] for b in bodies} == {"https://veil.dev/problems/unprocessable"}
    assert {b["title"] for b in bodies} == {"Unprocessable content"}


def test_validation_errors_are_problem_json_without_input_echo(client, owner):
    r = client.post("/v1/jobs", headers=auth(owner), json={"method": "errph", "params": {"p0": 7},
                                                          "dataset_id": "not-a-uuid"})
    body = assert_problem(r, 422)
    assert body["errors"] and all("input" not in e for e in body["errors"])
    assert_problem(client.post("/v1/jobs", headers=auth(owner), json={"method": "nope"}), 422)
    r = client.post("/v1/jobs", headers={**auth(owner), "Content-Type": "application/json"}, content=b"{oops")
    assert_problem(r, 422)


def test_a_body_that_is_not_json_says_so_and_where(client, owner):
    """It answered '0: JSON decode error' (#2 acceptance check)."""
    r = client.post("/v1/jobs", headers={**auth(owner), "Content-Type": "application/json"},
                    content=b'{"method": "errph",')
    assert_problem(r, 422, "the body is not valid JSON (Expecting property name enclosed in double "
                   "quotes at character 19)")
    assert r.json()["errors"][0]["loc"] == ["body"]


@pytest.mark.parametrize("path", ["/v1/jobs", "/v1/releases", "/v1/models"])
def test_an_unknown_method_filter_is_named_not_an_empty_page(client, owner, path):
    assert_problem(client.get(path, headers=auth(owner), params={"method": "errhp"}), 422,
                   "unknown method 'errhp' (GET /v1/methods lists them)")
    assert client.get(path, headers=auth(owner), params={"method": "errph"}).status_code == 200


@pytest.mark.parametrize("method,params", [("mask", {"p": 0.9, "columns": ["a"]}),
                                           ("mask", {"p": 0.9, "bins": 8}),
                                           ("png", {"ps": [0.9, 0.8], "group_column": "a"}),
                                           ("frequent_itemsets", {"minsup": 0.5, "columns": ["a"]})])
def test_a_tables_only_parameter_on_a_transaction_file_is_refused_at_submission(client, owner, method, params):
    """It failed in the job (refunded), or was ignored; on a budgeted file the 409 came first."""
    tx = upload(client, owner, b"1 2 3\n2 3\n1 3\n", "t.dat").json()
    name = next(iter(k for k in params if k not in ("p", "ps", "minsup")))
    assert_problem(submit(client, owner, method, params, dataset_id=tx["id"]), 422,
                   f"'{name}' applies to tabular datasets; this input is a transaction file")
    assert client.get(f"/v1/datasets/{tx['id']}/budget", headers=auth(owner)).json()["epsilon_spent"] == 0


def test_job_parameter_errors_name_the_problem(client, owner):
    ds = upload(client, owner, b"num,cat\n1,x\n2,y\n", "p.csv").json()
    assert_problem(submit(client, owner, "errph", {"p0": 1.5}, dataset_id=ds["id"]), 422, "p0")
    assert_problem(submit(client, owner, "errph", {"columns": ["missing"]}, dataset_id=ds["id"]), 422,
                   "unknown column 'missing'")
    assert_problem(submit(client, owner, "errph", {"columns": ["num"]}, dataset_id=ds["id"]), 422,
                   "column 'num' is numeric")
    assert_problem(submit(client, owner, "errph", {"unknown": 1}, dataset_id=ds["id"]), 422, "unknown")
    for method, params in [("kanonymity", {"quasi_identifiers": ["cat", "num", "cat"]}),
                           ("rfka", {"label": "cat", "quasi_identifiers": ["num", "num"]}),
                           ("errph", {"columns": ["cat", "cat"]}), ("mst", {"epsilon": 1, "columns": ["cat", "cat"]})]:
        assert_problem(submit(client, owner, method, params, dataset_id=ds["id"]), 422, "is given 2 times")
    assert_problem(client.put(f"/v1/datasets/{ds['id']}/schema", headers=auth(owner),
                              json={"cat": {"categories": ["x", "y", "x"]}}), 422, "'x' is given 2 times")
    # an option of the other algorithm was ignored: suppression with Mondrian released a
    # coarser table than asked, a Mondrian option with the lattice changed nothing (spec04 note)
    assert_problem(submit(client, owner, "kanonymity", {"k": 2, "suppression": 0.04}, dataset_id=ds["id"]), 422,
                   "suppression = 0.04 applies to algorithm 'lattice' only, and this job runs 'mondrian'")
    assert_problem(submit(client, owner, "kanonymity", {"k": 2, "algorithm": "lattice", "time_budget": 5,
                                                        "categorical_release": "children"}, dataset_id=ds["id"]),
                   422, "categorical_release = 'children' applies to algorithm 'mondrian' only")
    ok = submit(client, owner, "kanonymity", {"k": 2, "algorithm": "lattice", "suppression": 0.04,
                                              "categorical_release": "ancestor", "quasi_identifiers": ["cat"]},
                dataset_id=ds["id"])
    assert ok.status_code == 202, ok.text  # the other algorithm's option at its default is no change
    assert_problem(submit(client, owner, "errph", {}, dataset_id=ds["id"], seed=1), 422, "seed")
    assert_problem(submit(client, owner, "errph", {}), 422, "needs a dataset_id or a release_id")
    assert_problem(submit(client, owner, "errph", {}, dataset_id="00000000-0000-0000-0000-000000000000"), 404)


def test_the_wrong_input_kind_is_named_by_what_the_method_takes(client, owner):
    """An experiment given a dataset_id was told it "runs on a release: give release_id", and
    given a release_id that it "runs on a dataset": it takes neither."""
    ds = upload(client, owner, b"num,cat\n1,x\n2,y\n", "p.csv").json()
    body = assert_problem(submit(client, owner, "experiment_rfka", {}, dataset_id=ds["id"]), 422,
                          "'experiment_rfka' takes neither dataset_id nor release_id")
    assert "give release_id" not in body["detail"]
    body = assert_problem(submit(client, owner, "experiment_rfka", {},
                                 release_id="00000000-0000-0000-0000-000000000000"), 422,
                          "'experiment_rfka' takes neither dataset_id nor release_id")
    assert "give dataset_id" not in body["detail"]
    assert_problem(submit(client, owner, "reconstruct", {}, dataset_id=ds["id"]), 422,
                   "'reconstruct' runs on a release: give release_id")


def test_an_experiment_epsilon_no_release_can_serve_is_a_422_at_submission(client, owner):
    body = assert_problem(submit(client, owner, "experiment_dp_release",
                                 {"tasks": ["adult_degree"], "methods": ["aim"], "epsilons": [1e-12]}),
                          422, "epsilons: aim on task 'adult_degree' at ε = 1e-12")
    assert "too small" in body["detail"]


def test_method_catalogue(client):
    methods = {m["name"]: m for m in client.get("/v1/methods").json()}
    errph = methods["errph"]
    assert errph["family"] == "randomized_response" and errph["kind"] == "release"
    assert errph["params_schema"]["properties"]["p0"]["default"] == 0.5
    assert "Zhang" in errph["paper"] and "ε" in errph["guarantee"]
    assert client.get("/v1/methods/errph").json()["name"] == "errph"
    assert_problem(client.get("/v1/methods/nope"), 404, "nope")


def test_every_route_declares_a_response_model_and_problem_responses(client):
    spec = client.get("/openapi.json").json()
    for path, ops in spec["paths"].items():
        for verb, op in ops.items():
            codes = set(op["responses"])
            assert any(c.startswith("2") for c in codes), (verb, path)
            if path.startswith("/v1/") and path not in ("/v1/methods",):
                assert {"422"} & codes or {"404"} & codes, (verb, path, codes)


def test_every_endpoint_runs_through_the_off_loop_route(client):
    """Each router names ``route_class=OffLoopRoute`` itself; one that forgot it would still
    answer correctly, only with an extra thread-pool hop per request, so no other test notices."""
    from fastapi.routing import APIRoute

    from app.deps import OffLoopRoute

    def api_routes(routes):  # FastAPI ≥ 0.165 keeps an included router behind a wrapper
        for route in routes:
            if isinstance(route, APIRoute):
                yield route
            yield from api_routes(getattr(getattr(route, "original_router", None), "routes", ()))

    routes = list(api_routes(client.app.routes))
    assert len(routes) > 30
    plain = [r.path for r in routes if not isinstance(r, OffLoopRoute)]
    assert plain == []


def test_checked_in_openapi_equals_the_served_schema():
    """Run without the test suite's diagnostic plugins, as the service itself runs."""
    env = {k: v for k, v in os.environ.items() if k != "VEIL_PLUGINS"}
    code = ("import json; from fastapi.testclient import TestClient; from app.main import create_app;"
            "print(json.dumps(TestClient(create_app()).get('/openapi.json').json()))")
    served = json.loads(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                                       check=True, env=env, cwd=ROOT).stdout)
    checked_in = json.loads((ROOT / "openapi" / "openapi.json").read_text())
    assert served == checked_in, "openapi/openapi.json is stale: run `veil openapi` (make openapi)"


@pytest.mark.parametrize("params", [{"itemsets": [["b=x"]]}, {"max_len": 2}, {"estimator": "stratified"}])
def test_a_transactions_only_parameter_on_a_table_release_is_refused_at_submission(client, owner, params):
    """reconstruct with itemsets on an errph release was accepted and failed in the job (#7 check)."""
    from app.worker import runner

    ds = upload(client, owner, b"a,b\n1,x\n2,y\n3,x\n4,y\n", "t.csv").json()
    job = submit(client, owner, "errph", {"p0": 0.5, "columns": ["b"]}, dataset_id=ds["id"]).json()
    runner.execute(job["id"])
    rid = client.get(f"/v1/jobs/{job['id']}", headers=auth(owner)).json()["result"]["release_ids"][0]
    name = next(iter(params))
    body = assert_problem(submit(client, owner, "reconstruct", params, release_id=rid), 422,
                          f"'{name}' applies to transaction files and releases; this input is a table")
    assert body["errors"][0]["type"] == "transactions_only"
    tx = upload(client, owner, b"1 2 3\n2 3\n1 3\n", "t.dat").json()
    assert_problem(submit(client, owner, "mask", {"p": 0.9, "columns": ["a"]}, dataset_id=tx["id"]), 422,
                   "'columns' applies to tabular datasets; this input is a transaction file")


def test_png_keep_probabilities_that_do_not_match_the_group_column_are_refused_at_submission(client, owner):
    """The profile knows how many values the group column holds (a missing cell is one): a list
    of another length failed in the job (mechaudit acceptance check)."""
    ds = upload(client, owner, b"g,a\nx,1\ny,0\n,1\nx,0\n", "g.csv").json()
    assert_problem(submit(client, owner, "png", {"ps": [0.9, 0.8], "group_column": "g"}, dataset_id=ds["id"]),
                   422, "ps lists 2 probabilities; column 'g' has 3 values")
    assert submit(client, owner, "png", {"ps": [0.9, 0.8, 0.7], "group_column": "g"},
                  dataset_id=ds["id"]).status_code == 202
