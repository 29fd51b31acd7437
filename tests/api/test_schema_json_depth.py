"""A schema nested ~50,000 levels deep, as the upload's field or as PUT …/schema, was a 500
(RecursionError in the JSON parser; security acceptance check): a 422 that says so. So was an
integer literal of more than 4,300 digits (Python's int conversion limit; #7 acceptance check)."""

from __future__ import annotations

import pytest

from tests.support.api import assert_problem, auth, upload


@pytest.mark.parametrize("text, problem", [
    ('{"a":' * 50_000 + "1" + "}" * 50_000, "nests arrays or objects too deeply"),
    ('{"a": {"bounds": [1, 1' + "0" * 5000 + "]}}", "holds an integer of more than 4300 digits"),
])
def test_a_schema_the_json_parser_refuses_is_a_422_not_a_500(client, owner, text, problem):
    ds = upload(client, owner, b"a,b\n1,x\n2,y\n", "d.csv").json()
    r = client.put(f"/v1/datasets/{ds['id']}/schema", headers={**auth(owner), "Content-Type": "application/json"},
                   content=text)
    assert_problem(r, 422, f"the request body {problem}")
    r = client.post("/v1/datasets", headers=auth(owner), files={"file": ("d.csv", b"a,b\n1,x\n2,y\n")},
                    data={"schema": text})
    assert_problem(r, 422, f"the schema field {problem}")
