"""Each method family through the HTTP API with real workers, checked independently on what
a user downloads: the randomization rate, k on the release, ε shares, the model's accuracy,
frequent itemsets against the raw data, and a report's plots."""

from __future__ import annotations

import io
import itertools

import numpy as np
import pandas as pd
import pytest

from tests.conftest import DATASETS
from tests.support.api import auth, submit, upload, wait_job

ADULT_QIS = ["age", "education", "marital-status", "occupation", "race", "sex", "workclass", "native-country"]


def run(client, headers, method, params, **source) -> dict:
    r = submit(client, headers, method, params, **source)
    assert r.status_code == 202, r.text
    job = wait_job(client, headers, r.json()["id"], timeout=240)
    assert job["status"] == "succeeded", (job["status"], job["error"])
    return job


def release_frame(client, headers, job) -> tuple[dict, pd.DataFrame]:
    rid = job["result"]["release_ids"][0]
    rel = client.get(f"/v1/releases/{rid}", headers=auth(headers)).json()
    data = client.get(f"/v1/releases/{rid}/data", headers=auth(headers), params={"format": "parquet"})
    return rel, pd.read_parquet(io.BytesIO(data.content))


@pytest.fixture(scope="module")
def owner_adult(client, make_key, workers, adult_path):
    headers = make_key("owner")
    schema = {"income": {"role": "label"},
              "age": {"bounds": [17, 90]}, "fnlwgt": {"bounds": [10000, 1500000]},
              "education-num": {"bounds": [1, 16]}, "capital-gain": {"bounds": [0, 100000]},
              "capital-loss": {"bounds": [0, 5000]}, "hours-per-week": {"bounds": [1, 99]}}
    ds = upload(client, headers, adult_path, "adult_train.csv", schema=schema).json()
    return headers, ds


def test_randomized_response_chain_reconstruct_and_ppnb(client, owner_adult, adult_path):
    headers, ds = owner_adult
    errph = run(client, headers, "errph", {"p0": 0.5}, dataset_id=ds["id"])
    trr = run(client, headers, "trr", {}, release_id=errph["result"]["release_ids"][0])
    rel, frame = release_frame(client, headers, trr)
    assert [s["method"] for s in rel["chain"]] == ["errph"] and rel["method"] == "trr"
    assert rel["guarantees"]["statements"][-1].startswith(
        f"this step ran on release {errph['result']['release_ids'][0]} (errph), not on the dataset")
    errph_release = client.get(f"/v1/releases/{errph['result']['release_ids'][0]}", headers=auth(headers)).json()
    [earlier] = rel["guarantees"]["chain_guarantees"]  # what the errph columns keep, at the top level
    assert earlier["method"] == "errph" and earlier["notion"] == "local_dp"
    assert earlier["epsilon"] == errph_release["guarantees"]["epsilon"] > 0
    assert earlier["protected_columns"] == errph_release["guarantees"]["protected_columns"]
    assert rel["guarantees"]["notion"] == "none" and rel["guarantees"]["private"] is False
    raw = pd.read_csv(adult_path, na_values=["?"])
    assert (frame["income"].astype(str) == raw["income"]).all()  # the label is untouched
    assert not np.allclose(frame["age"].to_numpy(float), raw["age"].to_numpy(float))
    rec = run(client, headers, "reconstruct", {}, release_id=rel["id"])
    report = client.get(f"/v1/reports/{rec['result']['report_id']}", headers=auth(headers)).json()
    assert [s["method"] for s in report["data"]["steps"]] == ["errph", "trr"]
    model_job = run(client, headers, "ppnb_train", {"label": "income"}, release_id=rel["id"])
    model_id = model_job["result"]["model_id"]
    model = client.get(f"/v1/models/{model_id}", headers=auth(headers))
    assert model.status_code == 200
    test = pd.read_csv(DATASETS / "adult" / "adult_test.csv", na_values=["?"])
    records = test.drop(columns=["income"]).head(2000)
    records = records.astype(object).where(records.notna(), None).to_dict("records")
    pred = client.post(f"/v1/models/{model_id}/predict", headers=auth(headers), json={"records": records})
    assert pred.status_code == 200, pred.text
    body = pred.json()
    truth = test["income"].head(2000).str.rstrip(".")
    accuracy = (np.array(body["predictions"]) == truth.to_numpy()).mean()
    # above always answering the majority class (0.76 of these records; 0.75 was below it) by 3
    # points: in 1,000 library runs of this chain the accuracy was 0.823 ± 0.0037 (min 0.81), 9 sd
    majority = truth.value_counts(normalize=True).max()
    assert accuracy > majority + 0.03, (accuracy, majority)
    assert np.allclose(np.sum(body["probabilities"], axis=1), 1.0)


