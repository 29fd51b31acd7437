"""Tenant isolation and roles, systematically over the OpenAPI document: every operation is
called by six callers (the tenant's owner and analyst, an admin, another tenant's owner and
analyst, no key) on real objects of the tenant, and each answer is compared with the role
table of the spec. Another tenant's object is 404 (never 403, never its data); owner-only
operations are 403 for an analyst; no key is 401. A new operation fails the test until it is
added to the table. Then every table of the database is scanned for the API keys."""

from __future__ import annotations

import pytest
from sqlalchemy import text

from app.db import transaction
from tests.reliability.conftest import build_tenant
from tests.support.api import auth, upload

CALLERS = ("owner", "analyst", "admin", "other", "other_analyst", "none")
PUBLIC = {"GET /healthz", "GET /metrics", "GET /readyz", "GET /v1/methods", "GET /v1/methods/{name}"}

# Expected status per caller (the spec's role table). "none" is 401 on every non-public op.
DATASET_OBJECT = {"owner": 200, "analyst": 403, "admin": 403, "other": 404, "other_analyst": 403}
READER_OBJECT = {"owner": 200, "analyst": 200, "admin": 403, "other": 404, "other_analyst": 404}
TABLE = {
    "GET /v1/audit": {"owner": 200, "analyst": 403, "admin": 200, "other": 200, "other_analyst": 403},
    "GET /v1/datasets": {"owner": 200, "analyst": 403, "admin": 403, "other": 200, "other_analyst": 403},
    "POST /v1/datasets": {"owner": 201, "analyst": 403, "admin": 403, "other": 201, "other_analyst": 403},
    "POST /v1/datasets/synthetic": {"owner": 201, "analyst": 403, "admin": 403, "other": 201,
                                    "other_analyst": 403},
    "GET /v1/datasets/{dataset_id}": DATASET_OBJECT,
    "GET /v1/datasets/{dataset_id}/budget": DATASET_OBJECT,
    "GET /v1/datasets/{dataset_id}/budget/entries": DATASET_OBJECT,
    "PUT /v1/datasets/{dataset_id}/budget": DATASET_OBJECT,
    "GET /v1/datasets/{dataset_id}/data": DATASET_OBJECT,
    "GET /v1/datasets/{dataset_id}/profile": DATASET_OBJECT,
    "PUT /v1/datasets/{dataset_id}/schema": DATASET_OBJECT,
    "PUT /v1/datasets/{dataset_id}/hierarchies/{column}": DATASET_OBJECT,
    "GET /v1/datasets/{dataset_id}/hierarchies/{column}": DATASET_OBJECT,
    "POST /v1/datasets/{dataset_id}/hierarchies/{column}/build": DATASET_OBJECT,
    "DELETE /v1/datasets/{dataset_id}": {**DATASET_OBJECT, "owner": 204},
    "DELETE /v1/datasets/{dataset_id}/hierarchies/{column}": {**DATASET_OBJECT, "owner": 204},
    "GET /v1/jobs": {"owner": 200, "analyst": 200, "admin": 200, "other": 200, "other_analyst": 200},
    "POST /v1/jobs": {"owner": 202, "analyst": 403, "admin": 403, "other": 404, "other_analyst": 403},
    "POST /v1/jobs (on a release)": {"owner": 202, "analyst": 202, "admin": 403, "other": 404,
                                     "other_analyst": 404},
    "GET /v1/jobs/{job_id}": {"owner": 200, "analyst": 200, "admin": 200, "other": 404, "other_analyst": 404},
    # on a finished job: 409 shows the job was found; analysts cancel only their own jobs
    "POST /v1/jobs/{job_id}/cancel": {"owner": 409, "analyst": 403, "admin": 409, "other": 404,
                                      "other_analyst": 404},
    "POST /v1/jobs/{job_id}/retry": {"owner": 403, "analyst": 403, "admin": 409, "other": 403,
                                     "other_analyst": 403},
    "POST /v1/keys": {"owner": 403, "analyst": 403, "admin": 201, "other": 403, "other_analyst": 403},
    "GET /v1/keys": {"owner": 403, "analyst": 403, "admin": 200, "other": 403, "other_analyst": 403},
    "DELETE /v1/keys/{key_id}": {"owner": 403, "analyst": 403, "admin": 200, "other": 403,
                                 "other_analyst": 403},
    "GET /v1/models/{model_id}": READER_OBJECT,
    "POST /v1/models/{model_id}/predict": READER_OBJECT,
    "GET /v1/releases": {"owner": 200, "analyst": 200, "admin": 403, "other": 200, "other_analyst": 200},
    "GET /v1/reports": {"owner": 200, "analyst": 200, "admin": 403, "other": 200, "other_analyst": 200},
    "GET /v1/models": {"owner": 200, "analyst": 200, "admin": 403, "other": 200, "other_analyst": 200},
    "GET /v1/releases/{release_id}": READER_OBJECT,
    "GET /v1/releases/{release_id}/data": READER_OBJECT,
    # the risk report was computed from the raw dataset: its owners only (a report made from a
    # release is the analysts' too: tests/api/test_raw_data_reports.py)
    "GET /v1/reports/{report_id}": {**READER_OBJECT, "analyst": 403},
    "GET /v1/reports/{report_id}/plots/{filename}": {**READER_OBJECT, "analyst": 403},
}


