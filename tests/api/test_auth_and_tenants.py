"""Keys, roles and tenant isolation."""

from __future__ import annotations

import uuid

import pytest
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


def test_an_admin_lists_and_revokes_keys_and_a_revoked_key_is_refused_at_once(client, make_key):
    tenant = f"t{uuid.uuid4().hex[:10]}"
    admin, owner, analyst = make_key("admin"), make_key("owner", tenant), make_key("analyst", tenant)
    assert client.get("/v1/datasets", headers=auth(owner)).status_code == 200
    listed = client.get("/v1/keys", headers=auth(admin), params={"tenant": tenant}).json()
    assert {k["role"] for k in listed["items"]} == {"owner", "analyst"} and listed["next"] is None
    assert all(k["revoked_at"] is None and set(k) == {"id", "tenant", "role", "label", "prefix",
                                                      "created_at", "revoked_at"} for k in listed["items"])
    owner_key = owner["Authorization"].split()[1]
    target = next(k for k in listed["items"] if owner_key.startswith(f"veil_{k['prefix']}_"))
    for who in (owner, analyst):  # key management is the admins'
        assert_problem(client.get("/v1/keys", headers=auth(who)), 403)
        assert_problem(client.delete(f"/v1/keys/{target['id']}", headers=auth(who)), 403)
    revoked = client.delete(f"/v1/keys/{target['id']}", headers=auth(admin))
    assert revoked.status_code == 200 and revoked.json()["revoked_at"] is not None
    assert_problem(client.get("/v1/datasets", headers=auth(owner)), 401, "invalid API key")
    assert client.get("/v1/releases", headers=auth(analyst)).status_code == 200  # the other key still works
    assert_problem(client.delete(f"/v1/keys/{target['id']}", headers=auth(admin)), 409, "already revoked")
    assert_problem(client.delete(f"/v1/keys/{uuid.uuid4()}", headers=auth(admin)), 404, "not found")
    after = client.get("/v1/keys", headers=auth(admin), params={"tenant": tenant}).json()["items"]
    assert next(k for k in after if k["id"] == target["id"])["revoked_at"] is not None
    events = client.get("/v1/audit", headers=auth(admin), params={"tenant": tenant}).json()["items"]
    assert any(e["action"] == "key.revoked" and e["subject"] == target["id"] for e in events)


def test_keys_list_pages_by_cursor(client, make_key):
    tenant = f"t{uuid.uuid4().hex[:10]}"
    admin = make_key("admin")
    made = {str(uuid.UUID(client.post("/v1/keys", headers=auth(admin), json={"tenant": tenant, "role": "analyst"})
                          .json()["id"])) for _ in range(5)}
    seen, cursor = [], None
    while True:
        page = client.get("/v1/keys", headers=auth(admin),
                          params={"tenant": tenant, "limit": 2, **({"cursor": cursor} if cursor else {})}).json()
        seen += [k["id"] for k in page["items"]]
        if not (cursor := page["next"]):
            break
    assert sorted(seen) == sorted(made) and len(seen) == 5
    assert_problem(client.get("/v1/keys", headers=auth(admin), params={"cursor": "nope"}), 422, "cursor")


def test_cli_lists_and_revokes_a_leaked_key_given_as_the_key_itself(client, make_key, capsys):
    from app.cli import main

    owner = make_key("owner")
    key = owner["Authorization"].split()[1]
    main(["keys", "list", "--tenant", owner["X-Tenant"]])
    header, row = capsys.readouterr().out.splitlines()
    assert header.split() == ["id", "key", "(prefix)", "tenant", "role", "state", "label"]
    assert f"veil_{key.split('_')[1]}_…" in row and row.index(owner["X-Tenant"]) == header.index("tenant")
    main(["keys", "revoke", key])
    assert "revoked key" in capsys.readouterr().out
    assert_problem(client.get("/v1/datasets", headers=auth(owner)), 401)
    with pytest.raises(SystemExit, match="already revoked"):
        main(["keys", "revoke", key])
    with pytest.raises(SystemExit, match="no such key"):
        main(["keys", "revoke", "veil_nothere_secret"])


