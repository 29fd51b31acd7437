"""safepub through the API on a sample of Adult with its ARX hierarchies uploaded: the job is
debited the replace-one ε (2ε), the release states the add/remove (ε, δ) and the replace-one bound,
the download holds only the generalized quasi-identifiers in classes of at least k; bad parameters
are 422s naming the field, with no job and no debit."""

from __future__ import annotations

import io

import pandas as pd
import pytest

from app.privacy.anonymity.safepub_params import beta_of, smallest_k
from app.privacy.anonymity.safepub_search import score_threshold
from tests.support.api import assert_problem, auth, run_failing_job, run_to_release, submit, upload

QIS = ["age", "education", "race", "sex"]


@pytest.fixture(scope="module")
def adult(client, make_key, adult_path):
    headers = make_key("owner")
    raw = pd.read_csv(adult_path, na_values="?", skipinitialspace=True).dropna().reset_index(drop=True)
    raw = raw.sample(n=5000, random_state=4).reset_index(drop=True)[QIS + ["income"]]
    schema = {"age": {"bounds": [17, 90]}, "income": {"role": "label"}}
    ds = upload(client, headers, raw.to_csv(index=False).encode(), "adult5k.csv", schema=schema).json()
    for q in QIS:
        text = (adult_path.parent / "hierarchies" / f"{q}.csv").read_text()
        r = client.put(f"/v1/datasets/{ds['id']}/hierarchies/{q}", headers=auth(headers), content=text)
        assert r.status_code == 200, r.text
    return headers, ds


def test_a_safepub_job_debits_the_replace_one_epsilon_and_releases_classes_of_k(client, adult):
    headers, ds = adult
    client.put(f"/v1/datasets/{ds['id']}/budget", headers=auth(headers), json={"epsilon_total": 10.0})
    r = submit(client, headers, "safepub", {"epsilon": 2.0, "delta": 1e-5, "quasi_identifiers": QIS, "steps": 4},
               dataset_id=ds["id"])
    assert r.status_code == 202, r.text
    assert r.json()["epsilon"] == 4.0
    ledger = client.get(f"/v1/datasets/{ds['id']}/budget", headers=auth(headers)).json()
    assert ledger["epsilon_spent"] == 4.0
    job, rel = run_to_release(client, headers, r.json()["id"])
    rid = rel["id"]
    g, meta = rel["guarantees"], rel["metadata"]["safepub"]
    k = smallest_k(1e-5, meta["epsilon_split"]["anonymization"])
    assert meta["k"] == k == g["k"] and meta["k_arx"] == k + 1
    assert g["notion"] == "central_dp" and g["private"] is True and g["delta"] == 1e-5
    assert g["epsilon"] == pytest.approx(2.0, abs=1e-12) and g["replace_one"]["epsilon"] == 4.0
    assert "add/remove" in g["neighbouring"]
    body = client.get(f"/v1/releases/{rid}/data", headers=auth(headers), params={"format": "parquet"})
    frame = pd.read_parquet(io.BytesIO(body.content))
    assert list(frame.columns) == QIS and 0 < len(frame) < 5000  # income is not released
    assert frame.astype(str).groupby(QIS).size().min() >= k
    levels = meta["levels"]
    if levels["sex"] == 1:
        assert set(frame["sex"].astype(str)) == {"*"}
    assert meta["search"]["strategy"] == "walk" and meta["search"]["steps"] == 4


def test_by_default_the_job_draws_once_over_the_whole_lattice(client, adult):
    """A job's params are stored with every field: 'auto' must still see that no walk option
    was given (it chose the walk for every job through the API until steps defaulted to none)."""
    headers, ds = adult
    r = submit(client, headers, "safepub", {"epsilon": 2.0, "quasi_identifiers": QIS}, dataset_id=ds["id"])
    assert r.status_code == 202, r.text
    assert r.json()["params"]["steps"] is None and r.json()["params"]["search"] == "auto"
    _, rel = run_to_release(client, headers, r.json()["id"])
    search = rel["metadata"]["safepub"]["search"]
    assert search["strategy"] == "exhaustive" and search["draws"] == 1
    assert search["nodes_scored"] == search["lattice_size"] > 1


