"""`veil serve` (embedded mode) stopped with SIGTERM takes its worker processes and its
PostgreSQL down with it, also after one of its workers was SIGKILLed and restarted."""

from __future__ import annotations

import time

import psutil

from tests.support.server import LiveServer


def _workers(pid: int) -> list[psutil.Process]:
    out = []
    for p in psutil.Process(pid).children():
        try:
            if "worker" in " ".join(p.cmdline()):
                out.append(p)
        except psutil.Error:  # a killed worker not reaped yet
            pass
    return out


def test_sigterm_stops_the_workers_and_the_embedded_postgres(tmp_path):
    server = LiveServer(tmp_path / "serve", workers=2, env={"VEIL_PLUGINS": ""}, ready_path="/readyz")
    try:
        workers = _workers(server.pid)
        postgres = [p for p in psutil.process_iter(["name", "cmdline"]) if p.info["name"] == "postgres"
                    and str(tmp_path / "serve") in " ".join(p.info["cmdline"] or [])]
        assert len(workers) == 2 and postgres
        workers[0].kill()  # dies without its exit hooks; the supervisor starts another
        deadline = time.monotonic() + 30
        while len([p for p in _workers(server.pid) if p.pid != workers[0].pid]) < 2:
            assert time.monotonic() < deadline
            time.sleep(0.2)
        everything = psutil.Process(server.pid).children(recursive=True) + postgres
    finally:
        server.stop()  # SIGTERM
    assert server.proc.returncode == 0
    # a second to exit was too short on the 2 loaded cores of a CI run (the suite beside four
    # other jobs: a process was still exiting); ten is not a hang
    _, alive = psutil.wait_procs(everything, timeout=10)
    left = [p.pid for p in alive if p.is_running() and p.status() != psutil.STATUS_ZOMBIE]
    assert not left, f"still running 10 s after veil serve exited: {left}"


def _postgres_of(data_dir) -> list[psutil.Process]:
    return [p for p in psutil.process_iter(["name", "cmdline"]) if p.info["name"] == "postgres"
            and f"-D {data_dir}" in " ".join(p.info["cmdline"] or [])]


def test_an_embedded_postgresql_that_dies_is_started_again(tmp_path):
    """The embedded PostgreSQL killed under a running `veil serve` (the kernel's OOM killer, a
    stray kill) stayed down: every request a 503 and /readyz 'database: unavailable' for good,
    while /healthz — the image's health check — said 200, so nothing restarted the container
    (operator acceptance check: 60 s watched, no recovery). `veil serve` now starts it again,
    as it starts a worker that died."""
    data = tmp_path / "serve"
    server = LiveServer(data, workers=1, env={"VEIL_PLUGINS": ""}, ready_path="/readyz")
    try:
        postmaster = min(_postgres_of(data / "pg"), key=lambda p: p.create_time())
        postmaster.kill()
        postmaster.wait(10)
        with server.client() as client:
            deadline = time.monotonic() + 60
            while client.get("/readyz").status_code != 200:
                assert time.monotonic() < deadline, server.log_tail()
                time.sleep(0.5)
            made = client.post("/v1/datasets", headers=server.headers,
                               files={"file": ("t.csv", b"a,b\n1,x\n2,y\n")})
            assert made.status_code == 201, made.text
        # another postmaster serves the data dir now. Usually serve's keeper started it and said
        # so ('started it again'); a worker restarted meanwhile may start it first (pgserver's
        # get_server), and then the keeper finds it running and says nothing (a clean clone's
        # run under load failed on the missing message after a full recovery)
        again = [p for p in _postgres_of(data / "pg") if p.pid != postmaster.pid and p.is_running()]
        assert again, server.log_tail(200)
    finally:
        server.stop()
    assert server.proc.returncode == 0
    time.sleep(1)
    assert not [p for p in _postgres_of(data / "pg") if p.is_running()
                and p.status() != psutil.STATUS_ZOMBIE], "PostgreSQL left running after veil serve exited"
