"""A dataset or a release downloaded (CSV, JSON Lines, Parquet) and uploaded again keeps its
column types and values (roundtrip3 acceptance check). An integer column with missing cells
was stored as float64: its Parquet download held doubles (pandas read 34.0 and NaN) and its
JSON Lines 34.0; a float column whose values are all whole was written 1, 2 in CSV, so the
re-upload stored integers where the original held floats."""

from __future__ import annotations

import io
import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.support.api import auth, submit, upload, wait_job

CSV = (b"id,age,score,frac,city\n"
       b"1,34,1.0,0.5,a\n"
       b"2,,2.0,1.25,b\n"
       b"3,51,3.0,,a\n"
       b"4,28,4.0,2.0,b\n"
       b"5,,5.0,3.5,a\n"
       b"6,45,6.0,0.25,b\n")
TYPES = {"id": pa.int64(), "age": pa.int64(), "score": pa.float64(), "frac": pa.float64()}
FORMATS = ("csv", "jsonl", "parquet")
INFERRED = ("name", "type", "integer", "missing", "distinct", "inferred")


@pytest.fixture(scope="module")
def owner_key(make_key, workers):
    return make_key("owner")


@pytest.fixture(scope="module")
def dataset(client, owner_key) -> dict:
    r = upload(client, owner_key, CSV, "types.csv")
    assert r.status_code == 201, r.text
    return r.json()


def _download(client, key, path: str, fmt: str) -> bytes:
    r = client.get(f"{path}/data", headers=auth(key), params={"format": fmt})
    assert r.status_code == 200, r.text
    return r.content


def _table(client, key, path: str) -> pa.Table:
    return pq.read_table(io.BytesIO(_download(client, key, path, "parquet")))


def _inferred(columns: list[dict]) -> list[dict]:
    return [{k: c[k] for k in INFERRED} for c in columns]


def _numbers(table: pa.Table) -> dict:
    return {n: (table.schema.field(n).type, table.column(n).to_pylist()) for n in TYPES}


def test_a_dataset_stores_integers_with_missing_cells_as_integers(client, owner_key, dataset):
    table = _table(client, owner_key, f"/v1/datasets/{dataset['id']}")
    assert {n: table.schema.field(n).type for n in TYPES} == TYPES
    assert table.column("age").to_pylist() == [34, None, 51, 28, None, 45]
    cols = {c["name"]: c for c in dataset["columns"]}
    assert cols["age"]["integer"] and cols["age"]["missing"] == 2 and cols["score"]["integer"]
    lines = _download(client, owner_key, f"/v1/datasets/{dataset['id']}", "csv").decode().splitlines()
    assert lines[1:3] == ['1,34,1.0,0.5,"a"', '2,,2.0,1.25,"b"']  # score's 1.0 reads back as a float
    jsonl = [json.loads(line) for line in _download(client, owner_key, f"/v1/datasets/{dataset['id']}",
                                                     "jsonl").splitlines()]
    assert [r["age"] for r in jsonl] == [34, None, 51, 28, None, 45]
    assert all(type(r["age"]) is int for r in jsonl if r["age"] is not None)
    assert all(type(r["score"]) is float for r in jsonl)


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_dataset_downloaded_and_uploaded_again_keeps_types_and_values(client, owner_key, dataset, fmt):
    path = f"/v1/datasets/{dataset['id']}"
    again = upload(client, owner_key, _download(client, owner_key, path, fmt), f"again.{fmt}")
    assert again.status_code == 201, again.text
    assert _inferred(again.json()["columns"]) == _inferred(dataset["columns"])
    assert _numbers(_table(client, owner_key, f"/v1/datasets/{again.json()['id']}")) == \
        _numbers(_table(client, owner_key, path))


@pytest.fixture(scope="module")
def releases(client, owner_key, dataset) -> dict[str, dict]:
    """Releases that publish the numeric columns as they are: errph (it randomizes the
    categorical ones) and kanonymity (columns outside the quasi-identifiers)."""
    out = {}
    for method, params in (("errph", {"p0": 0.5}),
                           ("kanonymity", {"k": 2, "quasi_identifiers": ["city"]})):
        job = submit(client, owner_key, method, params, dataset_id=dataset["id"])
        assert job.status_code == 202, job.text
        done = wait_job(client, owner_key, job.json()["id"])
        assert done["status"] == "succeeded", done
        release_id = done["result"]["release_ids"][0]
        out[method] = client.get(f"/v1/releases/{release_id}", headers=auth(owner_key)).json()
    return out


