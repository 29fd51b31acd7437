"""Datasets through the HTTP API: every format, schema overrides, limits and bad input."""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import statistics
import time
import zipfile
from concurrent.futures import ThreadPoolExecutor
from functools import partial

import pandas as pd
import pytest
from sqlalchemy import text

from app.db import transaction
from tests.support.api import assert_problem, auth, upload


def test_upload_adult_csv_infers_schema_and_hashes_the_bytes(client, owner, adult_path):
    r = upload(client, owner, adult_path, "adult_train.csv")
    assert r.status_code == 201, r.text
    body = r.json()
    assert body["rows"] == 32561 and body["shape"] == "table" and body["format"] == "csv"
    assert body["sha256"] == hashlib.sha256(adult_path.read_bytes()).hexdigest()
    cols = {c["name"]: c for c in body["columns"]}
    assert len(cols) == 15
    assert cols["age"]["type"] == "numeric" and cols["age"]["integer"] is True
    assert cols["workclass"]["type"] == "categorical"
    assert cols["workclass"]["missing"] == 1836  # '?' is read as missing
    assert cols["sex"]["distinct"] == 2
    assert "profile" not in cols["age"]
    again = client.get(f"/v1/datasets/{body['id']}", headers=auth(owner)).json()
    assert again["sha256"] == body["sha256"] and again["rows"] == 32561


def test_tsv_jsonl_parquet_give_the_same_table(client, owner):
    frame = pd.DataFrame({"a": [1, 2, 3], "b": ["x", "y", None], "c": [0.5, 1.5, 2.5]})
    tsv = frame.to_csv(sep="\t", index=False).encode()
    jsonl = frame.to_json(orient="records", lines=True).encode()
    buf = io.BytesIO()
    frame.to_parquet(buf, index=False)
    for data, name in ((tsv, "d.tsv"), (jsonl, "d.jsonl"), (buf.getvalue(), "d.parquet")):
        r = upload(client, owner, data, name)
        assert r.status_code == 201, (name, r.text)
        cols = {c["name"]: c for c in r.json()["columns"]}
        assert r.json()["rows"] == 3
        assert cols["a"]["type"] == "numeric" and cols["b"]["type"] == "categorical"
        assert cols["b"]["missing"] == 1


def test_transaction_file(client, owner):
    data = b"1 2 3\n2 3\n\n5 1 1\n"
    r = upload(client, owner, data, "t.dat")
    assert r.status_code == 201, r.text
    body = r.json()
    assert body["shape"] == "transactions" and body["rows"] == 4
    assert body["columns"][0]["distinct"] == 4  # items 1, 2, 3, 5


def test_schema_override_at_upload(client, owner):
    data = b"age,zip,flag,label\n30,123,yes,a\n40,456,no,b\n"
    schema = {"age": {"role": "quasi_identifier", "bounds": [0, 120]},
              "zip": {"type": "categorical", "role": "quasi_identifier"},
              "flag": {"type": "boolean"}, "label": {"role": "label"}}
    r = upload(client, owner, data, "s.csv", schema=schema)
    assert r.status_code == 201, r.text
    cols = {c["name"]: c for c in r.json()["columns"]}
    assert cols["age"]["bounds"] == [0, 120] and cols["age"]["role"] == "quasi_identifier"
    assert cols["zip"]["type"] == "categorical" and cols["zip"]["distinct"] == 2
    assert cols["flag"]["type"] == "boolean" and cols["label"]["role"] == "label"


@pytest.mark.parametrize("schema, fragment", [
    ({"nope": {"role": "label"}}, "unknown column 'nope'"),
    ({"name": {"type": "numeric"}}, "column 'name': row 1 is not a number"),
    ({"n": {"bounds": [5, 1]}}, "schema field is invalid"),
    ({"name": {"categories": ["x"]}}, "row 2 holds a value outside the declared categories"),
    ({"n": {"role": "label"}, "name": {"role": "label"}}, "only one column may have the role label"),
    ({"n": {"bounds": [0, float("nan")]}}, "schema field is invalid"),
    ({"name": {"categories": []}}, "at least 1 item"),
    ({"name": {"integer": True}}, "column 'name': integer applies to numeric columns only"),
    # a coded column (COIL 2000's attributes are numbers) is inferred numeric: the message says
    # how to declare it categorical, not only that categories do not fit it
    ({"n": {"categories": ["1", "2"]}}, "column 'n' is numeric: categories apply to categorical "
                                        "columns only (declare \"type\": \"categorical\" with them)"),
    ({"name": {"bounds": [0, 1]}}, "column 'name' is categorical: bounds apply to numeric columns "
                                   "only (declare \"type\": \"numeric\" with them)"),
    ([1, 2], "the schema field must be a JSON object"),
])
def test_bad_schema_is_422_naming_the_problem(client, owner, schema, fragment):
    r = upload(client, owner, b"n,name\n1,x\n2,y\n", "b.csv", schema=schema)
    assert_problem(r, 422, fragment)


def test_schema_field_not_json(client, owner):
    r = client.post("/v1/datasets", headers=auth(owner), files={"file": ("a.csv", b"a\n1\n")},
                    data={"schema": "{not json"})
    assert_problem(r, 422, "not valid JSON")


def _zip(*names: str) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        for name in names:
            z.writestr(name, "<x/>")
    return buf.getvalue()


_OLE2 = bytes.fromhex("D0CF11E0A1B11AE1") + bytes(504)  # a legacy .xls (an Office compound file)


