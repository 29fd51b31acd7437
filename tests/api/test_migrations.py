"""The migrations build exactly the schema app/tables.py declares (no drift either way)."""

from __future__ import annotations

from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext

from app.db import get_engine
from app.tables import metadata


def test_migrated_database_matches_the_table_definitions(database):
    with get_engine().connect() as conn:
        diff = compare_metadata(MigrationContext.configure(conn), metadata)
    # procrastinate's tables come from its own schema.sql, not from our metadata
    ours = [d for d in diff if not (d[0] == "remove_table" and d[1].name.startswith("procrastinate"))
            and not (d[0] == "remove_index" and d[1].table.name.startswith("procrastinate"))]
    assert ours == []
