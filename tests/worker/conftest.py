"""Real worker processes (`python -m app worker`) against the session's PostgreSQL."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from sqlalchemy import text

from app.db import transaction

ROOT = Path(__file__).resolve().parents[2]


class WorkerPool:
    def __init__(self, count: int, env: dict[str, str]) -> None:
        # normal CPU priority: these tests time job semantics on a machine the test process
        # shares; the lowered priority of `veil serve`'s workers is tested in tests/test_serve.py
        self.env = {**os.environ, "VEIL_WORKER_NICE": "0", **env}
        self.procs = [self._spawn() for _ in range(count)]

    def _spawn(self) -> subprocess.Popen:
        return subprocess.Popen([sys.executable, "-m", "app", "worker"], env=self.env, cwd=ROOT,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def wait_ready(self, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with transaction() as s:
                alive = s.execute(text(
                    "SELECT count(*) FROM worker_heartbeats WHERE pid = ANY(:p) "
                    "AND seen_at > now() - interval '5 seconds'"),
                    {"p": [p.pid for p in self.procs]}).scalar_one()
            if alive == len(self.procs):
                time.sleep(0.5)  # the queue consumer starts right after the first heartbeat
                return
            time.sleep(0.2)
        raise AssertionError("workers did not start")

    def pid_of_job(self, job_id) -> int:
        with transaction() as s:
            worker = s.execute(text("SELECT worker_id FROM jobs WHERE id = :i"), {"i": str(job_id)}).scalar_one()
        return int(worker.rsplit(":", 1)[1])

    def kill(self, pid: int, sig=signal.SIGKILL) -> None:
        os.kill(pid, sig)

    def add(self) -> None:
        self.procs.append(self._spawn())

    def stop(self) -> None:
        for p in self.procs:
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        for p in self.procs:
            try:
                p.wait(10)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        self.procs.clear()


def _drain_leftovers() -> None:
    """Jobs queued by the API tests (no worker ran then) would occupy these workers."""
    with transaction() as s:
        s.execute(text("UPDATE procrastinate_jobs SET status = 'cancelled' WHERE status = 'todo'"))
        s.execute(text("UPDATE jobs SET status = 'cancelled', finished_at = now() WHERE status = 'queued'"))


@pytest.fixture(scope="module")
def worker_env():
    return {}


@pytest.fixture(scope="module")
def workers(database, worker_env):
    _drain_leftovers()
    pool = WorkerPool(worker_env.pop("count", 2) if "count" in worker_env else 2, worker_env)
    pool.wait_ready()
    yield pool
    pool.stop()
