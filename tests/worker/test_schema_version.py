"""A worker runs only against the database migration its code was written for: an old worker
left running through an upgrade took jobs against the newer schema and failed them, charged,
with internal errors (the upgrade acceptance check)."""

from __future__ import annotations

import contextlib
import subprocess
import sys

import pytest
from sqlalchemy import text

from app.db import transaction
from app.migrate import head_revision
from tests.support.workers import ROOT, WorkerPool


@contextlib.contextmanager
def _database_at(revision: str):
    with transaction() as s:
        s.execute(text("UPDATE alembic_version SET version_num = :r"), {"r": revision})
    try:
        yield
    finally:
        with transaction() as s:
            s.execute(text("UPDATE alembic_version SET version_num = :r"), {"r": head_revision()})


@pytest.fixture(scope="module")
def worker_env():
    return {"count": 1}


def test_a_worker_stops_when_the_database_is_migrated_under_it(workers):
    (proc,) = workers.procs
    with _database_at("9999_newer"):
        status = proc.wait(60)
    workers.procs.remove(proc)
    assert status == 3


@pytest.mark.parametrize("revision, says", [("9999_newer", "newer than this code's"),
                                            ("0004", "older than this code's")])
def test_a_worker_does_not_start_against_another_migration(database, revision, says):
    with _database_at(revision):
        done = subprocess.run([sys.executable, "-m", "app", "worker"], env=WorkerPool(0, {}).env, cwd=ROOT,
                              capture_output=True, text=True, timeout=120)
    assert done.returncode == 3, done.stderr[-2000:]
    assert says in done.stderr and "the worker does not start" in done.stderr, done.stderr[-2000:]
