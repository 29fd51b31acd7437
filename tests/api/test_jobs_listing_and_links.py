"""Job submission's Location header and the job list's filters (the API audit)."""

from __future__ import annotations

import io
import uuid

import pandas as pd

from app.db import transaction
from app.privacy.guarantees import guarantee
from app.releases import service as releases
from sqlalchemy import text
from tests.support.api import auth, submit, upload


def test_created_objects_answer_with_their_location(client, owner):
    up = upload(client, owner, b"a,b\n1,x\n2,y\n", "loc.csv")
    assert up.status_code == 201 and up.headers["location"] == f"/v1/datasets/{up.json()['id']}"
    assert client.get(up.headers["location"], headers=auth(owner)).status_code == 200
    job = submit(client, owner, "risk", {"quasi_identifiers": ["a"]}, dataset_id=up.json()["id"])
    assert job.status_code == 202 and job.headers["location"] == f"/v1/jobs/{job.json()['id']}"
    assert client.get(job.headers["location"], headers=auth(owner)).json()["id"] == job.json()["id"]
    synthetic = client.post("/v1/datasets/synthetic", headers=auth(owner), json={"rows": 50})
    assert synthetic.status_code == 201, synthetic.text
    assert synthetic.headers["location"] == f"/v1/datasets/{synthetic.json()['id']}"


def _store_release(job: dict) -> uuid.UUID:
    """A release stored as the worker stores one (no worker in these tests)."""
    frame = pd.DataFrame({"a": [1, 2], "b": ["x", "y"]})
    buf = io.BytesIO()
    frame.to_parquet(buf)
    with transaction() as s:
        row = dict(s.execute(text("SELECT * FROM jobs WHERE id = :j"), {"j": job["id"]}).mappings().one())
        return releases.store(s, job=row, encoded={
            "payload": buf.getvalue(), "guarantees": guarantee("none", rng="test", private=False),
            "metrics": {}, "metadata": {}, "shape": "table",
            "columns": [{"name": "a", "type": "numeric"}, {"name": "b", "type": "categorical"}], "rows": 2},
            input_sha256="0" * 64, source_release=None)


def test_jobs_filter_by_release(client, owner):
    """`?release_id=` was not a filter: it was ignored and every job listed."""
    ds = upload(client, owner, b"a,b\n1,x\n2,y\n", "rel.csv").json()
    on_dataset = submit(client, owner, "risk", {"quasi_identifiers": ["a"]}, dataset_id=ds["id"]).json()
    release_id = _store_release(on_dataset)
    on_release = submit(client, owner, "risk", {"quasi_identifiers": ["a"]}, release_id=release_id)
    assert on_release.status_code == 202, on_release.text
    listed = client.get("/v1/jobs", headers=auth(owner), params={"release_id": str(release_id)}).json()
    assert [j["id"] for j in listed["items"]] == [on_release.json()["id"]]
    nothing = client.get("/v1/jobs", headers=auth(owner), params={"release_id": str(uuid.uuid4())}).json()
    assert nothing == {"items": [], "next": None}
    both = client.get("/v1/jobs", headers=auth(owner), params={"dataset_id": ds["id"]}).json()["items"]
    assert {j["id"] for j in both} == {on_dataset["id"], on_release.json()["id"]}


def test_releases_page_by_cursor_and_filter_by_dataset_and_method(client, owner):
    """The release list paged by offset (a release made between two pages shifted the next one
    and repeated a row) and ignored `cursor` and `method`: it pages like datasets and jobs now."""
    ds = upload(client, owner, b"a,b\n1,x\n2,y\n", "pages.csv").json()
    made = [_store_release(submit(client, owner, "risk", {"quasi_identifiers": ["a"]},
                                  dataset_id=ds["id"]).json()) for _ in range(5)]
    seen, cursor, pages = [], None, 0
    while True:
        params = {"dataset_id": ds["id"], "limit": 2, **({"cursor": cursor} if cursor else {})}
        page = client.get("/v1/releases", headers=auth(owner), params=params).json()
        if pages == 0:  # a release made meanwhile is not seen again, nor does it shift the pages
            _store_release(submit(client, owner, "risk", {"quasi_identifiers": ["a"]}, dataset_id=ds["id"]).json())
        seen += [r["id"] for r in page["items"]]
        pages += 1
        if not (cursor := page["next"]):
            break
    assert seen == [str(r) for r in reversed(made)]  # newest first, each once
    assert client.get("/v1/releases", headers=auth(owner),
                      params={"dataset_id": ds["id"], "method": "errph"}).json() == {"items": [], "next": None}
    by_method = client.get("/v1/releases", headers=auth(owner), params={"dataset_id": ds["id"], "method": "risk"})
    assert len(by_method.json()["items"]) == 6


