"""Declared bounds whose width is not a finite normal float ([-1e308, 1e308]: finite ends, inf
width; a subnormal width; lo == hi; lo > hi) are refused where they are declared — the upload's
schema and PUT …/schema, a 422 naming the column and the width — and, for a schema stored before
that rule, at every submission (a 422 naming the column: no job, no debit). Before, kanonymity
released NCP 0 for x (an interval's width over inf), the itemsets named bins '[nan,inf)', rfka
published inf edges, and safepub and the dp_release methods refused with words of their own."""

from __future__ import annotations

import uuid

import numpy as np
import pandas as pd
import pytest

from tests.support.api import assert_problem, auth, run_job, submit, upload

N = 300
BAD = [([-1e308, 1e308], "[-1e+308, 1e+308] have a width hi − lo that overflows a float64"),
       ([0.0, 1e-310], "[0, 1e-310] have a width of 1e-310, below 2.23e-308"),
       ([1.0, 1.0], "[1, 1] need lo < hi"),
       ([5.0, 1.0], "[5, 1] need lo < hi")]


def _table(x=None) -> bytes:
    x = [float(i % 3) for i in range(N)] if x is None else x
    frame = pd.DataFrame({"x": x, "c": np.array(["a", "b", "c"])[np.arange(N) % 3],
                          "y": np.array(["p", "q"])[(np.arange(N) // 3) % 2]})
    return frame.to_csv(index=False, float_format="%.17g").encode()


SCHEMA = {"c": {"type": "categorical", "categories": ["a", "b", "c"], "role": "quasi_identifier"},
          "y": {"type": "categorical", "categories": ["p", "q"], "role": "label"}}


@pytest.mark.parametrize("bounds,words", BAD)
def test_the_schema_refuses_bounds_without_a_finite_normal_width(client, owner, bounds, words):
    x_schema = {"type": "numeric", "role": "quasi_identifier", "bounds": bounds}
    before = client.get("/v1/datasets", headers=auth(owner)).json()["items"]
    body = assert_problem(upload(client, owner, _table(), "t.csv", schema={**SCHEMA, "x": x_schema}), 422, words)
    assert "x" in body["detail"].split(words)[0]  # the column, located before the words
    assert client.get("/v1/datasets", headers=auth(owner)).json()["items"] == before
    ds = upload(client, owner, _table(), "t.csv", schema={**SCHEMA, "x": {**x_schema, "bounds": [0, 2]}}).json()
    assert_problem(client.put(f"/v1/datasets/{ds['id']}/schema", headers=auth(owner), json={"x": {"bounds": bounds}}),
                   422, words)
    stored = {c["name"]: c for c in client.get(f"/v1/datasets/{ds['id']}", headers=auth(owner)).json()["columns"]}
    assert stored["x"]["bounds"] == [0, 2]


@pytest.mark.parametrize("bounds", [[0.0, 1.7e308], [-1e300, 1e300], [1.0, 1.0 + 1e-15]])
def test_wide_and_tiny_finite_widths_are_declared_as_given(client, owner, bounds):
    ds = upload(client, owner, _table([bounds[0], bounds[1]] * (N // 2)), "t.csv",
                schema={**SCHEMA, "x": {"type": "numeric", "bounds": bounds}})
    assert ds.status_code == 201, ds.text
    assert {c["name"]: c for c in ds.json()["columns"]}["x"]["bounds"] == bounds


def _store_bounds(dataset_id: str, bounds: list[float]) -> None:
    """A schema stored before the rule: the bounds written as they were then accepted."""
    from sqlalchemy import text

    from app.datasets import repository
    from app.db import transaction

    with transaction() as s:
        columns = s.execute(text("SELECT columns FROM datasets WHERE id = :i"), {"i": dataset_id}).scalar_one()
        for c in columns:
            if c["name"] == "x":
                c["bounds"] = bounds
        repository.set_columns(s, uuid.UUID(dataset_id), columns)


METHODS = [("kanonymity", {"k": 5}), ("risk", {}), ("safepub", {"epsilon": 1.0, "delta": 1e-3}),
           ("mask", {"columns": ["x", "c"]}), ("hamdist", {"label": "y", "k": 2}),
           ("dp_statistics", {"epsilon": 1.0, "queries": [{"statistic": "mean", "column": "x"}]}),
           ("mst", {"epsilon": 1.0}), ("trr", {"columns": ["x"]})]


@pytest.mark.parametrize("method,params", METHODS, ids=[m for m, _ in METHODS])
def test_bounds_stored_before_the_rule_are_a_422_at_every_submission(client, make_key, method, params):
    headers = make_key("owner")
    ds = upload(client, headers, _table(), "t.csv",
                schema={**SCHEMA, "x": {"type": "numeric", "role": "quasi_identifier", "bounds": [0, 2]}}).json()
    _store_bounds(ds["id"], [-1e308, 1e308])
    assert_problem(submit(client, headers, method, params, dataset_id=ds["id"]), 422,
                   "column 'x': declared bounds [-1e+308, 1e+308] have a width hi − lo that overflows a float64")
    assert client.get(f"/v1/jobs?dataset_id={ds['id']}", headers=auth(headers)).json()["items"] == []
    assert client.get(f"/v1/datasets/{ds['id']}/budget", headers=auth(headers)).json()["entry_count"] == 0
    # declared again, usable: the same request is accepted
    assert client.put(f"/v1/datasets/{ds['id']}/schema", headers=auth(headers),
                      json={"x": {"bounds": [0, 2]}}).status_code == 200
    assert submit(client, headers, method, params, dataset_id=ds["id"]).status_code == 202


def test_itemset_bins_narrower_than_the_floats_are_a_422_at_submission(client, make_key):
    """64 items over [1, 1 + 1e-15] collapse onto a handful of floats: they were four items named
    'x=[1,1)' (6 digits); now a 422 naming the column and the bins, and 5 bins are named apart."""
    headers = make_key("owner")
    x = [1.0, 1.0 + 5e-16, 1.0 + 1e-15] * (N // 3)
    ds = upload(client, headers, _table(x), "t.csv",
                schema={**SCHEMA, "x": {"type": "numeric", "bounds": [1.0, 1.0 + 1e-15]}}).json()
    for method, extra in (("mask", {}), ("png", {"ps": [0.9]}), ("frequent_itemsets", {})):
        assert_problem(submit(client, headers, method, {"columns": ["x", "c"], "bins": 64, **extra},
                              dataset_id=ds["id"]), 422,
                       "column 'x': bins: 64 bins over [1, 1.0000000000000011] are narrower than the spacing")
    assert client.get(f"/v1/jobs?dataset_id={ds['id']}", headers=auth(headers)).json()["items"] == []
    assert client.get(f"/v1/datasets/{ds['id']}/budget", headers=auth(headers)).json()["entry_count"] == 0


def test_bounds_a_release_kept_from_before_the_rule_are_a_422_naming_the_dataset(client, make_key):
    """A job on a release reads the release's kept schema (as its runner does), not the dataset's:
    bounds it kept from before the rule are refused for every method on it, naming the column, and
    the remedy is the dataset's schema and a new release — no route edits a release's schema (the
    words said 'declare usable ones in it')."""
    from sqlalchemy import text

    from app.db import transaction
    headers = make_key("owner")
    ds = upload(client, headers, _table(), "t.csv",
                schema={**SCHEMA, "x": {"type": "numeric", "role": "insensitive", "bounds": [0, 2]}}).json()
    r = submit(client, headers, "kanonymity", {"k": 5, "quasi_identifiers": ["c"]}, dataset_id=ds["id"])
    rid = run_job(client, headers, r.json()["id"])["result"]["release_ids"][0]
    kept = {c["name"]: c for c in client.get(f"/v1/releases/{rid}", headers=auth(headers)).json()["columns"]}
    assert kept["x"]["bounds"] == [0, 2]
    with transaction() as s:  # stored as a release made before the rule kept them
        s.execute(text("UPDATE releases SET columns = jsonb_set(columns, ARRAY[(SELECT (i - 1)::text FROM "
                       "jsonb_array_elements(columns) WITH ORDINALITY AS e(c, i) WHERE c->>'name' = 'x'), "
                       "'bounds'], '[-1e308, 1e308]') WHERE id = :i"), {"i": rid})
    jobs_before = client.get("/v1/jobs", headers=auth(headers)).json()["items"]
    for method, params in (("risk", {"quasi_identifiers": ["c"]}), ("kanonymity", {"k": 5, "quasi_identifiers": ["c"]})):
        body = assert_problem(submit(client, headers, method, params, release_id=rid), 422,
                              "column 'x': declared bounds [-1e+308, 1e+308] have a width hi − lo that overflows")
        assert "declare usable bounds on the dataset and make the release again" in body["detail"], body
    assert client.get("/v1/jobs", headers=auth(headers)).json()["items"] == jobs_before
    # the dataset's own schema is usable: a job on the dataset is accepted
    assert submit(client, headers, "risk", {"quasi_identifiers": ["c"]}, dataset_id=ds["id"]).status_code == 202
