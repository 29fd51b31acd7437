"""A JSON body sent without its Content-Type is a 422 that says so (found by the #2 acceptance
check: `curl -d '{…}'` sends a form, and the answer was "request: Input should be a valid
dictionary or object to extract fields from", naming neither the body nor the header)."""

from __future__ import annotations

import json

import pytest

from tests.support.api import assert_problem, auth, upload


@pytest.mark.parametrize("media", ["application/x-www-form-urlencoded", "text/plain"])
def test_a_json_body_with_another_content_type_names_the_header(client, owner, media):
    ds = upload(client, owner, b"a,b\n1,x\n2,y\n", "j.csv").json()
    body = json.dumps({"dataset_id": ds["id"], "method": "errph", "params": {"p0": 0.5}})
    for method, path in (("POST", "/v1/jobs"), ("PUT", f"/v1/datasets/{ds['id']}/budget")):
        r = client.request(method, path, content=body, headers={**auth(owner), "Content-Type": media})
        assert_problem(r, 422, "must be JSON", "Content-Type: application/json", repr(media))


def test_json_bodies_keep_their_own_messages(client, owner):
    r = client.post("/v1/jobs", content=b"[1, 2]", headers={**auth(owner), "Content-Type": "application/json"})
    assert_problem(r, 422, "request: Input should be a valid dictionary")
    r = client.post("/v1/jobs", json={"method": "errph", "params": {"p0": 2}, "dataset_id": "x"}, headers=auth(owner))
    assert "Content-Type" not in assert_problem(r, 422)["detail"]


def test_a_405_names_the_method_and_what_the_path_takes(client, owner):
    r = client.delete("/v1/methods")
    assert_problem(r, 405, "DELETE is not allowed on /v1/methods", "this path takes GET, HEAD")
    assert r.headers["allow"] == "GET, HEAD"
    assert_problem(client.put("/v1/jobs", headers=auth(owner)), 405, "PUT is not allowed on /v1/jobs", "GET, HEAD, POST")
    assert client.put("/v1/jobs", headers=auth(owner)).headers["allow"] == "GET, HEAD, POST"
