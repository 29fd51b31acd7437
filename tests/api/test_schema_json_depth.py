"""A schema nested ~50,000 levels deep, as the upload's field or as PUT …/schema, was a 500
(RecursionError in the JSON parser; security acceptance check): a 422 that says so."""

from __future__ import annotations

from tests.support.api import assert_problem, auth, upload


def test_a_schema_nested_too_deeply_is_a_422_not_a_500(client, owner):
    deep = '{"a":' * 50_000 + "1" + "}" * 50_000
    ds = upload(client, owner, b"a,b\n1,x\n2,y\n", "d.csv").json()
    r = client.put(f"/v1/datasets/{ds['id']}/schema", headers={**auth(owner), "Content-Type": "application/json"},
                   content=deep)
    assert_problem(r, 422, "the request body nests arrays or objects too deeply")
    r = client.post("/v1/datasets", headers=auth(owner), files={"file": ("d.csv", b"a,b\n1,x\n2,y\n")},
                    data={"schema": deep})
    assert_problem(r, 422, "the schema field nests arrays or objects too deeply")
