"""A worker whose temporary folder is full (operator acceptance check). Writing the job's input
there raised out of the task: the job stayed `running` at 0 % until the stall timeout, was
requeued twice and failed `stalled: the worker stopped responding` 100 s later, its ε kept
although nothing ran. Now the attempt ends at once as `no_disk_space` (refunded when nothing
was drawn), and so does a job whose process cannot write its result. The job's files are sent
to /dev/full, which answers every write with ENOSPC as a full file system does. The attempt
runs in this process (runner.execute), as a worker runs it."""

from __future__ import annotations

import os
import uuid

import pytest

from app.worker import runner
from tests.support.api import auth, submit, upload
from tests.support.disk import full_file_in_temporary_folders

pytestmark = pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")


@pytest.fixture
def full_job_folder(monkeypatch):
    """The temporary folder, with `name` in it already pointing at /dev/full."""
    return lambda name: full_file_in_temporary_folders(monkeypatch, "veil-job-", name)


@pytest.mark.parametrize("name, params, refunded", [
    ("input.parquet", {"epsilon": 1.0}, True),                              # nothing ran
    ("result.pickle.tmp", {"epsilon": 1.0, "draw_first": True}, False),     # it ran and drew
])
def test_a_job_whose_files_find_the_disk_full_fails_at_once_saying_so(client, owner, full_job_folder,
                                                                      name, params, refunded):
    ds = upload(client, owner, b"a,b\n1,x\n2,y\n3,x\n", "s.csv").json()
    job = submit(client, owner, "diag_dp_hog", params, dataset_id=ds["id"]).json()
    full_job_folder(name)
    runner.execute(uuid.UUID(job["id"]))
    done = client.get(f"/v1/jobs/{job['id']}", headers=auth(owner)).json()
    assert done["status"] == "failed" and done["attempt"] == 1, done
    assert done["error"]["type"] == "no_disk_space" and "disk space" in done["error"]["message"], done
    assert "/" not in done["error"]["message"]  # the server's folders are not the tenant's business
    assert done["epsilon_refunded"] is refunded
    budget = client.get(f"/v1/datasets/{ds['id']}/budget", headers=auth(owner)).json()
    assert budget["epsilon_spent"] == (0.0 if refunded else 1.0)


def test_a_result_the_database_has_no_disk_for_fails_at_once_saying_so(client, owner, monkeypatch):
    """The database's disk filling while a job's result was stored (its final transaction) was
    retried as a database blip until the stall timeout: the job ended `stalled` minutes later,
    saying the worker stopped responding (operator sweep). Now it fails `no_disk_space` at once;
    it ran and drew, so its ε is kept, and nothing is released."""
    import psycopg.errors
    from sqlalchemy.exc import OperationalError

    def full(*args, **kwargs):
        raise OperationalError("INSERT INTO blobs …", {}, psycopg.errors.DiskFull("could not extend file"))

    monkeypatch.setattr(runner, "_store", full)
    monkeypatch.setattr(runner.time, "sleep", lambda s: pytest.fail("retried as a database blip"))
    ds = upload(client, owner, b"a,b\n1,x\n2,y\n3,x\n", "s.csv").json()
    job = submit(client, owner, "errph", {"p0": 0.5}, dataset_id=ds["id"]).json()
    runner.execute(uuid.UUID(job["id"]))
    done = client.get(f"/v1/jobs/{job['id']}", headers=auth(owner)).json()
    assert done["status"] == "failed" and done["error"]["type"] == "no_disk_space", done
    spent = client.get(f"/v1/datasets/{ds['id']}/budget", headers=auth(owner)).json()["epsilon_spent"]
    assert spent == pytest.approx(done["epsilon"]) and spent > 0
    assert "database" in done["error"]["message"] and "nothing was released" in done["error"]["message"]
    assert done["epsilon_refunded"] is False and done["result"]["release_ids"] == []
    assert client.get("/v1/releases", headers=auth(owner), params={"dataset_id": ds["id"]}).json()["items"] == []
