"""A dataset deleted between the moment a reader reads its row and the moment it reads its data
(race acceptance check: 3 of 240 downloads racing a delete answered 500, 2 a 200 with an
empty body, and 1 of 50 errph jobs claimed as their dataset was deleted failed 'internal'
(ArrowInvalid) keeping its ε; 16 of 90 schema changes racing a delete answered 422 'the schema
change could not be applied'). The delete is made to commit exactly in that gap, from another
connection: a reader that holds the dataset row (FOR KEY SHARE) makes it wait instead, and
gets the whole data; one that sees it committed answers as for a deleted dataset."""

from __future__ import annotations

import io
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from functools import partial

import pandas as pd
from sqlalchemy import text

from app.blobs import repository as blobs
from app.db import transaction
from tests.support.api import assert_problem, auth, upload

CSV = b"a,b\n" + b"".join(b"%d,x%d\n" % (i, i % 3) for i in range(50))


def _delete_in_the_gap(monkeypatch, client, owner, dataset_id: str):
    """Make the next blobs.read first let a delete of the dataset run from another thread (and
    connection), and go on once it has committed or is waiting on a lock the reader holds."""
    return _in_the_gap(monkeypatch, partial(client.delete, f"/v1/datasets/{dataset_id}", headers=auth(owner)))


def _in_the_gap(monkeypatch, request):
    """The same with any request: it runs once, from the next blobs.read."""
    pool = ThreadPoolExecutor(1)
    deleting = []
    real_read = blobs.read

    def read(session, blob_id):
        if not deleting:
            deleting.append(pool.submit(request))
            deadline = time.monotonic() + 30
            while not deleting[0].done() and not _someone_waits_on_a_lock():
                assert time.monotonic() < deadline, "the delete neither finished nor waited"
                time.sleep(0.02)
        return real_read(session, blob_id)

    monkeypatch.setattr(blobs, "read", read)
    return pool, deleting


def _someone_waits_on_a_lock() -> bool:
    with transaction() as s:
        return s.execute(text("SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' "
                              "AND datname = current_database()")).scalar_one() > 0


def test_a_download_racing_a_delete_gets_the_whole_data(client, owner, monkeypatch):
    ds = upload(client, owner, CSV, "race.csv").json()
    pool, deleting = _delete_in_the_gap(monkeypatch, client, owner, ds["id"])
    with pool:
        r = client.get(f"/v1/datasets/{ds['id']}/data", headers=auth(owner), params={"format": "csv"})
        assert deleting and deleting[0].result(timeout=30).status_code == 204
    # it read the row before the delete: the whole data (the delete waited for it), not a 500
    assert r.status_code == 200, r.text[:300]
    assert pd.read_csv(io.BytesIO(r.content)).equals(pd.read_csv(io.BytesIO(CSV)))
    assert client.get(f"/v1/datasets/{ds['id']}/data", headers=auth(owner)).status_code == 404


def test_a_job_loading_its_input_as_the_dataset_is_deleted_reads_all_or_nothing(client, owner, monkeypatch):
    """The worker's claim reads the dataset row, then its data: with the delete committed in
    between it read no bytes and the job failed as 'internal', its ε kept. Now either the whole
    input (the delete waits; the job then fails input_deleted at its final commit) or none."""
    from app.worker import runner

    ds = upload(client, owner, CSV, "race.csv").json()
    job = {"dataset_id": uuid.UUID(ds["id"]), "release_id": None, "tenant": owner["X-Tenant"],
           "method": "errph"}  # what _load_inputs reads of the claimed job's row
    pool, deleting = _delete_in_the_gap(monkeypatch, client, owner, ds["id"])
    with pool:
        with transaction() as s:
            inputs = runner._load_inputs(s, job)
        assert deleting and deleting[0].result(timeout=30).status_code == 204
    if "error" in inputs:
        assert inputs["error"]["type"] == "input_deleted"
    else:
        assert inputs["payload"], "the job read an empty input"
        assert len(pd.read_parquet(io.BytesIO(inputs["payload"]))) == 50


def test_a_schema_change_racing_a_delete_answers_404(client, owner, monkeypatch):
    """The change reads the row and its data unlocked (its child may run for minutes): with
    the delete committed in between it read no bytes and answered 422 'the schema change could
    not be applied' (16 of 90 such races over HTTP); it now says the dataset was deleted."""
    ds = upload(client, owner, CSV, "race.csv").json()
    pool, deleting = _delete_in_the_gap(monkeypatch, client, owner, ds["id"])
    with pool:
        r = client.put(f"/v1/datasets/{ds['id']}/schema", headers=auth(owner), json={"b": {"role": "sensitive"}})
        assert deleting and deleting[0].result(timeout=30).status_code == 204
    assert_problem(r, 404, "deleted")


def test_a_schema_change_racing_a_recoding_one_answers_409(client, owner, monkeypatch):
    """A change that re-codes a type stores new data and drops the old bytes: one racing it
    read none and answered 422; it is told the schema changed (409), as when it notices later."""
    ds = upload(client, owner, CSV, "race.csv").json()
    url = f"/v1/datasets/{ds['id']}/schema"
    pool, recoding = _in_the_gap(monkeypatch, partial(client.put, url, headers=auth(owner),
                                                      json={"a": {"type": "categorical"}}))
    with pool:
        r = client.put(url, headers=auth(owner), json={"b": {"role": "sensitive"}})
        assert recoding and recoding[0].result(timeout=30).status_code == 200
    assert_problem(r, 409, "changed while this change was being applied")
