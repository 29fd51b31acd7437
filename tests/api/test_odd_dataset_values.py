"""Odd but valid cell values (the adversarial dataset-content sweep): a declared type is read
as declared, and a value at the edge of float64 fails a job with a message naming the column,
not as an internal error."""

from __future__ import annotations

import io
import json

import pyarrow.parquet as pq
import pytest

from app.worker import runner
from tests.support.api import assert_problem, auth, submit, upload


def _column(client, owner, dataset_id, name):
    raw = client.get(f"/v1/datasets/{dataset_id}/data", headers=auth(owner), params={"format": "parquet"})
    return pq.read_table(io.BytesIO(raw.content)).column(name).to_pylist()


def _invalid_input_message(client, owner, job) -> str:
    """Run the submitted job; it must fail as invalid_input (not 'internal'): its message."""
    runner.execute(job["id"])
    done = client.get(f"/v1/jobs/{job['id']}", headers=auth(owner)).json()
    assert done["status"] == "failed", done
    assert done["error"]["type"] == "invalid_input", done["error"]
    return done["error"]["message"]


def test_a_column_declared_categorical_at_upload_keeps_its_text(client, owner):
    """Codes with leading zeros were read as numbers first and re-coded to text after: '007'
    came back as '7' (and '7' and '007' became one category) although the upload declared the
    column categorical."""
    data = b"code,x\n007,1\n012,2\n7,3\n1.50,4\n,5\n"
    ds = upload(client, owner, data, "codes.csv", schema={"code": {"type": "categorical"}})
    assert ds.status_code == 201, ds.text
    code = next(c for c in ds.json()["columns"] if c["name"] == "code")
    assert (code["type"], code["distinct"], code["missing"]) == ("categorical", 4, 1)
    assert _column(client, owner, ds.json()["id"], "code") == ["007", "012", "7", "1.50", None]
    # declared with its categories, as written
    ds = upload(client, owner, data, "codes.csv",
                schema={"code": {"type": "categorical", "categories": ["007", "012", "7", "1.50"]}})
    assert ds.status_code == 201, ds.text


def test_a_0_1_column_with_missing_cells_can_be_declared_boolean(client, owner):
    """Read as float64 (a missing cell), its 1.0 was refused as 'row 1 is not a boolean
    (true/false, yes/no, 1/0)', at upload and by PUT …/schema."""
    data = b"a,flag\n1,1\n2,0\n3,\n4,1\n"
    ds = upload(client, owner, data, "flags.csv", schema={"flag": {"type": "boolean"}})
    assert ds.status_code == 201, ds.text
    assert _column(client, owner, ds.json()["id"], "flag") == [True, False, None, True]
    ds = upload(client, owner, data, "flags.csv").json()
    put = client.put(f"/v1/datasets/{ds['id']}/schema", headers=auth(owner), json={"flag": {"type": "boolean"}})
    assert put.status_code == 200, put.text
    assert _column(client, owner, ds["id"], "flag") == [True, False, None, True]
    bad = upload(client, owner, b"a,flag\n1,1\n2,0.5\n", "flags.csv", schema={"flag": {"type": "boolean"}})
    assert bad.status_code == 422 and "row 2 is not a boolean" in bad.json()["detail"], bad.text


def test_an_automatic_hierarchy_over_a_range_beyond_float64_names_the_column(client, owner):
    """x spans -1.7e308 … 1e308: hi - lo overflows, and the lattice's automatic hierarchy failed
    as 'internal' (OverflowError at hierarchies.py)."""
    rows = "".join(f"{a},{x!r}\n" for a, x in zip(range(30), [1e308, -1.7e308, 1.0] * 10))
    ds = upload(client, owner, f"age,x\n{rows}".encode(), "huge.csv").json()
    job = submit(client, owner, "kanonymity", {"k": 3, "quasi_identifiers": ["age", "x"], "algorithm": "lattice"},
                 dataset_id=ds["id"]).json()
    message = _invalid_input_message(client, owner, job)
    assert "'x'" in message and "hierarchy" in message, message


