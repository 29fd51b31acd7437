"""Requests that follow each other on one keep-alive connection of a real server must not
inherit each other's state (found by the #2 acceptance check: a GET of raw data after a HEAD
on the same connection was audited as `head_only` — a download recorded as headers only)."""

from __future__ import annotations

from tests.support.api import upload


def test_a_get_after_a_head_on_the_same_connection_is_audited_as_a_download(live):
    with live.client(headers=live.headers) as c:  # one connection, kept alive
        ds = upload(c, live.headers, b"a,b\n1,x\n2,y\n", "keepalive.csv").json()
        path = f"/v1/datasets/{ds['id']}/data"
        for _ in range(3):
            assert c.head(path, params={"format": "csv"}).status_code == 200
            got = c.get(path, params={"format": "csv"})
            assert got.status_code == 200 and b"1," in got.content
        assert c.get(f"/v1/datasets/{ds['id']}/profile").status_code == 200
        events = c.get("/v1/audit", params={"dataset_id": ds["id"]}).json()["items"]
    marks = [(e["action"], bool(e["details"].get("head_only"))) for e in events
             if e["action"] in ("dataset.downloaded", "dataset.profile_read")]
    assert marks == [("dataset.downloaded", True), ("dataset.downloaded", False)] * 3 + [
        ("dataset.profile_read", False)]
