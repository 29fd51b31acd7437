"""A release and a report's plots never change, so a dashboard that polls them can revalidate
instead of fetching them again. A release's the download carries an ETag per (release, format, spreadsheet_safe) and
answers If-None-Match with 304 and no body, after the same authorization as a download. The
answer stays `Cache-Control: no-store` (releases must not sit in a browser's or a proxy's
cache): the caller that keeps its own copy, a dashboard's backend, revalidates it."""

from __future__ import annotations

from app.worker import runner
from tests.support.api import assert_problem, auth, submit, upload

TABLE = b"age,sex\n" + b"".join(f"{20 + i % 40},{'MF'[i % 2]}\n".encode() for i in range(60))


def _release(client, owner) -> str:
    ds = upload(client, owner, TABLE, "t.csv").json()
    job = submit(client, owner, "errph", {"p0": 0.5}, dataset_id=ds["id"])
    assert job.status_code == 202, job.text
    runner.execute(job.json()["id"])
    done = client.get(f"/v1/jobs/{job.json()['id']}", headers=auth(owner)).json()
    assert done["status"] == "succeeded", done
    return done["result"]["release_ids"][0]


def _downloads(client, owner, rid) -> int:
    events = client.get("/v1/audit", headers=auth(owner),
                        params={"release_id": rid, "action": "release.downloaded"}).json()["items"]
    return len(events)


def test_a_download_revalidates_with_its_etag(client, owner):
    rid = _release(client, owner)
    url = f"/v1/releases/{rid}/data"
    first = client.get(url, headers=auth(owner))
    assert first.status_code == 200
    tag = first.headers["etag"]
    assert tag.startswith('W/"') and first.headers["cache-control"] == "no-store"
    assert client.get(url, headers=auth(owner)).headers["etag"] == tag  # stable
    # the same bytes in another format or spreadsheet-safe are another representation
    tags = {client.get(url, headers=auth(owner), params=p).headers["etag"]
            for p in ({"format": "jsonl"}, {"format": "parquet"}, {"spreadsheet_safe": "true"})}
    assert len(tags | {tag}) == 4

    before = _downloads(client, owner, rid)
    for header in (tag, f'"x", {tag}', "*", tag.removeprefix("W/")):  # weak comparison
        again = client.get(url, headers={**auth(owner), "If-None-Match": header})
        assert again.status_code == 304, header
        assert again.content == b"" and again.headers["etag"] == tag
    assert _downloads(client, owner, rid) == before  # no rows sent, none recorded

    other = client.get(url, headers={**auth(owner), "If-None-Match": 'W/"something-else"'})
    assert other.status_code == 200 and other.content == first.content
    assert _downloads(client, owner, rid) == before + 1


def test_a_revalidation_is_authorized_like_a_download(client, owner, make_key):
    rid = _release(client, owner)
    url = f"/v1/releases/{rid}/data"
    tag = client.get(url, headers=auth(owner)).headers["etag"]
    stranger = make_key("owner", "another-tenant-etag")
    assert client.get(url, headers={**auth(stranger), "If-None-Match": tag}).status_code == 404
    assert client.get(url, headers={"If-None-Match": tag}).status_code == 401
    bad = client.get(url, headers={**auth(owner), "If-None-Match": tag}, params={"format": "xlsx"})
    assert bad.status_code == 422


