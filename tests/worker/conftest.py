"""Real worker processes (`python -m app worker`) against the session's PostgreSQL: modules
that set no `worker_env` share one pool (tests/support/workers.py); a module that does gets
a pool of its own."""

from __future__ import annotations

import pytest

from tests.support.workers import SHARED, WorkerPool, drain_leftovers


@pytest.fixture(scope="module")
def worker_env():
    return {}


@pytest.fixture(scope="session")
def shared_workers(database):
    """Stopped before the database is (it is started by the first module that uses it)."""
    yield SHARED
    SHARED.stop()


@pytest.fixture(scope="module")
def workers(request, database, worker_env):
    if request.module.__name__ in SHARED.modules:
        yield request.getfixturevalue("shared_workers").for_module()
        return
    drain_leftovers()
    pool = WorkerPool(worker_env.pop("count", 2) if "count" in worker_env else 2, worker_env)
    pool.wait_ready()
    yield pool
    pool.stop()
