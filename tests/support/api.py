"""Small helpers the API and worker tests share."""

from __future__ import annotations

import io
import json
import time
from pathlib import Path

TERMINAL = {"succeeded", "failed", "cancelled"}


def auth(headers: dict[str, str]) -> dict[str, str]:
    return {"Authorization": headers["Authorization"]}


def upload(client, headers, data: bytes | Path, filename: str = "data.csv", schema=None,
           idempotency_key: str | None = None, **fields):
    if isinstance(data, Path):
        data = data.read_bytes()
    form = {k: v for k, v in fields.items()}
    if schema is not None:
        form["schema"] = json.dumps(schema)
    h = auth(headers)
    if idempotency_key:
        h["Idempotency-Key"] = idempotency_key
    return client.post("/v1/datasets", headers=h, files={"file": (filename, io.BytesIO(data))}, data=form)


def submit(client, headers, method: str, params: dict | None = None, *, dataset_id=None,
           release_id=None, idempotency_key: str | None = None, **extra):
    body = {"method": method, "params": params or {}, **extra}
    if dataset_id is not None:
        body["dataset_id"] = str(dataset_id)
    if release_id is not None:
        body["release_id"] = str(release_id)
    h = auth(headers)
    if idempotency_key:
        h["Idempotency-Key"] = idempotency_key
    return client.post("/v1/jobs", headers=h, json=body)


def wait_job(client, headers, job_id, timeout: float = 60.0, until=TERMINAL) -> dict:
    deadline = time.monotonic() + timeout
    while True:
        job = client.get(f"/v1/jobs/{job_id}", headers=auth(headers)).json()
        if job["status"] in until:
            return job
        if time.monotonic() > deadline:
            raise AssertionError(f"job {job_id} still {job['status']} after {timeout}s: {job}")
        time.sleep(0.1)


def run_job(client, headers, job_id) -> dict:
    """Run a queued job here, on the worker's code path (no worker process), and return it,
    asserting it succeeded."""
    from app.worker import runner  # the app's worker: only tests that run jobs import it

    runner.execute(job_id)
    job = client.get(f"/v1/jobs/{job_id}", headers=auth(headers)).json()
    assert job["status"] == "succeeded", (job["status"], job.get("error"))
    return job


def run_failing_job(client, headers, job_id) -> tuple[dict, list[dict]]:
    """Run a queued job here (as ``run_job``); it must fail as invalid_input: the job and the
    details of the job.failed audit events on its dataset."""
    from app.worker import runner

    runner.execute(job_id)
    job = client.get(f"/v1/jobs/{job_id}", headers=auth(headers)).json()
    assert job["status"] == "failed" and job["error"]["type"] == "invalid_input", job
    events = client.get("/v1/audit", headers=auth(headers),
                        params={"action": "job.failed", "dataset_id": job["dataset_id"]}).json()["items"]
    return job, [e["details"] for e in events]


def run_to_release(client, headers, job_id) -> tuple[dict, dict]:
    """``run_job``, then the job's (first) release: (job, release)."""
    job = run_job(client, headers, job_id)
    release = client.get(f"/v1/releases/{job['result']['release_ids'][0]}", headers=auth(headers)).json()
    return job, release


def assert_problem(response, status: int, *fragments: str) -> dict:
    assert response.status_code == status, (response.status_code, response.text[:500])
    assert response.headers["content-type"].startswith("application/problem+json"), response.headers
    body = response.json()
    assert body["status"] == status and body["title"] and body["type"]
    for fragment in fragments:
        assert fragment in body["detail"], (fragment, body)
    return body
