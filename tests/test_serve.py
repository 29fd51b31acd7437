"""`veil serve` as a user runs it (what `make run` starts): embedded PostgreSQL in its own data
folder, migrations, the API on a loopback port, two worker processes restarted when one dies,
and the development key printed — then the loop of the README through real HTTP."""

from __future__ import annotations

import io
import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pandas as pd
import psutil
import pytest

from tests.conftest import ADULT

ROOT = Path(__file__).resolve().parents[1]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    data_dir = Path(os.environ.get("TMPDIR", "/tmp")) / f"veil-serve-{os.getpid()}"
    port = _free_port()
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "VEIL_PLUGINS", "VEIL_DEV_API_KEY")}
    # the service's own temporary files (multiprocessing's pymp-* directories): none may be
    # left once it has stopped
    service_tmp = tmp_path_factory.mktemp("service-tmp")
    env.update(VEIL_DATA_DIR=str(data_dir), VEIL_PORT=str(port), TMPDIR=str(service_tmp))
    log = open(tmp_path_factory.mktemp("serve") / "serve.log", "w+")
    proc = subprocess.Popen([sys.executable, "-m", "app", "serve"], env=env, cwd=ROOT,
                            stdout=log, stderr=subprocess.STDOUT)
    client = httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=60)
    deadline = time.monotonic() + 180
    try:
        while time.monotonic() < deadline:
            try:
                if client.get("/readyz").status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert proc.poll() is None, "veil serve exited"
            time.sleep(0.3)
        else:
            raise AssertionError("veil serve did not become ready")
        log.seek(0)
        match = re.search(r"Development API key.*\n\s+(veil_\S+)", log.read())
        assert match, "the development key was not printed"
        for _ in range(20):  # the announcer polls /readyz every 0.5 s
            log.seek(0)
            if re.search(r"^Veil is ready \(\d+ s\)", log.read(), re.M):
                break
            time.sleep(0.25)
        else:
            raise AssertionError("ready, but 'Veil is ready' was not printed")
        client.headers["Authorization"] = f"Bearer {match.group(1)}"
        yield proc, client, data_dir
    finally:
        client.close()
        children = psutil.Process(proc.pid).children(recursive=True)
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
        _, alive = psutil.wait_procs(children, timeout=15)
        for p in alive:
            p.kill()
        assert not alive, f"left running after SIGTERM: {[p.pid for p in alive]}"
        # uvicorn ends each API process by raising SIGTERM again, past multiprocessing's exit
        # hooks: every stop left their forkservers' socket directories in /tmp
        assert sorted(p.name for p in service_tmp.iterdir()) == []
        import shutil

        shutil.rmtree(data_dir, ignore_errors=True)


def _api_processes(proc) -> list[psutil.Process]:
    """uvicorn's API processes (spawned children that are not `veil worker`)."""
    return [c for c in psutil.Process(proc.pid).children()
            if "spawn_main" in " ".join(c.cmdline()) and c.status() != psutil.STATUS_ZOMBIE]


def _workers(proc) -> list[psutil.Process]:
    """Live `veil worker` children of the serve process (zombies are dead workers)."""
    out = []
    for child in psutil.Process(proc.pid).children():
        try:
            if child.status() != psutil.STATUS_ZOMBIE and "worker" in " ".join(child.cmdline()):
                out.append(child)
        except psutil.Error:
            pass
    return out


