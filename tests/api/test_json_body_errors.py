"""A JSON body sent without its Content-Type is a 415 that says so (found by the #2 acceptance
check: `curl -d '{…}'` sends a form, and the answer was "request: Input should be a valid
dictionary or object to extract fields from", naming neither the body nor the header). It was a
422 until the apic acceptance check: an upload or a hierarchy sent in the wrong form, and any body
sent compressed, were 415s, so one mistake had two statuses depending on the route."""

from __future__ import annotations

import json

import pytest

from tests.support.api import assert_problem, auth, upload


@pytest.mark.parametrize("media", ["application/x-www-form-urlencoded", "text/plain"])
def test_a_json_body_with_another_content_type_is_a_415_naming_the_header(client, owner, media):
    ds = upload(client, owner, b"a,b\n1,x\n2,y\n", "j.csv").json()
    body = json.dumps({"dataset_id": ds["id"], "method": "errph", "params": {"p0": 0.5}})
    for method, path in (("POST", "/v1/jobs"), ("PUT", f"/v1/datasets/{ds['id']}/budget")):
        r = client.request(method, path, content=body, headers={**auth(owner), "Content-Type": media})
        problem = assert_problem(r, 415, "must be JSON", "Content-Type: application/json", repr(media))
        assert problem["type"] == "https://veil.dev/problems/unsupported-media-type"
        assert "errors" not in problem  # pydantic's "valid dictionary" named nothing useful


def test_a_body_without_a_content_type_is_a_415_on_every_json_operation(client, make_key, owner):
    """Every operation whose body is JSON answers alike: the status an upload sent as JSON gets.
    PUT …/schema read its body as JSON whatever the header said until the spec-audit session."""
    spec = client.get("/openapi.json").json()
    json_ops = [(path, verb) for path, ops in spec["paths"].items() for verb, op in ops.items()
                if list(op.get("requestBody", {}).get("content", {})) == ["application/json"]]
    assert len(json_ops) == 7, json_ops  # … and POST …/hierarchies/{column}/build
    admin = make_key("admin")
    for path, verb in json_ops:
        url = path.replace("{dataset_id}", "00000000-0000-0000-0000-000000000000").replace(
            "{model_id}", "00000000-0000-0000-0000-000000000000").replace("{column}", "c")
        key = admin if path == "/v1/keys" else owner
        r = client.request(verb.upper(), url, content=b'{"a": 1}', headers=auth(key))  # no Content-Type
        assert_problem(r, 415, "must be JSON sent with 'Content-Type: application/json'")
    ds = upload(client, owner, b"a,b\n1,x\n2,y\n", "j.csv").json()
    url = f"/v1/datasets/{ds['id']}/schema"
    r = client.put(url, content=b'{"a": {"role": "label"}}', headers={**auth(owner), "Content-Type": "text/plain"})
    assert_problem(r, 415, "must be JSON", "this request's Content-Type is 'text/plain'")
    assert client.get(f"/v1/datasets/{ds['id']}", headers=auth(owner)).json()["columns"][0]["role"] != "label"


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


def test_a_key_given_twice_in_one_object_is_refused(client, owner):
    """The parser kept the last value silently: a job naming `method` twice ran the second
    method, a budget PUT with two totals set the second (security acceptance check)."""
    ds = upload(client, owner, b"a,b\n1,x\n2,y\n", "j.csv").json()
    json_h = {**auth(owner), "Content-Type": "application/json"}
    body = (f'{{"dataset_id": "{ds["id"]}", "method": "errph", "params": {{"p0": 0.5}}, '
            '"method": "warner"}').encode()
    assert_problem(client.post("/v1/jobs", content=body, headers=json_h), 422,
                   "the key 'method' appears twice in one object")
    assert client.get("/v1/jobs", headers=auth(owner)).json()["items"] == []
    nested = f'{{"dataset_id": "{ds["id"]}", "method": "errph", "params": {{"p0": 0.5, "p0": 0.9}}}}'
    assert_problem(client.post("/v1/jobs", content=nested.encode(), headers=json_h), 422, "'p0' appears twice")
    budget = client.put(f"/v1/datasets/{ds['id']}/budget", content=b'{"epsilon_total": 1, "epsilon_total": 2}',
                        headers=json_h)
    assert_problem(budget, 422, "'epsilon_total' appears twice")
    # the same key in two different objects is fine
    ok = client.put(f"/v1/datasets/{ds['id']}/schema", headers=json_h,
                    content=b'{"a": {"role": "insensitive"}, "b": {"role": "insensitive"}}')
    assert ok.status_code == 200, ok.text


@pytest.mark.parametrize("body", [b"{not json", b'{"a": 1, "a": 2}', b"[" * 10])
def test_a_body_without_a_key_is_a_401_before_it_is_read(client, body):
    """FastAPI parses the body before any dependency: a malformed body without a key got the
    parser's 422 (and a caller without a key could make the API parse 32 MiB; #7 check)."""
    for method, path in (("POST", "/v1/jobs"), ("PUT", "/v1/datasets/00000000-0000-0000-0000-000000000000/budget")):
        r = client.request(method, path, content=body, headers={"Content-Type": "application/json"})
        assert_problem(r, 401, "missing API key")
    assert client.get("/v1/methods").status_code == 200  # public routes need no key


@pytest.mark.parametrize("authorization", ["Bearer nonsense", "Basic dXNlcjpwdw==", "Bearer veil_x",
                                           "Bearer veil_", "Bearer "])
def test_a_malformed_key_with_a_body_is_a_401_before_it_is_read(client, authorization):
    """A key that cannot be a Veil key (veil_<prefix>_<secret>, as a bearer token) is refused
    like a missing one, before the body: it got the body's 422 (authorization sweep)."""
    for method, path in (("POST", "/v1/jobs"), ("PUT", "/v1/datasets/00000000-0000-0000-0000-000000000000/budget")):
        r = client.request(method, path, content=b"{not json",
                           headers={"Content-Type": "application/json", "Authorization": authorization})
        assert_problem(r, 401, "invalid API key")


def test_an_object_of_too_many_keys_is_refused_before_validation(client, owner):
    """500,000 unknown keys made as many validation errors (~20 s of the API; #7 check)."""
    ds = upload(client, owner, b"a,b\n1,x\n2,y\n", "j.csv").json()
    keys = ",".join(f'"k{i}": 1' for i in range(10_001))
    r = client.put(f"/v1/datasets/{ds['id']}/budget", content=("{" + keys + "}").encode(),
                   headers={**auth(owner), "Content-Type": "application/json"})
    assert_problem(r, 422, "an object has 10001 keys (at most 10000)")