def test_a_plot_revalidates_with_its_etag_after_the_same_authorization(client, make_key):
    owner = make_key("owner")
    analyst = make_key("analyst", tenant=owner["X-Tenant"])
    ds = upload(client, owner, TABLE, "t.csv").json()
    job = submit(client, owner, "risk", {"quasi_identifiers": ["age", "sex"]}, dataset_id=ds["id"])
    runner.execute(job.json()["id"])
    report = client.get(f"/v1/jobs/{job.json()['id']}", headers=auth(owner)).json()["result"]["report_id"]
    plots = client.get(f"/v1/reports/{report}", headers=auth(owner)).json()["plots"]
    name = next(iter(plots))
    png, svg = (client.get(f"/v1/reports/{report}/plots/{name}.{fmt}", headers=auth(owner)) for fmt in ("png", "svg"))
    assert png.status_code == svg.status_code == 200 and png.headers["etag"] != svg.headers["etag"]
    url = f"/v1/reports/{report}/plots/{name}.png"
    again = client.get(url, headers={**auth(owner), "If-None-Match": png.headers["etag"]})
    assert again.status_code == 304 and again.content == b"" and again.headers["etag"] == png.headers["etag"]
    assert client.get(url, headers={**auth(owner), "If-None-Match": svg.headers["etag"]}).content == png.content
    # a report on the raw dataset is for owners: knowing the tag does not get an analyst a 304
    assert_problem(client.get(url, headers={**auth(analyst), "If-None-Match": png.headers["etag"]}), 403, "raw dataset")


def _dataset_downloads(client, owner, ds_id) -> int:
    return len(client.get("/v1/audit", headers=auth(owner),
                          params={"dataset_id": ds_id, "action": "dataset.downloaded"}).json()["items"])


def test_a_dataset_download_revalidates_until_its_schema_changes_its_bytes(client, owner):
    """A dataset's bytes change only when a schema change re-codes them: its download's ETag
    names the stored bytes and the representation, so a backend that keeps a copy revalidates
    (no ETag before: it fetched the whole table again to learn nothing had changed)."""
    ds = upload(client, owner, TABLE, "t.csv").json()
    url = f"/v1/datasets/{ds['id']}/data"
    first = client.get(url, headers=auth(owner))
    tag = first.headers["etag"]
    assert first.status_code == 200 and tag.startswith('W/"') and first.headers["cache-control"] == "no-store"
    tags = {client.get(url, headers=auth(owner), params=p).headers["etag"]
            for p in ({"format": "jsonl"}, {"format": "parquet"}, {"spreadsheet_safe": "true"})}
    assert len(tags | {tag}) == 4
    before = _dataset_downloads(client, owner, ds["id"])
    again = client.get(url, headers={**auth(owner), "If-None-Match": tag})
    assert again.status_code == 304 and again.content == b"" and again.headers["etag"] == tag
    assert _dataset_downloads(client, owner, ds["id"]) == before  # no rows sent, none recorded
    # a role changes no byte: the same tag; a type change re-codes the column: another
    assert client.put(f"/v1/datasets/{ds['id']}/schema", headers=auth(owner),
                      json={"sex": {"role": "sensitive"}}).status_code == 200
    assert client.get(url, headers={**auth(owner), "If-None-Match": tag}).status_code == 304
    assert client.put(f"/v1/datasets/{ds['id']}/schema", headers=auth(owner),
                      json={"age": {"type": "categorical"}}).status_code == 200
    changed = client.get(url, headers={**auth(owner), "If-None-Match": tag})
    assert changed.status_code == 200 and changed.headers["etag"] != tag
    # authorized like a download: an analyst (owners only) gets no 304 for knowing the tag
    assert client.get(url, headers={"If-None-Match": tag}).status_code == 401


def test_another_code_version_is_another_representation(client, owner, monkeypatch):
    """The stored rows did not change, but the code that encodes them may (044cbc1 changed a
    one-column CSV's bytes): a copy kept from another code version is fetched again, not
    revalidated (review of df518ad)."""
    import app.version

    rid = _release(client, owner)
    ds = upload(client, owner, TABLE, "t.csv").json()
    for url in (f"/v1/releases/{rid}/data", f"/v1/datasets/{ds['id']}/data"):
        tag = client.get(url, headers=auth(owner)).headers["etag"]
        assert client.get(url, headers={**auth(owner), "If-None-Match": tag}).status_code == 304
        monkeypatch.setattr(app.version, "code_version", lambda: "9.9.9+another")
        again = client.get(url, headers={**auth(owner), "If-None-Match": tag})
        assert again.status_code == 200 and again.headers["etag"] != tag, url
        monkeypatch.undo()