@pytest.mark.parametrize("params", [{}, {"algorithm": "lattice"}, {"categorical_coding": "ordered"}])
def test_a_quasi_identifier_value_spelled_like_its_missing_leaf_is_refused(client, owner, params):
    """kanonymity released a column's missing cells as '<missing>', the same text as the value
    '<missing>' some rows hold: 31 + 22 cells came out as 53 of one value (hamdist, rfka and
    errph refuse this already, naming the column)."""
    rows = "".join(f"{a},{c}\n" for a, c in zip(range(12), ["<missing>", "", "a", "b"] * 3))
    ds = upload(client, owner, f"age,city\n{rows}".encode(), "sentinel.csv").json()
    job = submit(client, owner, "kanonymity", {"k": 3, "quasi_identifiers": ["age", "city"], **params},
                 dataset_id=ds["id"]).json()
    message = _invalid_input_message(client, owner, job)
    assert "'city'" in message and "'<missing>'" in message, message


@pytest.mark.parametrize("data", [
    b"age;city;score\n30;A;1\n41;B;2\n",  # read as one column named 'age;city;score'
    b"age;city;score\n30;A;1,5\n41;B;2,5\n",  # decimal commas: 'expected 1 fields, found 2 (market baskets…?)'
])
def test_a_semicolon_separated_file_is_refused_saying_so(client, owner, data):
    assert_problem(upload(client, owner, data, "semi.csv"), 422, "separated by ';'", "comma")


def test_a_single_column_whose_name_holds_a_semicolon_is_still_read(client, owner):
    ds = upload(client, owner, b"a;b\nx\ny\n", "one.csv")
    assert ds.status_code == 201, ds.text
    assert [c["name"] for c in ds.json()["columns"]] == ["a;b"]


@pytest.mark.parametrize("algorithm", ["mondrian", "lattice"])
def test_categorical_values_are_released_as_written(client, owner, algorithm):
    """A categorical QI's leaves were its values read as numbers where they parse: '007' was
    released as '7', one category with the records of '7' (and '012' as '12'), though a hierarchy
    leaf only drops an integral number's '.0' (docs/hierarchies.md)."""
    rows = "".join(f"{a},{c}\n" for a, c in zip(range(16), ["007", "7", "012", "+5"] * 4))
    ds = upload(client, owner, f"age,code\n{rows}".encode(), "codes.csv",
                schema={"code": {"type": "categorical"}}).json()
    job = submit(client, owner, "kanonymity", {"k": 3, "quasi_identifiers": ["code"], "algorithm": algorithm},
                 dataset_id=ds["id"]).json()
    runner.execute(job["id"])
    release = client.get(f"/v1/jobs/{job['id']}", headers=auth(owner)).json()["result"]["release_ids"][0]
    raw = client.get(f"/v1/releases/{release}/data", headers=auth(owner), params={"format": "parquet"})
    released = pq.read_table(io.BytesIO(raw.content)).column("code").to_pylist()
    assert sorted(set(released)) == ["+5", "007", "012", "7"], released


WHEN = ["2024-01-31", "2024-01-31T10:00:00", "2024-01-31 10:00", "2024-01-31T10:00:00+02:00",
        "2024-01-31 10:00:00.5", "12:34"]


@pytest.mark.parametrize("content, name", [
    (("".join(f"{c}," for c in ("day", "stamp", "minute", "offset", "fraction")) + "clock\n"
      + ",".join(WHEN) + "\n" + ",".join(WHEN) + "\n").encode(), "when.csv"),
    ("".join(json.dumps({k: v for k, v in zip(("day", "stamp", "minute", "offset", "fraction", "clock"), WHEN)})
             + "\n" for _ in range(2)).encode(), "when.jsonl"),
])
def test_dates_and_times_keep_their_text_as_written(client, owner, content, name):
    """Dates and times are text categories, but the readers parsed them first and Veil wrote
    the parsed value back: 2024-01-31T10:00:00+02:00 came back as '2024-01-31 08:00:00Z' from
    a CSV and '2024-01-31 08:00:00' from JSON Lines (two hours off, its offset gone), a JSON date
    as '2024-01-31 00:00:00', 10:00 as 10:00:00 — and categories or a hierarchy declared as
    the owner wrote the values were refused (roundtrip acceptance check)."""
    names = ["day", "stamp", "minute", "offset", "fraction", "clock"]
    ds = upload(client, owner, content, name)
    assert ds.status_code == 201, ds.text
    assert [(c["name"], c["type"]) for c in ds.json()["columns"]] == [(n, "categorical") for n in names]
    for column, written in zip(names, WHEN):
        assert _column(client, owner, ds.json()["id"], column) == [written, written]
    declared = {n: {"categories": [w]} for n, w in zip(names, WHEN)}
    assert upload(client, owner, content, name, schema=declared).status_code == 201
