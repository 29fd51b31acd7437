"""Database connection: the engine, sessions, and the embedded PostgreSQL (pgserver).

Embedded mode (no DATABASE_URL): a real PostgreSQL 16 from the ``pgserver`` wheel runs in
``$VEIL_DATA_DIR/pg``, reached through its unix socket. Any process pointed at the same data
folder (the API, the workers, the CLI) connects to that one server.
"""

from __future__ import annotations

import contextlib
import logging
import select
import types
from collections.abc import Iterator
from functools import lru_cache
from pathlib import Path

from sqlalchemy import Engine, create_engine, event
from sqlalchemy.exc import InterfaceError, OperationalError
from sqlalchemy.orm import Session, sessionmaker

from app.config import MAX_UPLOAD_SLOTS, get_settings

log = logging.getLogger("veil.db")

# What SQLAlchemy raises when the database is away (connection refused or lost, the server
# shutting down, a statement cancelled): a 503 in the API, a blip the workers ride out.
DATABASE_AWAY = (OperationalError, InterfaceError)


def embedded_server(data_dir: Path, *, owner: bool = False):
    """Start (or join) the embedded PostgreSQL under data_dir. An owner (`veil serve`, a
    one-shot CLI command) stops it when it exits as its last user; workers only join it."""
    import contextlib
    import os
    import stat
    import warnings

    if "XDG_RUNTIME_DIR" not in os.environ:
        # pgserver's lock between the processes using the server, in a folder platformdirs takes
        # only at mode 0700: at 0755 (how it was made) each process fell back to runtime-<uid> in
        # its own TMPDIR, left in the operator's, and `veil serve`'s workers (a TMPDIR of their
        # own) took another lock than serve's
        run = Path(data_dir).resolve() / "run"
        run.mkdir(mode=0o700, parents=True, exist_ok=True)
        if stat.S_IMODE(run.stat().st_mode) != 0o700:
            with contextlib.suppress(OSError):  # not ours to change: pgserver falls back as before
                run.chmod(0o700)
        os.environ["XDG_RUNTIME_DIR"] = str(run)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import pgserver  # only embedded mode needs it

    pgdata = (data_dir / "pg").resolve()
    pgdata.mkdir(parents=True, exist_ok=True)
    return pgserver.get_server(pgdata, cleanup_mode="stop" if owner else None)


def embedded_url(data_dir: Path) -> str:
    return to_sqlalchemy_url(embedded_server(data_dir).get_uri())


def to_sqlalchemy_url(url: str) -> str:
    for prefix in ("postgresql+psycopg://", "postgresql://", "postgres://"):
        if url.startswith(prefix):
            return "postgresql+psycopg://" + url[len(prefix):]
    raise ValueError("DATABASE_URL must be a postgresql:// URL")


def to_libpq_conninfo(url: str) -> str:
    """libpq's key=value conninfo of the URL as SQLAlchemy reads it. The queue (procrastinate)
    was handed the URL itself, and libpq reads some URLs SQLAlchemy takes differently: with
    a '/' in the password (base64 passwords hold them) it took 'user:pass' for 'host:port', so
    the API and the workers' heartbeats connected and the queue never did."""
    from psycopg.conninfo import make_conninfo
    from sqlalchemy.engine import make_url

    parsed = make_url(url)
    params = {"host": parsed.host, "port": parsed.port, "user": parsed.username,
              "password": parsed.password, "dbname": parsed.database}
    for name, value in parsed.query.items():  # host=/socket/dir, sslmode, …
        params[name] = value[-1] if isinstance(value, tuple) else value
    return make_conninfo(**{name: value for name, value in params.items() if value is not None})


@lru_cache
def database_url() -> str:
    settings = get_settings()
    if settings.database_url:
        return to_sqlalchemy_url(settings.database_url)
    return embedded_url(settings.data_dir)


# Connections per process. The API admits at most POOL_SIZE + POOL_OVERFLOW requests at once
# (middleware.InFlightLimit), fewer than the threads of the thread pool (anyio's 40).
# Of those, up to UPLOAD_CONNECTIONS serve uploads (their own slots, see InFlightLimit).
POOL_SIZE, POOL_OVERFLOW = 34, 0
UPLOAD_CONNECTIONS = MAX_UPLOAD_SLOTS


@lru_cache
def get_engine() -> Engine:
    engine = create_engine(database_url(), pool_size=POOL_SIZE, max_overflow=POOL_OVERFLOW,
                           pool_pre_ping=True, pool_recycle=300)

    @event.listens_for(engine, "connect")
    def _set_session(dbapi_conn, _record):
        with dbapi_conn.cursor() as cur:
            cur.execute("SET statement_timeout = '120s'")  # a stuck query must not hang a request forever
            # Every time in UTC: PostgreSQL answers timestamptz in its `timezone` setting (initdb
            # takes the machine's; PGTZ overrides it), so answers said +05:30 on one server and Z on
            # another, and a time without an offset (`?since=`) was read in that zone.
            cur.execute("SET TIME ZONE 'UTC'")
        dbapi_conn.commit()

    _ping_only_when_not_quiet(engine)
    return engine


def _ping_only_when_not_quiet(engine: Engine) -> None:
    """pool_pre_ping without a round trip per checkout (it cost ~0.1 ms of the API's CPU and
    a query of PostgreSQL's per request). An idle pooled connection whose server went away
    (restart, crash, pg_terminate_backend, idle timeout) has a readable socket: the server's
    FATAL message or its close. Only then is the real ``SELECT 1`` sent; SQLAlchemy's pre-ping
    handling is unchanged (a failed ping invalidates the connection and reconnects)."""
    real_ping = engine.dialect.do_ping

    def do_ping(self, dbapi_conn) -> bool:
        return True if _quiet(dbapi_conn) else real_ping(dbapi_conn)

    engine.dialect.do_ping = types.MethodType(do_ping, engine.dialect)


_NOT_QUIET = select.POLLIN | select.POLLPRI | select.POLLERR | select.POLLHUP | select.POLLNVAL


def _quiet(dbapi_conn) -> bool:
    """The connection is open, idle, and nothing has arrived on its socket since its last use."""
    try:
        if dbapi_conn.closed or dbapi_conn.broken or dbapi_conn.info.transaction_status != 0:  # IDLE
            return False
        poller = select.poll()
        poller.register(dbapi_conn.fileno(), _NOT_QUIET)
        return not poller.poll(0)
    except Exception:  # anything unexpected: ask the server
        return False


@lru_cache
def new_sessionmaker() -> sessionmaker[Session]:
    return sessionmaker(bind=get_engine(), expire_on_commit=False)


@contextlib.contextmanager
def transaction() -> Iterator[Session]:
    """One unit of work: commits when the block ends normally, rolls back otherwise."""
    session = new_sessionmaker()()
    try:
        yield session
        session.commit()
    except BaseException:
        session.rollback()
        raise
    finally:
        session.close()


def reset_caches() -> None:
    """Forget the engine and URL (tests and the CLI switch databases)."""
    if get_engine.cache_info().currsize:
        get_engine().dispose()
    get_engine.cache_clear()
    new_sessionmaker.cache_clear()
    database_url.cache_clear()