def test_kanonymity_release_is_k_anonymous_on_download(client, owner_adult, adult_path):
    headers, ds = owner_adult
    for qi in ADULT_QIS:
        text = (adult_path.parent / "hierarchies" / f"{qi}.csv").read_text()
        r = client.put(f"/v1/datasets/{ds['id']}/hierarchies/{qi}", headers=auth(headers), content=text)
        assert r.status_code == 200, r.text
    job = run(client, headers, "kanonymity", {"k": 10, "algorithm": "mondrian", "quasi_identifiers": ADULT_QIS},
              dataset_id=ds["id"])
    rel, frame = release_frame(client, headers, job)
    sizes = frame.groupby([frame[c].astype(str) for c in ADULT_QIS]).size()
    assert sizes.min() >= 10
    assert rel["guarantees"]["notion"] == "k_anonymity"
    assert "ncp" in str(rel["metrics"]).lower()


def test_icahdp_strict_debits_the_budget_and_lists_shares(client, owner_adult):
    headers, ds = owner_adult
    client.put(f"/v1/datasets/{ds['id']}/budget", headers=auth(headers), json={"epsilon_total": 1000})
    numeric = ["age", "fnlwgt", "education-num", "capital-gain", "capital-loss", "hours-per-week"]
    job = run(client, headers, "icahdp", {"epsilon": 1.0, "columns": numeric}, dataset_id=ds["id"])
    assert job["epsilon"] == pytest.approx(1.0)
    rel, frame = release_frame(client, headers, job)
    g = rel["guarantees"]
    assert g["notion"] == "central_dp" and g["epsilon"] == pytest.approx(1.0)
    shares = g["epsilon_split"]
    assert shares and sum(v for v in _numbers(shares)) == pytest.approx(1.0)
    assert frame["age"].between(17, 90).all() and frame["hours-per-week"].between(1, 99).all()
    ledger = client.get(f"/v1/datasets/{ds['id']}/budget", headers=auth(headers)).json()
    assert job["id"] in [e["job_id"] for e in ledger["entries"]]


def _numbers(shares):
    if isinstance(shares, dict):
        values = shares.values()
    else:
        values = [s.get("epsilon") if isinstance(s, dict) else s for s in shares]
    return [float(v) for v in values if isinstance(v, (int, float))]


def test_mask_on_mushroom_and_frequent_itemsets(client, make_key, workers):
    headers = make_key("owner")
    path = DATASETS / "itemsets" / "mushroom.dat"
    ds = upload(client, headers, path, "mushroom.dat").json()
    assert ds["shape"] == "transactions" and ds["rows"] == 8124
    job = run(client, headers, "mask", {"p": 0.9}, dataset_id=ds["id"])
    rid = job["result"]["release_ids"][0]
    csv = client.get(f"/v1/releases/{rid}/data", headers=auth(headers), params={"format": "csv"})
    released = [set(str(x).split()) if isinstance(x, str) else set()
                for x in pd.read_csv(io.BytesIO(csv.content))["items"]]
    raw = [set(line.split()) for line in path.read_text().splitlines()]
    items = sorted(set().union(*raw), key=int)
    flips = sum(len(a ^ b) for a, b in zip(raw, released))
    assert abs(flips / (len(raw) * len(items)) - 0.1) < 0.005
    mined = run(client, headers, "frequent_itemsets", {"minsup": 0.4, "max_len": 3}, release_id=rid)
    report = client.get(f"/v1/reports/{mined['result']['report_id']}", headers=auth(headers)).json()
    found = {frozenset(map(str, row["items"])) for row in report["data"]["itemsets"]}
    truth = _frequent(raw, 0.4, 3)
    recall = len(found & truth) / len(truth)
    precision = len(found & truth) / max(len(found), 1)
    # 13,000 library runs: both 0.98 ± 0.015, the lower of the two below 0.93 in 129, below 0.92
    # in 29, below 0.91 in 2, never below 0.90 (each 0.01 lower ≥ 3× rarer: < 1e-8 at 0.8).
    # Mining the release as if it were raw finds half the itemsets (recall 0.5).
    assert recall >= 0.8 and precision >= 0.8, (recall, precision)


