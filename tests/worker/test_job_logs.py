"""What a failed job leaves in the worker's log (operations acceptance check): the child
process printed "method diag_alloc failed with RuntimeError at diagnostics.py:39" as bare
text (not the service's JSON lines) and without the job's id; time and memory limits and
crashes were not logged at all. Now one JSON line per failed attempt names the job."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.support.api import auth, submit, upload, wait_job
from tests.support.workers import ROOT, WorkerPool


class LoggedWorkers(WorkerPool):
    def __init__(self, count, env, log_path) -> None:
        self.log_path = log_path
        super().__init__(count, env)

    def _spawn(self) -> subprocess.Popen:
        log = open(self.log_path, "ab")
        return subprocess.Popen([sys.executable, "-m", "app", "worker"], env=self.env, cwd=ROOT,
                                stdout=log, stderr=subprocess.STDOUT)


@pytest.fixture(scope="module")
def logged_worker(database, tmp_path_factory):
    from tests.support.workers import drain_leftovers

    drain_leftovers()
    log_path = tmp_path_factory.mktemp("worker") / "worker.log"
    pool = LoggedWorkers(1, {"VEIL_LOG_LEVEL": "INFO"}, log_path)
    pool.wait_ready()
    yield log_path
    pool.stop()


def test_a_failed_job_is_logged_once_as_json_with_its_id(client, make_key, logged_worker):
    headers = make_key("owner")
    ds = upload(client, headers, b"a,b\n1,x\n2,y\n", "s.csv").json()
    job = submit(client, headers, "diag_alloc", {"megabytes": 1}, dataset_id=ds["id"]).json()
    done = wait_job(client, headers, job["id"], timeout=60)
    assert done["status"] == "failed" and done["error"]["type"] == "internal"
    lines = [line for line in logged_worker.read_text().splitlines() if line.strip()]
    records = [json.loads(line) for line in lines]  # every line is one JSON object
    about = [r for r in records if job["id"] in r["msg"] and r["level"] == "ERROR"]
    assert len(about) == 1, records
    assert "diag_alloc" in about[0]["msg"] and "RuntimeError at diagnostics.py" in about[0]["msg"]


def test_every_attempt_logs_its_outcome_with_its_timings(client, make_key, logged_worker):
    """An operator reading the worker's log could not tell a succeeded job from a failed one
    (procrastinate says 'ended with status: Success' for both; Veil's own line gave timings
    only), nor a crashed attempt that is retried from one that failed the job for good, nor
    whether its ε was refunded (operator acceptance check)."""
    headers = make_key("owner")
    ds = upload(client, headers, b"a,b\n1,x\n2,y\n", "s.csv").json()
    client.put(f"/v1/datasets/{ds['id']}/budget", headers=auth(headers), json={"epsilon_total": 10})
    ok = submit(client, headers, "diag_sleep", {"seconds": 0}, dataset_id=ds["id"]).json()
    crash = submit(client, headers, "diag_crash", {}, dataset_id=ds["id"]).json()
    for job in (ok, crash):
        wait_job(client, headers, job["id"], timeout=60)
    refused = submit(client, headers, "diag_dp_hog", {"epsilon": 1.0, "seconds": 30},
                     dataset_id=ds["id"]).json()
    wait_job(client, headers, refused["id"], until={"running"})
    client.post(f"/v1/jobs/{refused['id']}/cancel", headers=auth(headers))
    wait_job(client, headers, refused["id"], timeout=60)
    records = [json.loads(line) for line in logged_worker.read_text().splitlines() if line.strip()]

    def outcomes(job_id: str) -> list[str]:
        return [r["msg"].split(" attempt ", 1)[1].split(":", 1)[0] for r in records
                if r["logger"] == "veil.runner" and r["msg"].startswith(f"job {job_id} ") and "load " in r["msg"]]

    assert outcomes(ok["id"]) == ["1 succeeded"]
    assert outcomes(crash["id"]) == ["1 requeued (crashed)", "2 requeued (crashed)", "3 failed (crashed)"]
    assert outcomes(refused["id"]) == ["1 cancelled, ε 1 refunded"]


def test_a_method_that_prints_leaves_the_log_json_and_its_data_out(client, make_key, logged_worker):
    """A method's print (a plugin author's debugging, here of a data value) went into the worker's
    log as bare text between its JSON lines (plugin acceptance sweep). The job's output is kept
    out of the log, which says how much there was."""
    headers = make_key("owner")
    ds = upload(client, headers, b"a,b\nsecret-cell,x\n2,y\n", "s.csv").json()
    job = submit(client, headers, "diag_print", {}, dataset_id=ds["id"]).json()
    done = wait_job(client, headers, job["id"], timeout=60)
    assert done["status"] == "succeeded", done
    text = logged_worker.read_text()
    assert "secret-cell" not in text and "diag-print" not in text
    records = [json.loads(line) for line in text.splitlines() if line.strip()]  # every line is one JSON object
    about = [r for r in records if job["id"] in r["msg"] and r["level"] == "WARNING"]
    assert len(about) == 1 and "stdout" in about[0]["msg"] and "bytes" in about[0]["msg"], about
