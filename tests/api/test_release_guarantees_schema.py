"""A release's guarantees are typed in the API: the keys every release carries (notion, private,
ε, δ, protected and unprotected columns, random source, statements, warnings) are a named,
required schema (a dashboard showing 'private' and ε for each release had an untyped object),
the method's own figures stay beside them, and a method that does not state them is refused,
not published (dash acceptance check's note)."""

from __future__ import annotations

from app.worker import runner
from tests.support.api import auth, submit, upload

COMMON = {"notion", "private", "epsilon", "delta", "protected_columns", "unprotected_columns",
          "random_source", "statements", "warnings"}
DATA = b"colour,size\n" + b"".join(f"{'rgb'[i % 3]},{'SML'[i % 2]}\n".encode() for i in range(60))


def test_the_openapi_document_names_the_common_keys(client):
    schemas = client.get("/openapi.json").json()["components"]["schemas"]
    assert set(schemas["Guarantees"]["required"]) == COMMON
    assert schemas["Guarantees"]["additionalProperties"] is True  # the method's own figures
    assert schemas["Guarantees"]["properties"]["notion"]["enum"] == ["local_dp", "central_dp", "k_anonymity", "none"]
    for model in ("Release", "ReleaseSummary"):
        assert schemas[model]["properties"]["guarantees"]["$ref"] == "#/components/schemas/Guarantees"


def test_a_release_answers_the_common_keys_and_its_own_figures(client, owner):
    ds = upload(client, owner, DATA, "g.csv").json()
    job = submit(client, owner, "errph", {"p0": 0.5, "columns": ["colour"]}, dataset_id=ds["id"]).json()
    runner.execute(job["id"])
    done = client.get(f"/v1/jobs/{job['id']}", headers=auth(owner)).json()
    rid = done["result"]["release_ids"][0]
    g = client.get(f"/v1/releases/{rid}", headers=auth(owner)).json()["guarantees"]
    assert COMMON <= set(g)
    assert (g["notion"], g["private"], g["unprotected_columns"]) == ("local_dp", False, ["size"])
    assert g["epsilon"] == g["columns"]["colour"]["local_epsilon"]  # errph's own figures kept
    listed = client.get("/v1/releases", headers=auth(owner), params={"dataset_id": ds["id"]}).json()
    assert listed["items"][0]["guarantees"] == g


def test_a_method_whose_guarantees_lack_the_common_keys_publishes_nothing(client, owner):
    ds = upload(client, owner, DATA, "bare.csv").json()
    job = submit(client, owner, "diag_bare_guarantees", {}, dataset_id=ds["id"]).json()
    runner.execute(job["id"])
    done = client.get(f"/v1/jobs/{job['id']}", headers=auth(owner)).json()
    assert done["status"] == "failed" and done["error"]["type"] == "internal", done
    assert done["result"]["release_ids"] == []