@pytest.mark.parametrize("data, name, status, fragment", [
    (b"a,b\n1,2\n3,4,5\n6,7\n", "r.csv", 422, "unparsable row 2: expected 2 fields, found 3"),
    # spreadsheet workbooks were 'compressed uploads are not accepted; upload the uncompressed
    # file' (.xlsx, .ods: zip archives) or 'cannot tell the file's format', then 'not UTF-8
    # text (it looks like UTF-16…)' (.xls) (roundtrip acceptance check)
    (_zip("[Content_Types].xml", "xl/workbook.xml"), "book.xlsx", 415, "a spreadsheet workbook"),
    (_zip("[Content_Types].xml", "xl/workbook.xml"), "book.csv", 415, "save the sheet as CSV UTF-8"),
    (_zip("mimetype", "content.xml"), "book.ods", 415, "a spreadsheet workbook"),
    (_OLE2, "book.xls", 415, "a spreadsheet workbook"),
    (_OLE2, "book.csv", 415, "a spreadsheet workbook"),
    (_zip("data.csv"), "data.zip", 415, "compressed uploads are not accepted"),
    (b"", "e.csv", 422, "empty"),
    (b"\xef\xbb\xbf", "bom.csv", 422, "the uploaded file is empty"),  # was "a header but no rows"
    (b"\r\n\n", "lines.csv", 422, "the uploaded file is empty"),
    (b"a,b\n", "h.csv", 422, "no rows"),
    (b"a,b,c", "h2.csv", 422, "the file has a header but no rows"),
    (b"a,a\n1,2\n", "d.csv", 422, "column 'a' appears more than once"),
    (gzip.compress(b"a\n1\n"), "z.csv.gz", 415, "compressed uploads are not accepted"),
    (b"a\n1\n", "noext", 415, "cannot tell the file's format"),
    (b"{\"a\": [1], \"b\": 2}\n{\"a\": [1, 2], \"b\": 3}\n", "n.jsonl", 422, "nested values"),
    (b"{\"a\": [[1]]}\n", "deep.jsonl", 422, "nested values"),
    (b"{\"a\": 1}\nnot json\n", "n.jsonl", 422, "unparsable JSON Lines"),
    (b"PAR1garbage", "x.parquet", 422, "not a readable Parquet file"),
    (b"a,b\n1,2\ninf,3\n", "i.csv", 422, "column 'a', row 2: an infinite number"),
    ("a,b\n1,2\n3,4\n".encode("utf-16"), "u.csv", 422, "not UTF-8 text (it looks like UTF-16"),
    ("a\tb\n1\t2\n".encode("utf-16-le"), "u.tsv", 422, "not UTF-8 text"),
    (b"a,b\n1,2\n3,-1e309\n", "o.csv", 422, "column 'b', row 2: an infinite number"),
    # what pandas' to_csv and R's write.csv write by default: the row labels under an empty name
    # ('a column has an empty name', naming neither the column nor the cause; roundtrip acceptance check)
    (b",a,b\n0,1,x\n1,2,y\n", "pandas.csv", 422, "column 1 of 3 has an empty name"),
    (b'"","a"\n"1",2\n', "r.csv", 422, "to_csv(index=False)"),
    (b"a,,b\n1,2,3\n", "gap.csv", 422, "column 2 of 3 has an empty name"),
    # Excel's separator hint: read as a header of two columns, the second without a name
    (b"sep=,\na,b\n1,2\n", "excel.csv", 422, "Excel's separator hint"),
    # a spreadsheet's Windows-1252 CSV: named the column only, not the row nor the way out
    ("name,age\nZoe,30\nJosé,40\n".encode("cp1252"), "w.csv", 422,
     "column 'name', row 2 holds text that is not UTF-8 (Windows-1252 or Latin-1?): save the file as UTF-8"),
])
def test_bad_files_are_4xx_naming_the_problem(client, owner, data, name, status, fragment):
    assert_problem(upload(client, owner, data, name), status, fragment)


@pytest.mark.parametrize("data, name, fmt, fragment", [
    (_zip("[Content_Types].xml", "xl/workbook.xml"), "book.xlsx", "csv", "save the sheet as CSV UTF-8"),
    (_zip("mimetype", "content.xml"), "book.ods", "tsv", "a spreadsheet workbook"),
    (_OLE2, "book.xls", "csv", "a spreadsheet workbook"),
    (_OLE2, "book.xls", "transactions", "a spreadsheet workbook"),
    (gzip.compress(b"a\n1\n"), "z.csv", "csv", "compressed uploads are not accepted"),
    (_zip("data.csv"), "data.zip", "jsonl", "compressed uploads are not accepted"),
], ids=["xlsx-csv", "ods-tsv", "xls-csv", "xls-transactions", "gzip-csv", "zip-jsonl"])
def test_a_declared_format_does_not_hide_a_workbook_or_an_archive(client, owner, data, name, fmt, fragment):
    """A `format` field skipped the workbook and archive checks: an .xlsx or .xls sent with
    format=csv was 422 'the file is not UTF-8 text (it looks like UTF-16 or UTF-32, or holds NUL
    bytes)', a gzip file the same — not the 415 that says to save the sheet as CSV UTF-8 or to
    upload the uncompressed file (docs walk)."""
    assert_problem(upload(client, owner, data, name, format=fmt), 415, fragment)


