"""dp_statistics through the API: an Adult-like table with declared bounds and categories, a job
of counts, a histogram, a mean, grouped means and a median is debited its ε (δ = 0), its release
is the table of answers (downloadable), each near the truth and within its stated interval's
reach, and bad queries are 422s naming the query and field with nothing queued or debited."""

from __future__ import annotations

import io
import json

import numpy as np
import pandas as pd
import pytest

from tests.support.api import assert_problem, auth, run_to_release, submit, upload

N = 3000


def _frame() -> pd.DataFrame:
    rng = np.random.default_rng(9)
    sex = rng.choice(["Female", "Male"], N, p=[0.33, 0.67])
    edu = rng.choice(["HS-grad", "Bachelors", "Masters"], N, p=[0.5, 0.35, 0.15])
    age = np.clip(np.rint(rng.normal(38, 13, N)), 17, 90).astype(int)
    hours = np.clip(np.rint(rng.normal(40 + 4 * (sex == "Male"), 10, N)), 1, 99).astype(float)
    hours[rng.random(N) < 0.02] = np.nan
    income = np.where(rng.random(N) < 0.15 + 0.2 * (edu != "HS-grad"), ">50K", "<=50K")
    return pd.DataFrame({"id": np.arange(N), "age": age, "sex": sex, "education": edu,
                         "hours-per-week": hours, "income": income})


SCHEMA = {"id": {"role": "identifier"}, "age": {"bounds": [17, 90]}, "hours-per-week": {"bounds": [1, 99]},
          "sex": {"type": "categorical", "categories": ["Female", "Male"]},
          "education": {"type": "categorical", "categories": ["HS-grad", "Bachelors", "Masters"]},
          "income": {"type": "categorical", "categories": ["<=50K", ">50K"]}}

QUERIES = [{"statistic": "count"},
           {"statistic": "histogram", "column": "education", "by": ["income"]},
           {"statistic": "mean", "column": "hours-per-week", "share": 2},
           {"statistic": "mean", "column": "age", "by": ["sex", "income"], "share": 2},
           {"statistic": "quantile", "column": "age", "quantiles": [0.5]}]


def _dataset(client, owner, frame: pd.DataFrame) -> dict:
    r = upload(client, owner, frame.to_csv(index=False).encode(), "adult.csv", schema=SCHEMA)
    assert r.status_code == 201, r.text
    return r.json()


