"""What `veil serve` keeps running while it serves: its `veil worker` processes and its embedded
PostgreSQL, each started again when it dies."""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from app.config import get_settings
from app.database_ready import pgserver_quiet, postgres_said


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