def test_the_release_list_gives_summaries_and_each_release_its_details(client, owner):
    """A page of 200 releases of Adult made from releases was ~3 MB: every item carried the
    reconstruction metadata and the chain (the dashboard check of session 9). Items are the
    release without them, field for field equal to the release's own answer otherwise."""
    ds = upload(client, owner, b"a,b\n1,x\n2,y\n", "summary.csv").json()
    rid = _store_release(submit(client, owner, "risk", {"quasi_identifiers": ["a"]}, dataset_id=ds["id"]).json())
    item = client.get("/v1/releases", headers=auth(owner), params={"dataset_id": ds["id"]}).json()["items"][0]
    full = client.get(f"/v1/releases/{rid}", headers=auth(owner)).json()
    assert {"metadata", "chain", "columns"} <= set(full) and not {"metadata", "chain", "columns"} & set(item)
    assert item == {k: v for k, v in full.items() if k not in ("metadata", "chain", "columns")}
    assert item["links"]["self"] == f"/v1/releases/{rid}"
    # created_at at the top, as every other list's items have it (dash acceptance check's note)
    assert item["created_at"] == full["provenance"]["created_at"] and item["created_at"].endswith("Z")


def test_a_failure_on_raw_data_shows_its_message_to_owners_only(client, make_key):
    """"values outside the declared categories" describes the data: no ε covers it. Only owners
    run jobs on raw data (and can read it); the tenant's analysts and admins see the type."""
    tenant = f"t{uuid.uuid4().hex[:10]}"
    owner, analyst, admin = make_key("owner", tenant), make_key("analyst", tenant), make_key("admin")
    ds = upload(client, owner, b"a,b\n1,x\n2,y\n", "raw.csv").json()
    job = submit(client, owner, "risk", {"quasi_identifiers": ["a"]}, dataset_id=ds["id"]).json()
    message = "column 'b' holds values outside its declared categories"
    with transaction() as s:
        s.execute(text("UPDATE jobs SET status = 'failed', error = jsonb_build_object('type', "
                       "'invalid_input', 'message', CAST(:m AS text)) WHERE id = :j"),
                  {"m": message, "j": job["id"]})
    seen = {}
    for name, key in (("owner", owner), ("analyst", analyst), ("admin", admin)):
        one = client.get(f"/v1/jobs/{job['id']}", headers=auth(key)).json()["error"]
        page = client.get("/v1/jobs", headers=auth(key), params={"dataset_id": ds["id"]}).json()
        listed = next(j for j in page["items"] if j["id"] == job["id"])["error"]
        assert one == listed and one["type"] == "invalid_input"
        seen[name] = one["message"]
    assert seen["owner"] == message
    assert seen["analyst"] == seen["admin"] != message and "withheld" in seen["analyst"]


def test_a_next_cursor_works_pasted_into_a_url_as_it_is(client, owner):
    """The cursor held an ISO offset (`+00:00`): pasted into a URL unencoded, the `+` arrived as
    a space and the next page was a 422 (found following the README)."""
    ds = upload(client, owner, b"a,b\n1,x\n2,y\n", "paste.csv").json()
    for _ in range(3):
        submit(client, owner, "risk", {"quasi_identifiers": ["a"]}, dataset_id=ds["id"])
    first = client.get(f"/v1/jobs?dataset_id={ds['id']}&limit=2", headers=auth(owner)).json()
    assert all(c.isalnum() or c in "._-" for c in first["next"])
    rest = client.get(f"/v1/jobs?dataset_id={ds['id']}&limit=2&cursor={first['next']}", headers=auth(owner))
    assert rest.status_code == 200 and len(rest.json()["items"]) == 1 and rest.json()["next"] is None


def test_an_exactly_full_last_page_has_no_next(client, owner):
    """A page holding the last `limit` rows said `next` and the page after it was empty (found
    by a newcomer's walk-through: /v1/releases?limit=1 with one release)."""
    ds = upload(client, owner, b"a,b\n1,x\n2,y\n", "full.csv").json()
    for _ in range(4):
        submit(client, owner, "risk", {"quasi_identifiers": ["a"]}, dataset_id=ds["id"])
    first = client.get("/v1/jobs", headers=auth(owner), params={"dataset_id": ds["id"], "limit": 2}).json()
    assert len(first["items"]) == 2 and first["next"]
    last = client.get("/v1/jobs", headers=auth(owner),
                      params={"dataset_id": ds["id"], "limit": 2, "cursor": first["next"]}).json()
    assert len(last["items"]) == 2 and last["next"] is None
    whole = client.get("/v1/jobs", headers=auth(owner), params={"dataset_id": ds["id"], "limit": 4}).json()
    assert len(whole["items"]) == 4 and whole["next"] is None
    assert [j["id"] for j in first["items"] + last["items"]] == [j["id"] for j in whole["items"]]


def test_cursor_pages_keep_rows_that_share_a_created_at(client, make_key):
    """Rows made in one transaction share created_at (now() is the transaction's start), e.g.
    rfk_anonymity's releases. The page after a cursor compared created_at alone and skipped
    the rest of them: the keyset is the row (created_at, id)."""
    key = make_key("owner")
    ids = {upload(client, key, b"a,b\n1,2\n", f"tie{i}.csv").json()["id"] for i in range(5)}
    with transaction() as s:
        s.execute(text("UPDATE datasets SET created_at = '2026-01-01T00:00:00Z' WHERE id = ANY(:ids)"),
                  {"ids": [uuid.UUID(i) for i in ids]})
    seen, cursor = [], None
    while True:
        page = client.get("/v1/datasets", headers=auth(key),
                          params={"limit": 2, **({"cursor": cursor} if cursor else {})}).json()
        seen += [d["id"] for d in page["items"]]
        if not (cursor := page["next"]):
            break
    assert sorted(seen) == sorted(ids) and len(seen) == 5
