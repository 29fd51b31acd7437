"""The `veil` command: serve, worker, migrate, backup, restore, restore-check, restore-accept, ledger
(debit), keys (create, list, revoke), openapi, docs."""

from __future__ import annotations

import argparse
import logging
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from app.auth.cli import cmd_keys_create, cmd_keys_list, cmd_keys_revoke
from app.budgets.cli import cmd_ledger_debit
from app.config import get_settings
from app.database_ready import database_ready, own_data_dir, pgserver_quiet, postgres_said
from app.docs_cli import cmd_docs, cmd_openapi
from app.ops.backup_cli import cmd_backup, cmd_restore
from app.ops.cli import cmd_migrate, cmd_restore_accept, cmd_restore_check, run_restore_check
from app.preflight import check_settings, import_plugins


def _check_listen(host: str, port: int) -> None:
    """Bind the API's address once before anything starts, as uvicorn will (SO_REUSEADDR; IPv6
    when the host holds a ':'). A host that does not resolve or a port already taken was found
    only after PostgreSQL had started, the database migrated and the development key printed:
    uvicorn's "[Errno -2] Name or service not known", naming no setting, and exit status 3."""
    import socket

    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    try:
        with socket.socket(family, socket.SOCK_STREAM) as sock:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind((host, port))
    except (OSError, UnicodeError) as exc:  # socket.gaierror is an OSError
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise SystemExit(f"veil serve: cannot listen on VEIL_HOST={host} VEIL_PORT={port}: {reason}") from None


def _dev_key(settings, *, embedded: bool) -> str | None:
    """The development owner key of tenant dev: VEIL_DEV_API_KEY, else (embedded mode only)
    one made once and kept in the data directory. With an external database (production)
    none is made: each start of a new container (a new data directory) minted another
    owner key, never revoked, and printed it to the logs."""
    if settings.dev_api_key:
        return settings.dev_api_key
    if not embedded:
        return None
    path = Path(settings.data_dir) / "dev_api_key"
    if path.exists():
        return path.read_text().strip()
    import secrets

    key = f"veil_{secrets.token_hex(6)}_{secrets.token_urlsafe(32)}"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(key)
    path.chmod(0o600)
    return key


def cmd_serve(args) -> None:
    import uvicorn

    from app import logging_setup
    from app.auth.schemas import Role
    from app.auth.service import ensure_key
    from app.db import transaction
    from app.migrate import upgrade

    settings = get_settings()
    logging_setup.configure(settings.log_level)
    logging.getLogger("pgserver").setLevel(logging.WARNING)
    own_data_dir(settings.data_dir)  # an open descriptor: held until this process exits
    _check_listen(settings.host, settings.port)
    server = database_ready(owner=True)
    settings = get_settings()
    upgrade()
    run_restore_check()  # before anything writes an event or a worker takes a job
    key = _dev_key(settings, embedded=server is not None)
    if key is not None:
        with transaction() as session:
            ensure_key(session, tenant="dev", role=Role.owner, key=key)
    # uvicorn shuts down gracefully on SIGTERM, then raises the signal again: with the default
    # action the process would end before the `finally` below, leaving the workers and the
    # embedded PostgreSQL running. Exit through the `finally` instead.
    signal.signal(signal.SIGTERM, _exit_on_sigterm)
    workers = WorkerPool(args.workers if args.workers is not None else settings.workers)
    workers.start()
    keeper = PostgresKeeper(server, workers.stopping) if server is not None else None
    if keeper is not None:
        keeper.start()
    try:
        base = f"http://{settings.host}:{settings.port}"
        print(f"\nVeil is starting on {base}  "
              f"({'embedded PostgreSQL in ' + str(Path(settings.data_dir).resolve()) if server else 'DATABASE_URL'})",
              flush=True)
        if key is not None and server is not None:
            print(f"Development API key (tenant dev, role owner):\n  {key}\n"
                  f"Try: curl -H 'Authorization: Bearer {key}' {base}/v1/methods\n", flush=True)
        else:  # an external database: a key printed here would end up in the logs
            print("Create API keys with `veil keys create --tenant T --role owner|analyst|admin`"
                  + (" (VEIL_DEV_API_KEY is a key of tenant dev)" if key else "") + "\n", flush=True)
        threading.Thread(target=_announce_ready, args=(base, time.monotonic()), daemon=True,
                         name="ready-announcer").start()
        uvicorn.run("app.main:create_app", factory=True, host=settings.host, port=settings.port,
                    log_config=None, access_log=False, workers=_api_processes(settings),
                    server_header=False)  # no "server: uvicorn": the stack is nobody's business
    finally:
        workers.stop()
        if keeper is not None:
            with keeper.restarting:  # not started again while it is stopped
                # The workers joined the server; one that died without running its exit hooks
                # (SIGKILL, out of memory) would still count as a user and keep it running.
                server.global_process_id_list.put([os.getpid()])
                server.cleanup()


