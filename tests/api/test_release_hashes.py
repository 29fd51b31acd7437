"""A release's provenance output_sha256 is the SHA-256 of what GET …/data?format=parquet
serves, so a client can check a download against it (found by the #2 acceptance check: for a
transaction set it hashed the stored item codes, while the download holds the labels)."""

from __future__ import annotations

import hashlib

import pytest

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