@pytest.mark.parametrize("params, fragment", [
    ({"epsilon": 1.0, "search_share": 1.0}, "search_share"),
    ({"epsilon": 1.0, "steps": 0}, "steps"),
    ({"epsilon": 1.0, "metric": "height"}, "metric"),
    ({"epsilon": 1.0, "label": "income"}, "label applies to metric 'classification' only"),
    ({"epsilon": 1.0, "metric": "classification", "label": "age"}, "label: column 'age' is a quasi-identifier"),
    ({"epsilon": 1.0, "metric": "classification", "label": "age", "quasi_identifiers": ["education", "race", "sex"]},
     "label: column 'age' is numeric"),
    ({"epsilon": 1.0, "metric": "classification", "label": "nope"}, "label: unknown column 'nope'"),
    ({"epsilon": 0}, "epsilon"),
    ({"epsilon": 1.0, "delta": 0.001}, "delta"),  # not below 1/n = 2·10⁻⁴
    ({"epsilon": 1.0, "quasi_identifiers": ["age", "nope"]}, "nope"),
    # k would pass 10⁷ (e^18·ln(1/δ)): refused at once — the check ran for hours before
    ({"epsilon": 20.0}, "ε_anon = 18: no k up to 10⁷ reaches delta"),
])
def test_bad_parameters_are_refused_naming_them_before_any_debit(client, adult, params, fragment):
    headers, ds = adult
    before = client.get(f"/v1/datasets/{ds['id']}/budget", headers=auth(headers)).json()["entry_count"]
    params = {"quasi_identifiers": QIS, **params}
    body = assert_problem(submit(client, headers, "safepub", params, dataset_id=ds["id"]), 422)
    assert fragment in str(body), body
    assert client.get(f"/v1/datasets/{ds['id']}/budget", headers=auth(headers)).json()["entry_count"] == before


@pytest.mark.parametrize("metric", ["entropy", "group_size", "classification"])
def test_each_new_metric_runs_through_the_api_with_its_sensitivity(client, adult, metric):
    """entropy and group_size release the quasi-identifiers; classification (its label the
    schema's role 'label', income) releases income too, classes over both, the same 2ε debited."""
    headers, ds = adult
    client.put(f"/v1/datasets/{ds['id']}/budget", headers=auth(headers), json={"epsilon_total": 100.0})
    r = submit(client, headers, "safepub", {"epsilon": 2.0, "quasi_identifiers": QIS, "metric": metric},
               dataset_id=ds["id"])
    assert r.status_code == 202, r.text
    assert r.json()["epsilon"] == 4.0
    _, rel = run_to_release(client, headers, r.json()["id"])
    meta, g = rel["metadata"]["safepub"], rel["guarantees"]
    k = meta["k"]
    k_score = score_threshold(k, beta_of(meta["epsilon_split"]["anonymization"]))
    assert meta["search"]["metric"] == metric and meta["search"]["score_threshold"] == k_score
    assert meta["search"]["sensitivity"] == {"entropy": k_score, "group_size": 1, "classification": k_score}[metric]
    body = client.get(f"/v1/releases/{rel['id']}/data", headers=auth(headers), params={"format": "parquet"})
    frame = pd.read_parquet(io.BytesIO(body.content)).astype(str)
    released = QIS + (["income"] if metric == "classification" else [])
    assert list(frame.columns) == released and len(frame) < 5000
    if len(frame) == 0:  # a draw can land where no sampled class reaches k (group_size favours
        # many classes near k_s: seen in a fresh run); the release says so, and is still private
        assert any("release is empty" in w for w in g["warnings"]), g["warnings"]
    else:
        assert frame.groupby(released).size().min() >= k
    if metric == "classification":
        assert meta["search"]["label"] == "income" and set(frame["income"]) <= {"<=50K", ">50K"}
        assert any("the label 'income' as is" in s for s in g["statements"])


def test_classification_without_a_label_is_refused_naming_it(client, make_key):
    headers = make_key("owner")
    frame = pd.DataFrame({"age": [20 + i % 60 for i in range(600)], "sex": ["a", "b"] * 300})
    ds = upload(client, headers, frame.to_csv(index=False).encode(), "t.csv",
                schema={"age": {"bounds": [17, 90], "role": "quasi_identifier"},
                        "sex": {"type": "categorical", "categories": ["a", "b"], "role": "quasi_identifier"}}).json()
    body = assert_problem(submit(client, headers, "safepub", {"epsilon": 1.0, "delta": 1e-4, "metric": "classification"},
                                 dataset_id=ds["id"]), 422)
    assert "label: metric 'classification'" in body["detail"] and "pass label" in body["detail"], body
    assert _budget_entries(client, headers, ds) == 0


