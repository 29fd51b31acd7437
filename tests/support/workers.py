"""Real worker processes (`python -m app worker`) for the tests, and the pool of two default
workers that the worker test modules without settings of their own share.

A worker's start costs ~10 s of CPU (the worker and its forkserver each import the library):
~11 s a module under load when each of the ten default modules started its own pool. The
shared pool is started once, checked at each module's start (every process alive,
heartbeating, idle and started with today's settings, else replaced) and stopped before any
test that did not ask for it, so no other test ever sees a worker it did not start.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
from sqlalchemy import text

from app.db import transaction

ROOT = Path(__file__).resolve().parents[2]


def worker_environment(env: dict[str, str]) -> dict[str, str]:
    # normal CPU priority: these tests time job semantics on a machine the test process
    # shares; the lowered priority of `veil serve`'s workers is tested in tests/test_serve.py
    return {**os.environ, "VEIL_WORKER_NICE": "0", **env}


def stop_processes(procs: list[subprocess.Popen]) -> None:
    for p in procs:
        if p.poll() is None:
            p.send_signal(signal.SIGCONT)  # a stopped process would not see the SIGTERM
            p.send_signal(signal.SIGTERM)
    for p in procs:
        try:
            p.wait(10)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


class WorkerPool:
    def __init__(self, count: int, env: dict[str, str]) -> None:
        self.env = worker_environment(env)
        self.own_session = False  # each new process leads a process group of its own
        self.procs = [self._spawn() for _ in range(count)]

    def _spawn(self) -> subprocess.Popen:
        return subprocess.Popen([sys.executable, "-m", "app", "worker"], env=self.env, cwd=ROOT,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                start_new_session=self.own_session)

    def wait_ready(self, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if len(self.heartbeating()) == len(self.procs):
                time.sleep(0.5)  # the queue consumer starts right after the first heartbeat
                return
            time.sleep(0.2)
        raise AssertionError("workers did not start")

    def heartbeating(self, within_s: float = 5) -> set[int]:
        """Pids of this pool's processes that heartbeated in the last ``within_s`` seconds."""
        with transaction() as s:
            return set(s.execute(text(
                "SELECT pid FROM worker_heartbeats WHERE pid = ANY(:p) "
                "AND seen_at > now() - make_interval(secs => :w)"),
                {"p": [p.pid for p in self.procs], "w": within_s}).scalars())

    def busy(self) -> set[int]:
        """Pids of this pool's processes that are running a job."""
        with transaction() as s:
            workers = s.execute(text("SELECT worker_id FROM jobs WHERE status = 'running'")).scalars()
            running = {int(w.rsplit(":", 1)[1]) for w in workers if w}
        return running & {p.pid for p in self.procs}

    def pid_of_job(self, job_id) -> int:
        with transaction() as s:
            worker = s.execute(text("SELECT worker_id FROM jobs WHERE id = :i"), {"i": str(job_id)}).scalar_one()
        return int(worker.rsplit(":", 1)[1])

    def kill(self, pid: int, sig=signal.SIGKILL) -> None:
        os.kill(pid, sig)

    def add(self) -> None:
        self.procs.append(self._spawn())

    def stop(self) -> None:
        stop_processes(self.procs)
        self.procs.clear()


def drain_leftovers() -> None:
    """Jobs queued by the API tests (no worker ran then) would occupy these workers."""
    with transaction() as s:
        s.execute(text("UPDATE procrastinate_jobs SET status = 'cancelled' WHERE status = 'todo'"))
        s.execute(text("UPDATE jobs SET status = 'cancelled', finished_at = now() WHERE status = 'queued'"))


def uses_the_shared_pool(item) -> bool:
    """A test that asks for `workers` in a module that sets no `worker_env` (nor `workers`) of its own."""
    return ("workers" in getattr(item, "fixturenames", ())
            and not hasattr(item.module, "worker_env") and not hasattr(item.module, "workers"))


def _module(item) -> str | None:
    module = getattr(item, "module", None)
    return module.__name__ if module is not None else None


class SharedPool:
    COUNT = 2

    def __init__(self) -> None:
        self.pool: WorkerPool | None = None
        self.modules: set[str] = set()  # module names whose tests use it
        self._env: dict[str, str] = {}  # what its processes were started with

    def plan(self, items: list) -> None:
        """Note the modules that use the pool, and move them next to each other (each module's
        tests in their order) so that it starts once, not once for every run of such modules."""
        self.modules = {_module(item) for item in items if uses_the_shared_pool(item)}
        sharing = [item for item in items if _module(item) in self.modules]
        if sharing:
            first = items.index(sharing[0])
            rest = [item for item in items if _module(item) not in self.modules]
            items[:] = rest[:first] + sharing + rest[first:]

    def for_module(self) -> WorkerPool:
        drain_leftovers()
        if self.pool is not None and not self._fit():
            self.stop()
            drain_leftovers()  # what the stopped workers queued again
        if self.pool is None:
            self.pool = WorkerPool(self.COUNT, {})
            self._env = dict(self.pool.env)
        self.pool.wait_ready()
        return self.pool

    def _fit(self) -> bool:
        """Dead processes (a test killed one) are dropped and made up for; anything else amiss
        (settings changed, a process not heartbeating, a job still running after 30 s) and the
        pool is started afresh."""
        pool = self.pool
        if pool.env != self._env or _settings(self._env) != _settings(worker_environment({})):
            return False
        pool.procs = [p for p in pool.procs if p.poll() is None]
        if any(_stopped(p.pid) for p in pool.procs) or len(pool.heartbeating()) != len(pool.procs):
            return False
        deadline = time.monotonic() + 30  # a job the module before left (none is queued now)
        while pool.busy():
            if time.monotonic() > deadline:
                return False
            time.sleep(0.2)
        extra, pool.procs = pool.procs[self.COUNT:], pool.procs[:self.COUNT]
        stop_processes(extra)
        while len(pool.procs) < self.COUNT:
            pool.add()
        return True

    def stop(self) -> None:
        if self.pool is not None:
            self.pool.stop()
            self.pool = None

    def release_unless_used_by(self, item) -> None:
        if self.pool is not None and _module(item) not in self.modules:
            self.stop()


def _stopped(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_STOPPED
    except psutil.NoSuchProcess:
        return True


def _settings(env: dict[str, str]) -> dict[str, str]:
    return {k: v for k, v in env.items() if k != "PYTEST_CURRENT_TEST"}  # pytest sets it per test


SHARED = SharedPool()