def test_a_header_that_starts_like_bzip2_is_a_table(client, owner):
    """bzip2's signature is 'BZh' and a block size digit: a column named 'BZh_score' is no archive,
    with or without a declared format."""
    for fields in ({}, {"format": "csv"}):
        r = upload(client, owner, b"BZh_score,b\n1,2\n", "s.csv", **fields)
        assert r.status_code == 201, r.text
    assert_problem(upload(client, owner, b"BZh91AY&SY" + bytes(20), "x.csv", format="csv"), 415,
                   "compressed uploads are not accepted")


def test_huge_finite_numbers_and_long_names(client, owner):
    """Values past 1e154 used to overflow the profile's standard deviation (a generic 422 from
    the database); a name over the 300 characters the table holds was the same generic 422."""
    r = upload(client, owner, b"a,b\n1e160,1\n-3e160,2\n1e300,3\n", "big.csv")
    assert r.status_code == 201, r.text
    profile = client.get(f"/v1/datasets/{r.json()['id']}/profile", headers=auth(owner)).json()
    a = next(c for c in profile["columns"] if c["name"] == "a")["profile"]
    assert a["max"] == pytest.approx(1e300) and a["mean"] == pytest.approx((1e160 - 3e160 + 1e300) / 3)
    assert a["std"] == pytest.approx(statistics.stdev([1e160, -3e160, 1e300]))  # exact: fractions
    r = client.post("/v1/datasets", headers=auth(owner), files={"file": ("n.csv", b"a\n1\n2\n")},
                    data={"name": "x" * 301})
    assert_problem(r, 422, "name: at most 300 characters")
    r = client.post("/v1/datasets", headers=auth(owner), files={"file": ("n.csv", b"a\n1\n2\n")},
                    data={"name": "bad\x00name"})
    assert_problem(r, 422, "name: a NUL character")
    long_file = "f" * 400 + ".csv"
    r = upload(client, owner, b"a\n1\n2\n", long_file)
    assert r.status_code == 201 and r.json()["name"] == long_file[:300]


def test_error_messages_never_echo_data(client, owner):
    secret = "SSN-123-45-6789"
    r = upload(client, owner, f"a,b\n1,2\n{secret},x,y\n".encode(), "s.csv")
    assert r.status_code == 422 and secret not in r.text


def test_column_and_cell_limits(client, owner, monkeypatch):
    from app.config import get_settings

    monkeypatch.setattr(get_settings(), "max_columns", 10)
    monkeypatch.setattr(get_settings(), "max_cell_length", 100)
    wide = (",".join(f"c{i}" for i in range(11)) + "\n" + ",".join("1" * 11) + "\n").encode()
    assert_problem(upload(client, owner, wide, "w.csv"), 422, "11 columns; the limit is 10")
    long_cell = b"a,b\n1,x\n2," + b"y" * 101 + b"\n"
    assert_problem(upload(client, owner, long_cell, "l.csv"), 422,
                   "column 'b', row 2: a value is longer than 100 characters")


def test_upload_requires_multipart_and_a_file_field(client, owner):
    r = client.post("/v1/datasets", headers={**auth(owner), "Content-Type": "text/csv"}, content=b"a\n1\n")
    assert_problem(r, 415, "multipart/form-data")
    r = client.post("/v1/datasets", headers=auth(owner), data={"name": "x"}, files={"other": ("a", b"1")})
    assert_problem(r, 422, "no file field named 'file'")


def test_an_upload_field_given_twice_is_refused_not_resolved_silently(client, owner):
    """`name` sent twice in the form stored the last one (found by the fuzzer)."""
    before = client.get("/v1/datasets", headers=auth(owner)).json()["items"]
    r = client.post("/v1/datasets", headers=auth(owner), files=[
        ("file", ("a.csv", b"a\n1\n2\n")), ("name", (None, "first")), ("name", (None, "second"))])
    assert_problem(r, 422, "the field 'name' is given 2 times")
    r = client.post("/v1/datasets", headers=auth(owner), files=[
        ("file", ("a.csv", b"a\n1\n2\n")), ("format", (None, "csv")), ("format", (None, "jsonl"))])
    assert_problem(r, 422, "the field 'format' is given 2 times")
    assert client.get("/v1/datasets", headers=auth(owner)).json()["items"] == before  # nothing stored


def test_idempotent_upload(client, owner):
    data = b"a,b\n1,2\n3,4\n"
    first = upload(client, owner, data, "i.csv", idempotency_key="upload-1")
    second = upload(client, owner, data, "i.csv", idempotency_key="upload-1")
    assert first.status_code == 201 and second.status_code == 200
    assert first.json()["id"] == second.json()["id"]
    other = upload(client, owner, b"a,b\n9,9\n", "i.csv", idempotency_key="upload-1")
    assert_problem(other, 409, "Idempotency-Key")
    # an empty key was taken for no key: a client sending one by mistake got duplicates
    assert_problem(client.post("/v1/datasets", headers={**auth(owner), "Idempotency-Key": ""},
                               files={"file": ("i.csv", io.BytesIO(data))}), 422, "idempotency-key")
    assert_problem(client.post("/v1/jobs", headers={**auth(owner), "Idempotency-Key": ""},
                               json={"method": "risk", "dataset_id": first.json()["id"],
                                     "params": {"quasi_identifiers": ["a"]}}), 422, "idempotency-key")


