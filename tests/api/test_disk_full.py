"""A full disk (operator acceptance check): an upload whose temporary folder filled up was a 500
"an unexpected error occurred" (an unhandled OSError, logged twice), and PostgreSQL out of disk
space a 503 "the database is unavailable; retry later". Both are now a 507 problem that says the
server is out of disk space, and nothing is stored. The writes below go to /dev/full, which
answers every write with ENOSPC as a full file system does."""

from __future__ import annotations

import os

import psycopg
import pytest
from sqlalchemy.exc import OperationalError

from app.datasets import service as datasets_service
from tests.support.api import assert_problem, auth, upload
from tests.support.disk import full_file_in_temporary_folders

pytestmark = pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")

CSV = b"a,b\n" + b"".join(b"%d,x%d\n" % (i, i % 7) for i in range(5000))


@pytest.fixture
def full_upload_file(monkeypatch):
    """The temporary folder, with `name` in it already pointing at /dev/full."""
    return lambda name: full_file_in_temporary_folders(monkeypatch, "veil-upload-", name)


def _nothing_stored(client, owner) -> None:
    assert client.get("/v1/datasets", headers=auth(owner)).json()["items"] == []


@pytest.mark.parametrize("name", ["upload",           # the body as it is received
                                  "upload.parquet"])  # the table the reading child writes
def test_an_upload_that_finds_the_disk_full_is_a_507_and_stores_nothing(client, owner, full_upload_file, name):
    full_upload_file(name)
    problem = assert_problem(upload(client, owner, CSV, "t.csv"), 507, "out of disk space")
    assert problem["type"] == "https://veil.dev/problems/insufficient-storage"
    assert "could not be read" not in problem["detail"]  # the file is fine: the server is full
    _nothing_stored(client, owner)


def test_the_database_out_of_disk_space_is_a_507_not_unavailable(client, owner, monkeypatch):
    def full(*args, **kwargs):
        raise OperationalError("INSERT INTO blob_chunks …", {}, psycopg.errors.DiskFull(
            'could not extend file "base/5/16403": No space left on device'))

    monkeypatch.setattr(datasets_service, "store", full)
    response = upload(client, owner, CSV, "t.csv")
    assert_problem(response, 507, "database", "out of disk space")
    assert "Retry-After" not in response.headers  # not a passing state: someone must free space
    _nothing_stored(client, owner)
