"""The `risk` method's optional `sampling_fraction` through the HTTP API: absent, the report is
today's prosecutor figures and nothing else; given, it adds the population block (marketer risk,
four uniqueness estimators, the one Dankar's rule chose) and a table of the estimators; outside
(0, 1] it is a 422 problem naming the parameter, before any job exists."""

from __future__ import annotations

import numpy as np
import pytest

from tests.support.api import assert_problem, auth, run_job, submit, upload

PROSECUTOR_KEYS = {"model", "quasi_identifiers", "input", "records", "classes", "smallest_class",
                   "highest", "average", "threshold", "records_at_risk", "sample_uniques",
                   "sample_uniques_share"}


def _table() -> bytes:
    rng = np.random.default_rng(3)
    age = rng.integers(18, 90, 2000)
    sex = rng.choice(["M", "F"], 2000)
    zip3 = rng.choice([f"z{i}" for i in range(30)], 2000, p=np.r_[[0.3], np.full(29, 0.7 / 29)])
    return ("age,sex,zip\n" + "".join(f"{a},{s},{z}\n" for a, s, z in zip(age, sex, zip3))).encode()


def _report(client, key, params, dataset_id) -> dict:
    r = submit(client, key, "risk", params, dataset_id=dataset_id)
    assert r.status_code == 202, r.text
    job = run_job(client, key, r.json()["id"])
    return client.get(f"/v1/reports/{job['result']['report_id']}", headers=auth(key)).json()


def test_risk_with_and_without_a_sampling_fraction(client, owner):
    ds = upload(client, owner, _table(), "people.csv").json()
    qis = {"quasi_identifiers": ["age", "sex", "zip"]}

    plain = _report(client, owner, qis, ds["id"])
    assert set(plain["data"]) - {"tables"} == PROSECUTOR_KEYS   # no population block without a fraction
    assert set(plain["data"]["tables"]) == {"class_sizes"}

    sampled = _report(client, owner, {**qis, "sampling_fraction": 0.1}, ds["id"])
    data = sampled["data"]
    assert {k: data[k] for k in PROSECUTOR_KEYS} == {k: plain["data"][k] for k in PROSECUTOR_KEYS}
    pop = data["population"]
    assert pop["sampling_fraction"] == 0.1 and pop["population_size"] == 20_000
    assert pop["marketer"]["table_as_population"] == pytest.approx(data["average"])
    # a sample's marketer risk is the population's classes over its size: below the table's own
    assert 0 < pop["marketer"]["estimated"] < pop["marketer"]["table_as_population"]
    uniq = pop["uniqueness"]
    assert set(uniq) == {"zayatz", "pitman", "snb", "dankar"}
    for name in ("zayatz", "pitman", "snb"):
        est = uniq[name]
        # a number, or null with the reason: never both missing
        assert (est["share"] is None) == bool(est["reason"]), (name, est)
        if est["share"] is not None:
            assert 0 <= est["share"] <= 1
    # Zayatz's estimate is the sample uniques times P(F=1 | f=1): never above them
    assert uniq["zayatz"]["share"] <= data["sample_uniques_share"]
    chosen = uniq["dankar"]["model"]
    assert chosen in ("pitman", "zayatz")                  # π ≤ 0.1: Pitman, Zayatz as fallback
    assert uniq["dankar"]["share"] == uniq[chosen]["share"]
    assert set(data["tables"]) == {"class_sizes", "population_uniqueness", "k_map_estimate"}

    whole = _report(client, owner, {**qis, "sampling_fraction": 1}, ds["id"])["data"]["population"]
    for name in ("zayatz", "pitman", "snb", "dankar"):     # the table is the population
        assert whole["uniqueness"][name]["share"] == pytest.approx(data["sample_uniques_share"])
    assert whole["marketer"]["estimated"] == pytest.approx(data["average"])


@pytest.mark.parametrize("fraction", [0, -0.5, 1.5])
def test_a_sampling_fraction_outside_0_1_is_a_problem_naming_it(client, owner, fraction):
    ds = upload(client, owner, _table(), "people.csv").json()
    r = submit(client, owner, "risk", {"quasi_identifiers": ["age"], "sampling_fraction": fraction},
               dataset_id=ds["id"])
    assert_problem(r, 422, "sampling_fraction")


def test_population_size_is_the_same_reading_as_its_sampling_fraction(client, owner):
    """2,000 records of a population of 20,000 people: the figures of sampling_fraction 0.1."""
    ds = upload(client, owner, _table(), "people.csv").json()
    qis = {"quasi_identifiers": ["age", "sex", "zip"]}
    by_fraction = _report(client, owner, {**qis, "sampling_fraction": 0.1}, ds["id"])["data"]
    by_size = _report(client, owner, {**qis, "population_size": 20_000}, ds["id"])["data"]
    assert by_size["population"] == by_fraction["population"]
    # a population whose size does not divide evenly keeps the size given
    odd = _report(client, owner, {**qis, "population_size": 20_001}, ds["id"])["data"]["population"]
    assert odd["population_size"] == 20_001 and odd["sampling_fraction"] == pytest.approx(2000 / 20_001)


def test_population_size_below_the_records_or_beside_a_fraction_is_a_problem(client, owner):
    ds = upload(client, owner, _table(), "people.csv").json()
    before = client.get("/v1/jobs", headers=auth(owner)).json()
    r = submit(client, owner, "risk", {"quasi_identifiers": ["age"], "population_size": 1999},
               dataset_id=ds["id"])
    assert_problem(r, 422, "population_size")
    assert "2000" in r.text
    r = submit(client, owner, "risk", {"quasi_identifiers": ["age"], "population_size": 20_000,
                                       "sampling_fraction": 0.1}, dataset_id=ds["id"])
    assert_problem(r, 422, "sampling_fraction")
    assert "population_size" in r.text
    r = submit(client, owner, "risk", {"quasi_identifiers": ["age"], "significance": 0.05}, dataset_id=ds["id"])
    assert_problem(r, 422, "significance")
    assert "population_size" in r.text
    assert client.get("/v1/jobs", headers=auth(owner)).json() == before  # nothing queued
