"""A dataset says its ε budget — cap, spent, remaining — in the list and in its own answer, as
GET …/budget gives them: a dashboard listing a tenant's datasets with what is left needed one
more request per dataset (dash acceptance check's note)."""

from __future__ import annotations

from tests.support.api import auth, submit, upload

DATA = b"colour,size\n" + b"".join(f"{'rgb'[i % 3]},{'SML'[i % 2]}\n".encode() for i in range(60))
FIGURES = ("epsilon_total", "epsilon_spent", "epsilon_remaining")


def test_the_dataset_list_and_answer_carry_the_budget(client, owner):
    ds = upload(client, owner, DATA, "budgeted.csv")
    assert ds.json()["budget"] == {"epsilon_total": None, "epsilon_spent": 0.0, "epsilon_remaining": None}
    ds = ds.json()
    url = f"/v1/datasets/{ds['id']}"
    assert client.put(f"{url}/budget", headers=auth(owner), json={"epsilon_total": 5}).status_code == 200
    job = submit(client, owner, "errph", {"p0": 0.5, "columns": ["colour"]}, dataset_id=ds["id"])
    assert job.status_code == 202, job.text
    budget = client.get(f"{url}/budget", headers=auth(owner)).json()
    assert 0 < budget["epsilon_spent"] < 5
    shown = {k: budget[k] for k in FIGURES}
    assert client.get(url, headers=auth(owner)).json()["budget"] == shown
    listed = client.get("/v1/datasets", headers=auth(owner), params={"limit": 200}).json()["items"]
    assert next(d for d in listed if d["id"] == ds["id"])["budget"] == shown
    schemas = client.get("/openapi.json").json()["components"]["schemas"]
    assert schemas["DatasetSummary"]["properties"]["budget"]["$ref"] == "#/components/schemas/BudgetFigures"
