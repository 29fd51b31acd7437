"""JSON Lines errors name what is wrong (found by the #2 acceptance check: a column holding a
number and then a string, a key given twice and a number beyond a double were all answered
"every line must be one JSON object with scalar values", which each line was)."""

from __future__ import annotations

import pytest

from tests.support.api import assert_problem, upload


@pytest.mark.parametrize("data, fragments", [
    (b'{"a":1,"b":"x"}\n{"a":"Zorro","b":"y"}\n', ("at row 2", "column 'a' changes from number to string")),
    (b'{"a":true}\n{"a":1}\n', ("at row 2", "column 'a' changes from boolean to number")),
    (b'{"x/y":1}\n{"x/y":"z"}\n', ("column 'x/y' changes",)),
    (b'{"a":1,"a":2}\n', ("at row 1", "the key 'a' appears twice")),
    (b'{"a":1}\n{"a":1e400}\n', ("at row 2", "a number is beyond")),
    (b'{"a":1}\n[1, 2]\n', ("at row 2", "every line must be one JSON object")),
])
def test_jsonl_problems_are_named(client, owner, data, fragments):
    body = assert_problem(upload(client, owner, data, "j.jsonl"), 422, *fragments)
    assert "Zorro" not in body["detail"]  # never a value


def test_nulls_between_values_of_one_type_are_fine(client, owner):
    r = upload(client, owner, b'{"a":1,"b":"x"}\n{"a":null,"b":null}\n{"a":2.5,"b":"y"}\n', "j.jsonl")
    assert r.status_code == 201, r.text
    assert [(c["name"], c["type"], c["missing"]) for c in r.json()["columns"]] == [
        ("a", "numeric", 1), ("b", "categorical", 1)]


def test_a_jsonl_value_that_is_not_utf8_names_its_column(client, owner):
    """The JSON reader takes any bytes inside a string: it failed later as 'the file cannot
    be read as jsonl'."""
    data = '{"a":1,"city":"x"}\n{"a":2,"city":"Zürich"}\n'.encode("latin-1")
    assert_problem(upload(client, owner, data, "j.jsonl"), 422, "column 'city'", "not valid UTF-8")