def test_readme_loop_over_real_http(served):
    _, client, _ = served
    with open(ADULT, "rb") as f:
        ds = client.post("/v1/datasets", files={"file": ("adult_train.csv", f)},
                         data={"schema": '{"income": {"role": "label"}}'}).json()
    assert ds["rows"] == 32561
    assert "server" not in client.get("/healthz").headers  # the stack is not announced
    job = client.post("/v1/jobs", json={"dataset_id": ds["id"], "method": "errph", "params": {"p0": 0.5}}).json()
    deadline = time.monotonic() + 60
    while (job := client.get(f"/v1/jobs/{job['id']}").json())["status"] not in ("succeeded", "failed"):
        assert time.monotonic() < deadline
        time.sleep(0.2)
    assert job["status"] == "succeeded", job
    rid = job["result"]["release_ids"][0]
    out = pd.read_csv(io.BytesIO(client.get(f"/v1/releases/{rid}/data?format=csv").content))
    raw = pd.read_csv(ADULT, na_values=["?"])
    assert out.shape == raw.shape and (out["income"] == raw["income"]).all()
    assert {"dataset.uploaded", "job.submitted", "release.created", "release.downloaded"} <= {
        e["action"] for e in client.get("/v1/audit", params={"dataset_id": ds["id"]}).json()["items"]}
    # step 6b of the README: AIM with the domains declared in the job
    aim = client.post("/v1/jobs", json={"dataset_id": ds["id"], "method": "aim", "params": {
        "epsilon": 1, "columns": ["age", "income"], "bounds": {"age": [17, 90]},
        "categories": {"income": ["<=50K", ">50K"]}}}).json()
    deadline = time.monotonic() + 120
    while (aim := client.get(f"/v1/jobs/{aim['id']}").json())["status"] not in ("succeeded", "failed"):
        assert time.monotonic() < deadline
        time.sleep(0.5)
    assert aim["status"] == "succeeded", aim
    synthetic = pd.read_csv(io.BytesIO(client.get(
        f"/v1/releases/{aim['result']['release_ids'][0]}/data?format=csv").content))
    assert list(synthetic.columns) == ["age", "income"] and len(synthetic) == (raw["income"].notna()).sum()
    assert synthetic["age"].between(17, 90).all() and set(synthetic["income"]) <= {"<=50K", ">50K"}


def test_keys_create_against_the_running_instance(served):
    _, client, data_dir = served
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "VEIL_PLUGINS")}
    env["VEIL_DATA_DIR"] = str(data_dir)
    done = subprocess.run([sys.executable, "-m", "app", "keys", "create", "--tenant", "acme",
                           "--role", "owner"], env=env, cwd=ROOT, capture_output=True, text=True, check=True)
    other = done.stdout.strip()
    mine = client.get("/v1/datasets").json()["items"]
    assert mine, "the dev tenant has a dataset"
    r = httpx.get(f"{client.base_url}/v1/datasets/{mine[0]['id']}", headers={"Authorization": f"Bearer {other}"})
    assert r.status_code == 404 and r.headers["content-type"].startswith("application/problem+json")


def test_a_dead_worker_is_restarted(served):
    proc, client, _ = served
    workers = _workers(proc)
    assert len(workers) == 2
    workers[0].kill()
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        alive = _workers(proc)
        if len(alive) == 2 and workers[0].pid not in {w.pid for w in alive}:
            break
        time.sleep(0.5)
    else:
        raise AssertionError("the killed worker was not replaced")


def test_two_api_processes_one_metrics_view_and_workers_below_the_api(served):
    """The default `veil serve`: two API processes behind one port whose request counts
    /metrics merges whichever answers, and workers (with their job processes) at a lower CPU
    priority than the API."""
    proc, client, _ = served
    api = _api_processes(proc)
    assert len(api) == 2
    assert {p.nice() for p in api} == {psutil.Process(proc.pid).nice()}
    deadline = time.monotonic() + 20  # a worker restarted by the test above may still be starting
    # os.nice stops at 19: a suite run under `nice -n 10` has its workers at 19, not 20
    below = min(psutil.Process(proc.pid).nice() + 10, 19)
    while {w.nice() for w in _workers(proc)} != {below}:
        assert time.monotonic() < deadline, [(w.pid, w.nice()) for w in _workers(proc)]
        time.sleep(0.2)
    for worker in _workers(proc):
        assert all(c.nice() >= worker.nice() for c in worker.children(recursive=True))

    def healthz_count() -> float:
        text = client.get("/metrics").text
        return sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
                   if line.startswith("veil_request_duration_seconds_count") and '"/healthz"' in line)

    before = healthz_count()
    for _ in range(40):  # a new connection each time: the kernel spreads them over both processes
        assert httpx.get(f"{client.base_url}/healthz").status_code == 200
    assert healthz_count() - before == 40
