"""Test fixtures: a real PostgreSQL (pgserver) per test session, the app under httpx
(Starlette's TestClient), API keys per test, and real worker processes for worker tests."""

from __future__ import annotations

import os
import shutil
import tempfile
import uuid
from pathlib import Path

import pytest

# Before anything imports the settings: short heartbeats so stall tests run in seconds, and
# the diagnostic methods (sleep, alloc, crash) in the registry of the app and the workers.
os.environ["VEIL_PLUGINS"] = "tests.support.diagnostics"
os.environ["VEIL_HEARTBEAT_INTERVAL_S"] = "0.5"
os.environ["VEIL_STALL_TIMEOUT_S"] = "4"
os.environ["VEIL_JOB_TIME_LIMIT_S"] = "120"
os.environ.pop("VEIL_TEST_MODE", None)
os.environ.pop("VEIL_DEV_API_KEY", None)

DATASETS = Path(os.environ.get("VEIL_DATASETS_DIR", Path(__file__).resolve().parents[2] / "shared" / "datasets"))
if not DATASETS.is_dir():  # a clone inside another folder: look upwards
    for parent in Path(__file__).resolve().parents:
        if (parent / "shared" / "datasets").is_dir():
            DATASETS = parent / "shared" / "datasets"
            break
ADULT = DATASETS / "adult" / "adult_train.csv"


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(items):
    from tests.support.workers import SHARED

    SHARED.plan(items)


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    """Before the test's fixtures: the worker pool the worker tests share runs only while they do."""
    from tests.support.workers import SHARED

    SHARED.release_unless_used_by(item)


@pytest.fixture(scope="session")
def database():
    from app.config import get_settings
    from app.db import embedded_server, reset_caches, to_sqlalchemy_url
    from app.migrate import upgrade

    # Our own folder, not pytest's tmp_path: pytest prunes old basetemp folders when other
    # pytest runs start, which would pull the data directory from under a running server.
    folder = Path(tempfile.mkdtemp(prefix="veil-test-pg-"))
    server = embedded_server(folder, owner=True)
    url = to_sqlalchemy_url(server.get_uri())
    os.environ["DATABASE_URL"] = url
    get_settings.cache_clear()
    reset_caches()
    upgrade()
    yield url
    reset_caches()
    server.cleanup()
    shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(scope="session")
def client(database):
    from fastapi.testclient import TestClient

    from app.main import create_app

    with TestClient(create_app(), raise_server_exceptions=False) as c:
        yield c


@pytest.fixture(scope="session")
def make_key(database):
    """make_key(role="owner", tenant=None) -> headers with a new key (a fresh tenant by default)."""
    from app.auth.schemas import Role
    from app.auth.service import create_key
    from app.db import transaction

    def make(role: str = "owner", tenant: str | None = None) -> dict[str, str]:
        tenant = tenant or f"t{uuid.uuid4().hex[:10]}"
        with transaction() as session:
            _, key = create_key(session, tenant=tenant, role=Role(role), label="test")
        return {"Authorization": f"Bearer {key}", "X-Tenant": tenant}

    return make


@pytest.fixture
def owner(make_key):
    return make_key("owner")


@pytest.fixture(scope="session")
def adult_path():
    if not ADULT.exists():
        pytest.fail(f"shared datasets not found at {DATASETS}; set VEIL_DATASETS_DIR")
    return ADULT