def test_no_transaction_stays_open_while_an_upload_is_parsed(client, owner, monkeypatch):
    """The parse runs in a child process for up to VEIL_UPLOAD_PARSE_TIME_LIMIT_S; with an
    Idempotency-Key the replay check had opened a transaction that stayed open (a pooled
    connection held, idle in transaction) the whole time."""
    from app.datasets import isolated

    seen = []
    real_encode = isolated.encode

    def idle_in_transaction() -> int:
        with transaction() as s:
            return s.execute(text(
                "SELECT count(*) FROM pg_stat_activity WHERE state LIKE 'idle in transaction%' "
                "AND pid <> pg_backend_pid() AND datname = current_database()")).scalar_one()

    def encode_watched(*args, **kwargs):
        # the fewest over a few looks: a held connection stays idle in transaction the whole
        # parse, while another test's thread can be caught between two statements (a combined
        # run failed once on such a moment)
        counts = []
        for _ in range(5):
            counts.append(idle_in_transaction())
            time.sleep(0.02)
        seen.append(min(counts))
        return real_encode(*args, **kwargs)

    monkeypatch.setattr(isolated, "encode", encode_watched)
    for key in (None, "parse-without-a-transaction"):
        assert upload(client, owner, b"a,b\n1,2\n3,4\n", "p.csv", idempotency_key=key).status_code == 201
    assert seen == [0, 0]


def test_the_upload_body_is_copied_to_disk_off_the_event_loop(client, owner, monkeypatch):
    """The spooled body went to disk in 1 MiB writes on the event loop (up to 8 ms each on a
    loaded disk, every other request of the process waiting); the copy now runs in a worker
    thread, where no event loop is running."""
    import asyncio

    from app.datasets import router as datasets_router

    on_a_loop = []
    real_copy = datasets_router.shutil.copyfileobj

    def copy_watched(*args, **kwargs):
        try:
            asyncio.get_running_loop()
            on_a_loop.append(True)
        except RuntimeError:
            on_a_loop.append(False)
        return real_copy(*args, **kwargs)

    monkeypatch.setattr(datasets_router.shutil, "copyfileobj", copy_watched)
    body = b"a,b\n" + b"".join(b"%d,x%d\n" % (i, i % 7) for i in range(300_000))  # > 1 MiB: spooled to disk
    created = upload(client, owner, body, "big.csv")
    assert created.status_code == 201, created.text
    assert created.json()["rows"] == 300_000
    assert on_a_loop == [False]


def test_list_is_paginated(client, make_key):
    h = make_key("owner")
    ids = [upload(client, h, f"a\n{i}\n".encode(), f"{i}.csv").json()["id"] for i in range(5)]
    seen, cursor = [], None
    while True:
        params = {"limit": 2, **({"cursor": cursor} if cursor else {})}
        page = client.get("/v1/datasets", headers=auth(h), params=params).json()
        seen += [d["id"] for d in page["items"]]
        cursor = page["next"]
        if not cursor:
            break
    assert seen == ids[::-1]


def test_profile_update_schema_and_delete(client, owner, make_key):
    ds = upload(client, owner, b"x,y\n1,a\n2,b\n3,a\n", "p.csv").json()
    prof = client.get(f"/v1/datasets/{ds['id']}/profile", headers=auth(owner)).json()
    xcol = next(c for c in prof["columns"] if c["name"] == "x")
    assert xcol["profile"]["min"] == 1 and xcol["profile"]["max"] == 3
    upd = client.put(f"/v1/datasets/{ds['id']}/schema", headers=auth(owner),
                     json={"columns": {"x": {"type": "categorical"}, "y": {"role": "label"}}})
    assert upd.status_code == 200, upd.text
    cols = {c["name"]: c for c in upd.json()["columns"]}
    assert cols["x"]["type"] == "categorical" and cols["y"]["role"] == "label"
    assert_problem(client.put(f"/v1/datasets/{ds['id']}/schema", headers=auth(owner),
                              json={"columns": {"zz": {"role": "label"}}}), 422, "unknown column 'zz'")
    assert client.delete(f"/v1/datasets/{ds['id']}", headers=auth(owner)).status_code == 204
    gone = client.get(f"/v1/datasets/{ds['id']}", headers=auth(owner)).json()
    assert gone["deleted"] is True
    assert_problem(client.get(f"/v1/datasets/{ds['id']}/profile", headers=auth(owner)), 404, "deleted")
    from sqlalchemy import text

    from app.db import transaction

    with transaction() as s:
        blob = s.execute(text("SELECT blob_id FROM datasets WHERE id = :i"), {"i": ds["id"]}).scalar()
        assert blob is None  # the data is purged; the row and audit stay