def test_a_job_debits_epsilon_and_releases_the_answers_near_the_truth(client, owner):
    """ε = 20 (shares 1, 2, 2, 1: ε/6 a unit) so that each "near the truth" below holds but by
    chance with probability < 1e-8. At ε = 2 the assertions failed in 1,000 library runs 6 times
    (histogram interval), 1 (histogram distance), 6 (grouped-mean distance), 2 (its interval): a
    histogram cell's discrete Laplace noise (scale 6) passes 48 = its 95 % half-width 18 + 30
    with probability ~4e-4 a cell (12 cells), and the mean of the 216 women earning >50K moved by
    Laplace(219/216 ≈ 1 year), past 5 years in ~0.7 %. At ε = 20 the scales are 0.6 (cells: 60 is
    100 scales, 31.5 is 52) and 0.1 year (that mean: 5 years is 49 scales, the interval's
    2-year slack ~20, P ≈ e^-20 ≈ 2e-9); 0 of 1,000 library runs failed."""
    frame = _frame()
    ds = _dataset(client, owner, frame)
    client.put(f"/v1/datasets/{ds['id']}/budget", headers=auth(owner), json={"epsilon_total": 30.0})
    r = submit(client, owner, "dp_statistics", {"epsilon": 20.0, "queries": QUERIES}, dataset_id=ds["id"])
    assert r.status_code == 202, r.text
    ledger = client.get(f"/v1/datasets/{ds['id']}/budget", headers=auth(owner)).json()
    assert ledger["epsilon_spent"] == 20.0
    assert [e["job_id"] for e in ledger["entries"] if e["kind"] == "debit"] == [r.json()["id"]]

    job, rel = run_to_release(client, owner, r.json()["id"])
    rid = rel["id"]
    g, meta = rel["guarantees"], rel["metadata"]["dp_statistics"]
    assert g["notion"] == "central_dp" and g["epsilon"] == 20.0 and g["delta"] == 0.0 and g["private"] is True
    assert sum(g["epsilon_split"].values()) <= 20.0 and meta["epsilon_delivered"] <= 20.0
    assert g["epsilon_split"]["queries[2]"] == pytest.approx(2 * g["epsilon_split"]["queries[1]"])

    body = client.get(f"/v1/releases/{rid}/data", headers=auth(owner), params={"format": "csv"})
    assert body.status_code == 200, body.text
    out = pd.read_csv(io.BytesIO(body.content), keep_default_na=False, na_values=[""])
    assert list(out.columns) == ["query", "statistic", "column", "group", "level", "value", "epsilon",
                                 "noise", "ci95_low", "ci95_high"]
    rows = {q: out[out["query"] == q].reset_index(drop=True) for q in range(5)}
    assert rows[0]["value"].tolist() == [float(N)] and rows[0]["epsilon"].tolist() == [0.0]
    hist = rows[1]  # 3 income levels (with missing) × 4 education levels (with missing)
    assert len(hist) == 12 and hist["group"].iloc[0] == "income=<=50K" and hist["level"].iloc[3] == "(missing)"
    assert set(hist["noise"]) == {"discrete Laplace, scale 0.6"}  # Δ 2 (replace-one) over ε 20/6
    truth = frame.groupby(["income", "education"]).size()
    for _, row in hist.iterrows():
        income, level = row["group"].split("=", 1)[1], row["level"]
        exact = truth.get((income, level), 0)
        assert row["ci95_low"] - 30 <= exact <= row["ci95_high"] + 30  # loosely: near its interval
        assert abs(row["value"] - exact) < 60
    hours = frame["hours-per-week"].mean()
    assert abs(rows[2]["value"][0] - hours) < 1.0 and rows[2]["ci95_low"][0] - 1 <= hours <= rows[2]["ci95_high"][0] + 1
    means = frame.groupby(["sex", "income"])["age"].mean()
    grouped = rows[3].set_index("group")
    for (sex, income), exact in means.items():
        row = grouped.loc[f"sex={sex}|income={income}"]
        assert abs(row["value"] - exact) < 5.0 and row["ci95_low"] - 2 <= exact <= row["ci95_high"] + 2
    # noise was added: at ε = 20 every "near" above would pass without it. A mean's noise (its
    # sum's discrete Laplace over its count: ~0.01 of an hour for all records, ~0.03–0.15 of a
    # year for a group) is below 1e-4 with P ≈ 0.01 at most; all five with P < 1e-9. Without
    # noise the five would sit within the sums' grid rounding (< 1e-5) of the truth.
    offsets = [abs(grouped.loc[f"sex={s}|income={i}"]["value"] - exact) for (s, i), exact in means.items()]
    assert max(offsets + [abs(rows[2]["value"][0] - hours)]) > 1e-4
    assert abs(rows[4]["value"][0] - frame["age"].median()) <= 3 and rows[4]["level"][0] == "q=0.5"
    columns = {c["name"]: c["type"] for c in rel["columns"]}
    assert columns["value"] == "numeric" and columns["group"] == "categorical"


@pytest.mark.parametrize("queries, fragment", [
    ([{"statistic": "mean", "column": "agee"}], "queries[0].column: 'agee' is not a column"),
    ([{"statistic": "count"}, {"statistic": "mean", "column": "sex"}], "queries[1].column: 'sex' is categorical"),
    ([{"statistic": "count", "by": ["age"]}], "queries[0].by: 'age' is numeric"),
    ([{"statistic": "quantile", "column": "age", "quantiles": [2]}], "quantiles"),
    ([{"statistic": "sum"}], "column is required"),
])
def test_bad_queries_are_422s_with_nothing_queued_or_debited(client, owner, queries, fragment):
    ds = _dataset(client, owner, _frame())
    body = assert_problem(submit(client, owner, "dp_statistics", {"epsilon": 1.0, "queries": queries},
                                 dataset_id=ds["id"]), 422)
    assert fragment in str(body), body
    assert client.get(f"/v1/datasets/{ds['id']}/budget", headers=auth(owner)).json()["entry_count"] == 0
    assert client.get("/v1/jobs", headers=auth(owner), params={"dataset_id": ds["id"]}).json()["items"] == []



