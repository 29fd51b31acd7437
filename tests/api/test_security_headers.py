"""Security headers (security acceptance check): no answer said X-Content-Type-Options or
Cache-Control, so a browser could sniff a CSV download of uploaded text into HTML, and raw
data, releases and keys could stay in a browser's or a proxy's cache."""

from __future__ import annotations

from tests.support.api import auth, upload

_CSP = "default-src 'none'; frame-ancestors 'none'"


def _assert_protected(response):
    assert response.headers["x-content-type-options"] == "nosniff", response.headers
    assert response.headers["cache-control"] == "no-store", response.headers
    assert response.headers["content-security-policy"] == _CSP, response.headers


def test_data_downloads_errors_and_refusals_carry_the_security_headers(client, owner):
    ds = upload(client, owner, b"name,city\n=1+1,x\n@a,y\n", "d.csv").json()
    for fmt in ("csv", "jsonl", "parquet"):
        r = client.get(f"/v1/datasets/{ds['id']}/data?format={fmt}", headers=auth(owner))
        assert r.status_code == 200
        _assert_protected(r)
    _assert_protected(client.get(f"/v1/datasets/{ds['id']}", headers=auth(owner)))
    _assert_protected(client.get("/v1/datasets"))  # 401
    _assert_protected(client.get("/v1/datasets/nope", headers=auth(owner)))  # 422
    _assert_protected(client.head(f"/v1/datasets/{ds['id']}/data", headers=auth(owner)))


def test_the_interactive_docs_keep_their_scripts(client):
    for path in ("/docs", "/openapi.json", "/healthz"):
        r = client.get(path)
        assert r.headers["x-content-type-options"] == "nosniff"
        assert "content-security-policy" not in r.headers  # /docs loads Swagger UI's scripts
