"""Apply and inspect Alembic migrations programmatically (no alembic.ini needed)."""

from __future__ import annotations

import logging
from functools import lru_cache
from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Engine

MIGRATIONS = Path(__file__).resolve().parent.parent / "migrations"


def alembic_config(url: str | None = None) -> Config:
    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS))
    if url:
        cfg.attributes["url"] = url
    return cfg


def upgrade(url: str | None = None) -> None:
    command.upgrade(alembic_config(url), "head")


@lru_cache
def head_revision() -> str:
    return ScriptDirectory.from_config(alembic_config()).get_current_head()


def schema_mismatch(engine: Engine) -> str | None:
    """None when the database is at the migration this code was written for; else what to do
    (a worker of another version would run jobs against tables it does not know)."""
    current, head = current_revision(engine), head_revision()
    if current == head:
        return None
    if current is None:
        return "the database has no Veil schema yet: run `veil migrate`"
    try:
        ScriptDirectory.from_config(alembic_config()).get_revision(current)
    except Exception:  # a revision this code does not have: newer code migrated the database
        return (f"the database is at migration {current}, newer than this code's {head}: "
                "run this version's successor (upgrade the worker)")
    return f"the database is at migration {current}, older than this code's {head}: run `veil migrate`"


def current_revision(engine: Engine) -> str | None:
    # /readyz asks on every call; alembic would log two INFO lines ("Context impl …") each time
    log = logging.getLogger("alembic.runtime.migration")
    level = log.level
    log.setLevel(logging.WARNING)
    try:
        with engine.connect() as conn:
            return MigrationContext.configure(conn).get_current_revision()
    finally:
        log.setLevel(level)
