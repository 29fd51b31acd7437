"""Alembic environment: the URL comes from Veil's settings (or the embedded server)."""

from alembic import context
from sqlalchemy import create_engine, pool

from app.db import database_url
from app.tables import metadata

config = context.config


def run_migrations_online() -> None:
    url = config.attributes.get("url") or database_url()
    engine = create_engine(url, poolclass=pool.NullPool)
    with engine.connect() as connection:
        context.configure(connection=connection, target_metadata=metadata,
                          compare_type=True)
        with context.begin_transaction():
            context.run_migrations()
    engine.dispose()


if context.is_offline_mode():
    raise SystemExit("offline migrations are not supported; run `veil migrate`")
run_migrations_online()
