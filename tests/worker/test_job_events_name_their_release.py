"""Every audit event of a job on a release names that release, so `GET /v1/audit?release_id=`
tells a job's whole story. Only `job.submitted` and the worker's final event did (provenance
acceptance check): the trail filtered by a release showed a job submitted on it and never
started, cancelled or retried — as if it were still waiting."""

from __future__ import annotations

from tests.support.api import auth, submit, upload, wait_job


def test_every_event_of_a_job_on_a_release_is_listed_under_that_release(client, make_key, workers):
    owner, admin = make_key("owner"), make_key("admin")
    ds = upload(client, owner, b"b,n\n" + b"".join(b"%s,%d\n" % (b"xy"[i % 2:i % 2 + 1], i) for i in range(40)),
                "r.csv").json()
    first = wait_job(client, owner, submit(client, owner, "errph", {"p0": 0.7, "columns": ["b"]},
                                           dataset_id=ds["id"]).json()["id"])
    release = first["result"]["release_ids"][0]
    # fails on its input at run time (started, failed), then retried by an admin (retried, ...)
    failing = submit(client, owner, "frequent_itemsets", {"minsup": 0.01, "max_candidates": 1},
                     release_id=release).json()["id"]
    assert wait_job(client, owner, failing)["status"] == "failed"
    assert client.post(f"/v1/jobs/{failing}/retry", headers=auth(admin)).status_code == 202
    assert wait_job(client, owner, failing)["status"] == "failed"
    # cancelled: while queued (job.cancelled) or running (cancel_requested, started, cancelled)
    cancelled = submit(client, owner, "reconstruct", {"plots": False}, release_id=release).json()["id"]
    assert client.post(f"/v1/jobs/{cancelled}/cancel", headers=auth(owner)).status_code == 202
    assert wait_job(client, owner, cancelled)["status"] in ("cancelled", "succeeded")

    def events(**params) -> list[tuple[str, str]]:
        items = client.get("/v1/audit", headers=auth(owner), params={"limit": 1000, **params}).json()["items"]
        return [(e["subject"], e["action"]) for e in items if e["subject"] in (failing, cancelled)]

    everything = events()
    assert ("job.started" in {a for _, a in everything}) and ("job.retried" in {a for _, a in everything})
    assert events(release_id=release) == everything


def test_a_succeeded_job_names_what_it_made_and_a_chained_release_its_source(client, make_key, workers):
    """The trail linked a job to its release, and a chained release to its source, only through
    the job id (provenance acceptance check's observation)."""
    owner = make_key("owner")
    ds = upload(client, owner, b"b,c\n" + b"".join(b"%s,%s\n" % (b"xy"[i % 2:i % 2 + 1], b"uvw"[i % 3:i % 3 + 1])
                                                   for i in range(60)), "c.csv").json()
    first = wait_job(client, owner, submit(client, owner, "errph", {"columns": ["b"]}, dataset_id=ds["id"]).json()["id"])
    source = first["result"]["release_ids"][0]
    second = wait_job(client, owner, submit(client, owner, "errph", {"columns": ["c"]}, release_id=source).json()["id"])
    chained = second["result"]["release_ids"][0]
    report = wait_job(client, owner, submit(client, owner, "reconstruct", {"plots": False}, release_id=chained).json()["id"])
    items = client.get("/v1/audit", headers=auth(owner), params={"limit": 1000}).json()["items"]
    details = {(e["subject"], e["action"]): e["details"] for e in items}
    assert details[(first["id"], "job.succeeded")]["release_id"] == source
    assert details[(second["id"], "job.succeeded")]["release_id"] == chained
    assert details[(report["id"], "job.succeeded")]["report_id"] == report["result"]["report_id"]
    assert details[(chained, "release.created")]["source_release_id"] == source
    assert "source_release_id" not in details[(source, "release.created")]
