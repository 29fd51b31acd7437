"""Hierarchies are read when a job starts, so one uploaded after the submission counts: the
release's audit event names the hierarchies (by SHA-256) it was generalized with, which tie it
to their `dataset.hierarchy_set` events (lifecycle acceptance check: only their height was
recorded)."""

from __future__ import annotations

import hashlib

from app.worker import runner
from tests.support.api import auth, submit, upload

DATA = b"age,city\n" + b"".join(f"{20 + i % 30},{'ABCD'[i % 4]}\n".encode() for i in range(80))
CITY = b"A;AB;*\nB;AB;*\nC;CD;*\nD;CD;*\n"


def _created(client, owner, release_id) -> dict:
    events = client.get("/v1/audit", headers=auth(owner),
                        params={"release_id": release_id, "action": "release.created"}).json()["items"]
    assert len(events) == 1
    return events[0]["details"]


def test_the_release_event_names_the_hierarchies_read_when_the_job_started(client, owner):
    ds = upload(client, owner, DATA, "h.csv").json()
    job = submit(client, owner, "kanonymity", {"k": 5, "quasi_identifiers": ["age", "city"]},
                 dataset_id=ds["id"]).json()
    # uploaded after the submission, before the job starts: this is the one it uses
    r = client.put(f"/v1/datasets/{ds['id']}/hierarchies/city", content=CITY,
                   headers={**auth(owner), "Content-Type": "text/csv"})
    assert r.status_code == 200, r.text
    runner.execute(job["id"])
    done = client.get(f"/v1/jobs/{job['id']}", headers=auth(owner)).json()
    assert done["status"] == "succeeded", done
    details = _created(client, owner, done["result"]["release_ids"][0])
    assert details["hierarchies_sha256"] == {"city": hashlib.sha256(CITY.decode().encode()).hexdigest()}
    uploaded = client.get("/v1/audit", headers=auth(owner),
                          params={"dataset_id": ds["id"], "action": "dataset.hierarchy_set"}).json()["items"]
    assert [e["details"]["sha256"] for e in uploaded] == [details["hierarchies_sha256"]["city"]]

    other = submit(client, owner, "errph", {"p0": 0.5, "columns": ["city"]}, dataset_id=ds["id"]).json()
    runner.execute(other["id"])
    rid = client.get(f"/v1/jobs/{other['id']}", headers=auth(owner)).json()["result"]["release_ids"][0]
    assert "hierarchies_sha256" not in _created(client, owner, rid)  # errph uses none


def test_a_deleted_hierarchy_is_gone_for_the_jobs_that_start_afterwards(client, owner):
    ds = upload(client, owner, DATA, "h.csv").json()
    url = f"/v1/datasets/{ds['id']}/hierarchies/city"
    assert client.put(url, content=CITY, headers={**auth(owner), "Content-Type": "text/csv"}).status_code == 200
    r = client.delete(url, headers=auth(owner))
    assert r.status_code == 204, r.text
    assert client.get(url, headers=auth(owner)).status_code == 404
    assert client.delete(url, headers=auth(owner)).status_code == 404  # nothing left to delete
    assert client.get(f"/v1/datasets/{ds['id']}", headers=auth(owner)).json()["hierarchies"] == []
    events = client.get("/v1/audit", headers=auth(owner), params={
        "dataset_id": ds["id"], "action": "dataset.hierarchy_deleted"}).json()["items"]
    assert [e["details"] for e in events] == [{"column": "city"}]
    job = submit(client, owner, "kanonymity", {"k": 5, "quasi_identifiers": ["age", "city"]},
                 dataset_id=ds["id"]).json()
    runner.execute(job["id"])
    done = client.get(f"/v1/jobs/{job['id']}", headers=auth(owner)).json()
    assert done["status"] == "succeeded", done
    assert "hierarchies_sha256" not in _created(client, owner, done["result"]["release_ids"][0])


def test_a_method_registered_with_uses_hierarchies_gets_them_and_names_them(client, owner):
    """The registry's flag alone decides (a plugin method, no edit elsewhere): the flagged
    method is given the dataset's hierarchies and its release names them; the same method
    without the flag is given none and its release names none."""
    ds = upload(client, owner, DATA, "h.csv").json()
    r = client.put(f"/v1/datasets/{ds['id']}/hierarchies/city", content=CITY,
                   headers={**auth(owner), "Content-Type": "text/csv"})
    assert r.status_code == 200, r.text
    seen = {}
    for method in ("diag_hierarchies", "diag_no_hierarchies"):
        job = submit(client, owner, method, {}, dataset_id=ds["id"]).json()
        runner.execute(job["id"])
        done = client.get(f"/v1/jobs/{job['id']}", headers=auth(owner)).json()
        assert done["status"] == "succeeded", done
        rid = done["result"]["release_ids"][0]
        release = client.get(f"/v1/releases/{rid}", headers=auth(owner)).json()
        seen[method] = (release["metadata"]["hierarchies"], _created(client, owner, rid).get("hierarchies_sha256"))
    assert seen == {"diag_hierarchies": (["city"], {"city": hashlib.sha256(CITY).hexdigest()}),
                    "diag_no_hierarchies": ([], None)}