def _announce_ready(base: str, started: float, give_up_s: float = 300.0) -> None:
    """Say when /readyz first answers 200: the API processes and the workers take 10-20 s after
    the banner (imports, jax's start-up in the workers), and a newcomer's first request would
    otherwise wait or get a 503 with no word why."""
    import urllib.error
    import urllib.request

    last = "no answer"
    local = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # never an http_proxy of the environment
    while time.monotonic() - started < give_up_s:
        try:
            with local.open(f"{base}/readyz", timeout=2) as answer:
                if answer.status == 200:
                    print(f"Veil is ready ({time.monotonic() - started:.0f} s): API and workers up", flush=True)
                    return
        except urllib.error.HTTPError as exc:  # 503 while a check still fails
            last = exc.read().decode(errors="replace")
        except OSError:
            pass  # the API is not listening yet
        time.sleep(0.5)
    print(f"Veil is not ready after {give_up_s:.0f} s; GET {base}/readyz says: {last}", flush=True)


def _api_processes(settings) -> int:
    """uvicorn workers behind the one port. With more than one, the request-latency
    histogram is kept in files shared by the processes (prometheus_client's multiprocess
    mode), so /metrics reports the whole service whichever process answers."""
    n = settings.api_processes
    if n > 1:
        import shutil

        metrics_dir = Path(settings.data_dir).resolve() / "metrics"
        shutil.rmtree(metrics_dir, ignore_errors=True)  # counts of an earlier run
        metrics_dir.mkdir(parents=True)
        os.environ["PROMETHEUS_MULTIPROC_DIR"] = str(metrics_dir)
    return n


def _exit_on_sigterm(signum, frame) -> None:
    raise SystemExit(0)