def test_schema_put_takes_the_bare_map_like_the_upload_field(client, owner):
    ds = upload(client, owner, b"age,job\n30,a\n40,b\n", "m.csv").json()
    url = f"/v1/datasets/{ds['id']}/schema"
    bare = client.put(url, headers=auth(owner), json={"age": {"bounds": [17, 90]}, "job": {"role": "label"}})
    assert bare.status_code == 200, bare.text
    cols = {c["name"]: c for c in bare.json()["columns"]}
    assert cols["age"]["bounds"] == [17, 90] and cols["job"]["role"] == "label"
    wrapped = client.put(url, headers=auth(owner), json={"columns": {"age": {"bounds": [0, 120]}}})
    assert {c["name"]: c for c in wrapped.json()["columns"]}["age"]["bounds"] == [0, 120]
    # a bad bare map is located in the caller's form, not pydantic's wrapped one
    r = client.put(url, headers=auth(owner), json={"age": {"bounds": [5, 1]}})
    body = assert_problem(r, 422, "the schema is invalid: age: Value error, bounds [5, 1] need lo < hi")
    assert body["errors"][0]["loc"] == ["age"]
    r = client.put(url, headers=auth(owner), json={"columns": {"age": {"bound": [0, 1]}}})
    assert_problem(r, 422, "columns.age.bound: Extra inputs are not permitted")
    assert_problem(client.put(url, headers=auth(owner), json=[1]), 422, "the schema must be a JSON object")
    json_h = {**auth(owner), "Content-Type": "application/json"}
    assert_problem(client.put(url, headers=json_h, content=b"{nope"), 422, "not valid JSON (line 1, column 2)")
    assert_problem(client.put(url, headers=json_h, content=b"\xff\xfe"), 422, "not valid JSON")
    assert_problem(client.put(url, headers=auth(owner)), 422, "the request body is empty")
    assert_problem(client.put(url, content=b"{nope"), 401)  # the key is checked before the body
    after = client.get(f"/v1/datasets/{ds['id']}", headers=auth(owner)).json()
    assert {c["name"]: c for c in after["columns"]}["age"]["bounds"] == [0, 120]  # refusals change nothing


def test_a_column_name_with_a_slash_takes_a_hierarchy(client, owner):
    """A column named 'a/b' was accepted at upload, but PUT …/hierarchies/a%2Fb answered 404
    'no resource' (the decoded slash split the path; the #7 acceptance check)."""
    ds = upload(client, owner, b"a/b,c\nu,1\nv,2\nw,3\n", "slash.csv").json()
    url = f"/v1/datasets/{ds['id']}/hierarchies/a%2Fb"
    hier = "u;uv;*\nv;uv;*\nw;w;*\n"
    r = client.put(url, headers={**auth(owner), "Content-Type": "text/csv"}, content=hier)
    assert r.status_code == 200, r.text
    assert r.json()["column"] == "a/b"
    assert client.get(url, headers=auth(owner)).text == hier


def test_a_column_name_with_a_line_break_takes_a_hierarchy_and_the_key_is_checked_first(client, owner):
    """Starlette's path convertor stops at a line break: PUT …/hierarchies/a%0Ab was a 404 'no
    resource', with or without a key (make fuzz: 404 where 401 was due)."""
    ds = upload(client, owner, b'"a\nb",c\nu,1\nv,2\n', "break.csv").json()
    assert [c["name"] for c in ds["columns"]] == ["a\nb", "c"]
    url = f"/v1/datasets/{ds['id']}/hierarchies/a%0Ab"
    r = client.put(url, headers={**auth(owner), "Content-Type": "text/csv"}, content="u;*\nv;*\n")
    assert r.status_code == 200, r.text
    assert r.json()["column"] == "a\nb"
    for verb in ("PUT", "GET", "DELETE"):
        assert_problem(client.request(verb, url, content=b"u;*\n"), 401)
    assert client.delete(url, headers=auth(owner)).status_code == 204


def test_a_hierarchy_upload_racing_a_dataset_delete_leaves_no_hierarchy(client, owner):
    """A hierarchy lists the column's values: one stored while the dataset was being deleted would
    outlive the purge. The upload waits for the delete, then answers 404."""
    ds = upload(client, owner, b"v\n1\n2\n", "race.csv").json()
    put = partial(client.put, f"/v1/datasets/{ds['id']}/hierarchies/v", content=b"1;*\n2;*\n",
                  headers={**auth(owner), "Content-Type": "text/csv"})
    with ThreadPoolExecutor(1) as pool:
        with transaction() as s:  # a delete in progress: the row locked and marked, not committed
            s.execute(text("SELECT id FROM datasets WHERE id = :i FOR UPDATE"), {"i": ds["id"]})
            s.execute(text("UPDATE datasets SET deleted_at = now() WHERE id = :i"), {"i": ds["id"]})
            answer = pool.submit(put)
            deadline = time.monotonic() + 30
            while not _someone_waits_on_a_lock():
                assert time.monotonic() < deadline and not answer.done(), "the upload did not wait"
                time.sleep(0.05)
        assert_problem(answer.result(), 404, "deleted")
    with transaction() as s:
        left = s.execute(text("SELECT count(*) FROM hierarchies WHERE dataset_id = :i"), {"i": ds["id"]})
        assert left.scalar_one() == 0


def _someone_waits_on_a_lock() -> bool:
    with transaction() as s:
        return s.execute(text("SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' "
                              "AND datname = current_database()")).scalar_one() > 0


