"""Schema fuzzing (schemathesis) of every operation of the served OpenAPI document, through a
real server: no 5xx, no response outside the declared status codes / content types /
schemas, negative data rejected, and without a valid key (none, a wrong secret, an unknown
key, another scheme, no scheme) every /v1 operation but the public method catalogue answers 401.

`make test` runs a small derandomized pass; `make fuzz` runs the full one (VEIL_FUZZ_EXAMPLES
per operation and mode, ≥ 2,000 requests in all)."""

from __future__ import annotations

import itertools
import os

import pytest

from tests.reliability.conftest import build_tenant
from tests.support.fuzz import FuzzResult, fuzz, load_schema

PUBLIC = ("/v1/methods",)  # the catalogue is public; everything else under /v1 needs a key


def _requires_key(path: str) -> bool:
    return path.startswith("/v1/") and not any(path == p or path.startswith(p + "/") for p in PUBLIC)


def _unauthenticated_expectation(case, response) -> str | None:
    if _requires_key(case.operation.path) and response.status_code != 401:
        # a 413 from the body limit comes before authentication and accepts nothing
        if response.status_code != 413:
            return f"no key but status {response.status_code}"
    return None


@pytest.fixture(scope="module")
def fuzz_tenant(client, make_key):
    """Its own tenant: the fuzzer deletes datasets and rewrites schemas."""
    return build_tenant(client, make_key)


def _run(live, tenant, examples: int, derandomize: bool) -> tuple[FuzzResult, FuzzResult, int]:
    offset = live.log_offset()
    schema = load_schema(live.base_url)
    owner = {"Authorization": tenant["owner"]["Authorization"]}
    authed = fuzz(schema, live.base_url, examples=examples, derandomize=derandomize,
                  headers_for=lambda case: owner, ids=tenant["ids"])
    key = owner["Authorization"]
    invalid = itertools.cycle([{}, {"Authorization": key[:-1] + ("A" if key[-1] != "A" else "B")},
                               {"Authorization": "Bearer veil_000000000000_not-a-key"},
                               {"Authorization": "Basic " + key.split()[1]}, {"Authorization": key.split()[1]}])
    anonymous = fuzz(schema, live.base_url, examples=max(examples // 3, 3), derandomize=derandomize,
                     negative=False, headers_for=lambda case: next(invalid), ids=tenant["ids"],
                     expect=_unauthenticated_expectation)
    return authed, anonymous, offset


def _assert_clean(live, authed: FuzzResult, anonymous: FuzzResult, offset: int, minimum: int) -> None:
    print("\nauthenticated (owner key):", authed.summary(),
          "\nno key or an invalid one:", anonymous.summary())
    assert not authed.failures, authed.report()
    assert not anonymous.failures, anonymous.report()
    # 5xx: only /readyz's declared 503 "not ready" (no worker runs beside the fuzzed server)
    assert authed.by_status.keys() - {503} == {s for s in authed.by_status if s < 500}
    assert authed.requests + anonymous.requests >= minimum
    assert not live.server_errors(offset), live.server_errors(offset)[:5]


def test_fuzz_small(live, fuzz_tenant):
    _assert_clean(live, *_run(live, fuzz_tenant, examples=5, derandomize=True), minimum=250)


@pytest.mark.long
def test_fuzz_full(live, fuzz_tenant):
    examples = int(os.environ.get("VEIL_FUZZ_EXAMPLES", "40"))
    _assert_clean(live, *_run(live, fuzz_tenant, examples=examples, derandomize=False), minimum=2000)


@pytest.mark.parametrize("data,fragment", [
    (b"a\x83b,c\n1,2\n", "not valid UTF-8"),               # header not UTF-8
    (b"a,b\n1,\x83\x84\n2,x\n", "row 1 holds text that is not UTF-8"),  # a cell not UTF-8
    (b"a,b\n1,2\n3,\x83\x84,5\n", "unparsable row 2"),      # a bad row that is not UTF-8 either
])
def test_fuzz_findings_uploads(client, make_key, data, fragment):
    """Found by the fuzzer (500s before): kept as plain regression tests."""
    from tests.support.api import assert_problem, upload

    assert_problem(upload(client, make_key("owner"), data, "x.csv"), 422, fragment)


def test_fuzz_findings_requests(client, make_key):
    from tests.support.api import assert_problem, auth, upload

    owner = make_key("owner")
    h = auth(owner)
    assert_problem(upload(client, owner, b'{"a": "\x83"}\n', "x.jsonl"), 422)
    assert_problem(client.get("/v1/audit", headers=h, params={"actor": "a\x00b"}), 422, "NUL")
    assert_problem(client.get("/v1/jobs", headers=h, params={"method": "\x00"}), 422, "unknown method")
    assert_problem(client.get("/v1/releases", headers=h, params={"cursor": "2" * 70}), 422, "cursor")
    r = client.post("/v1/jobs", headers={**h, "Content-Type": "application/json"}, content=b"\xff\xfe{")
    assert_problem(r, 422, "cannot be parsed")
    ds = upload(client, owner, b"a,b\n1,x\n2,y\n", "i.csv", idempotency_key="fz-1")
    again = upload(client, owner, b"a,b\n1,x\n2,y\n", "i.csv", idempotency_key="fz-1")
    assert (ds.status_code, again.status_code) == (201, 200)  # 200 is declared for a replay
    spec = client.get("/openapi.json").json()["paths"]
    assert "200" in spec["/v1/datasets"]["post"]["responses"] and "200" in spec["/v1/jobs"]["post"]["responses"]


def test_fuzz_findings_json_types(client, make_key):
    """Pydantic's lax mode read `"seed": false` as 0 (the fuzzer's finding), `"p0": true` as
    p0 = 1 (a release with no randomization), `"k": "2"` as 2 and `"integer": "yes"` as true, where the OpenAPI document declares a number or a
    boolean: a 422 naming the field now (app/privacy/json_types.py)."""
    from tests.support.api import assert_problem, auth, upload

    owner = make_key("owner")
    h = auth(owner)
    r = client.post("/v1/datasets/synthetic", headers=h, json={"seed": False, "rows": 10})
    assert_problem(r, 422, "must be a number, not false")
    ds = upload(client, owner, b"a,b\n1,x\n2,y\n3,x\n", "t.csv").json()
    r = client.post("/v1/jobs", headers=h, json={"dataset_id": ds["id"], "method": "errph",
                                                 "params": {"p0": True}})
    assert_problem(r, 422, "must be a number, not true")
    r = client.post("/v1/jobs", headers=h, json={"dataset_id": ds["id"], "method": "kanonymity",
                                                 "params": {"k": "2"}})
    assert_problem(r, 422, "must be a number, not a string")
    r = client.put(f"/v1/datasets/{ds['id']}/schema", headers=h, json={"a": {"integer": "yes"}})
    assert_problem(r, 422, "must be true or false, not a string")
    r = client.put(f"/v1/datasets/{ds['id']}/budget", headers=h, json={"epsilon_total": "5"})
    assert_problem(r, 422, "must be a number, not a string")
    ok = client.put(f"/v1/datasets/{ds['id']}/budget", headers=h, json={"epsilon_total": 5})
    assert ok.status_code == 200, ok.text