def test_a_numeric_quasi_identifier_without_declared_bounds_is_refused(client, make_key):
    headers = make_key("owner")
    frame = pd.DataFrame({"age": list(range(20, 80)) * 10, "sex": ["a", "b"] * 300})
    ds = upload(client, headers, frame.to_csv(index=False).encode(), "t.csv",
                schema={"sex": {"type": "categorical", "categories": ["a", "b"]}}).json()
    body = assert_problem(submit(client, headers, "safepub", {"epsilon": 1.0, "delta": 1e-4,
                                                              "quasi_identifiers": ["age", "sex"]},
                                 dataset_id=ds["id"]), 422)
    assert "bounds" in str(body) and "age" in str(body)


def _budget_entries(client, headers, ds) -> int:
    return client.get(f"/v1/datasets/{ds['id']}/budget", headers=auth(headers)).json()["entry_count"]


def test_records_outside_the_declared_domain_are_dropped_and_the_job_succeeds(client, make_key):
    """Ages outside the declared bounds and missing ones failed the job (refunded): the failure
    published that such a record exists. They are dropped, record by record, and the release says so
    without a count."""
    headers = make_key("owner")
    # six ages of 500 records each: every class at every node holds ~400 sampled records ≫ k = 77,
    # so the release is never empty (with 60 ages of 50 it was, in ~1 % of runs)
    ages = [20 + (i % 6) * 10 for i in range(3000)] + [5, 120, None] * 10
    frame = pd.DataFrame({"age": ages, "sex": ["a", "b", "a"] * 1010})
    ds = upload(client, headers, frame.to_csv(index=False).encode(), "t.csv",
                schema={"age": {"bounds": [17, 90], "role": "quasi_identifier"},
                        "sex": {"type": "categorical", "categories": ["a", "b"], "role": "quasi_identifier"}}).json()
    r = submit(client, headers, "safepub", {"epsilon": 2.0, "delta": 1e-4}, dataset_id=ds["id"])
    assert r.status_code == 202, r.text
    _, rel = run_to_release(client, headers, r.json()["id"])
    meta, g = rel["metadata"]["safepub"], rel["guarantees"]
    body = client.get(f"/v1/releases/{rel['id']}/data", headers=auth(headers), params={"format": "parquet"})
    out = pd.read_parquet(io.BytesIO(body.content))
    assert list(out.columns) == ["age", "sex"] and 0 < len(out) < 3000
    assert out.astype(str).groupby(["age", "sex"]).size().min() >= meta["k"] == g["k"]
    assert meta["hierarchies"] == {"uploaded": [], "declared_categories": ["sex"], "automatic_intervals": ["age"]}
    assert "dropped before the search and the sampling" in meta["out_of_domain"]
    assert "not published" in meta["out_of_domain"] and meta["out_of_domain"] in g["statements"]
    assert not any("30" in w or "dropped" in w for w in g["warnings"])  # no count, no conditional warning
    if meta["levels"]["age"] == 0:
        assert set(out["age"].astype(str)) <= {str(a) for a in range(17, 91)}


def test_a_categorical_quasi_identifier_without_a_public_domain_is_refused_at_submission(client, make_key, adult_path):
    """Neither a hierarchy nor declared categories: a 422 naming the column before any debit (the
    job failed when it ran); once a hierarchy is uploaded the same request is accepted."""
    headers = make_key("owner")
    frame = pd.DataFrame({"age": [20 + i % 60 for i in range(600)], "race": ["White", "Black"] * 300})
    ds = upload(client, headers, frame.to_csv(index=False).encode(), "t.csv",
                schema={"age": {"bounds": [17, 90]}, "race": {"type": "categorical"}}).json()
    params = {"epsilon": 1.0, "delta": 1e-4, "quasi_identifiers": ["age", "race"]}
    body = assert_problem(submit(client, headers, "safepub", params, dataset_id=ds["id"]), 422)
    assert "'race' has neither an uploaded hierarchy nor declared categories" in body["detail"], body
    assert _budget_entries(client, headers, ds) == 0
    text = (adult_path.parent / "hierarchies" / "race.csv").read_text()
    assert client.put(f"/v1/datasets/{ds['id']}/hierarchies/race", headers=auth(headers), content=text).status_code == 200
    r = submit(client, headers, "safepub", params, dataset_id=ds["id"])
    assert r.status_code == 202, r.text


