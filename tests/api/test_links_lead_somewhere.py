"""Every link a dataset, a job and a release gives answers 200 to its owner: a client that
follows links had none to follow from a dataset, and a job or a release named neither what it
was made from nor (a release) the job that made it (apic acceptance check's note)."""

from __future__ import annotations

from app.worker import runner
from tests.support.api import auth, submit, upload

DATA = b"colour,size\n" + b"".join(f"{'rgb'[i % 3]},{'SML'[i % 2]}\n".encode() for i in range(60))


def _follow(client, key, links: dict[str, str]) -> None:
    for name, url in links.items():
        answer = client.get(url, headers=auth(key))
        assert answer.status_code == 200, (name, url, answer.text[:200])


def _run(client, owner, method, params, **on) -> dict:
    job = submit(client, owner, method, params, **on).json()
    runner.execute(job["id"])
    return client.get(f"/v1/jobs/{job['id']}", headers=auth(owner)).json()


def test_links_of_a_dataset_its_jobs_and_releases_lead_somewhere(client, owner):
    ds = upload(client, owner, DATA, "linked.csv").json()
    assert set(ds["links"]) == {"self", "data", "profile", "budget", "jobs", "releases"}
    _follow(client, owner, ds["links"])
    first = _run(client, owner, "errph", {"p0": 0.5, "columns": ["colour"]}, dataset_id=ds["id"])
    assert first["links"]["dataset"] == f"/v1/datasets/{ds['id']}" and "source_release" not in first["links"]
    _follow(client, owner, first["links"])
    rid = first["result"]["release_ids"][0]
    second = _run(client, owner, "errph", {"p0": 0.5, "columns": ["size"]}, release_id=rid)
    assert second["links"]["source_release"] == f"/v1/releases/{rid}" and "dataset" not in second["links"]
    _follow(client, owner, second["links"])
    chained = client.get(second["links"]["release"], headers=auth(owner)).json()
    assert chained["links"]["job"] == f"/v1/jobs/{second['id']}"
    assert chained["links"]["source_release"] == f"/v1/releases/{rid}"
    _follow(client, owner, chained["links"])
    listed = client.get("/v1/datasets", headers=auth(owner), params={"limit": 200}).json()["items"]
    assert next(d for d in listed if d["id"] == ds["id"])["links"] == ds["links"]


def test_an_analyst_and_an_admin_are_given_the_links_they_can_follow(client, owner, make_key):
    """An analyst's release and job named the dataset (owners only: 403), a raw-data job its
    report (owners only) too, and an admin's job named a release it cannot read."""
    analyst, admin = make_key("analyst", owner["X-Tenant"]), make_key("admin")
    ds = upload(client, owner, DATA, "seen.csv").json()
    released = _run(client, owner, "errph", {"p0": 0.5, "columns": ["colour"]}, dataset_id=ds["id"])
    risk = _run(client, owner, "risk", {"quasi_identifiers": ["colour", "size"]}, dataset_id=ds["id"])
    on_release = _run(client, owner, "risk", {"quasi_identifiers": ["size"]},
                      release_id=released["result"]["release_ids"][0])
    for job in (released, risk, on_release):
        as_analyst = client.get(job["links"]["self"], headers=auth(analyst)).json()["links"]
        _follow(client, analyst, as_analyst)
        assert "dataset" not in as_analyst
        as_admin = client.get(job["links"]["self"], headers=auth(admin)).json()["links"]
        _follow(client, admin, as_admin)
        assert set(as_admin) == {"self"}
    assert "report" not in client.get(risk["links"]["self"], headers=auth(analyst)).json()["links"]
    assert "report" in client.get(on_release["links"]["self"], headers=auth(analyst)).json()["links"]
    release = client.get(released["links"]["release"], headers=auth(analyst)).json()
    assert set(release["links"]) == {"self", "data", "job"}
    _follow(client, analyst, release["links"])
    listed = client.get("/v1/releases", headers=auth(analyst)).json()["items"]
    assert {frozenset(r["links"]) for r in listed} == {frozenset({"self", "data", "job"})}
    assert "dataset" in client.get(released["links"]["release"], headers=auth(owner)).json()["links"]
