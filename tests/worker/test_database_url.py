"""The queue reads DATABASE_URL as SQLAlchemy does (topology acceptance check). A password
holding '/' (base64 passwords do) is a valid URL for SQLAlchemy, so the API, the CLI and the
workers' heartbeats connected; the queue handed the raw URL to libpq, which took 'user:pass'
for 'host:port': every worker counted as alive in /readyz and never took a job."""

from __future__ import annotations

import pytest
from psycopg.conninfo import conninfo_to_dict
from sqlalchemy.engine import make_url

from app.config import get_settings
from app.db import reset_caches
from app.worker import queue


@pytest.fixture
def slashed_password_url(database, monkeypatch):
    """The test server's URL with a password holding '/', '#' and '?', written unencoded
    (its socket trusts any password, so only how the URL is read decides)."""
    parsed = make_url(database)
    host = parsed.query["host"]
    url = f"postgresql://{parsed.username}:pa/ss#wo?rd@/{parsed.database}?host={host}"
    assert make_url(url).password == "pa/ss#wo?rd"  # SQLAlchemy's reading
    monkeypatch.setenv("DATABASE_URL", url)
    get_settings.cache_clear()
    reset_caches()
    queue.defer_app.cache_clear()
    yield url
    monkeypatch.undo()
    get_settings.cache_clear()
    reset_caches()
    queue.defer_app.cache_clear()


def test_the_queue_connects_with_the_url_sqlalchemy_connects_with(slashed_password_url):
    app = queue.defer_app()
    with app.open():
        assert app.connector.execute_query_one("SELECT 1 AS one")["one"] == 1


def test_the_queue_gets_the_same_server_user_and_password(slashed_password_url):
    conninfo = conninfo_to_dict(queue.conninfo())
    parsed = make_url(slashed_password_url)
    assert (conninfo["user"], conninfo["password"], conninfo["dbname"], conninfo["host"]) == (
        parsed.username, "pa/ss#wo?rd", parsed.database, parsed.query["host"])
