"""Time and memory limits with one worker whose limits are tight."""

from __future__ import annotations

import pytest

from tests.support.api import submit, upload, wait_job


@pytest.fixture(scope="module")
def worker_env():
    return {"count": 1, "VEIL_JOB_TIME_LIMIT_S": "3", "VEIL_JOB_MEMORY_LIMIT_MB": "700"}


@pytest.fixture(scope="module")
def small(client, make_key, workers):
    headers = make_key("owner")
    return headers, upload(client, headers, b"a,b\n1,x\n2,y\n", "s.csv").json()


def test_time_limit_fails_the_job_and_the_worker_goes_on(client, small):
    headers, ds = small
    slow = submit(client, headers, "diag_sleep", {"seconds": 30}, dataset_id=ds["id"]).json()
    done = wait_job(client, headers, slow["id"], timeout=30)
    assert done["status"] == "failed" and done["error"]["type"] == "time_limit"
    assert "3 s" in done["error"]["message"]
    quick = submit(client, headers, "diag_sleep", {"seconds": 0.1}, dataset_id=ds["id"]).json()
    assert wait_job(client, headers, quick["id"])["status"] == "succeeded"


def test_memory_limit_fails_the_job_and_the_worker_goes_on(client, small):
    headers, ds = small
    hog = submit(client, headers, "diag_alloc", {"megabytes": 3000}, dataset_id=ds["id"]).json()
    done = wait_job(client, headers, hog["id"], timeout=30)
    assert done["status"] == "failed" and done["error"]["type"] == "memory_limit"
    assert "700 MiB" in done["error"]["message"]
    quick = submit(client, headers, "diag_sleep", {"seconds": 0.1}, dataset_id=ds["id"]).json()
    assert wait_job(client, headers, quick["id"])["status"] == "succeeded"
