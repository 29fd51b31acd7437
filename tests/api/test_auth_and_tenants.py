"""Keys, roles and tenant isolation."""

from __future__ import annotations

from sqlalchemy import text

from app.db import transaction
from tests.support.api import assert_problem, auth, submit, upload


def test_missing_or_bad_key_is_401(client):
    assert_problem(client.get("/v1/datasets"), 401, "missing API key")
    assert_problem(client.get("/v1/datasets", headers={"Authorization": "Bearer veil_nope_nope"}), 401,
                   "invalid API key")
    assert_problem(client.get("/v1/datasets", headers={"Authorization": "Basic abc"}), 401)


def test_another_tenants_objects_answer_404(client, make_key):
    alice, mallory = make_key("owner"), make_key("owner")
    ds = upload(client, alice, b"a,b\n1,x\n2,y\n", "a.csv").json()
    job = submit(client, alice, "errph", {"p0": 0.5}, dataset_id=ds["id"]).json()
    for path in (f"/v1/datasets/{ds['id']}", f"/v1/datasets/{ds['id']}/profile",
                 f"/v1/datasets/{ds['id']}/budget", f"/v1/jobs/{job['id']}"):
        assert_problem(client.get(path, headers=auth(mallory)), 404)
    assert_problem(client.delete(f"/v1/datasets/{ds['id']}", headers=auth(mallory)), 404)
    assert_problem(client.post(f"/v1/jobs/{job['id']}/cancel", headers=auth(mallory)), 404)
    assert_problem(submit(client, mallory, "errph", {"p0": 0.5}, dataset_id=ds["id"]), 404)
    listed = client.get("/v1/jobs", headers=auth(mallory)).json()["items"]
    assert job["id"] not in [j["id"] for j in listed]


def test_roles(client, make_key):
    owner = make_key("owner")
    analyst = make_key("analyst", tenant=owner["X-Tenant"])
    admin = make_key("admin")
    ds = upload(client, owner, b"a,b\n1,x\n2,y\n", "a.csv").json()
    assert_problem(upload(client, analyst, b"a\n1\n", "a.csv"), 403, "owner")
    assert_problem(client.get(f"/v1/datasets/{ds['id']}/profile", headers=auth(analyst)), 403)
    assert_problem(submit(client, analyst, "errph", {"p0": 0.5}, dataset_id=ds["id"]), 403)
    assert_problem(client.get("/v1/audit", headers=auth(analyst)), 403)
    assert_problem(submit(client, admin, "errph", {"p0": 0.5}, dataset_id=ds["id"]), 403)
    # admins see jobs across tenants and create keys
    job = submit(client, owner, "errph", {"p0": 0.5}, dataset_id=ds["id"]).json()
    seen = client.get("/v1/jobs", headers=auth(admin), params={"tenant": owner["X-Tenant"]}).json()["items"]
    assert job["id"] in [j["id"] for j in seen]
    created = client.post("/v1/keys", headers=auth(admin), json={"tenant": "other", "role": "analyst"})
    assert created.status_code == 201 and created.json()["key"].startswith("veil_")
    assert_problem(client.post("/v1/keys", headers=auth(owner), json={"tenant": "x", "role": "admin"}), 403)


def test_keys_are_never_stored_in_plain_text(client, make_key):
    headers = make_key("owner")
    key = headers["Authorization"].split()[1]
    secret = key.split("_", 2)[2]
    with transaction() as s:
        dump = s.execute(text("SELECT string_agg(t::text, '|') FROM api_keys t")).scalar()
        audit = s.execute(text("SELECT string_agg(t::text, '|') FROM audit_events t")).scalar() or ""
    assert secret not in dump and key not in dump and secret not in audit


def test_key_creation_refuses_fields_it_does_not_take(client, make_key):
    """`{"key": …}` (or a misspelt `label`) was ignored and a different key made (API audit)."""
    admin = make_key("admin")
    for extra in ({"key": "veil_mine_secret"}, {"lable": "ci"}):
        body = assert_problem(client.post("/v1/keys", headers=auth(admin),
                                          json={"tenant": "t-extra", "role": "owner", **extra}), 422)
        assert body["errors"][0]["loc"] == ["body", next(iter(extra))]
    made = client.post("/v1/keys", headers=auth(admin), json={"tenant": "t-extra", "role": "owner", "label": "ci"})
    assert made.status_code == 201 and made.json()["key"].startswith("veil_")
