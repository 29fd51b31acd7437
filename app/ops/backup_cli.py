"""`veil backup` and `veil restore`: the whole database to a file with pg_dump, and back into an
empty one with pg_restore, migrated and checked (app/ops/restore.py) before any job runs."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from app.config import get_settings
from app.database_ready import database_ready, own_data_dir
from app.ops.cli import run_restore_check


def _pg_tool(name: str, server) -> str:
    """pg_dump / pg_restore: the embedded server's own (its major version) or the one on PATH."""
    import shutil

    if server is not None:
        from pgserver._commands import POSTGRES_BIN_PATH

        return str(POSTGRES_BIN_PATH / name)
    found = shutil.which(name)
    if found is None:
        raise SystemExit(f"veil: {name} is not on PATH (install the PostgreSQL client of the server's "
                         "major version)")
    return found


def _pg_env_and_conninfo() -> tuple[dict, str]:
    """libpq's conninfo of the database, its password in PGPASSWORD (not on a command line)."""
    from psycopg.conninfo import conninfo_to_dict, make_conninfo

    from app.db import to_libpq_conninfo

    params = conninfo_to_dict(to_libpq_conninfo(os.environ.get("DATABASE_URL") or get_settings().database_url))
    env = dict(os.environ)
    if "password" in params:
        env["PGPASSWORD"] = str(params.pop("password"))
    return env, make_conninfo(**params)


def cmd_backup(args) -> None:
    out = Path(args.file).resolve()
    if out.exists():
        raise SystemExit(f"veil backup: {out} exists: give a new file")
    server = database_ready(owner=True)
    env, conninfo = _pg_env_and_conninfo()
    started = time.monotonic()
    done = subprocess.run([_pg_tool("pg_dump", server), "--format=custom", "--file", str(out),
                           "--dbname", conninfo], env=env, capture_output=True, text=True)
    if done.returncode != 0:
        out.unlink(missing_ok=True)
        raise SystemExit(f"veil backup: pg_dump failed: {done.stderr.strip()[:600]}")
    print(f"wrote {out} ({out.stat().st_size:,} bytes in {time.monotonic() - started:.1f} s): the whole "
          "database — data, releases, reports, models, budgets and their ledgers, the audit trail, "
          "API keys (hashed) and the job queue")


def cmd_restore(args) -> None:
    from sqlalchemy import text

    from app.db import get_engine
    from app.migrate import current_revision, upgrade

    dump = Path(args.file).resolve()
    if not dump.is_file():
        raise SystemExit(f"veil restore: no file {dump}")
    settings = get_settings()
    if not settings.database_url:
        own_data_dir(settings.data_dir)  # no `veil serve` on it meanwhile
    server = database_ready(owner=True)
    with get_engine().connect() as conn:
        tables = conn.execute(text("SELECT count(*) FROM pg_tables WHERE schemaname = 'public'")).scalar()
    if tables:
        raise SystemExit(f"veil restore: the database already holds {tables} tables: restore into an empty "
                         "one (a new VEIL_DATA_DIR, or a new database in DATABASE_URL)")
    env, conninfo = _pg_env_and_conninfo()
    started = time.monotonic()
    done = subprocess.run([_pg_tool("pg_restore", server), "--exit-on-error", "--no-owner",
                           "--dbname", conninfo, str(dump)], env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"veil restore: pg_restore failed: {done.stderr.strip()[:600]}")
    before = current_revision(get_engine())
    print(f"restored {dump} in {time.monotonic() - started:.1f} s (migration {before})")
    upgrade()  # a backup of an older Veil: migrated to this code's
    after = current_revision(get_engine())
    if after != before:
        print(f"migrated from {before} to {after}")
    if run_restore_check() is None:
        print("the restore check found no restore to act on", file=sys.stderr)
