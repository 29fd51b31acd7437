"""The report and model lists (they were reachable only through their jobs): summaries, filters,
cursor pages, and nothing of another tenant."""

from __future__ import annotations

from tests.support.api import assert_problem, auth


def test_reports_list_summaries_filtered_by_kind_and_release(client, tenant_objects, make_key):
    a = tenant_objects
    page = client.get("/v1/reports", headers=auth(a["owner"])).json()
    assert page["next"] is None and len(page["items"]) == 2
    assert all("data" not in r for r in page["items"])  # the data is at links.self
    risk = next(r for r in page["items"] if r["id"] == a["risk_report_id"])
    full = client.get(risk["links"]["self"], headers=auth(a["owner"])).json()
    assert full["kind"] == risk["kind"] and full["data"] and full["plots"] == risk["plots"]
    # an analyst's list leaves out the risk report: computed from the raw dataset, owners only
    listed = client.get("/v1/reports", headers=auth(a["analyst"])).json()["items"]
    assert [r["kind"] for r in listed] == ["reconstruction"]
    full = client.get(listed[0]["links"]["self"], headers=auth(a["analyst"])).json()
    assert full["release_id"] == a["release_id"] and full["data"]
    by_release = client.get("/v1/reports", headers=auth(a["owner"]), params={"release_id": a["release_id"]})
    assert [r["kind"] for r in by_release.json()["items"]] == ["reconstruction"]
    by_kind = client.get("/v1/reports", headers=auth(a["owner"]), params={"kind": risk["kind"]}).json()
    assert [r["id"] for r in by_kind["items"]] == [a["risk_report_id"]]
    first = client.get("/v1/reports", headers=auth(a["owner"]), params={"limit": 1}).json()
    second = client.get("/v1/reports", headers=auth(a["owner"]),
                        params={"limit": 1, "cursor": first["next"]}).json()
    assert {first["items"][0]["id"], second["items"][0]["id"]} == {r["id"] for r in page["items"]}
    assert client.get("/v1/reports", headers=auth(make_key("owner"))).json() == {"items": [], "next": None}
    assert_problem(client.get("/v1/reports", headers=auth(make_key("admin"))), 403)


def test_models_list_filtered_by_method_and_release(client, tenant_objects, make_key):
    a = tenant_objects
    page = client.get("/v1/models", headers=auth(a["analyst"])).json()
    assert [m["id"] for m in page["items"]] == [a["model_id"]] and page["next"] is None
    assert page["items"][0]["links"]["predict"] == f"/v1/models/{a['model_id']}/predict"
    for params, expected in (({"method": "ppnb_train"}, [a["model_id"]]), ({"method": "dtpd_train"}, []),
                             ({"release_id": a["release_id"]}, [a["model_id"]])):
        got = client.get("/v1/models", headers=auth(a["owner"]), params=params).json()["items"]
        assert [m["id"] for m in got] == expected, params
    assert client.get("/v1/models", headers=auth(make_key("analyst"))).json() == {"items": [], "next": None}


def test_a_prediction_is_in_the_audit_of_the_release_its_model_came_from(client, tenant_objects):
    a = tenant_objects
    r = client.post(f"/v1/models/{a['model_id']}/predict", headers=auth(a["analyst"]),
                    json={"records": [{"age": 30, "sex": "M", "edu": "hs"}]})
    assert r.status_code == 200, r.text
    events = client.get("/v1/audit", headers=auth(a["owner"]),
                        params={"release_id": a["release_id"], "action": "model.predicted"}).json()["items"]
    assert events and {e["subject"] for e in events} == {a["model_id"]}


def test_reports_kind_filter_takes_the_analysis_name_and_names_a_typo(client, tenant_objects):
    """`?kind=reconstruct` (the analysis' name, as the parameter says) answered an empty page:
    its reports say "reconstruction"; a typo did too, as if there were no such reports."""
    a = tenant_objects
    for kind in ("reconstruct", "reconstruction"):
        page = client.get("/v1/reports", headers=auth(a["owner"]), params={"kind": kind}).json()
        assert [r["kind"] for r in page["items"]] == ["reconstruction"], kind
    assert_problem(client.get("/v1/reports", headers=auth(a["owner"]), params={"kind": "rsik"}), 422,
                   "unknown report kind 'rsik'")