@pytest.mark.parametrize("method", ["errph", "kanonymity"])
def test_a_release_keeps_the_datasets_integer_columns(client, owner_key, dataset, releases, method):
    release = releases[method]
    table = _table(client, owner_key, f"/v1/releases/{release['id']}")
    assert table.schema.field("age").type == pa.int64()
    assert _numbers(table) == _numbers(_table(client, owner_key, f"/v1/datasets/{dataset['id']}"))


@pytest.mark.parametrize("method", ["errph", "kanonymity"])
@pytest.mark.parametrize("fmt", FORMATS)
def test_a_release_downloaded_and_uploaded_again_keeps_types_and_values(client, owner_key, releases, method, fmt):
    release = releases[method]
    path = f"/v1/releases/{release['id']}"
    again = upload(client, owner_key, _download(client, owner_key, path, fmt), f"again.{fmt}")
    assert again.status_code == 201, again.text
    numeric = {c["name"]: (c["type"], c["integer"], c["missing"]) for c in again.json()["columns"] if c["name"] in TYPES}
    assert numeric == {c["name"]: (c["type"], c["integer"], c["missing"]) for c in release["columns"]
                       if c["name"] in TYPES}
    assert _numbers(_table(client, owner_key, f"/v1/datasets/{again.json()['id']}")) == \
        _numbers(_table(client, owner_key, path))


@pytest.mark.parametrize("method, params", [
    ("trr", {}),  # a·x + b of every numeric cell, the missing ones kept missing
    ("mst", {"epsilon": 1, "columns": ["age", "city"], "bounds": {"age": [17, 90]},
             "categories": {"city": ["a", "b"]}}),
])
def test_methods_read_an_integer_column_with_missing_cells(client, owner_key, dataset, method, params):
    job = submit(client, owner_key, method, params, dataset_id=dataset["id"])
    assert job.status_code == 202, job.text
    done = wait_job(client, owner_key, job.json()["id"])
    assert done["status"] == "succeeded", done


def test_a_hierarchy_is_built_on_an_integer_column_with_missing_cells(client, owner_key, dataset):
    r = client.post(f"/v1/datasets/{dataset['id']}/hierarchies/age/build", headers=auth(owner_key),
                    json={"builder": "intervals", "widths": [10, 20], "lower": 20})
    assert r.status_code in (200, 201), r.text


def test_the_declared_schema_travels_beside_the_file(client, owner_key):
    """A file holds the data, not the owner's declarations (roles, bounds, categories, a declared
    integer flag): a re-upload infers them. The source's columns, less the facts they list as
    inferred, are the upload's schema field that carries them (the jq line in
    docs/architecture.md, Downloads)."""
    declared = {"age": {"bounds": [0, 100], "role": "quasi_identifier"},
                "score": {"integer": False, "bounds": [0, 10]}, "city": {"categories": ["a", "b", "c"]}}
    source = upload(client, owner_key, CSV, "declared.csv", schema=declared).json()
    csv = _download(client, owner_key, f"/v1/datasets/{source['id']}", "csv")
    plain = upload(client, owner_key, csv, "plain.csv").json()
    assert {c["name"]: c["integer"] for c in plain["columns"]}["score"] is True  # read from the values
    carried = {c["name"]: {k: c[k] for k in ("role", "bounds", "categories", "type", "integer")
                           if k not in c["inferred"]} for c in source["columns"]}
    again = upload(client, owner_key, csv, "again.csv", schema=carried)
    assert again.status_code == 201, again.text
    facts = ("name", "type", "role", "bounds", "categories", "integer", "inferred", "missing")
    assert [{k: c[k] for k in facts} for c in again.json()["columns"]] == \
        [{k: c[k] for k in facts} for c in source["columns"]]


def test_a_column_re_coded_to_numeric_from_integer_text_is_stored_as_integers(client, owner_key):
    """PUT …/schema from categorical to numeric: codes written as integers are stored as
    integers (as an upload stores them), so the CSV gives 34 back, not 34.0; text with a point
    stays float."""
    ds = upload(client, owner_key, CSV, "recode.csv", schema={"age": {"type": "categorical"},
                                                               "score": {"type": "categorical"}}).json()
    path = f"/v1/datasets/{ds['id']}"
    r = client.put(f"{path}/schema", headers=auth(owner_key),
                   json={"age": {"type": "numeric"}, "score": {"type": "numeric"}, "id": {"type": "categorical"}})
    assert r.status_code == 200, r.text
    r = client.put(f"{path}/schema", headers=auth(owner_key), json={"id": {"type": "numeric"}})
    assert r.status_code == 200, r.text
    plain = upload(client, owner_key, CSV, "plain.csv").json()
    assert _numbers(_table(client, owner_key, path)) == _numbers(_table(client, owner_key, f"/v1/datasets/{plain['id']}"))
    assert _download(client, owner_key, path, "csv").decode().splitlines()[1] == '1,34,1.0,0.5,"a"'