class WorkerPool:
    """`veil worker` child processes, restarted when one dies."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.procs: list[subprocess.Popen] = []
        self.stopping = threading.Event()

    def _spawn(self) -> subprocess.Popen:
        return subprocess.Popen([sys.executable, "-m", "app", "worker"], env=os.environ.copy())

    def start(self) -> None:
        self.procs = [self._spawn() for _ in range(self.size)]
        threading.Thread(target=self._supervise, daemon=True, name="worker-supervisor").start()

    def _supervise(self) -> None:
        while not self.stopping.wait(1.0):
            for i, proc in enumerate(self.procs):
                if proc.poll() is not None and not self.stopping.is_set():
                    print(f"worker pid {proc.pid} exited ({proc.returncode}); restarting", flush=True)
                    self.procs[i] = self._spawn()

    def stop(self) -> None:
        self.stopping.set()
        for proc in self.procs:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        # a worker lets its running job finish within its grace period, then queues it again
        deadline = time.monotonic() + get_settings().worker_shutdown_grace_s + 5
        for proc in self.procs:
            try:
                proc.wait(max(deadline - time.monotonic(), 0.1))
            except subprocess.TimeoutExpired:
                proc.kill()


class PostgresKeeper:
    """`veil serve`'s embedded PostgreSQL, started again when it dies, as a worker that dies is.
    Killed under a running serve (the kernel's OOM killer, a stray kill) it stayed down: every
    request a 503 and /readyz 'database: unavailable' for good, while /healthz, the image's
    health check, said 200 and nothing restarted the container. One that cannot start again
    (its disk full) is retried every 30 s, its reason logged."""

    CHECK_S, RETRY_S = 1.0, 30.0

    def __init__(self, server, stopping: threading.Event) -> None:
        self.server, self.stopping = server, stopping
        self.restarting = threading.Lock()
        self.log = logging.getLogger("veil.serve")

    def start(self) -> None:
        threading.Thread(target=self._watch, daemon=True, name="postgres-keeper").start()

    def _running(self) -> bool:
        from pgserver.postgres_server import PostmasterInfo

        info = PostmasterInfo.read_from_pgdata(Path(self.server.pgdata))
        return info is not None and info.is_running()

    def _watch(self) -> None:
        wait, said = self.CHECK_S, None
        while not self.stopping.wait(wait):
            if self._running():
                wait, said = self.CHECK_S, None
                continue
            with self.restarting:
                if self.stopping.is_set():
                    return
                log_path = Path(self.server.pgdata) / "log"
                since = log_path.stat().st_size if log_path.exists() else 0
                try:
                    with self.server._lock, pgserver_quiet():  # pgserver's own lock between processes
                        self.server.ensure_postgres_running()
                except Exception as exc:
                    reason = postgres_said(log_path, since) or type(exc).__name__
                    if reason != said:
                        self.log.error("the embedded PostgreSQL in %s stopped and does not start again: "
                                       "%s (its log: %s); trying every %g s", self.server.pgdata, reason,
                                       log_path, self.RETRY_S)
                    wait, said = self.RETRY_S, reason
                    continue
                self.log.error("the embedded PostgreSQL in %s had stopped; started it again",
                               self.server.pgdata)
                wait, said = self.CHECK_S, None


def cmd_worker(_args) -> None:
    from app import logging_setup
    from app.worker.main import lower_priority, run

    lower_priority(get_settings().worker_nice)  # before the forkserver starts: jobs inherit it

    logging_setup.configure(get_settings().log_level)
    logging.getLogger("pgserver").setLevel(logging.WARNING)
    # as an owner: the embedded PostgreSQL stops when this worker exits as its last user (one
    # started without `veil serve` left it running); under `veil serve` the serve outlives it
    database_ready(owner=True)
    run()


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="veil", description="Veil privacy service",
        epilog="Settings come from the environment: DATABASE_URL (unset: an embedded PostgreSQL in "
               "VEIL_DATA_DIR, default ./.veil), VEIL_HOST, VEIL_PORT, VEIL_LOG_LEVEL, the limits and "
               "the rest listed in README.md; a value that is not valid stops any command naming it.")
    sub = parser.add_subparsers(dest="command", required=True)
    serve = sub.add_parser(
        "serve", help="run the API and worker processes (embedded PostgreSQL unless DATABASE_URL is set)",
        description="Run the API (VEIL_API_PROCESSES processes, default 2, on VEIL_HOST:VEIL_PORT, "
                    "default 127.0.0.1:8000) and its worker processes, migrating the database first. "
                    "One veil serve per VEIL_DATA_DIR. SIGTERM or Ctrl-C: running jobs get "
                    "VEIL_WORKER_SHUTDOWN_GRACE_S (8 s) to finish, then are queued again.")
    serve.add_argument("--workers", type=_count, default=None,
                       help="worker processes (default VEIL_WORKERS, 2; 0 when workers run elsewhere)")
    serve.set_defaults(fn=cmd_serve)
    sub.add_parser("worker", help="run one worker process").set_defaults(fn=cmd_worker)
    sub.add_parser("migrate", help="apply database migrations").set_defaults(fn=cmd_migrate)
    backup = sub.add_parser("backup", help="write the whole database to a file (pg_dump's custom format)")
    backup.add_argument("file", help="a new file")
    backup.set_defaults(fn=cmd_backup)
    restore = sub.add_parser("restore", help="restore a `veil backup` file into an empty database "
                             "(a new VEIL_DATA_DIR), migrate it, and run the restore check")
    restore.add_argument("file")
    restore.set_defaults(fn=cmd_restore)
    check = sub.add_parser("restore-check", help="detect a restored database; exit status 2 while a restore "
                           "awaits acceptance (ε debits refused)")
    check.add_argument("--declare", action="store_true",
                       help="the database was restored from a physical copy (a copy of VEIL_DATA_DIR, a "
                            "volume snapshot), which cannot be detected: act as on a detected restore")
    check.set_defaults(fn=cmd_restore_check)
    accept = sub.add_parser("restore-accept", help="after a restore, once the ε lost is in the ledger "
                            "(veil ledger debit): allow ε debits again")
    accept.add_argument("--note", default=None, help="what was reconciled (recorded in the audit trail)")
    accept.set_defaults(fn=cmd_restore_accept)
    ledger = sub.add_parser("ledger", help="a dataset's ε ledger").add_subparsers(dest="ledger_command",
                                                                                  required=True)
    debit = ledger.add_parser(
        "debit", help="write ε spent but missing from the ledger (lost to a restore) as a reconciliation",
        description="Write ε that was spent but is missing from the ledger (spent after the backup a "
                    "database was restored from) as a `reconciliation` entry: counted as spent like a "
                    "debit, even past the cap (it was already spent: nothing then remains under the cap "
                    "until it is raised), also while a restore awaits acceptance; recorded as "
                    "budget.reconciled in the tenant's audit trail. It cannot be undone "
                    "(docs/reliability.md, Backup and restore).")
    debit.add_argument("--dataset", required=True, help="the dataset's id")
    debit.add_argument("--epsilon", required=True, help="the ε lost (a finite number more than 0)")
    debit.add_argument("--note", required=True, help="what was lost and how it is known (kept in the ledger "
                       "and the audit trail)")
    debit.add_argument("--job", default=None, help="the lost job's id, when known (an audit follower's "
                       "copy of its job.submitted event); refused if the ledger already holds its ε")
    debit.set_defaults(fn=cmd_ledger_debit)
    keys = sub.add_parser("keys", help="API keys").add_subparsers(dest="keys_command", required=True)
    create = keys.add_parser("create", help="create an API key and print it once")
    create.add_argument("--tenant", required=True, help="the tenant the key acts in (1-64 letters, digits, _ . -)")
    create.add_argument("--role", required=True, choices=["owner", "analyst", "admin"],
                        help="owner: data, jobs, budgets; analyst: releases, reports, models; "
                             "admin: operations across tenants and keys")
    create.add_argument("--label", default=None, help="a note shown by `veil keys list`")
    create.set_defaults(fn=cmd_keys_create)
    listing = keys.add_parser("list", help="list the keys (never their secrets), revoked ones included")
    listing.add_argument("--tenant", default=None, help="only this tenant's keys")
    listing.set_defaults(fn=cmd_keys_list)
    revoke = keys.add_parser("revoke", help="revoke a key at once, by its id or by the key itself")
    revoke.add_argument("key", help="the key's id (from `veil keys list`) or the whole key")
    revoke.set_defaults(fn=cmd_keys_revoke)
    api = sub.add_parser("openapi", help="write the OpenAPI document")
    api.add_argument("--output", default="openapi/openapi.json", help="where (default: openapi/openapi.json)")
    api.set_defaults(fn=cmd_openapi)
    docs = sub.add_parser("docs", help="regenerate the methods index of the docs from the registry "
                          "(Veil's own methods), or print one method's page")
    docs.add_argument("--method", metavar="NAME", help="print this method's page (parameters, guarantee, "
                      "an example job) generated from the registry, a VEIL_PLUGINS method's too, "
                      "instead of writing the index")
    docs.set_defaults(fn=cmd_docs)
    return parser


def _count(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more, not {value}")
    return value


_APPLICATION_NAMES = {"serve": "veil-api", "worker": "veil-worker", "cli": "veil-cli"}  # "cli": every other command


def main(argv: list[str] | None = None) -> None:
    from psycopg.errors import UndefinedTable
    from sqlalchemy.exc import OperationalError, ProgrammingError

    args = build_parser().parse_args(argv)
    check_settings()
    if args.command in ("serve", "worker") and os.environ.get("VEIL_PLUGINS", "").strip(" ,"):
        import_plugins(args.command)
    # which part of Veil a connection belongs to, in pg_stat_activity (libpq reads PGAPPNAME).
    # An operator's own name is kept; one of ours is inherited (`veil serve` starts its
    # workers, a test process ran a command in-process) and replaced by this command's.
    if os.environ.get("PGAPPNAME") in (None, "", *_APPLICATION_NAMES.values()):
        os.environ["PGAPPNAME"] = _APPLICATION_NAMES.get(args.command, _APPLICATION_NAMES["cli"])
    try:
        args.fn(args)
    except ImportError as exc:  # a VEIL_PLUGINS module that fails to import (openapi, docs): one line
        registry = sys.modules.get("app.privacy.registry")
        if registry is None or not isinstance(exc, registry.PluginError):
            raise
        raise SystemExit(f"veil: {exc}") from None
    except (OperationalError, ProgrammingError) as exc:
        command = " ".join(filter(None, (args.command, getattr(args, "keys_command", None),
                                         getattr(args, "ledger_command", None))))
        if isinstance(exc.orig, UndefinedTable):  # a new data directory or database
            raise SystemExit(f"veil {command}: the database has no Veil tables yet: run `veil migrate` "
                             "(or `veil serve`, which migrates) first") from None
        if isinstance(exc, ProgrammingError):
            raise
        reason = str(exc.orig or exc).strip().splitlines()[0]  # which server and why, never a password
        raise SystemExit(f"veil {command}: the database cannot be reached: {reason}") from None


if __name__ == "__main__":
    main()