@pytest.fixture(scope="module")
def world(client, make_key):
    a = build_tenant(client, make_key)
    other = make_key("owner")
    keys = {"owner": a["owner"], "analyst": a["analyst"], "admin": make_key("admin"), "other": other,
            "other_analyst": make_key("analyst", tenant=other["X-Tenant"]), "none": {}}
    victims = {c: upload(client, a["owner"], b"v\n1\n2\n", f"victim-{c}.csv").json()["id"] for c in CALLERS}
    # per caller, a dataset with a hierarchy to delete (a dataset DELETE may have run first)
    a["hierarchy_victims"] = {}
    for victim in victims.values():
        held = upload(client, a["owner"], b"v\n1\n2\n", "held.csv").json()["id"]
        r = client.put(f"/v1/datasets/{held}/hierarchies/v", content=b"1;*\n2;*\n",
                       headers={**auth(a["owner"]), "Content-Type": "text/csv"})
        assert r.status_code == 200, r.text
        a["hierarchy_victims"][victim] = held
    # a hierarchy to read back, whichever order the operations run in
    r = client.put(f"/v1/datasets/{a['dataset']['id']}/hierarchies/sex", content=b"M;*\nF;*\n",
                   headers={**auth(a["owner"]), "Content-Type": "text/csv"})
    assert r.status_code == 200, r.text
    # the schema cannot change under the queued jobs on a["dataset"] (409): its own dataset
    a["schema_dataset_id"] = upload(client, a["owner"], b"edu\nhs\nba\n", "schema.csv").json()["id"]
    made = client.post("/v1/keys", headers=auth(keys["admin"]), json={"tenant": "victim-key", "role": "analyst"})
    a["victim_key_id"] = made.json()["id"]  # the one key the admin's DELETE revokes
    return a, keys, victims


def _request(op: str, a: dict, victim: str) -> tuple[str, str, dict]:
    ds, rel, job = a["dataset"]["id"], a["release_id"], a["finished_job_id"]
    path = op.split(" ", 1)[1].replace(" (on a release)", "")
    column = "sex"
    if op == "DELETE /v1/datasets/{dataset_id}/hierarchies/{column}":
        ds, column = a["hierarchy_victims"][victim], "v"
    elif op.startswith("DELETE"):
        ds = victim
    elif op == "PUT /v1/datasets/{dataset_id}/schema":
        ds = a["schema_dataset_id"]
    path = path.format(dataset_id=ds, release_id=rel,
                       job_id=job, model_id=a["model_id"], report_id=a["risk_report_id"],
                       column=column, filename="class_sizes.png", name="errph", key_id=a["victim_key_id"])
    kwargs: dict = {}
    if op == "POST /v1/datasets":
        kwargs = {"files": {"file": ("x.csv", b"a\n1\n2\n")}}
    elif op == "POST /v1/datasets/synthetic":
        kwargs = {"json": {"rows": 10}}
    elif op == "PUT /v1/datasets/{dataset_id}/budget":
        kwargs = {"json": {"epsilon_total": 50}}
    elif op == "PUT /v1/datasets/{dataset_id}/schema":
        kwargs = {"json": {"columns": {"edu": {"role": "quasi_identifier"}}}}
    elif op == "POST /v1/datasets/{dataset_id}/hierarchies/{column}/build":
        kwargs = {"json": {"builder": "groups", "levels": [{"any": ["M", "F"]}]}}
    elif op.startswith("PUT /v1/datasets/{dataset_id}/hierarchies"):
        kwargs = {"content": b"M;*\nF;*\n", "headers": {"Content-Type": "text/csv"}}
    elif op == "POST /v1/jobs":
        kwargs = {"json": {"method": "errph", "dataset_id": ds, "params": {"p0": 0.5, "columns": ["sex"]}}}
    elif op == "POST /v1/jobs (on a release)":
        kwargs = {"json": {"method": "reconstruct", "release_id": rel, "params": {}}}
    elif op == "POST /v1/keys":
        kwargs = {"json": {"tenant": "made-by-test", "role": "analyst"}}
    elif op == "POST /v1/models/{model_id}/predict":
        kwargs = {"json": {"records": [{"age": 30, "sex": "M", "edu": "hs"}]}}
    return op.split(" ", 1)[0], path, kwargs


def _secrets_of(a: dict) -> list[str]:
    return [a["dataset"]["id"], a["tx"]["id"], a["release_id"], a["model_id"], a["risk_report_id"],
            a["finished_job_id"], a["queued_job_id"]]


