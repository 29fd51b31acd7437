"""A real `veil serve` (uvicorn + optional worker processes) on a free loopback port, for the
tests that must attack the service over real sockets: fuzzing, races, abuse, load."""

from __future__ import annotations

import os
import secrets
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def rss_bytes(pid: int) -> int:
    """Resident set of a process (Linux /proc)."""
    with open(f"/proc/{pid}/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


class RssSampler:
    """Peak resident set of a process while a block runs (sampled every 10 ms)."""

    def __init__(self, pid: int) -> None:
        self.pid, self.peak, self._stop = pid, 0, threading.Event()

    def __enter__(self):
        self.baseline = rss_bytes(self.pid)
        self.peak = self.baseline
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        return self

    def _run(self) -> None:
        while not self._stop.is_set():
            self.peak = max(self.peak, rss_bytes(self.pid))
            time.sleep(0.01)

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()

    @property
    def growth_mib(self) -> float:
        return (self.peak - self.baseline) / (1024 * 1024)


class LiveServer:
    """`python -m app serve` as a subprocess. With ``database_url`` it joins that database
    (the test session's); without it, it starts its own embedded PostgreSQL in ``data_dir``."""

    def __init__(self, data_dir: Path, *, database_url: str | None = None, workers: int = 0,
                 env: dict[str, str] | None = None, ready_path: str = "/healthz",
                 timeout: float = 120) -> None:
        self.port = free_port()
        self.key = f"veil_{secrets.token_hex(6)}_{secrets.token_urlsafe(24)}"
        self.base_url = f"http://127.0.0.1:{self.port}"
        data_dir.mkdir(parents=True, exist_ok=True)
        self.log_path = data_dir / "serve.log"
        full_env = {**os.environ, "VEIL_DATA_DIR": str(data_dir), "VEIL_PORT": str(self.port),
                    "VEIL_DEV_API_KEY": self.key, "VEIL_LOG_LEVEL": "WARNING",
                    # one API process unless asked: the abuse tests measure the memory of `pid`
                    "VEIL_API_PROCESSES": "1", **(env or {})}
        if database_url:
            full_env["DATABASE_URL"] = database_url
        else:
            full_env.pop("DATABASE_URL", None)
        self._log = open(self.log_path, "ab")
        self.proc = subprocess.Popen([sys.executable, "-m", "app", "serve", "--workers", str(workers)],
                                     env=full_env, cwd=ROOT, stdout=self._log, stderr=subprocess.STDOUT,
                                     start_new_session=True)
        self.headers = {"Authorization": f"Bearer {self.key}"}
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"veil serve exited ({self.proc.returncode}); see {self.log_path}:\n"
                                   + self.log_tail())
            try:
                if httpx.get(self.base_url + ready_path, timeout=2).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.2)
        self.stop()
        raise RuntimeError(f"veil serve did not become ready in {timeout} s:\n" + self.log_tail())

    @property
    def pid(self) -> int:
        return self.proc.pid

    def client(self, **kwargs) -> httpx.Client:
        return httpx.Client(base_url=self.base_url, timeout=kwargs.pop("timeout", 60), **kwargs)

    def log_tail(self, n: int = 40) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-n:])
        except OSError:
            return ""

    def log_offset(self) -> int:
        return self.log_path.stat().st_size

    def server_errors(self, since: int = 0) -> list[str]:
        """Log lines of unhandled errors (the service logs every 500 as 'unhandled ...'),
        from byte offset ``since`` of the log on."""
        with open(self.log_path, "rb") as f:
            f.seek(since)
            text = f.read().decode(errors="replace")
        return [line for line in text.splitlines() if '"unhandled' in line or "Traceback" in line]

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        self._log.close()
