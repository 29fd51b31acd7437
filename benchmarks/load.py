"""Constant-rate load on loopback against a real `veil serve` (embedded PostgreSQL, its worker
processes, a free port), bounded in count and time; it stops by itself.

    python -m benchmarks.load                      # 200 reads/s + 20 job submissions/s for 60 s
    python -m benchmarks.load --seconds 10 --reads 100 --submits 10
    python -m benchmarks.load --json out.json

Open loop: request i of a class is sent at t0 + i / rate whether or not earlier ones have
answered (a slow server does not slow the offered load down). Latency is measured from the
moment the request was due, so client-side queueing behind a slow server is counted too
(no coordinated omission); the client's own lag is reported separately.

Reads are a mix of job status polls (50 %), dataset metadata (20 %), release metadata (20 %)
and budgets (10 %) on objects made beforehand; submissions are `errph` jobs on a 1,000-row
table, run by the service's workers meanwhile. The tenant's active-job cap is raised for
the run (the workers cannot keep up with 20 jobs/s on two shared cores, and the queue is
part of the load). Targets: reads p99 ≤ 100 ms, submissions p99 ≤ 200 ms, no 5xx. Exit code 1
on any 5xx or transport error; latency targets are reported as PASS/MISS.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.support.server import LiveServer  # noqa: E402  (the same launcher the tests use)

TARGETS_MS = {"read": 100.0, "submit": 200.0}


def _table(rows: int = 1000) -> bytes:
    rng = np.random.default_rng(0)
    lines = ["age,sex,edu,city,income"]
    for _ in range(rows):
        lines.append(f"{rng.integers(18, 90)},{'MF'[rng.integers(2)]},{rng.choice(['hs', 'ba', 'ms', 'phd'])},"
                     f"c{rng.integers(20)},{rng.choice(['<=50K', '>50K'])}")
    return ("\n".join(lines) + "\n").encode()


def _prepare(client: httpx.Client) -> dict:
    ds = client.post("/v1/datasets", files={"file": ("load.csv", _table())}).json()
    body = {"dataset_id": ds["id"], "method": "errph", "params": {"p0": 0.5, "columns": ["sex", "edu"]}}
    jobs = [client.post("/v1/jobs", json=body).json()["id"] for _ in range(10)]
    releases = []
    deadline = time.monotonic() + 120
    while len(releases) < len(jobs) and time.monotonic() < deadline:
        releases = []
        for j in jobs:
            job = client.get(f"/v1/jobs/{j}").json()
            releases += job["result"]["release_ids"]
        time.sleep(0.2)
    if not releases:
        raise RuntimeError("no job finished during the warm-up: are the workers running?")
    return {"dataset": ds["id"], "jobs": jobs, "releases": releases, "submit": body}


def _reads(objects: dict, n: int) -> list[str]:
    rng = np.random.default_rng(1)
    out = []
    for _ in range(n):
        u = rng.random()
        if u < 0.5:
            out.append(f"/v1/jobs/{rng.choice(objects['jobs'])}")
        elif u < 0.7:
            out.append(f"/v1/datasets/{objects['dataset']}")
        elif u < 0.9:
            out.append(f"/v1/releases/{rng.choice(objects['releases'])}")
        else:
            out.append(f"/v1/datasets/{objects['dataset']}/budget")
    return out


class RawClient:
    """A minimal HTTP/1.1 keep-alive client on asyncio streams: a few tens of microseconds of
    CPU per request (httpx's async client costs ~1 ms, which on two shared cores competes
    with the server being measured). Enough for JSON requests with a Content-Length answer."""

    IDLE_S = 4.0  # uvicorn closes a keep-alive connection idle for 5 s: never reuse one that old

    def __init__(self, host: str, port: int, headers: dict[str, str], max_connections: int = 256) -> None:
        self.host, self.port = host, port
        self.head = "".join(f"{k}: {v}\r\n" for k, v in {"Host": f"{host}:{port}", **headers}.items())
        self.idle: list = []
        self.slots = asyncio.Semaphore(max_connections)

    async def request(self, method: str, url: str, json_body=None) -> int:
        body = b"" if json_body is None else json.dumps(json_body).encode()
        extra = f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n" if body else ""
        raw = f"{method} {url} HTTP/1.1\r\n{self.head}{extra}\r\n".encode() + body
        async with self.slots:
            reader = writer = None
            while self.idle and reader is None:
                r, w, last = self.idle.pop()
                if time.monotonic() - last < self.IDLE_S:
                    reader, writer = r, w
                else:
                    w.close()
            if reader is None:
                reader, writer = await asyncio.open_connection(self.host, self.port)
            try:
                writer.write(raw)
                head = await reader.readuntil(b"\r\n\r\n")
                status = int(head.split(b" ", 2)[1])
                length = 0
                for line in head.split(b"\r\n"):
                    if line.lower().startswith(b"content-length:"):
                        length = int(line.split(b":", 1)[1])
                await reader.readexactly(length)
            except BaseException:
                writer.close()
                raise
            if b"connection: close" in head.lower():
                writer.close()
            else:
                self.idle.append((reader, writer, time.monotonic()))
            return status

    async def close(self) -> None:
        for _, writer, _ in self.idle:
            writer.close()


async def _offer(client: RawClient, kind: str, rate: float, seconds: float, make, results: list,
                 t0: float) -> None:
    """Send ``rate × seconds`` requests of one class on schedule."""
    n = int(rate * seconds)
    tasks = []

    async def fire(due: float, method: str, url: str, kwargs: dict) -> None:
        sent = time.perf_counter()
        try:
            status: int | str = await client.request(method, url, kwargs.get("json"))
        except (OSError, asyncio.IncompleteReadError, ValueError) as exc:
            status = type(exc).__name__
        done = time.perf_counter()
        results.append((kind, status, done - due, sent - due, done))

    for i in range(n):
        due = t0 + i / rate
        delay = due - time.perf_counter()
        if delay > 0:
            await asyncio.sleep(delay)
        method, url, kwargs = make(i)
        tasks.append(asyncio.create_task(fire(due, method, url, kwargs)))
    await asyncio.gather(*tasks)


async def _run_load(base_url: str, headers: dict, objects: dict, seconds: float, reads: float,
                    submits: float) -> tuple[list, float]:
    read_urls = _reads(objects, int(reads * seconds))
    host, port = base_url.removeprefix("http://").split(":")
    client = RawClient(host, int(port), headers)
    results: list = []
    t0 = time.perf_counter() + 0.5
    try:
        await asyncio.wait_for(asyncio.gather(
            _offer(client, "read", reads, seconds, lambda i: ("GET", read_urls[i], {}), results, t0),
            _offer(client, "submit", submits, seconds,
                   lambda i: ("POST", "/v1/jobs", {"json": objects["submit"]}), results, t0),
        ), timeout=seconds + 60)  # bounded: a stuck server cannot keep the run alive
    finally:
        await client.close()
    return results, t0


def summarize(results: list, t0: float, seconds: float, offered: dict[str, float]) -> dict:
    out: dict = {}
    for kind in ("read", "submit"):
        rows = [r for r in results if r[0] == kind]
        lat = np.array([r[2] for r in rows]) * 1000
        lag = np.array([r[3] for r in rows]) * 1000
        statuses = collections.Counter(str(r[1]) for r in rows)
        ok = [r for r in rows if isinstance(r[1], int) and r[1] < 400]
        span = (max(r[4] for r in rows) - t0) if rows else seconds
        out[kind] = {
            "offered_per_s": offered[kind], "sent": len(rows),
            "achieved_per_s": round(len(ok) / max(span, seconds), 1),
            "p50_ms": round(float(np.percentile(lat, 50)), 1), "p95_ms": round(float(np.percentile(lat, 95)), 1),
            "p99_ms": round(float(np.percentile(lat, 99)), 1), "max_ms": round(float(lat.max()), 1),
            "client_lag_p99_ms": round(float(np.percentile(lag, 99)), 1),
            "statuses": dict(sorted(statuses.items())),
            "errors_5xx": sum(v for k, v in statuses.items() if k.isdigit() and int(k) >= 500),
            "transport_errors": sum(v for k, v in statuses.items() if not k.isdigit()),
            "target_p99_ms": TARGETS_MS[kind],
        }
        out[kind]["target_met"] = out[kind]["p99_ms"] <= TARGETS_MS[kind] and out[kind]["errors_5xx"] == 0
    return out


class CpuMeter:
    """CPU seconds used by the API process, its workers (with their job processes), the
    PostgreSQL server, this client, and everything else on the machine, over a run."""

    def __init__(self, server: LiveServer, pgdata: Path) -> None:
        import psutil

        self.psutil, self.server, self.pgdata = psutil, server, str(pgdata)

    def _proc(self, p) -> float:
        t = p.cpu_times()
        return t.user + t.system + t.children_user + t.children_system

    def sample(self) -> dict[str, float]:
        ps = self.psutil
        api = ps.Process(self.server.pid)
        out = {"api": api.cpu_times().user + api.cpu_times().system, "workers": 0.0, "postgres": 0.0}
        for child in api.children():
            # `veil worker` processes (with their job processes) vs uvicorn's API processes
            try:
                role = "workers" if "worker" in child.cmdline() else "api"
                out[role] += self._proc(child) + sum(self._proc(c) for c in child.children(recursive=True))
            except ps.Error:
                pass
        for p in ps.process_iter(["name", "cmdline"]):
            try:
                if p.info["name"] == "postgres" and self.pgdata in " ".join(p.info["cmdline"] or []):
                    out["postgres"] += self._proc(p) + sum(
                        c.cpu_times().user + c.cpu_times().system for c in p.children())
            except ps.Error:
                pass
        me = os.times()
        out["client"] = me.user + me.system
        t = ps.cpu_times()
        out["machine"] = t.user + t.system + t.nice + getattr(t, "irq", 0) + getattr(t, "softirq", 0)
        out["wall"] = time.monotonic()
        return out

    @staticmethod
    def cores(before: dict, after: dict) -> dict[str, float]:
        wall = after["wall"] - before["wall"]
        used = {k: (after[k] - before[k]) / wall for k in before if k != "wall"}
        used["others"] = used.pop("machine") - sum(used.values())
        return {k: round(max(v, 0.0), 2) for k, v in used.items()}


def _temporary_worker(data_dir: Path, env: dict[str, str]) -> subprocess.Popen:
    """A worker for the warm-up only (the measured server then runs no worker)."""
    full = {**os.environ, **env, "VEIL_DATA_DIR": str(data_dir)}
    full.pop("DATABASE_URL", None)
    return subprocess.Popen([sys.executable, "-m", "app", "worker"], env=full, cwd=ROOT,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def run(seconds: float = 60, reads: float = 200, submits: float = 20, workers: int = 2,
        api_processes: int = 2) -> dict:
    """workers = 0: the API alone (jobs made for the warm-up by a temporary worker; the
    submissions of the run stay queued)."""
    with tempfile.TemporaryDirectory(prefix="veil-load-") as tmp:
        env = {"VEIL_TENANT_MAX_ACTIVE_JOBS": "1000000", "VEIL_WORKERS": str(workers), "VEIL_PLUGINS": "",
               "VEIL_LOG_LEVEL": "WARNING", "VEIL_API_PROCESSES": str(api_processes)}
        server = LiveServer(Path(tmp), workers=workers, env=env, ready_path="/readyz" if workers else "/healthz")
        helper = _temporary_worker(Path(tmp), env) if workers == 0 else None
        try:
            with server.client(headers=server.headers) as c:
                objects = _prepare(c)
            if helper is not None:
                helper.terminate()
                helper.wait(30)
            meter = CpuMeter(server, Path(tmp) / "pg")
            before = meter.sample()
            results, t0 = asyncio.run(_run_load(server.base_url, server.headers, objects, seconds, reads, submits))
            cpu = CpuMeter.cores(before, meter.sample())
            report = summarize(results, t0, seconds, {"read": reads, "submit": submits})
            report["server_errors_logged"] = len(server.server_errors())
        finally:
            if helper is not None and helper.poll() is None:
                helper.kill()
            server.stop()
    report["config"] = {"seconds": seconds, "workers": workers, "api_processes": api_processes,
                        "cpus": os.cpu_count(),
                        "loadavg_after": [round(x, 2) for x in os.getloadavg()]}
    report["cpu_cores_used"] = cpu
    return report


def render(report: dict) -> str:
    lines = ["| class | offered /s | achieved /s | p50 ms | p95 ms | p99 ms | max ms | target p99 | statuses |",
             "|---|---|---|---|---|---|---|---|---|"]
    for kind in ("read", "submit"):
        r = report[kind]
        lines.append(f"| {kind} | {r['offered_per_s']:g} | {r['achieved_per_s']:g} | {r['p50_ms']} | "
                     f"{r['p95_ms']} | {r['p99_ms']} | {r['max_ms']} | ≤ {r['target_p99_ms']:g} ms "
                     f"({'PASS' if r['target_met'] else 'MISS'}) | {r['statuses']} |")
    c = report["config"]
    lines.append(f"\n{c['seconds']:g} s on loopback, {c.get('api_processes', 1)} API processes, "
                 f"{c['workers']} workers, {c['cpus']} CPUs "
                 f"(load average after the run: {c['loadavg_after']}); client lag p99: read "
                 f"{report['read']['client_lag_p99_ms']} ms, submit {report['submit']['client_lag_p99_ms']} ms; "
                 f"server errors logged: {report['server_errors_logged']}")
    lines.append("CPU cores used during the run: " + ", ".join(f"{k} {v}" for k, v in report["cpu_cores_used"].items()))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.load", description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=float(os.environ.get("VEIL_LOAD_SECONDS", 60)))
    parser.add_argument("--reads", type=float, default=float(os.environ.get("VEIL_LOAD_READS", 200)))
    parser.add_argument("--submits", type=float, default=float(os.environ.get("VEIL_LOAD_SUBMITS", 20)))
    parser.add_argument("--workers", type=int, default=2,
                        help="worker processes of the served instance (0: the API alone, see run())")
    parser.add_argument("--api-processes", type=int, default=2,
                        help="API processes of the served instance (VEIL_API_PROCESSES)")
    parser.add_argument("--json", type=Path, default=None, help="also write the report as JSON here")
    args = parser.parse_args(argv)
    report = run(args.seconds, args.reads, args.submits, args.workers, args.api_processes)
    print(render(report))
    if args.json:
        args.json.write_text(json.dumps(report, indent=2) + "\n")
    broken = sum(report[k]["errors_5xx"] + report[k]["transport_errors"] for k in ("read", "submit"))
    return 1 if broken or report["server_errors_logged"] else 0


if __name__ == "__main__":
    sys.exit(main())
