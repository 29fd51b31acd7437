"""`veil serve`: the API (uvicorn, VEIL_API_PROCESSES processes on VEIL_HOST:VEIL_PORT) and its
worker processes, over a database migrated and checked first; what it says as it starts, and
once it is ready."""

from __future__ import annotations

import logging
import os
import shutil
import signal
import threading
import time
from pathlib import Path

from app.config import get_settings
from app.database_ready import database_ready, own_data_dir
from app.ops.cli import run_restore_check
from app.supervisors import PostgresKeeper, WorkerPool


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
    scratch = _temporary_folder_of_its_own()  # before the workers and API processes: they inherit it
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
        shutil.rmtree(scratch, ignore_errors=True)


def _temporary_folder_of_its_own() -> str:
    """A folder inside the temporary folder (TMPDIR, default /tmp) for the processes this serve
    starts — their TMPDIR — removed when it stops. What they left there stayed for good:
    uvicorn ends each API process by raising SIGTERM again, past multiprocessing's exit hooks,
    so every stop left their forkservers' socket folders (/tmp/pymp-*, two a stop), and a
    worker killed (SIGKILL, out of memory) leaves its own. This process keeps the temporary
    folder it was given (its own exit hooks run: see _exit_on_sigterm)."""
    import tempfile

    parent = tempfile.gettempdir()  # read now: this process's own temporary files stay there
    try:
        folder = tempfile.mkdtemp(prefix="veil-serve-", dir=parent)
    except OSError as exc:
        raise SystemExit(f"veil serve: cannot create a folder in the temporary folder {parent} "
                         f"(TMPDIR): {exc.strerror or exc}") from None
    os.environ["TMPDIR"] = folder
    return folder


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
