"""The database a command runs against: DATABASE_URL's, else the embedded PostgreSQL in
VEIL_DATA_DIR, started here. Why a module of its own: every command starts it the same way, and
what stops it (a data directory that cannot be used, a full disk, another `veil serve` on it) is
said in one line naming the setting, not in pgserver's or PostgreSQL's traceback."""

from __future__ import annotations

import contextlib
import logging
import os
from pathlib import Path

from app.config import get_settings


def database_ready(owner: bool = False):
    """Point this process (and its children) at the database; start the embedded one if
    DATABASE_URL is not set. Returns the embedded server when this process owns it: it stops
    it on exit if no other process (a running `veil serve`, its workers) still uses it."""
    from app.db import embedded_server, to_sqlalchemy_url

    settings = get_settings()
    if settings.database_url:
        return None
    usable_data_dir(settings.data_dir)
    log_path = (Path(settings.data_dir) / "pg" / "log").resolve()
    since = log_path.stat().st_size if log_path.exists() else 0
    try:
        with pgserver_quiet():
            server = embedded_server(settings.data_dir, owner=owner)
    except Exception as exc:  # pg_ctl's or initdb's failure, in a traceback: the reason is in PostgreSQL's log
        reason = postgres_said(log_path, since) or f"{type(exc).__name__}: {str(exc).splitlines()[0][:200]}"
        raise SystemExit(f"veil: the embedded PostgreSQL in {log_path.parent} (VEIL_DATA_DIR) did not start: "
                         f"{reason} (its log: {log_path})") from None
    os.environ["DATABASE_URL"] = to_sqlalchemy_url(server.get_uri())
    get_settings.cache_clear()
    return server


@contextlib.contextmanager
def pgserver_quiet():
    """pgserver's own logging off: a failed start dumps the whole PostgreSQL log, as JSON lines
    (the callers say what PostgreSQL logged, in one line)."""
    pg_logger = logging.getLogger("pgserver")
    level = pg_logger.level
    pg_logger.setLevel(logging.CRITICAL)
    try:
        yield
    finally:
        pg_logger.setLevel(level)


def postgres_said(log_path: Path, since: int) -> str:
    """What PostgreSQL logged after ``since`` (its log's size before the start): the reason it did
    not start — a full disk ("could not write lock file …: No space left on device"), a setting
    it cannot read."""
    import re

    try:
        with open(log_path, "rb") as f:
            f.seek(since)
            text = f.read(65536).decode(errors="replace")
    except OSError:
        return ""
    said = [m.group(2).strip() for m in re.finditer(r"\] (LOG|FATAL|PANIC|ERROR|DETAIL|HINT):\s+(.*)", text)]
    return "; ".join(dict.fromkeys(said))[:600]


def usable_data_dir(data_dir) -> Path:
    """The data directory, made if need be. A file there (or a path under one, or a folder this
    user cannot write) was a traceback from mkdir, or from the embedded PostgreSQL."""
    path = Path(data_dir).resolve()
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        reason = "a file is there, not a directory" if isinstance(exc, FileExistsError) else exc.strerror or exc
        raise SystemExit(f"veil: VEIL_DATA_DIR: cannot use {path} as the data directory: {reason}") from None
    if not os.access(path, os.W_OK | os.X_OK):
        raise SystemExit(f"veil: VEIL_DATA_DIR: cannot use {path} as the data directory: "
                         "this user cannot write in it")
    return path


def own_data_dir(data_dir) -> int:
    """One `veil serve` per data directory. A second one (its port taken, or started twice by
    mistake) wiped the first one's metrics files and, exiting, stopped the embedded PostgreSQL
    the first one was serving from. The lock ends with this process, however it ends."""
    import fcntl

    path = usable_data_dir(data_dir)
    fd = os.open(path / "serve.lock", os.O_RDWR | os.O_CREAT, 0o600)  # not inherited by children
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        raise SystemExit(f"veil serve: another `veil serve` is running with the data directory {path} "
                         "(VEIL_DATA_DIR): stop it first, or give this one its own data directory") from None
    return fd
