"""Every time an answer carries is UTC, and a time given without an offset is read as UTC,
whatever the PostgreSQL server's `timezone` setting (acceptance check, dashboard)."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest

from tests.support.api import auth, upload


@pytest.fixture
def server_in_kolkata(monkeypatch):
    """Connections as a server whose `timezone` is Asia/Kolkata (initdb takes the machine's; libpq
    sends PGTZ as the session's): they answered timestamptz as +05:30 and read a naive time there."""
    from app.db import get_engine

    monkeypatch.setenv("PGTZ", "Asia/Kolkata")
    get_engine().dispose()  # new connections, made with PGTZ
    yield
    monkeypatch.undo()
    get_engine().dispose()


def test_times_are_utc_and_a_naive_time_is_read_as_utc(client, make_key, server_in_kolkata):
    key = make_key("owner")
    ds = upload(client, key, b"a,b\n1,x\n2,y\n", "tz.csv").json()
    assert ds["created_at"].endswith("Z"), ds["created_at"]
    event = client.get("/v1/audit", headers=auth(key)).json()["items"][0]
    assert event["at"].endswith("Z"), event["at"]
    later = (datetime.fromisoformat(event["at"].replace("Z", "+00:00")) + timedelta(seconds=1)).replace(tzinfo=None)
    ids = lambda **q: [e["id"] for e in client.get("/v1/audit", headers=auth(key), params=q).json()["items"]]  # noqa: E731
    assert event["id"] in ids(until=later.isoformat())
    assert event["id"] not in ids(since=later.isoformat())


def test_a_since_after_until_is_named_not_an_empty_page(client, owner):
    """It answered 200 with no events (provenance acceptance check); a naive and an aware time
    compare as UTC."""
    from tests.support.api import assert_problem

    r = client.get("/v1/audit", headers=auth(owner),
                   params={"since": "2026-01-02T00:00:00", "until": "2026-01-01T23:00:00+00:00"})
    assert_problem(r, 422, "since (2026-01-02T00:00:00) is after until (2026-01-01T23:00:00+00:00)")
    same = client.get("/v1/audit", headers=auth(owner),
                      params={"since": "2026-01-02T00:00:00", "until": "2026-01-02T01:00:00+01:00"})
    assert same.status_code == 200 and same.json()["items"] == []  # an empty range, not a reversed one