def test_hierarchy_upload_validates_against_the_data(client, owner, make_key, adult_path):
    ds = upload(client, owner, adult_path, "adult.csv").json()
    hier = (adult_path.parent / "hierarchies" / "race.csv").read_text()
    r = client.put(f"/v1/datasets/{ds['id']}/hierarchies/race", headers=auth(owner), content=hier)
    assert r.status_code == 200, r.text
    assert r.json()["levels"] >= 2
    incomplete = "\n".join(l for l in hier.splitlines() if not l.startswith("White"))
    r = client.put(f"/v1/datasets/{ds['id']}/hierarchies/race", headers=auth(owner), content=incomplete)
    assert_problem(r, 422, "White")
    assert_problem(client.put(f"/v1/datasets/{ds['id']}/hierarchies/nope", headers=auth(owner),
                              content=hier), 404, "no column 'nope'")
    assert "race" in client.get(f"/v1/datasets/{ds['id']}", headers=auth(owner)).json()["hierarchies"]

    # read back as uploaded (the refused upload above left it unchanged), owners only, audited
    url = f"/v1/datasets/{ds['id']}/hierarchies/race"
    got = client.get(url, headers=auth(owner))
    assert got.status_code == 200 and got.headers["content-type"].startswith("text/csv")
    assert got.text == hier
    assert_problem(client.get(f"/v1/datasets/{ds['id']}/hierarchies/sex", headers=auth(owner)), 404,
                   "no hierarchy for column 'sex'")
    assert_problem(client.get(url, headers=auth(make_key("analyst", tenant=owner["X-Tenant"]))), 403)
    events = client.get(f"/v1/audit?dataset_id={ds['id']}", headers=auth(owner)).json()["items"]
    assert "dataset.hierarchy_downloaded" in {e["action"] for e in events}

    # curl -F / -d send a form, not the file: 415 says how to send it
    r = client.put(url, headers=auth(owner), files={"file": ("race.csv", hier.encode())})
    assert_problem(r, 415, "--data-binary")
    r = client.put(url, headers={**auth(owner), "Content-Type": "application/x-www-form-urlencoded"},
                   content=hier.replace("\n", ""))
    assert_problem(r, 415, "--data-binary")
    assert client.get(url, headers=auth(owner)).text == hier


def test_synthetic_bank_customers_as_a_dataset(client, owner):
    r = client.post("/v1/datasets/synthetic", headers=auth(owner), json={"rows": 2000, "seed": 3})
    assert r.status_code == 201, r.text
    body = r.json()
    cols = {c["name"]: c for c in body["columns"]}
    assert body["rows"] == 2000 and cols["customer_value"]["role"] == "label"
    assert cols["customer_value"]["distinct"] == 3
    again = client.post("/v1/datasets/synthetic", headers=auth(owner), json={"rows": 2000, "seed": 3}).json()
    assert again["sha256"] == body["sha256"]  # the generator is deterministic in its seed
    assert_problem(client.post("/v1/datasets/synthetic", headers=auth(owner), json={"rows": 1}), 422)


def test_transactions_download_holds_the_same_items_in_every_format(client, owner):
    """The Parquet download of a transaction set held the stored item codes (0, 1, …) and
    the labels only in the file metadata: item '20' read as 1 (found by the API audit on a
    mask release of mushroom.dat; releases and datasets share the encoder)."""
    import io as _io

    import pyarrow.parquet as pq

    ds = upload(client, owner, b"20 10 30\n30\n\n10 40\n", "codes.dat").json()
    url = f"/v1/datasets/{ds['id']}/data"
    expected = [["10", "20", "30"], ["30"], [], ["10", "40"]]
    parquet = client.get(url, headers=auth(owner), params={"format": "parquet"})
    assert parquet.status_code == 200 and parquet.headers["content-type"] == "application/vnd.apache.parquet"
    table = pq.read_table(_io.BytesIO(parquet.content))
    assert table.column_names == ["items"] and table.num_rows == ds["rows"]
    assert [sorted(t) for t in table.column("items").to_pylist()] == expected
    csv = client.get(url, headers=auth(owner), params={"format": "csv"}).text.splitlines()
    assert [sorted(line.strip('"').split()) for line in csv[1:]] == expected


def test_jsonl_download_is_one_json_object_per_line(client, owner):
    """pandas' to_json(lines=True) ends with a newline and the encoder added another, so every
    JSON Lines download (datasets and releases share it) held an empty line after each batch of
    50,000 rows, which a line-by-line JSON reader rejects (found by the #4 acceptance check on a
    mask release of mushroom.dat)."""
    for content, name in ((b"20 10 30\n30\n\n10 40\n", "codes.dat"), (b"a,b\n1,x\n2,y\n", "t.csv")):
        ds = upload(client, owner, content, name).json()
        body = client.get(f"/v1/datasets/{ds['id']}/data", headers=auth(owner),
                          params={"format": "jsonl"}).text
        assert body.endswith("\n") and not body.endswith("\n\n")
        lines = body.split("\n")[:-1]
        assert len(lines) == ds["rows"]
        assert all(isinstance(json.loads(line), dict) for line in lines)


def test_jsonl_download_keeps_every_float_exactly(client, owner):
    """pandas' to_json kept 10 decimal places: 1.2345e-11 was downloaded as 0.0 and
    0.30000000000000004 as 0.3, while CSV and Parquet kept them (#7 acceptance check)."""
    values = [1.2345e-11, 0.30000000000000004, 123456789.12345679, -2.5e-300, None]
    content = ("x,c\n" + "".join(f"{'' if v is None else repr(v)},{c}\n" for v, c in zip(values, "abcde"))).encode()
    ds = upload(client, owner, content, "small.csv").json()
    body = client.get(f"/v1/datasets/{ds['id']}/data", headers=auth(owner), params={"format": "jsonl"}).text
    assert [json.loads(line)["x"] for line in body.splitlines()] == values


