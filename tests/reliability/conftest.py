"""Fixtures of the reliability tests: a real `veil serve` on a free loopback port joined to the
session's PostgreSQL (no worker processes: jobs stay queued unless a test runs them), and a
tenant holding one object of every kind (dataset, job, release, report, model)."""

from __future__ import annotations

import pytest

from tests.support.api import auth, submit, upload
from tests.support.server import LiveServer

SMALL_TABLE = ("age,sex,edu,income\n" + "".join(
    f"{20 + i % 50},{'MF'[i % 2]},{('hs', 'ba', 'ms', 'phd')[i % 4]},{('<=50K', '>50K')[(i // 3) % 2]}\n"
    for i in range(120))).encode()


@pytest.fixture(scope="session")
def live(database, tmp_path_factory):
    """The service as it ships (no diagnostic plugins), over real sockets."""
    env = {"VEIL_PLUGINS": ""}
    server = LiveServer(tmp_path_factory.mktemp("live"), database_url=database, env=env)
    yield server
    server.stop()


def run_in_process(job_id) -> None:
    """Run a queued job here, as a worker would (claim, child process, fenced store)."""
    from app.worker import runner

    runner.execute(job_id)


def build_tenant(client, make_key) -> dict:
    """A new tenant with an owner, an analyst and objects of every kind; returns keys and ids."""
    owner = make_key("owner")
    analyst = make_key("analyst", tenant=owner["X-Tenant"])
    ds = upload(client, owner, SMALL_TABLE, "small.csv", schema={"income": {"role": "label"}}).json()
    tx = upload(client, owner, b"1 2 3\n2 3\n1 3 4\n2 4\n1 2 4\n" * 20, "t.dat").json()
    ids: dict[str, list[str]] = {"dataset_id": [ds["id"], tx["id"]]}

    def done(method, params, **source):
        r = submit(client, owner, method, params, **source)
        assert r.status_code == 202, r.text
        run_in_process(r.json()["id"])
        job = client.get(f"/v1/jobs/{r.json()['id']}", headers=auth(owner)).json()
        assert job["status"] == "succeeded", job
        return job

    rel = done("errph", {"p0": 0.5, "columns": ["sex", "edu"]}, dataset_id=ds["id"])
    release_id = rel["result"]["release_ids"][0]
    risk = done("risk", {"quasi_identifiers": ["age", "sex"]}, dataset_id=ds["id"])
    rec = done("reconstruct", {}, release_id=release_id)
    model = done("ppnb_train", {"label": "income"}, release_id=release_id)
    queued = submit(client, owner, "errph", {"p0": 0.5, "columns": ["sex"]}, dataset_id=ds["id"]).json()
    ids.update(release_id=[release_id], report_id=[risk["result"]["report_id"], rec["result"]["report_id"]],
               model_id=[model["result"]["model_id"]], job_id=[rel["id"], queued["id"]])
    return {"owner": owner, "analyst": analyst, "ids": ids, "dataset": ds, "tx": tx,
            "release_id": release_id, "risk_report_id": risk["result"]["report_id"],
            "model_id": model["result"]["model_id"], "finished_job_id": rel["id"],
            "queued_job_id": queued["id"]}


@pytest.fixture(scope="session")
def tenant_objects(client, make_key):
    return build_tenant(client, make_key)