def _frequent(transactions, minsup, max_len):
    items = sorted(set().union(*transactions))
    matrix = pd.DataFrame([[i in t for i in items] for t in transactions], columns=items).to_numpy()
    out, level = set(), [(i,) for i in range(len(items)) if matrix[:, i].mean() >= minsup]
    while level:
        out |= {frozenset(items[i] for i in c) for c in level}
        if len(level[0]) == max_len:
            break
        nxt = set()
        for a, b in itertools.combinations(level, 2):
            cand = tuple(sorted(set(a) | set(b)))
            if len(cand) == len(a) + 1 and matrix[:, list(cand)].all(axis=1).mean() >= minsup:
                nxt.add(cand)
        level = sorted(nxt)
    return out


def test_rfka_projection_is_k_anonymous(client, make_key, workers):
    headers = make_key("owner")
    ds = upload(client, headers, DATASETS / "breast_cancer" / "breast_cancer_wisconsin.csv", "bc.csv").json()
    label = [c["name"] for c in ds["columns"]][-1]
    job = run(client, headers, "rfka", {"label": label, "k": 5}, dataset_id=ds["id"])
    rel, frame = release_frame(client, headers, job)
    features = [c for c in frame.columns if c != label]
    assert features, rel["metadata"]
    sizes = frame.groupby(features).size()
    assert sizes.min() >= 5 or len(rel["guarantees"].get("warnings", [])) > 0


def test_a_dp_release_names_the_schema_facts_it_read_from_the_data(client, make_key, workers):
    """Whether a numeric column is integer (its bins and output grid follow it) and a boolean
    type were inferred at upload and used silently: two tables one record apart (an age of 30.5)
    gave integer and non-integer releases, both 'private' with no warning. Now the schema says
    which facts were inferred, and a DP release that relies on one names it until it is declared."""
    headers = make_key("owner")
    rows = "\n".join(f"{20 + i % 50},{(i % 97) / 97:.4f},{'true' if i % 3 else 'false'}" for i in range(200))
    ds = upload(client, headers, f"age,score,flag\n{rows}\n".encode(), "facts.csv",
                schema={"age": {"bounds": [0, 100]}, "score": {"bounds": [0, 1]}}).json()
    inferred = {c["name"]: c["inferred"] for c in ds["columns"]}
    assert inferred == {"age": ["integer"], "score": ["integer"], "flag": ["type"]}
    params = {"epsilon": 1, "delta": 1e-9, "k": 2}
    rel, frame = release_frame(client, headers, run(client, headers, "dppro", params, dataset_id=ds["id"]))
    warnings = rel["guarantees"]["warnings"]
    assert len(warnings) == 1 and "age (integer), score (not integer), flag (boolean)" in warnings[0]
    assert pd.api.types.is_integer_dtype(frame["age"]) and rel["guarantees"]["private"] is True
    put = client.put(f"/v1/datasets/{ds['id']}/schema", headers=auth(headers),
                     json={"age": {"integer": True}, "score": {"integer": False}, "flag": {"type": "boolean"}})
    assert put.status_code == 200, put.text
    assert all(c["inferred"] == [] for c in put.json()["columns"])
    rel, frame = release_frame(client, headers, run(client, headers, "dppro", params, dataset_id=ds["id"]))
    assert rel["guarantees"]["warnings"] == [] and pd.api.types.is_integer_dtype(frame["age"])