def test_transaction_downloads_keep_labels_with_spaces_apart():
    """Labels were joined by spaces in CSV and JSON Lines, so a one-hot item 'city=New York'
    could not be told from two items (found by the #4 acceptance check)."""
    import numpy as np

    from app import codec
    from app.privacy.data import TransactionData
    from app.downloads import encode_table

    def download(labels, fmt):
        tx = TransactionData(indptr=np.array([0, 2, 2, 3]), indices=np.array([0, 1, 1], dtype=np.int32),
                             labels=labels)
        return b"".join(encode_table(codec.transactions_to_parquet(tx), "transactions", fmt)).decode()

    spaced = ("city=New York", "kind=a b")
    assert [json.loads(line)["items"] for line in download(spaced, "jsonl").splitlines()] == \
        [list(spaced), [], ["kind=a b"]]
    rows = pd.read_csv(io.StringIO(download(spaced, "csv")))["items"]
    assert [json.loads(cell) for cell in rows] == [list(spaced), [], ["kind=a b"]]
    plain = pd.read_csv(io.StringIO(download(("1", "2"), "csv")), keep_default_na=False)["items"]
    assert list(plain) == ["1 2", "", "2"]  # FIMI's convention where it is unambiguous


def test_a_declared_domain_can_be_withdrawn_and_goes_with_its_type(client, owner):
    """A bounded numeric column could not become categorical ('bounds apply to numeric columns
    only': the old bounds were kept) and `"bounds": null` did not clear them (lifecycle
    acceptance check)."""
    ds = upload(client, owner, b"x,c\n1,a\n2,b\n3,a\n", "dom.csv",
                schema={"x": {"bounds": [0, 10]}, "c": {"categories": ["a", "b", "z"]}}).json()
    url = f"/v1/datasets/{ds['id']}/schema"

    def column(body, name):
        r = client.put(url, headers=auth(owner), json=body)
        assert r.status_code == 200, r.text
        return next(c for c in r.json()["columns"] if c["name"] == name)

    assert column({"x": {"bounds": None}}, "x")["bounds"] is None
    assert column({"x": {"bounds": [0, 5]}}, "x")["bounds"] == [0, 5]
    moved = column({"x": {"type": "categorical"}}, "x")
    assert moved["type"] == "categorical" and moved["bounds"] is None
    assert column({"c": {"categories": None}}, "c")["categories"] is None
    assert column({"c": {"role": "sensitive"}}, "c")["categories"] is None  # absent: unchanged
    assert column({"x": {"type": "numeric"}}, "x")["bounds"] is None


def test_the_list_shows_summaries_with_the_column_count(client, make_key):
    """A 2,000-column dataset was ~350 KB in the list (every column's description): a page of
    20 such was 7.3 MB (scale acceptance check). The list counts columns; the dataset has them."""
    headers = make_key("owner")
    wide = ",".join(f"c{i}" for i in range(300)).encode() + b"\n" + b",".join(b"1" for _ in range(300)) + b"\n"
    ds = upload(client, headers, wide, "wide.csv").json()
    items = client.get("/v1/datasets", headers=auth(headers)).json()["items"]
    assert [i["id"] for i in items] == [ds["id"]]
    assert items[0]["column_count"] == 300 and "columns" not in items[0]
    assert {k: v for k, v in ds.items() if k != "columns"} == items[0]
    full = client.get(f"/v1/datasets/{ds['id']}", headers=auth(headers)).json()
    assert full["column_count"] == 300 and len(full["columns"]) == 300


def test_comma_separated_baskets_upload_as_transactions(client, make_key):
    """Market-basket exports (Groceries: 'whole milk,rolls/buns') were read as a table with a
    header made of the first basket; format=baskets reads one basket per line, items split at
    commas and trimmed (items keep their inner spaces)."""
    headers = make_key("owner")
    text = b"whole milk, rolls/buns ,yogurt\ncitrus fruit,semi-finished bread\nwhole milk,yogurt\nwhole milk\n"
    ds = upload(client, headers, text, "groceries.csv", format="baskets").json()
    assert ds["shape"] == "transactions" and ds["format"] == "baskets" and ds["rows"] == 4
    lines = client.get(f"/v1/datasets/{ds['id']}/data", params={"format": "jsonl"}, headers=auth(headers)).text
    assert [json.loads(line)["items"] for line in lines.splitlines()] == [
        ["rolls/buns", "whole milk", "yogurt"], ["citrus fruit", "semi-finished bread"],
        ["whole milk", "yogurt"], ["whole milk"]]
    # the name alone still means a table: ragged rows, and the answer points at the format
    assert_problem(upload(client, headers, text, "groceries.csv"), 422,
                   "unparsable row 1: expected 3 fields, found 2 (market baskets", "send format=baskets")


def test_comma_separated_baskets_sent_as_a_fimi_file_are_refused_with_the_format_to_use(client, make_key):
    """A .dat file whose lines are '1,2,3' became one item '1,2,3' per transaction, without a
    word (rrit acceptance run): FIMI separates items by spaces. Every line holding a comma is
    refused, pointing at format=baskets; a line without one keeps the file a FIMI file."""
    headers = make_key("owner")
    assert_problem(upload(client, headers, b"1,2,3\n2,3\n\n1,3\n", "baskets.dat"), 422,
                   "every transaction holds a comma", "format=baskets")
    ok = upload(client, headers, b"1,2 3\n4 5\n", "mixed.dat")
    assert ok.status_code == 201, ok.text
    assert upload(client, headers, b"1,2,3\n2,3\n", "b.txt", format="baskets").json()["rows"] == 2