def test_every_operation_by_every_caller(client, world):
    a, keys, victims = world
    spec = client.get("/openapi.json").json()
    operations = {f"{verb.upper()} {path}" for path, ops in spec["paths"].items() for verb in ops}
    missing = operations - PUBLIC - set(TABLE)
    assert not missing, f"operations without an expected role row (add them to TABLE): {missing}"
    mismatches = []
    calls = 0
    for op in sorted(PUBLIC | set(TABLE)):
        order = [c for c in CALLERS if c != "owner"] + ["owner"]  # the owner's DELETE comes last
        for caller in order:
            verb, path, kwargs = _request(op, a, victims[caller])
            headers = {**kwargs.pop("headers", {}), **({"Authorization": keys[caller]["Authorization"]}
                                                       if caller != "none" else {})}
            r = client.request(verb, path, headers=headers, **kwargs)
            calls += 1
            if op in PUBLIC:
                expected = {200, 503} if op == "GET /readyz" else {200}
            else:
                expected = {401} if caller == "none" else {TABLE[op][caller]}
            if r.status_code not in expected:
                mismatches.append((op, caller, r.status_code, sorted(expected), r.text[:160]))
            if r.status_code >= 400 and op != "GET /readyz":  # readyz's 503 is its Readiness body
                assert r.headers["content-type"].startswith("application/problem+json"), (op, caller)
            if caller in ("other", "other_analyst", "none") and op not in PUBLIC:
                sent = path + str(kwargs.get("json", ""))  # a 404 may name the id it was given
                leaked = [s for s in _secrets_of(a) if s in r.text and s not in sent]
                assert not leaked, (op, caller, "another tenant's ids in the answer", leaked)
    assert not mismatches, "\n".join(map(str, mismatches))
    print(f"\n{len(operations)} operations, {calls} calls, all as the role table says")
    # nothing the refused callers tried happened: the dataset is there, its budget uncapped
    owner = {"Authorization": keys["owner"]["Authorization"]}
    budget = client.get(f"/v1/datasets/{a['dataset']['id']}/budget", headers=owner).json()
    assert budget["epsilon_total"] == 50  # the owner's own PUT, not another tenant's
    with transaction() as s:
        deleted = dict(s.execute(text("SELECT id::text, deleted_at IS NOT NULL FROM datasets "
                                      "WHERE id::text = ANY(:ids)"), {"ids": list(victims.values())}).all())
    assert deleted == {v: c == "owner" for c, v in victims.items()}  # only the owner's DELETE took


def test_admin_lists_jobs_across_tenants_but_others_see_only_theirs(client, world):
    a, keys, _ = world
    job = a["finished_job_id"]
    seen = {c: job in client.get("/v1/jobs", params={"limit": 200},
                                 headers={"Authorization": keys[c]["Authorization"]}).text
            for c in ("owner", "analyst", "other", "other_analyst")}
    assert seen == {"owner": True, "analyst": True, "other": False, "other_analyst": False}
    admin = client.get("/v1/jobs", params={"tenant": a["owner"]["X-Tenant"]},
                       headers={"Authorization": keys["admin"]["Authorization"]}).json()
    assert job in [j["id"] for j in admin["items"]]


def test_api_keys_are_stored_nowhere_in_plain_text(client, world, live):
    a, keys, _ = world
    made = client.post("/v1/keys", json={"tenant": "scan", "role": "owner"},
                       headers={"Authorization": keys["admin"]["Authorization"]}).json()["key"]
    plain = [k["Authorization"].split()[1] for k in keys.values() if k] + [made, live.key]
    secrets = [k.split("_", 2)[2] for k in plain]  # veil_<public prefix>_<secret>
    assert all(len(s) >= 20 for s in secrets)
    found = []
    with transaction() as s:
        columns = s.execute(text(
            "SELECT table_schema, table_name, column_name, data_type FROM information_schema.columns "
            "WHERE table_schema NOT IN ('pg_catalog', 'information_schema')")).all()
        tables = sorted({(c.table_schema, c.table_name) for c in columns})
        for schema, table in tables:
            q = f'SELECT count(*) FROM "{schema}"."{table}" t WHERE ' + " OR ".join(
                f"strpos(t::text, :s{i}) > 0" for i in range(len(secrets)))
            n = s.execute(text(q), {f"s{i}": sec for i, sec in enumerate(secrets)}).scalar_one()
            if n:
                found.append((schema, table, n))
        for c in columns:  # binary columns too (blobs): the raw bytes, not their hex text
            if c.data_type == "bytea":
                for sec in secrets:
                    n = s.execute(text(f'SELECT count(*) FROM "{c.table_schema}"."{c.table_name}" '
                                       f'WHERE position(convert_to(:s, \'UTF8\') in "{c.column_name}") > 0'),
                                  {"s": sec}).scalar_one()
                    if n:
                        found.append((c.table_schema, c.table_name, c.column_name))
    assert len(tables) >= 10
    assert not found, found
    # nor in the server's log, after each key was used (and a wrong one tried) against it;
    # the development key is printed there once at start, by design (`veil serve`)
    with live.client() as c:
        for key in plain[:-1]:
            c.get("/v1/jobs", headers={"Authorization": f"Bearer {key}"})
            c.get("/v1/jobs", headers={"Authorization": f"Bearer {key}x"})
    log = live.log_path.read_text(errors="replace")
    assert not any(sec in log for sec in secrets[:-1])
    print(f"\n{len(tables)} tables scanned for {len(secrets)} keys: none found")