def test_kanonymity_entropy_l_and_beta_likeness_hold_on_download(client, owner_adult, adult_path):
    """Entropy l-diversity with enhanced β-likeness on occupation, through the API: checked on the
    downloaded table by the definitions (class entropy ≥ ln l; every value's relative gain ≤
    min(β, −ln q) with q the input's share), and the guarantee names both figures."""
    headers, ds = owner_adult
    qis = ["age", "education", "marital-status", "race", "sex"]
    params = {"k": 5, "quasi_identifiers": qis, "sensitive": "occupation", "l": 3,
              "l_diversity": "entropy", "beta": 1.5}
    job = run(client, headers, "kanonymity", params, dataset_id=ds["id"])
    rel, frame = release_frame(client, headers, job)
    raw = pd.read_csv(adult_path, na_values=["?"])
    occupation = raw["occupation"].fillna("<missing>")
    q = occupation.value_counts(normalize=True)
    released = frame["occupation"].astype(object).where(frame["occupation"].notna(), "<missing>")
    shares = pd.crosstab([frame[c].astype(str) for c in qis], released, normalize="index")
    shares = shares.reindex(columns=q.index, fill_value=0.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        entropy = -(shares * np.log(shares)).fillna(0.0).sum(axis=1)
    assert entropy.min() >= np.log(3) - 1e-12
    gain = shares / q - 1.0
    assert (gain <= np.minimum(1.5, -np.log(q)) + 1e-12).all().all()
    g = rel["guarantees"]
    assert g["l_diversity"] == "entropy" and g["entropy_l"] == pytest.approx(np.exp(entropy.min()))
    assert g["beta_likeness"] == "enhanced" and g["beta"] == pytest.approx(gain.max().max())
    assert g["beta_requested"] == 1.5 and g["beta"] <= 1.5


@pytest.mark.parametrize("params,named", [
    ({"l_diversity": "entropy"}, "l_diversity = 'entropy' reads l, and l is not given"),
    ({"l": 2, "l_diversity": "recursive"}, "l_diversity = 'recursive' needs c"),
    ({"l": 2, "c": 3}, "c is recursive (c,l)-diversity's"),
    ({"beta_likeness": "basic"}, "beta_likeness chooses how beta is read"),
    ({"beta": 0}, "beta"),
    ({"delta_disclosure": -1}, "delta_disclosure"),
])
def test_kanonymity_refuses_a_model_half_given(client, owner_adult, params, named):
    headers, ds = owner_adult
    r = submit(client, headers, "kanonymity", {"k": 5, "sensitive": "occupation", **params}, dataset_id=ds["id"])
    assert r.status_code == 422, r.text
    assert r.headers["content-type"].startswith("application/problem+json")
    assert named in r.text


def test_kanonymity_hierarchical_t_closeness_holds_on_download(client, owner_adult, adult_path):
    """t-closeness by the occupation hierarchy's distance on all 32,561 rows (1,843 have no
    occupation: the leaf '<missing>', under the root), checked on the download by the transport
    problem itself; without t, or on a numeric column, the distance is refused at submission."""
    from scipy.optimize import linprog

    headers, ds = owner_adult
    text = (adult_path.parent / "hierarchies" / "occupation.csv").read_text()
    r = client.put(f"/v1/datasets/{ds['id']}/hierarchies/occupation", headers=auth(headers), content=text)
    assert r.status_code == 200, r.text
    qis = ["age", "education", "marital-status", "race", "sex"]
    job = run(client, headers, "kanonymity", {"k": 5, "quasi_identifiers": qis, "sensitive": "occupation",
                                              "t": 0.2, "t_distance": "hierarchical"}, dataset_id=ds["id"])
    rel, frame = release_frame(client, headers, job)
    assert "hierarchical" in rel["guarantees"]["t_distance"]
    group = {line.split(";")[0]: line.split(";")[1] for line in text.splitlines() if line}
    leaves = sorted(group) + ["<missing>"]
    parent = [group.get(v, "<missing>") for v in leaves]
    ground = np.array([[0.0 if a == b else 0.5 if pa == pb else 1.0 for b, pb in zip(leaves, parent)]
                       for a, pa in zip(leaves, parent)])
    raw = pd.read_csv(adult_path, na_values=["?"])["occupation"].fillna("<missing>")
    q = raw.value_counts(normalize=True).reindex(leaves, fill_value=0.0).to_numpy()
    released = frame["occupation"].astype(object).where(frame["occupation"].notna(), "<missing>")
    shares = pd.crosstab([frame[c].astype(str) for c in qis], released, normalize="index")
    shares = shares.reindex(columns=leaves, fill_value=0.0).to_numpy()
    m = len(leaves)
    a_eq = np.vstack([np.kron(np.eye(m), np.ones(m)), np.kron(np.ones(m), np.eye(m))])
    distances = [linprog(ground.ravel(), A_eq=a_eq, b_eq=np.r_[p, q], bounds=(0, None), method="highs").fun
                 for p in shares]
    assert max(distances) <= 0.2 + 1e-9
    assert rel["guarantees"]["t"] == pytest.approx(max(distances), abs=1e-9)
    for params, named in [({"t_distance": "hierarchical"}, "t_distance chooses t-closeness's distance"),
                          ({"t": 0.2, "t_distance": "hierarchical", "sensitive": "hours-per-week"},
                           "'hours-per-week' is numeric")]:
        r = submit(client, headers, "kanonymity", {"k": 5, "quasi_identifiers": qis, "sensitive": "occupation",
                                                   **params}, dataset_id=ds["id"])
        assert r.status_code == 422 and named in r.text, r.text


def test_kanonymity_hierarchical_t_without_the_hierarchy_fails_naming_the_upload(client, make_key, workers,
                                                                                  adult_path):
    headers = make_key("owner")
    ds = upload(client, headers, adult_path, "adult_train.csv", schema={"income": {"role": "label"}}).json()
    r = submit(client, headers, "kanonymity", {"k": 5, "quasi_identifiers": ["sex", "race"], "sensitive": "workclass",
                                               "t": 0.3, "t_distance": "hierarchical"}, dataset_id=ds["id"])
    assert r.status_code == 202, r.text
    job = wait_job(client, headers, r.json()["id"], timeout=120)
    assert job["status"] == "failed" and job["error"]["type"] == "invalid_input", job
    assert "reads the hierarchy of the sensitive column 'workclass'" in job["error"]["message"]
    assert "PUT /v1/datasets/{id}/hierarchies/workclass" in job["error"]["message"]


def test_kanonymity_with_two_sensitive_columns(client, owner_adult, adult_path):
    """sensitive as a list: every model holds on each column, checked on the download; the
    guarantee names the columns and the metadata gives each one's figures."""
    headers, ds = owner_adult
    qis = ["age", "education", "marital-status", "race", "sex"]
    job = run(client, headers, "kanonymity", {"k": 5, "quasi_identifiers": qis, "sensitive": ["occupation", "workclass"],
                                              "alpha": 0.8}, dataset_id=ds["id"])
    rel, frame = release_frame(client, headers, job)
    for column in ("occupation", "workclass"):
        values = frame[column].astype(object).where(frame[column].notna(), "<missing>")
        top = pd.crosstab([frame[c].astype(str) for c in qis], values, normalize="index").max(axis=1)
        assert top.max() <= 0.8 + 1e-12, column
        assert rel["metadata"]["sensitive_achieved"][column]["alpha"] == pytest.approx(top.max())
    assert any("hold on each sensitive column: occupation, workclass" in s for s in rel["guarantees"]["statements"])
    for bad, named in [(["occupation", "occupation"], "repeat"), ([], "empty list"),
                       (["occupation", "age"], "cannot be both sensitive and a quasi-identifier"),
                       ([f"c{i}" for i in range(9)], "9 sensitive columns; at most 8")]:
        r = submit(client, headers, "kanonymity", {"k": 5, "quasi_identifiers": qis, "sensitive": bad, "alpha": 0.8},
                   dataset_id=ds["id"])
        assert r.status_code == 422 and named in r.text, r.text


def _per_class_counts(frame: pd.DataFrame, raw: pd.Series, qis: list[str], column: str):
    """Each released class's counts of a sensitive column over the input table's domain, and the
    input table's shares (a missing cell is the value '<missing>')."""
    keys = lambda v: v.astype(object).where(v.notna(), "<missing>").astype(str)  # noqa: E731
    q = keys(raw).value_counts(normalize=True).sort_index()
    counts = pd.crosstab([frame[c].astype(str) for c in qis], keys(frame[column]))
    return counts.reindex(columns=q.index, fill_value=0).to_numpy().tolist(), q.tolist()


@pytest.mark.parametrize("algorithm", ["mondrian", "lattice"])
def test_kanonymity_with_models_of_each_column_s_own(client, owner_adult, adult_path, algorithm):
    """sensitive_models as ARX configures criteria: Mondrian with recursive (c,l)-diversity on
    occupation and t-closeness on hours-per-week; the lattice with enhanced β on occupation,
    δ-disclosure on relationship and the job's α on workclass. Each model is checked on its own
    column of the download by its definition, against the input table's distribution."""
    from tests.privacy.test_anonymity_more_models import beta_holds, disclosure, recursive_holds
    from tests.privacy.test_anonymity_support import ordered_emd

    headers, ds = owner_adult
    qis = ["age", "education", "marital-status", "race", "sex"]
    if algorithm == "mondrian":
        params = {"sensitive_models": {"occupation": {"l": 3, "l_diversity": "recursive", "c": 4},
                                       "hours-per-week": {"t": 0.2}}}
    else:
        params = {"algorithm": "lattice", "suppression": 0.04, "sensitive": "workclass", "alpha": 0.9,
                  "sensitive_models": {"occupation": {"beta": 3}, "relationship": {"delta_disclosure": 3}}}
    job = run(client, headers, "kanonymity", {"k": 10, "quasi_identifiers": qis, **params}, dataset_id=ds["id"])
    rel, frame = release_frame(client, headers, job)
    raw = pd.read_csv(adult_path, na_values=["?"], skipinitialspace=True)
    assert frame.groupby([frame[c].astype(str) for c in qis]).size().min() >= 10
    achieved, own = rel["metadata"]["sensitive_achieved"], rel["guarantees"]["sensitive_models"]
    statements = rel["guarantees"]["statements"]
    occupation, q = _per_class_counts(frame, raw["occupation"], qis, "occupation")
    if algorithm == "mondrian":
        assert rel["metadata"]["sensitive"] == ["occupation", "hours-per-week"]
        assert all(recursive_holds(r, 4, 3) for r in occupation)
        largest = max(sorted(r, reverse=True)[0] / sum(sorted(r, reverse=True)[2:]) for r in occupation)
        assert achieved["occupation"]["recursive_c"] == pytest.approx(largest) and largest < 4
        hours = raw["hours-per-week"].to_numpy(dtype=float)
        distances = [ordered_emd(v.to_numpy(dtype=float), hours)
                     for _, v in frame.groupby([frame[c].astype(str) for c in qis])["hours-per-week"]]
        assert max(distances) <= 0.2 + 1e-9
        assert achieved["hours-per-week"]["t"] == pytest.approx(max(distances), abs=1e-9)
        assert own["hours-per-week"]["t"] == pytest.approx(max(distances), abs=1e-9)
        assert "ordered" in own["hours-per-week"]["t_distance"] and "t" not in own["occupation"]
        assert own["occupation"]["models"] == "l=3 (recursive, c=4)" and own["occupation"]["c_requested"] == 4
        assert any(s.startswith("on occupation (its own models, sensitive_models): recursive (c,l)-diversity "
                                "with l = 3") for s in statements), statements
        assert any(s.startswith("on hours-per-week (its own models, sensitive_models): t-closeness") for s in statements)
        # the job's own set is empty: no figure at the top
        assert rel["guarantees"]["l"] is None and rel["guarantees"]["t"] is None
    else:
        assert rel["metadata"]["lattice"]["optimal"]
        assert rel["metadata"]["sensitive"] == ["workclass", "occupation", "relationship"]
        assert all(beta_holds(r, q, 3.0, True) for r in occupation)
        gain = max(max(x / sum(r) / qs - 1 for x, qs in zip(r, q)) for r in occupation)
        assert own["occupation"]["beta"] == pytest.approx(gain) and own["occupation"]["beta_likeness"] == "enhanced"
        relationship, q = _per_class_counts(frame, raw["relationship"], qis, "relationship")
        worst = max(disclosure(r, q) for r in relationship)
        assert worst < 3 and own["relationship"]["delta_disclosure"] == pytest.approx(worst)
        workclass, _ = _per_class_counts(frame, raw["workclass"], qis, "workclass")
        top = max(max(r) / sum(r) for r in workclass)
        assert top <= 0.9 and rel["guarantees"]["alpha"] == pytest.approx(top)
        assert set(own) == {"occupation", "relationship"} and "alpha" not in own["occupation"]
        assert any(s.startswith("the models above hold on workclass (the sensitive columns without models of "
                                "their own") for s in statements), statements


def test_kanonymity_refuses_bad_models_of_a_column_naming_it(client, owner_adult):
    headers, ds = owner_adult
    qis = ["age", "education", "sex"]
    for params, named in [
        ({"sensitive_models": {"occupation": {}}}, "sensitive_models['occupation'] sets no model"),
        ({"sensitive_models": {"occupation": {"l": 20}}}, "sensitive_models['occupation']: l cannot exceed k"),
        ({"sensitive_models": {"occupation": {"l": 3, "l_diversity": "recursive"}}},
         "sensitive_models['occupation']: l_diversity = 'recursive' needs c"),
        ({"sensitive_models": {"occupation": {"beta_likeness": "basic", "alpha": 0.5}}},
         "sensitive_models['occupation']: beta_likeness chooses how beta is read"),
        ({"sensitive_models": {"hours-per-week": {"t": 0.2, "t_distance": "hierarchical"}}},
         "sensitive_models['hours-per-week']: t_distance 'hierarchical' needs a categorical sensitive column"),
        ({"sensitive_models": {"nope": {"l": 2}}}, "sensitive_models: unknown sensitive column 'nope'"),
        ({"sensitive_models": {"age": {"l": 2}}},
         "sensitive_models: column 'age' cannot be both sensitive and a quasi-identifier"),
        ({"sensitive_models": {"occupation": {"l": 1}}}, "occupation"),  # a bound: the path names it
        ({"sensitive_models": {"occupation": {"l": 2, "colour": 1}}}, "occupation"),
        ({"sensitive": "occupation", "l": 2, "sensitive_models": {"occupation": {"alpha": 0.5}}},
         "the job's models (l=2 (distinct)) hold on the sensitive columns without an entry in sensitive_models"),
        ({"sensitive": ["workclass", "relationship", "race", "native-country", "income"],
          "sensitive_models": {c: {"l": 2} for c in ["occupation", "marital-status", "capital-gain", "fnlwgt"]}},
         "9 sensitive columns (sensitive and sensitive_models together); at most 8"),
    ]:
        r = submit(client, headers, "kanonymity", {"k": 10, "quasi_identifiers": qis, **params}, dataset_id=ds["id"])
        assert r.status_code == 422 and named in r.text, (params, r.text)


def test_kanonymity_reads_every_declared_sensitive_column(client, make_key, workers, adult_path):
    headers = make_key("owner")
    schema = {"income": {"role": "label"}, "occupation": {"role": "sensitive"}, "workclass": {"role": "sensitive"}}
    ds = upload(client, headers, adult_path, "adult_train.csv", schema=schema).json()
    qis = ["age", "education", "sex"]
    job = run(client, headers, "kanonymity", {"k": 5, "quasi_identifiers": qis, "l": 3}, dataset_id=ds["id"])
    rel, frame = release_frame(client, headers, job)
    assert rel["metadata"]["sensitive"] == ["workclass", "occupation"]  # in the table's column order
    assert set(rel["metadata"]["sensitive_achieved"]) == {"occupation", "workclass"}
    for column in ("occupation", "workclass"):
        values = frame[column].astype(object).where(frame[column].notna(), "<missing>")
        assert values.groupby([frame[c].astype(str) for c in qis]).nunique().min() >= 3, column
