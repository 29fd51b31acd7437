"""`risk` with a sensitive column: the attribute-disclosure levels a table meets, each checked
against the model's definition computed class by class (the helpers of the model tests), and
the report through the HTTP API."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from app.privacy.anonymity.verify import disclosure_levels
from app.privacy.registry import MethodInputError
from tests.privacy.test_anonymity_more_models import beta_holds, disclosure, entropy, recursive_holds
from tests.support.api import assert_problem, auth, run_job, submit, upload


def table(rng, n: int, classes: int, values: int) -> pd.DataFrame:
    return pd.DataFrame({"a": rng.integers(0, classes, n).astype(str), "b": rng.choice(["x", "y"], n),
                         "s": rng.choice([f"v{i}" for i in range(values)], n,
                                         p=rng.dirichlet(np.full(values, 0.8)))})


@pytest.mark.parametrize("seed", range(12))
def test_levels_follow_the_definitions(seed):
    rng = np.random.default_rng(seed)
    frame = table(rng, int(rng.integers(50, 3000)), int(rng.integers(1, 30)), int(rng.integers(2, 7)))
    got = disclosure_levels(frame, ["a", "b"], "s", numeric=False, recursive_l=2)
    domain = sorted(frame["s"].unique())
    q = frame["s"].value_counts(normalize=True).reindex(domain).tolist()
    counts = pd.crosstab([frame["a"], frame["b"]], frame["s"]).reindex(columns=domain, fill_value=0)
    counts = counts.to_numpy().tolist()
    assert got["l_distinct"] == min(sum(x > 0 for x in r) for r in counts)
    assert got["entropy_l"] == pytest.approx(math.exp(min(entropy(r) for r in counts)))
    assert got["alpha"] == pytest.approx(max(max(r) / sum(r) for r in counts))
    assert got["t"] == pytest.approx(max(0.5 * sum(abs(x / sum(r) - qs) for x, qs in zip(r, q)) for r in counts))
    c = got["recursive"]["level"]
    if c is None:
        assert min(sum(x > 0 for x in r) for r in counts) < 2  # a class no c can make diverse
    else:  # met just above the level, not at it
        assert all(recursive_holds(r, c * (1 + 1e-9), 2) for r in counts)
        assert not all(recursive_holds(r, c, 2) for r in counts)
    beta = got["beta_basic"]
    assert all(beta_holds(r, q, beta, False) for r in counts)
    if beta > 1e-9:
        assert not all(beta_holds(r, q, beta * (1 - 1e-6), False) for r in counts)
    enhanced = got["beta_enhanced"]["level"]
    assert (enhanced is not None) == all(beta_holds(r, q, 1e9, True) for r in counts)
    if enhanced is not None:
        assert all(beta_holds(r, q, enhanced, True) for r in counts)
    delta = got["delta_disclosure"]["level"]
    worst = max(disclosure(r, q) for r in counts)
    assert (delta is None) == math.isinf(worst) and (delta is None or delta == pytest.approx(worst))
    assert (got["delta_disclosure"]["reason"] is None) == (delta is not None)


def test_numeric_sensitive_column_uses_the_ordered_distance():
    frame = pd.DataFrame({"a": ["x"] * 4 + ["y"] * 4, "s": [1, 1, 2, 2, 3, 3, 4, 4]})
    got = disclosure_levels(frame, ["a"], "s", numeric=True)
    # class x: half on 1, half on 2; table a quarter each. CDF gaps 0.25, 0.5, 0.25 over m − 1 = 3
    assert got["distance"] == "ordered" and got["t"] == pytest.approx(1 / 3)
    assert got["delta_disclosure"]["level"] is None and "2 classes lack" in got["delta_disclosure"]["reason"]
    with pytest.raises(MethodInputError, match="numeric sensitive column 's' has 1 missing cells"):
        disclosure_levels(frame.assign(s=[1, None, 2, 2, 3, 3, 4, 4]), ["a"], "s", numeric=True)


def risk_report(client, owner, ds: dict, params: dict) -> dict:
    """A risk job on the dataset, run here, and its report."""
    r = submit(client, owner, "risk", params, dataset_id=ds["id"])
    assert r.status_code == 202, r.text
    job = run_job(client, owner, r.json()["id"])
    return client.get(f"/v1/reports/{job['result']['report_id']}", headers=auth(owner)).json()


def test_risk_reports_the_levels_through_the_api(client, owner):
    rng = np.random.default_rng(9)
    frame = table(rng, 1500, 12, 4)
    ds = upload(client, owner, frame.to_csv(index=False).encode(), "people.csv").json()
    report = risk_report(client, owner, ds, {"quasi_identifiers": ["a", "b"], "sensitive": "s", "recursive_l": 3})
    levels = report["data"]["attribute_disclosure"]
    assert levels == disclosure_levels(frame, ["a", "b"], "s", numeric=False, recursive_l=3)
    assert levels["recursive"]["l"] == 3
    assert "attribute_disclosure" in report["data"]["tables"]
    for params, named in [({"sensitive": "nope"}, "unknown sensitive column 'nope'"),
                          ({"sensitive": "a"}, "column 'a' cannot be both sensitive and a quasi-identifier")]:
        bad = submit(client, owner, "risk", {"quasi_identifiers": ["a", "b"], **params}, dataset_id=ds["id"])
        assert_problem(bad, 422)
        assert named in bad.text


def test_risk_reports_each_sensitive_column_s_levels(client, owner):
    """sensitive as a list: data.attribute_disclosure by column, each the column's own levels
    (checked against the definitions above), and a table row per column and model."""
    rng = np.random.default_rng(4)
    frame = table(rng, 1200, 10, 5).assign(n=rng.integers(0, 6, 1200).astype(float))
    ds = upload(client, owner, frame.to_csv(index=False).encode(), "people.csv").json()
    report = risk_report(client, owner, ds, {"quasi_identifiers": ["a", "b"], "sensitive": ["s", "n"]})
    levels = report["data"]["attribute_disclosure"]
    assert set(levels) == {"s", "n"}
    assert levels["s"] == disclosure_levels(frame, ["a", "b"], "s", numeric=False)
    assert levels["n"] == disclosure_levels(frame, ["a", "b"], "n", numeric=True)
    for column in ("s", "n"):
        counts = pd.crosstab([frame["a"], frame["b"]], frame[column]).to_numpy().tolist()
        assert levels[column]["l_distinct"] == min(sum(x > 0 for x in row) for row in counts)
        assert levels[column]["alpha"] == pytest.approx(max(max(row) / sum(row) for row in counts))
    assert levels["n"]["distance"] == "ordered" and levels["s"]["distance"] == "equal"
    for params, named in [({"sensitive": ["s", "s"]}, "repeat"), ({"sensitive": []}, "empty list"),
                          ({"sensitive": ["s", "a"]}, "column 'a' cannot be both sensitive and a quasi-identifier"),
                          ({"sensitive": [f"c{i}" for i in range(9)]}, "9 sensitive columns; at most 8")]:
        bad = submit(client, owner, "risk", {"quasi_identifiers": ["a", "b"], **params}, dataset_id=ds["id"])
        assert_problem(bad, 422)
        assert named in bad.text
