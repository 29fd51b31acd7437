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
    method is given the dataset's hierarchies and its release names them (it does not say which
    it used: all it was given); the same method without the flag is given none and its release
    names none."""
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
    # a method that says which it used (ReleaseResult.hierarchies_used) is taken at its word
    job = submit(client, owner, "diag_hierarchies", {"used": []}, dataset_id=ds["id"]).json()
    runner.execute(job["id"])
    rid = client.get(f"/v1/jobs/{job['id']}", headers=auth(owner)).json()["result"]["release_ids"][0]
    assert client.get(f"/v1/releases/{rid}", headers=auth(owner)).json()["metadata"]["hierarchies"] == ["city"]
    assert "hierarchies_sha256" not in _created(client, owner, rid)  # given city's, used none


# Which of the uploaded hierarchies a release was generalized with is the method's to say: an
# uploaded hierarchy of a column that is no quasi-identifier of the job, of a numeric one
# Mondrian released as intervals, or of one an earlier step generalized is not named (the audit
# of release chains found every uploaded one named). The release's metadata lists them too.
WIDE = b"age,city,zip,y\n" + b"".join(
    f"{20 + i % 30},{'ABCD'[i % 4]},Z{i % 3},{'yes' if (i // 2) % 2 else 'no'}\n".encode() for i in range(120))
AGE = "".join(f"{a};{a // 10 * 10}-{a // 10 * 10 + 9};*\n" for a in range(20, 50)).encode()
ZIP = b"Z0;Z;*\nZ1;Z;*\nZ2;Z;*\n"
SHA = {"age": hashlib.sha256(AGE).hexdigest(), "city": hashlib.sha256(CITY).hexdigest(),
       "zip": hashlib.sha256(ZIP).hexdigest()}


def _with_hierarchies(client, owner) -> str:
    ds = upload(client, owner, WIDE, "wide.csv").json()
    for column, text in (("age", AGE), ("city", CITY), ("zip", ZIP)):
        r = client.put(f"/v1/datasets/{ds['id']}/hierarchies/{column}", content=text,
                       headers={**auth(owner), "Content-Type": "text/csv"})
        assert r.status_code == 200, r.text
    return ds["id"]


def _release(client, owner, method, params, **source) -> tuple[str, dict, dict | None]:
    """The release's id, metadata and its event's hierarchies_sha256."""
    job = submit(client, owner, method, params, **source).json()
    assert "id" in job, job
    runner.execute(job["id"])
    done = client.get(f"/v1/jobs/{job['id']}", headers=auth(owner)).json()
    assert done["status"] == "succeeded", done
    rid = done["result"]["release_ids"][0]
    release = client.get(f"/v1/releases/{rid}", headers=auth(owner)).json()
    return rid, release["metadata"], _created(client, owner, rid).get("hierarchies_sha256")


def test_mondrian_names_only_the_hierarchies_it_generalized_along(client, owner):
    ds = _with_hierarchies(client, owner)
    # age numeric, released as class intervals (the default); zip is no quasi-identifier
    _, metadata, named = _release(client, owner, "kanonymity", {"k": 5, "quasi_identifiers": ["age", "city"]},
                                  dataset_id=ds)
    assert named == {"city": SHA["city"]}
    assert metadata["uploaded_hierarchies"] == ["city"]
    assert metadata["generalization"]["age"]["kind"] == "interval"
    # numeric QIs over their hierarchy: age's is used too
    _, metadata, named = _release(client, owner, "kanonymity", {
        "k": 5, "quasi_identifiers": ["age", "city"], "numeric_generalization": "hierarchy"}, dataset_id=ds)
    assert named == {"age": SHA["age"], "city": SHA["city"]}
    assert metadata["uploaded_hierarchies"] == ["age", "city"]
    # categorical QIs coded in sorted order: no hierarchy at all
    _, metadata, named = _release(client, owner, "kanonymity", {
        "k": 5, "quasi_identifiers": ["age", "city"], "categorical_coding": "ordered"}, dataset_id=ds)
    assert named is None
    assert "uploaded_hierarchies" not in metadata


def test_the_lattice_names_the_hierarchies_of_its_quasi_identifiers(client, owner):
    ds = _with_hierarchies(client, owner)
    _, metadata, named = _release(client, owner, "kanonymity", {
        "k": 5, "algorithm": "lattice", "quasi_identifiers": ["age", "city"]}, dataset_id=ds)
    assert named == {"age": SHA["age"], "city": SHA["city"]}  # not zip's
    assert metadata["uploaded_hierarchies"] == ["age", "city"]


def test_a_hierarchy_set_aside_on_a_release_is_not_named(client, owner):
    """city was generalized by the first step: the second anonymizes its released values
    without the dataset's hierarchy (usable_hierarchies), so names only zip's, which it uses."""
    ds = _with_hierarchies(client, owner)
    first, _, named = _release(client, owner, "kanonymity", {"k": 5, "quasi_identifiers": ["city"]},
                               dataset_id=ds)
    assert named == {"city": SHA["city"]}
    _, metadata, named = _release(client, owner, "kanonymity", {"k": 10, "quasi_identifiers": ["city", "zip"]},
                                  release_id=first)
    assert named == {"zip": SHA["zip"]}
    assert metadata["uploaded_hierarchies"] == ["zip"]


def test_rfk_anonymity_names_the_hierarchies_of_the_tiers_it_anonymized(client, owner):
    ds = _with_hierarchies(client, owner)
    # both attributes in the anonymized tiers (E = tiers); age as Mondrian intervals; zip unused
    _, metadata, named = _release(client, owner, "rfk_anonymity", {
        "label": "y", "attributes": ["age", "city"], "k": 5, "tiers": 2, "E": 2, "report_E": [2],
        "repeats": 1, "n_estimators": 5, "stability_runs": 0, "eval_repeats": 1}, dataset_id=ds)
    assert sorted(metadata["anonymized_attributes"]) == ["age", "city"]
    assert named == {"city": SHA["city"]}
    assert metadata["uploaded_hierarchies"] == ["city"]