def test_an_epsilon_too_small_for_an_ungrouped_means_noise_is_a_422_not_a_500(client, owner):
    """The replace-one ungrouped mean calibrates its sum and count together at submission: an ε no
    discrete Laplace grid delivers was a 500 there (the other statistics' a 422)."""
    ds = _dataset(client, owner, _frame())
    for queries in ([{"statistic": "mean", "column": "age"}], [{"statistic": "count"}, {"statistic": "sum", "column": "age"}]):
        body = assert_problem(submit(client, owner, "dp_statistics", {"epsilon": 1e-9, "queries": queries},
                                     dataset_id=ds["id"]), 422)
        assert f"queries[{len(queries) - 1}]: its ε = 1e-09 is too small" in body["detail"], body
    assert client.get(f"/v1/datasets/{ds['id']}/budget", headers=auth(owner)).json()["entry_count"] == 0

def test_a_column_without_declared_bounds_is_refused_naming_it(client, owner):
    frame = _frame()
    r = upload(client, owner, frame.to_csv(index=False).encode(), "adult.csv",
               schema={k: v for k, v in SCHEMA.items() if k != "age"})
    assert r.status_code == 201, r.text
    body = assert_problem(submit(client, owner, "dp_statistics", {"epsilon": 1.0, "queries": [
        {"statistic": "count"}, {"statistic": "mean", "column": "age"}]}, dataset_id=r.json()["id"]), 422,
        "queries[1].column: column 'age' has no declared bounds")
    assert "bounds" in body["detail"]


def test_an_add_remove_job_is_debited_the_replace_one_epsilon_and_publishes_no_n(client, owner):
    """ε = 100 under add/remove, the grouped mean's share 2: the count of records (0 against a
    replacement), the histogram (Δ 1 → 2) and the grouped mean (2 in both parts) are priced
    (0·1 + 2·1 + 2·2)/4 × 100 = 150 on the ledger. At that ε the five empty groups' noisy counts
    (discrete Laplace, scale 0.04) are far below 1: their means are not estimated (null in JSON
    lines, empty in CSV) and their intervals are the bounds. At ε = 30 with equal shares (count
    scale 0.2) one of them reached 1 with probability e^-5/2 each: 17 of 1,000 library runs failed;
    at scale 0.04, e^-25/2 ≈ 7e-12 each, 0 of 1,000."""
    frame = _frame()
    ds = _dataset(client, owner, frame)
    client.put(f"/v1/datasets/{ds['id']}/budget", headers=auth(owner), json={"epsilon_total": 160.0})
    queries = [{"statistic": "count"}, {"statistic": "histogram", "column": "education", "by": ["income"]},
               {"statistic": "mean", "column": "age", "by": ["sex", "income"], "share": 2}]
    bad = submit(client, owner, "dp_statistics", {"epsilon": 1.0, "neighbouring": "swap", "queries": queries},
                 dataset_id=ds["id"])
    assert "neighbouring" in str(assert_problem(bad, 422))
    r = submit(client, owner, "dp_statistics", {"epsilon": 100.0, "neighbouring": "add_remove", "queries": queries},
               dataset_id=ds["id"])
    assert r.status_code == 202, r.text
    assert client.get(f"/v1/datasets/{ds['id']}/budget", headers=auth(owner)).json()["epsilon_spent"] == 150.0
    _, rel = run_to_release(client, owner, r.json()["id"])
    g, meta = rel["guarantees"], rel["metadata"]["dp_statistics"]
    assert g["epsilon"] == 100.0 and g["replace_one"]["epsilon"] == 150.0 and g["replace_one"]["epsilon_delivered"] <= 150.0
    assert "added or removed" in g["neighbouring"] and "records" not in meta
    body = client.get(f"/v1/releases/{rel['id']}/data", headers=auth(owner), params={"format": "jsonl"})
    assert body.status_code == 200, body.text
    rows = [json.loads(line) for line in body.text.splitlines()]
    count = rows[0]
    assert count["epsilon"] == pytest.approx(25.0) and count["noise"].startswith("discrete Laplace")
    assert abs(count["value"] - N) < 5
    means = {row["group"]: row for row in rows if row["query"] == 2}
    assert len(means) == 9  # (Female, Male, missing) × (<=50K, >50K, missing)
    for group, row in means.items():
        if "(missing)" in group:  # no record has a missing sex or income
            assert row["value"] is None and (row["ci95_low"], row["ci95_high"]) == (17.0, 90.0), row
        else:
            assert 17.0 <= row["value"] <= 90.0
    csv = client.get(f"/v1/releases/{rel['id']}/data", headers=auth(owner), params={"format": "csv"})
    out = pd.read_csv(io.BytesIO(csv.content), keep_default_na=False, na_values=[""])
    assert out[out["query"] == 2]["value"].isna().sum() == 5
