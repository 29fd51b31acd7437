"""A release's provenance output_sha256 is the SHA-256 of what GET …/data?format=parquet
serves, so a client can check a download against it (found by the #2 acceptance check: for a
transaction set it hashed the stored item codes, while the download holds the labels)."""

from __future__ import annotations

import hashlib
import json
import uuid

import pytest

from app.releases.service import WITHHELD_INPUT_SHA256
from app.worker import runner
from tests.support.api import auth, submit, upload

TABLE = b"age,sex\n" + b"".join(f"{20 + i % 40},{'MF'[i % 2]}\n".encode() for i in range(60))
TRANSACTIONS = b"".join(f"{i % 5} {10 + i % 3} 20\n".encode() for i in range(60))


@pytest.mark.parametrize("filename, data, method, params", [
    ("t.csv", TABLE, "errph", {"p0": 0.5}),
    ("t.dat", TRANSACTIONS, "mask", {"p": 0.9}),
])
def test_output_sha256_is_that_of_the_parquet_download(client, owner, filename, data, method, params):
    ds = upload(client, owner, data, filename).json()
    job = submit(client, owner, method, params, dataset_id=ds["id"])
    assert job.status_code == 202, job.text
    runner.execute(job.json()["id"])
    done = client.get(f"/v1/jobs/{job.json()['id']}", headers=auth(owner)).json()
    assert done["status"] == "succeeded", done
    rid = done["result"]["release_ids"][0]
    rel = client.get(f"/v1/releases/{rid}", headers=auth(owner)).json()
    assert rel["provenance"]["input_sha256"] == hashlib.sha256(data).hexdigest()
    for _ in range(2):  # the same bytes at every download
        got = client.get(f"/v1/releases/{rid}/data", headers=auth(owner), params={"format": "parquet"})
        assert got.status_code == 200
        assert hashlib.sha256(got.content).hexdigest() == rel["provenance"]["output_sha256"]
    created = client.get("/v1/audit", headers=auth(owner),
                         params={"release_id": rid, "action": "release.created"}).json()["items"]
    assert [e["details"]["output_sha256"] for e in created] == [rel["provenance"]["output_sha256"]]


def test_analysts_do_not_get_the_hash_of_the_raw_upload(client, make_key):
    """input_sha256 is a function of the raw upload outside any ε: an analyst who knew the
    upload but for one record's age found that age by hashing the 74 candidates (leakage
    acceptance check, an mst release at ε = 1). The tenant's owners, who hold the data, still
    see it; analysts get the release without it, as they get a raw-data job's error without
    its message."""
    tenant = f"t{uuid.uuid4().hex[:10]}"
    owner, analyst = make_key("owner", tenant), make_key("analyst", tenant)
    ds = upload(client, owner, TABLE, "t.csv").json()
    job = submit(client, owner, "errph", {"p0": 0.5}, dataset_id=ds["id"])
    runner.execute(job.json()["id"])
    rid = client.get(f"/v1/jobs/{job.json()['id']}", headers=auth(owner)).json()["result"]["release_ids"][0]
    raw = hashlib.sha256(TABLE).hexdigest()
    assert client.get(f"/v1/releases/{rid}", headers=auth(owner)).json()["provenance"]["input_sha256"] == raw
    seen = [client.get(f"/v1/releases/{rid}", headers=auth(analyst)).json(),
            *client.get("/v1/releases", headers=auth(analyst)).json()["items"]]
    for rel in seen:
        assert raw not in json.dumps(rel)
        assert rel["provenance"]["input_sha256"] == WITHHELD_INPUT_SHA256
        assert rel["provenance"]["output_sha256"]  # what the analyst downloads can still be checked
