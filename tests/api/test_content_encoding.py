"""A request body sent with Content-Encoding (the whole body compressed, as HTTP clients do)
is refused 415 naming the coding: it was never decoded, so the upload answered 422 "the
request body cannot be parsed: Invalid multipart data" and a job "There was an error parsing
the body" (#7 acceptance check; a gzip file inside an uncompressed body was already a 415)."""

from __future__ import annotations

import gzip
import json

import pytest

from tests.support.api import assert_problem, auth


def _multipart(boundary: str, data: bytes) -> bytes:
    return (f"--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"d.csv\"\r\n"
            f"Content-Type: text/csv\r\n\r\n").encode() + data + f"\r\n--{boundary}--\r\n".encode()


@pytest.mark.parametrize("coding", ["gzip", "deflate", "br", " GZIP "])
def test_a_compressed_upload_body_is_refused_naming_the_coding(client, owner, coding):
    body = gzip.compress(_multipart("b0undary", b"a,b\n1,2\n"))
    r = client.post("/v1/datasets", content=body, headers={
        **auth(owner), "Content-Type": "multipart/form-data; boundary=b0undary", "Content-Encoding": coding})
    assert_problem(r, 415, "compressed uploads are not accepted", f"Content-Encoding '{coding.strip().lower()}'")


def test_a_compressed_json_body_is_refused_naming_the_coding(client, owner):
    body = gzip.compress(json.dumps({"method": "errph", "params": {}}).encode())
    r = client.post("/v1/jobs", content=body, headers={
        **auth(owner), "Content-Type": "application/json", "Content-Encoding": "gzip"})
    assert_problem(r, 415, "Content-Encoding 'gzip'", "uncompressed")


def test_identity_coding_is_the_uncompressed_body(client, owner):
    r = client.post("/v1/datasets", content=_multipart("b0undary", b"a,b\n1,2\n"), headers={
        **auth(owner), "Content-Type": "multipart/form-data; boundary=b0undary", "Content-Encoding": "identity"})
    assert r.status_code == 201, r.text


def test_the_415_is_declared_for_every_operation_with_a_body(client):
    doc = client.get("/openapi.json").json()
    with_body = [(m, p) for p, ops in doc["paths"].items() for m, op in ops.items() if "requestBody" in op]
    assert with_body
    assert [(m, p) for m, p in with_body if "415" not in doc["paths"][p][m]["responses"]] == []
