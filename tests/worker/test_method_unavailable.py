"""A job whose method the worker does not have (operator acceptance check): VEIL_PLUGINS set on
the API's service but not on the workers' (compose gives each its own environment), or a worker
of an older version. Its process failed `internal: the method failed (AttributeError at
child.py:78)` and kept the job's ε although nothing ran. Now the attempt fails at once saying
which method is missing and is refunded. The attempt runs in this process (runner.execute)."""

from __future__ import annotations

import uuid

from app.privacy import registry
from app.worker import runner
from tests.support.api import auth, submit, upload


def test_a_job_whose_method_this_worker_lacks_fails_at_once_and_is_refunded(client, owner, monkeypatch):
    ds = upload(client, owner, b"a,b\n1,x\n2,y\n3,x\n", "s.csv").json()
    job = submit(client, owner, "diag_dp_hog", {"epsilon": 1.0, "draw_first": True}, dataset_id=ds["id"]).json()
    real_get = registry.get
    monkeypatch.setattr(registry, "get", lambda name: None if name == "diag_dp_hog" else real_get(name))
    runner.execute(uuid.UUID(job["id"]))
    done = client.get(f"/v1/jobs/{job['id']}", headers=auth(owner)).json()
    assert done["status"] == "failed" and done["attempt"] == 1, done
    assert done["error"]["type"] == "method_unavailable", done
    assert "diag_dp_hog" in done["error"]["message"] and "VEIL_PLUGINS" in done["error"]["message"]
    assert done["epsilon_refunded"] is True
    assert client.get(f"/v1/datasets/{ds['id']}/budget", headers=auth(owner)).json()["epsilon_spent"] == 0