def test_a_tiny_delta_states_a_positive_delta_k_within_it(client, make_key):
    """δ = 1e-250 at ε_anon = 3: δ(k)'s tails pass scipy's underflow (~1e-249), and read as 0 they
    gave k = 13,838 with a stated δ(k) of 2.9e-282 — its true δ(k) is 1.4e-249, above the δ asked.
    In log space k = 13,893, δ(k) = 9.8e-251, through the stored release."""
    headers = make_key("owner")
    frame = pd.DataFrame({"sex": ["a", "b"] * 15_000})
    ds = upload(client, headers, frame.to_csv(index=False).encode(), "t.csv",
                schema={"sex": {"type": "categorical", "categories": ["a", "b"], "role": "quasi_identifier"}}).json()
    r = submit(client, headers, "safepub", {"epsilon": 6.0, "search_share": 0.5, "delta": 1e-250}, dataset_id=ds["id"])
    assert r.status_code == 202, r.text
    _, rel = run_to_release(client, headers, r.json()["id"])
    meta, g = rel["metadata"]["safepub"], rel["guarantees"]
    assert meta["epsilon_split"]["anonymization"] == 3.0
    assert meta["k"] == smallest_k(1e-250, 3.0) == 13_893
    assert 1e-251 < meta["delta_k"] <= 1e-250 == g["delta"]
    assert any(f"δ({meta['k']}) = {meta['delta_k']:.4g}" in s for s in g["statements"])


def _jobs_of(client, headers, ds) -> list:
    return client.get(f"/v1/jobs?dataset_id={ds['id']}", headers=auth(headers)).json()["items"]


def test_a_numeric_hierarchy_with_no_leaf_within_the_bounds_is_refused_at_submission(client, make_key):
    """Every leaf of age's hierarchy (20–79) lies outside the declared bounds [0, 10]: no record can
    be in the domain, a fact of the hierarchy and the schema alone. The job failed when it started
    (refunded); it is a 422 naming the column, the bounds and the leaves' span, with no job and no
    debit — and once the bounds cover a leaf the same request is accepted."""
    headers = make_key("owner")
    frame = pd.DataFrame({"age": [20 + i % 60 for i in range(600)], "sex": ["a", "b"] * 300})
    schema = {"age": {"bounds": [0, 10], "role": "quasi_identifier"},
              "sex": {"type": "categorical", "categories": ["a", "b"], "role": "quasi_identifier"}}
    ds = upload(client, headers, frame.to_csv(index=False).encode(), "t.csv", schema=schema).json()
    text = "".join(f"{a};{a // 10 * 10}-{a // 10 * 10 + 9};*\n" for a in range(20, 80))
    assert client.put(f"/v1/datasets/{ds['id']}/hierarchies/age", headers=auth(headers), content=text).status_code == 200
    params = {"epsilon": 1.0, "delta": 1e-4}
    body = assert_problem(submit(client, headers, "safepub", params, dataset_id=ds["id"]), 422,
                          "'age'", "[0, 10]", "leaves span [20, 79]")
    assert body["errors"][0]["loc"] == ["body", "params"], body
    assert _budget_entries(client, headers, ds) == 0 and _jobs_of(client, headers, ds) == []
    text += "5;0-9;*\n"  # one leaf inside the bounds: the domain is no longer empty
    assert client.put(f"/v1/datasets/{ds['id']}/hierarchies/age", headers=auth(headers), content=text).status_code == 200
    r = submit(client, headers, "safepub", params, dataset_id=ds["id"])
    assert r.status_code == 202, r.text


def test_bounds_wider_than_a_float_holds_are_refused_at_submission(client, make_key):
    """The schema took [-1e308, 1e308] (finite); safepub's costs and automatic intervals divide by
    its width, which overflows: the job failed when it started. The schema refuses such bounds
    now (data.declared_bounds_problem); one stored before that is a 422 at submission naming the
    column and the width (registry.declared_bounds, every method's), no job, no debit."""
    from tests.api.test_declared_bounds_api import _store_bounds

    headers = make_key("owner")
    frame = pd.DataFrame({"x": [float(i % 60) for i in range(600)], "sex": ["a", "b"] * 300})
    schema = {"x": {"bounds": [-1e308, 1e308], "role": "quasi_identifier"},
              "sex": {"type": "categorical", "categories": ["a", "b"], "role": "quasi_identifier"}}
    assert_problem(upload(client, headers, frame.to_csv(index=False).encode(), "t.csv", schema=schema), 422,
                   "x: Value error, bounds [-1e+308, 1e+308] have a width hi − lo that overflows a float64")
    schema["x"]["bounds"] = [0, 60]
    ds = upload(client, headers, frame.to_csv(index=False).encode(), "t.csv", schema=schema).json()
    _store_bounds(ds["id"], [-1e308, 1e308])
    assert_problem(submit(client, headers, "safepub", {"epsilon": 1.0, "delta": 1e-4}, dataset_id=ds["id"]), 422,
                   "column 'x': declared bounds [-1e+308, 1e+308] have a width hi − lo that overflows")
    assert _budget_entries(client, headers, ds) == 0 and _jobs_of(client, headers, ds) == []