@pytest.mark.parametrize(("content", "name", "fmt", "rows"), [
    (b"\xef\xbb\xbf1 2\n1 3\n", "bom.dat", None, [["1", "2"], ["1", "3"]]),
    (b"\xef\xbb\xbfwhole milk,bread\nwhole milk\n", "bom.csv", "baskets", [["bread", "whole milk"], ["whole milk"]]),
])
def test_a_byte_order_mark_is_not_part_of_the_first_item(client, owner, content, name, fmt, rows):
    """Windows editors save UTF-8 with a byte-order mark: it was kept in the first item of the
    file ('\\ufeff1' beside '1', two items that print the same; acceptance check, fimi)."""
    form = {"format": fmt} if fmt else {}
    ds = upload(client, owner, content, name, **form).json()
    assert ds["columns"][0]["distinct"] == len({item for row in rows for item in row}), ds
    lines = client.get(f"/v1/datasets/{ds['id']}/data", params={"format": "jsonl"}, headers=auth(owner)).text
    assert [json.loads(line)["items"] for line in lines.splitlines()] == rows


@pytest.mark.parametrize("fmt", ["parquet", "jsonl"])
def test_a_transaction_download_uploads_again_as_the_same_transactions(client, owner, fmt):
    """No download of a transaction set read back as one: Parquet and JSON Lines lists were
    'nested values' (422), and baskets split labels at their commas (fimi acceptance check).
    A single column of item lists is a transaction set, whatever its labels hold."""
    rows = [["bread, sliced", "whole milk"], [], ["whole milk"], ["eggs (12)", "bread, sliced", "x y"]]
    body = "".join(json.dumps({"items": r}) + "\n" for r in rows).encode()
    first = upload(client, owner, body, "baskets.jsonl").json()
    assert first["shape"] == "transactions" and first["rows"] == 4, first
    download = client.get(f"/v1/datasets/{first['id']}/data", headers=auth(owner), params={"format": fmt})
    again = upload(client, owner, download.content, f"again.{fmt}").json()
    assert again["shape"] == "transactions" and again["columns"][0]["distinct"] == 4, again
    lines = client.get(f"/v1/datasets/{again['id']}/data", params={"format": "jsonl"}, headers=auth(owner)).text
    assert [sorted(json.loads(line)["items"]) for line in lines.splitlines()] == [sorted(r) for r in rows]


def test_lists_of_integer_items_and_null_lists_read_as_transactions(client, owner):
    body = b'{"items": [20, 10]}\n{"items": null}\n{"items": [10, null, 30]}\n'
    ds = upload(client, owner, body, "codes.jsonl").json()
    lines = client.get(f"/v1/datasets/{ds['id']}/data", params={"format": "jsonl"}, headers=auth(owner)).text
    assert [json.loads(line)["items"] for line in lines.splitlines()] == [["10", "20"], [], ["10", "30"]]


def test_a_list_column_beside_others_is_still_refused_by_name(client, owner):
    r = upload(client, owner, b'{"items": ["a"], "n": 1}\n', "mixed.jsonl")
    assert_problem(r, 422, "'items' holds nested values", "a single key whose values are lists")


def test_a_hierarchy_that_misses_many_values_is_refused_naming_every_one(client, owner):
    """Issue #6: the validation lists every data value the hierarchy misses. The message names
    20 and counts the rest (25 missing: '(and 5 more)', the #6 acceptance check); the 422's
    errors list names each, and each node with two parents."""
    values = [f"v{i:02d}" for i in range(30)]
    ds = upload(client, owner, ("c\n" + "\n".join(values) + "\n").encode(), "many.csv").json()
    hier = "".join(f"{v};g;*\n" for v in values[:5]) + "v00;h;*\n"
    r = client.put(f"/v1/datasets/{ds['id']}/hierarchies/c", headers={**auth(owner), "Content-Type": "text/csv"},
                   content=hier)
    body = assert_problem(r, 422, "25 data value(s) missing", "(and 5 more)", "errors names every value")
    missing = [e for e in body["errors"] if e["type"] == "hierarchy_missing_value"]
    assert [e["msg"] for e in missing] == [f"data value {v!r} is missing from the hierarchy" for v in values[5:]]
    assert all(e["loc"] == ["hierarchy", "level_0"] for e in missing)
    (two,) = [e for e in body["errors"] if e["type"] == "hierarchy_two_parents"]
    assert two["msg"] == "value 'v00' at level 0 has 2 parents at level 1: 'g', 'h'"


def test_a_tab_separated_table_named_txt_is_not_read_as_transactions_without_a_word(client, make_key):
    """A spreadsheet's 'Text (Tab delimited)' export is a .txt file: it was read as a FIMI
    transaction file, its header a transaction and every cell an item ('New' and 'York' apart),
    answered 201 (roundtrip acceptance check). A .txt or .dat file whose every line holds the
    same number of tab-separated fields is refused pointing at format=tsv; declared
    format=transactions reads it as before, and tab-separated transactions of varying lengths
    still read as transactions."""
    headers = make_key("owner")
    table = "\ufeffname\tage\tcity\r\nZoe\t30\tNew York\r\nJosé\t40\tParis\r\n".encode()
    for name in ("export.txt", "export.dat"):
        assert_problem(upload(client, headers, table, name), 422, "tab-separated", "format=tsv",
                       "format=transactions")
    ds = upload(client, headers, table, "export.txt", format="tsv").json()
    assert [c["name"] for c in ds["columns"]] == ["name", "age", "city"] and ds["rows"] == 2
    assert upload(client, headers, table, "export.txt", format="transactions").json()["shape"] == "transactions"
    ragged = upload(client, headers, b"1\t2\t3\n4\t5\n6\t7\t8\t9\n", "items.txt").json()
    assert (ragged["shape"], ragged["rows"]) == ("transactions", 3)
