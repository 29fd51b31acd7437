"""An overrides map naming more columns than a dataset can have is refused before each entry
is validated (#7 acceptance check: 500,000 entries held an API process for 18 s, answered a
56 MB list of errors, and once the server's health check killed the process meanwhile)."""

from __future__ import annotations

from tests.support.api import assert_problem, auth, upload


def _too_many(monkeypatch) -> dict:
    from app.config import get_settings
    from app.datasets.schema import SchemaUpdate

    def validate_each(*args, **kwargs):
        raise AssertionError("every entry was validated before the column limit was checked")

    monkeypatch.setattr(SchemaUpdate, "model_validate", validate_each)
    return {f"c{i}": {"role": "quasi_identifier"} for i in range(get_settings().max_columns + 1)}


def test_put_schema_with_more_columns_than_the_limit_is_refused_unvalidated(client, owner, monkeypatch):
    dataset = upload(client, owner, b"a,b\n1,2\n").json()["id"]
    overrides = _too_many(monkeypatch)
    for body in (overrides, {"columns": overrides}):
        r = client.put(f"/v1/datasets/{dataset}/schema", headers=auth(owner), json=body)
        assert_problem(r, 422, f"the schema names {len(overrides)} columns; a dataset has at most")


def test_the_upload_schema_field_has_the_same_limit(client, owner, monkeypatch):
    overrides = _too_many(monkeypatch)
    r = upload(client, owner, b"a,b\n1,2\n", schema=overrides)
    assert_problem(r, 422, f"the schema field names {len(overrides)} columns")


def test_a_map_within_the_limit_is_still_validated(client, owner):
    dataset = upload(client, owner, b"a,b\n1,2\n").json()["id"]
    r = client.put(f"/v1/datasets/{dataset}/schema", headers=auth(owner), json={"a": {"role": "label"}})
    assert r.status_code == 200, r.text
    r = client.put(f"/v1/datasets/{dataset}/schema", headers=auth(owner), json={"a": 1})
    assert_problem(r, 422, "the schema is invalid: a:")



def test_declared_categories_are_capped_over_the_whole_dataset(client, owner):
    """PUT …/schema took 1.2 million categories (32 MB): 11 s, an API process at 1 GB, the list
    echoed back and carried on every dataset list page (scale acceptance check)."""
    from app.config import get_settings

    limit = get_settings().max_declared_categories
    dataset = upload(client, owner, b"a,b\nx,y\n").json()["id"]
    many = [f"v{i}" for i in range(limit + 1)]
    r = client.put(f"/v1/datasets/{dataset}/schema", headers=auth(owner), json={"a": {"categories": ["x", *many]}})
    assert_problem(r, 422, f"the schema declares {limit + 2} categories; a dataset has at most {limit}")
    half = limit // 2 + 1
    ok = client.put(f"/v1/datasets/{dataset}/schema", headers=auth(owner),
                    json={"a": {"categories": ["x", *many[:half]]}})
    assert ok.status_code == 200, ok.text
    # each request within the limit, the dataset over it: refused, the first declaration kept
    r = client.put(f"/v1/datasets/{dataset}/schema", headers=auth(owner), json={"b": {"categories": ["y", *many[:half]]}})
    assert_problem(r, 422, "the schema declares")
    columns = client.get(f"/v1/datasets/{dataset}", headers=auth(owner)).json()["columns"]
    assert [len(c["categories"] or []) for c in columns] == [half + 1, 0]