@pytest.mark.parametrize("declared", [False, True])
def test_a_boolean_label_s_text_follows_its_type_and_an_inferred_type_is_warned_of(client, make_key, declared):
    """A label read as boolean at upload ('true'/'false' here) is released as 'True'/'False',
    whatever its spelling in the file: the text follows the column's type. When the upload inferred
    the type from the data (every cell of the column, released or not, boolean-like), the release
    says so as dp_statistics does; declared in the schema, the type is public and nothing is said."""
    headers = make_key("owner")
    # six ages of 500 records (sex and paid follow age): classes of ~400 sampled records ≫ k = 77 at
    # every node, so the release is never empty (60 ages of 50 emptied it in ~2.5 % of runs: CI, stop 33)
    frame = pd.DataFrame({"age": [20 + (i % 6) * 10 for i in range(3000)], "sex": ["a", "b", "a"] * 1000,
                          "paid": ["true", "false", "false"] * 1000})
    schema = {"age": {"bounds": [17, 90], "role": "quasi_identifier"},
              "sex": {"type": "categorical", "categories": ["a", "b"], "role": "quasi_identifier"},
              "paid": {"role": "label", **({"type": "boolean"} if declared else {})}}
    ds = upload(client, headers, frame.to_csv(index=False).encode(), "t.csv", schema=schema).json()
    assert {c["name"]: c["type"] for c in ds["columns"]}["paid"] == "boolean"
    r = submit(client, headers, "safepub", {"epsilon": 2.0, "delta": 1e-4, "metric": "classification"},
               dataset_id=ds["id"])
    assert r.status_code == 202, r.text
    _, rel = run_to_release(client, headers, r.json()["id"])
    warned = [w for w in rel["guarantees"]["warnings"] if "paid (boolean)" in w]
    assert len(warned) == (0 if declared else 1), rel["guarantees"]["warnings"]
    if warned:
        assert "inferred from the data at upload" in warned[0] and "a two-level domain" in warned[0]
    body = client.get(f"/v1/releases/{rel['id']}/data", headers=auth(headers), params={"format": "parquet"})
    out = pd.read_parquet(io.BytesIO(body.content))
    assert list(out.columns) == ["age", "sex", "paid"] and set(out["paid"].astype(str)) <= {"True", "False"}
    assert len(out) > 0


def test_a_numeric_hierarchy_put_outside_the_bounds_after_submission_fails_safepub_refunded(client, make_key):
    """safepub submitted without age's hierarchy (automatic intervals over [0, 10]) is accepted;
    a hierarchy whose every leaf (20–79) lies outside the bounds, uploaded while the job is queued,
    fails the run in the words of the submission's 422, and the ε goes back."""
    headers = make_key("owner")
    frame = pd.DataFrame({"age": [20 + i % 60 for i in range(600)], "sex": ["a", "b"] * 300})
    schema = {"age": {"bounds": [0, 10], "role": "quasi_identifier"},
              "sex": {"type": "categorical", "categories": ["a", "b"], "role": "quasi_identifier"}}
    ds = upload(client, headers, frame.to_csv(index=False).encode(), "t.csv", schema=schema).json()
    r = submit(client, headers, "safepub", {"epsilon": 1.0, "delta": 1e-4}, dataset_id=ds["id"])
    assert r.status_code == 202, r.text
    text = "".join(f"{a};{a // 10 * 10}-{a // 10 * 10 + 9};*\n" for a in range(20, 80))
    assert client.put(f"/v1/datasets/{ds['id']}/hierarchies/age", headers=auth(headers), content=text).status_code == 200
    job, failed = run_failing_job(client, headers, r.json()["id"])
    for words in ("'age'", "[0, 10]", "leaves span [20, 79]"):
        assert words in job["error"]["message"], job["error"]
    assert job["epsilon"] > 0 and job["epsilon_refunded"]
    assert failed == [{"error": "invalid_input", "attempt": 1, "refunded_epsilon": job["epsilon"]}]
