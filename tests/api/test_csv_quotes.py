"""A quoted CSV field that is never closed is a 422 naming its line (found by the #2 acceptance
check: pyarrow took the rest of the file for that one cell, so `a,b / 1,"abc / 2,3 / 4,5`
was stored as one row whose cell held the three lines)."""

from __future__ import annotations

import json
import random

import pytest

from app.datasets import quotes
from tests.support.api import assert_problem, auth, upload


@pytest.mark.parametrize("data, line", [
    (b'a,b\n1,"abc\n2,3\n4,5\n6,7\n', 2),
    (b'a,b\n1,2\n3,4\n5,"x', 4),
    (b'a,b\n1,2\n"3,4\n', 3),  # in the first column: pyarrow said "expected 2 fields, found 1"
    (b'a,b\n1,"x""\n2,3\n', 2),  # an escaped quote does not close it
    (b'\xef\xbb\xbf"a,b\n1,2\n', 1),
    (b'a\tb\n1\t"x\n2\t3\n', 2),
])
def test_an_unclosed_quote_is_refused_naming_its_line(client, owner, data, line):
    name = "q.tsv" if b"\t" in data else "q.csv"
    assert_problem(upload(client, owner, data, name), 422,
                   f"quoted field that starts on line {line} (the header is line 1) is never closed")


@pytest.mark.parametrize("data, rows, cell", [
    (b'a,b\n1,"x\ny"\n2,3\n', 2, "x\ny"),  # a quoted line end is part of the cell
    (b'a,b\n1,5\'11"\n2,3\n', 2, "5'11\""),  # a quote inside an unquoted cell is a character
    (b'a,b\n1,"x""y"\n2,""\n', 2, 'x"y'),
    (b'a,b\n1,"x"\n2,"y"', 2, "x"),
])
def test_closed_and_literal_quotes_are_accepted(client, owner, data, rows, cell):
    r = upload(client, owner, data, "q.csv")
    assert r.status_code == 201, r.text
    assert r.json()["rows"] == rows
    got = client.get(f"/v1/datasets/{r.json()['id']}/data", headers=auth(owner), params={"format": "jsonl"})
    assert json.loads(got.text.splitlines()[0])["b"] == cell


def _reference(data: bytes) -> int | None:
    """pyarrow's quoting, one byte at a time: the offset of the quote left open, or None."""
    state, opened, i = "start", None, 3 if data.startswith(b"\xef\xbb\xbf") else 0
    while i < len(data):
        c = data[i:i + 1]
        if state == "start":
            state, opened = ("quoted", i) if c == b'"' else ("start" if c in b",\n\r" else "field", opened)
        elif state == "field":
            state = "start" if c in b",\n\r" else "field"
        elif c == b'"':
            if data[i + 1:i + 2] == b'"':
                i += 1
            else:
                state = "field"
        i += 1
    return opened if state == "quoted" else None


@pytest.mark.parametrize("chunk", [1, 2, 3, 7, 1 << 20])
def test_the_vectorized_scan_agrees_with_a_byte_by_byte_reading(tmp_path, monkeypatch, chunk):
    monkeypatch.setattr(quotes, "_CHUNK", chunk)
    rng, path = random.Random(chunk), tmp_path / "q.csv"
    for _ in range(600):
        data = bytes(rng.choice(b'a,"\n\r"') for _ in range(rng.randint(0, 30)))
        data = b"\xef\xbb\xbf" + data if rng.random() < 0.1 else data
        path.write_bytes(data)
        assert quotes.unclosed_quote_offset(path, ",") == _reference(data), data
