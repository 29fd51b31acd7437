"""The migrations build exactly the schema app/tables.py declares (no drift either way)."""

from __future__ import annotations

from contextlib import contextmanager

from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext

from app.db import get_engine
from app.migrate import alembic_config
from app.tables import metadata


def test_migrated_database_matches_the_table_definitions(database):
    with get_engine().connect() as conn:
        diff = compare_metadata(MigrationContext.configure(conn), metadata)
    # procrastinate's tables come from its own schema.sql, not from our metadata
    ours = [d for d in diff if not (d[0] == "remove_table" and d[1].name.startswith("procrastinate"))
            and not (d[0] == "remove_index" and d[1].table.name.startswith("procrastinate"))]
    assert ours == []


@contextmanager
def _database_at(database: str, revision: str):
    """A scratch database migrated to ``revision``: (engine, url); dropped afterwards."""
    from alembic import command
    from sqlalchemy import create_engine, text
    from sqlalchemy.engine import make_url

    admin = create_engine(database, isolation_level="AUTOCOMMIT")
    with admin.connect() as c:
        c.execute(text("DROP DATABASE IF EXISTS veil_upgrade_check"))
        c.execute(text("CREATE DATABASE veil_upgrade_check"))
    url = make_url(database).set(database="veil_upgrade_check").render_as_string(hide_password=False)
    engine = create_engine(url)
    try:
        command.upgrade(alembic_config(url), revision)
        yield engine, url
    finally:
        engine.dispose()
        with admin.connect() as c:
            c.execute(text("DROP DATABASE IF EXISTS veil_upgrade_check"))
        admin.dispose()


def test_job_outcomes_counts_the_jobs_finished_before_it(database):
    """Upgrading a database with finished jobs counts each once (0005): /metrics' counters do
    not start from zero under an existing deployment."""
    from alembic import command
    from sqlalchemy import text

    with _database_at(database, "0004") as (engine, url):
        with engine.begin() as c:
            c.execute(text(
                "INSERT INTO jobs (id, tenant, created_by, method, kind, params, status, max_attempts, "
                "started_at, finished_at) VALUES "
                "(gen_random_uuid(), 't', gen_random_uuid(), 'errph', 'release', '{}', 'succeeded', 3, "
                " now() - interval '3 seconds', now()), "
                "(gen_random_uuid(), 't', gen_random_uuid(), 'errph', 'release', '{}', 'cancelled', 3, NULL, now()), "
                "(gen_random_uuid(), 't', gen_random_uuid(), 'mst', 'release', '{}', 'failed', 3, "
                " now() - interval '2 hours', now()), "
                "(gen_random_uuid(), 't', gen_random_uuid(), 'mst', 'release', '{}', 'running', 3, now(), NULL)"))
        command.upgrade(alembic_config(url), "head")
        with engine.connect() as c:
            rows = set(c.execute(text("SELECT method, status, le, jobs, round(seconds) FROM job_outcomes")))
        assert rows == {("errph", "succeeded", 5.0, 1, 3), ("errph", "cancelled", float("-inf"), 1, 0),
                        ("mst", "failed", float("inf"), 1, 7200)}


def test_old_mask_releases_lose_their_flip_count(database):
    """0006: the realized flip count beside the output gives Σ|input − output| (a leak); the
    releases stored before the fix are scrubbed, everything else in their metrics is kept."""
    from alembic import command
    from sqlalchemy import text

    with _database_at(database, "0005") as (engine, url):
        with engine.begin() as c:
            job = c.execute(text(
                "INSERT INTO jobs (id, tenant, created_by, method, kind, params, status, max_attempts) "
                "VALUES (gen_random_uuid(), 't', gen_random_uuid(), 'mask', 'release', '{}', 'succeeded', 3) "
                "RETURNING id")).scalar_one()
            c.execute(text(
                "INSERT INTO releases (id, tenant, job_id, dataset_id, method, params, guarantees, metrics, "
                "metadata, chain, shape, columns, rows, blob_id, input_sha256, output_sha256, code_version, "
                "created_by) VALUES (gen_random_uuid(), 't', :job, gen_random_uuid(), 'mask', '{}', '{}', "
                "'{\"cells\": 40, \"flipped_bits\": 7, \"flip_rate\": 0.175}', '{}', '[]', 'transactions', "
                "'[]', 4, gen_random_uuid(), '', '', 'v', gen_random_uuid())"), {"job": job})
        command.upgrade(alembic_config(url), "head")
        with engine.connect() as c:
            assert c.execute(text("SELECT metrics FROM releases")).scalar_one() == {"cells": 40}