@pytest.mark.parametrize("tenant, label, message", [
    ("", None, "--tenant: String should have at least 1 character"),
    ("x" * 65, None, "--tenant: String should have at most 64 characters"),
    ("../acme", None, "--tenant: String should match pattern"),
    ("acme", "l" * 201, "--label: String should have at most 200 characters"),
])
def test_cli_key_creation_checks_the_tenant_and_label_as_the_api_does(client, tenant, label, message):
    """`veil keys create` took an empty tenant, path separators and quotes, and answered a
    65-character tenant or a 201-character label with SQLAlchemy's traceback (security
    acceptance check)."""
    from app.cli import main

    with pytest.raises(SystemExit, match=message.replace(".", r"\.")):
        main(["keys", "create", "--tenant", tenant, "--role", "owner", *(["--label", label] if label else [])])


def test_a_non_admin_naming_another_tenant_is_refused_not_given_its_own(client, make_key):
    """`?tenant=acme` from an owner used to answer with the owner's own events, as if granted."""
    owner = make_key("owner")
    own = owner["X-Tenant"]
    for path in ("/v1/audit", "/v1/jobs"):
        assert_problem(client.get(path, headers=auth(owner), params={"tenant": "acme"}), 403,
                       f"only admins list other tenants; your key belongs to tenant '{own}'")
        assert client.get(path, headers=auth(owner), params={"tenant": own}).status_code == 200
    admin = make_key("admin")
    events = client.get("/v1/audit", headers=auth(admin), params={"tenant": own}).json()["items"]
    assert events and {e["tenant"] for e in events} == {own}


def test_two_authorization_headers_are_refused_whichever_comes_first(client, make_key):
    """The first of two Authorization headers was used and the second ignored (security
    acceptance check): a proxy or client adding its own could make the key that counts
    depend on header order."""
    owner = make_key("owner")
    key = owner["Authorization"]
    for pair in ([("Authorization", key), ("Authorization", "Bearer veil_x_wrong")],
                 [("Authorization", "Bearer veil_x_wrong"), ("Authorization", key)],
                 [("Authorization", key), ("Authorization", key)]):
        r = client.get("/v1/datasets", headers=pair)
        assert_problem(r, 401, "send one Authorization header; this request has 2")
        assert r.headers["www-authenticate"] == "Bearer"
    assert client.get("/v1/datasets", headers={"Authorization": key}).status_code == 200


def test_a_job_replay_does_not_skip_the_role_check(client, make_key):
    """The same Idempotency-Key and request as the owner's job on raw data, sent with an
    analyst's or an admin's key, answered 200 with the owner's job: the replay was looked up
    before the role was checked (keys are per tenant; admins have a tenant too)."""
    owner = make_key("owner")
    analyst = make_key("analyst", tenant=owner["X-Tenant"])
    admin = make_key("admin", tenant=owner["X-Tenant"])
    ds = upload(client, owner, b"a,sex\n1,M\n2,F\n", "a.csv").json()
    params = {"p0": 0.5, "columns": ["sex"]}
    first = submit(client, owner, "errph", params, dataset_id=ds["id"], idempotency_key="replay-1")
    assert first.status_code == 202, first.text
    assert_problem(submit(client, analyst, "errph", params, dataset_id=ds["id"], idempotency_key="replay-1"),
                   403, "only owners may run jobs on raw datasets")
    assert_problem(submit(client, admin, "errph", params, dataset_id=ds["id"], idempotency_key="replay-1"),
                   403, "admin keys")
    again = submit(client, owner, "errph", params, dataset_id=ds["id"], idempotency_key="replay-1")
    assert again.status_code == 200 and again.json()["id"] == first.json()["id"]
