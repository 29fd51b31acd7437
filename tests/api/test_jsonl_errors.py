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
    # #7 acceptance check: a 9 MiB cell was "every line must be one JSON object with scalar values"
    (b'{"a":1,"b":"' + b"Zorro" * ((9 << 20) // 5) + b'"}\n{"a":2,"b":"y"}\n', ("a line is longer than 4 MiB",)),
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


def test_deep_nesting_is_refused_before_the_reader_sees_it(client, owner):
    """pyarrow's JSON reader recurses per level: 20,000 nested arrays (40 KB) killed the API
    process with a segmentation fault, 3,000 nested objects took 23 s of its CPU (security
    acceptance check). The file is scanned first; the row is named."""
    data = b'{"a":1}\n{"a": ' + b"[" * 50 + b"]" * 50 + b"}\n"
    body = assert_problem(upload(client, owner, data, "j.jsonl"), 422, "at row 2", "nested values")
    assert "[" not in body["detail"]


def test_the_depth_scan_reads_strings_and_escapes_as_json_does(tmp_path, monkeypatch):
    from app.datasets import jsonl_depth

    def first_deep(text: str, limit: int = 2):
        path = tmp_path / "d.jsonl"
        path.write_text(text)
        return jsonl_depth.first_row_deeper_than(path, limit)

    assert first_deep('{"a": ' + "[" * 20_000 + "]" * 20_000 + "}\n") == 1
    assert first_deep('{"a": "[[[{{{", "b\\\\": "\\"[[[["}\n{"c": [1]}\n') is None  # brackets in strings
    # an escaped quote does not end the string: the brackets after the real end are nesting
    assert first_deep('{"k": "x\\"", "a": [[[1]]]}\n') == 1
    assert first_deep('{"k": "x\\\\", "a": "[[["}\n') is None  # an escaped backslash, then the end
    # an unclosed string on one line does not hide the next line's nesting
    assert first_deep('{"k": "open\n{"a": [[[1]]]}\n') == 2
    monkeypatch.setattr(jsonl_depth, "_CHUNK", 3)  # state carried across chunks
    assert first_deep('{"a": 1}\n{"k": "x\\\\\\"[[[", "b": [[[1]]]}\n') == 2
    assert first_deep('{"a": 1}\n{"k": "x\\\\\\"[[[", "b": [1]}\n') is None
