"""POST /v1/models/{id}/predict with records the model cannot read (the API audit)."""

from __future__ import annotations

import pickle
import uuid

import numpy as np
import pandas as pd
import pytest
from sqlalchemy import text

from app.db import transaction
from app.models import service as models
from app.privacy.naive_bayes import PPNBClassifier
from tests.support.api import assert_problem, auth, submit, upload


@pytest.fixture(scope="module")
def ppnb_model(client, make_key):
    """A PPNB model stored as the worker stores one (no worker needed): one numeric feature
    (Gaussian) and one categorical, trained on an unrandomized table."""
    headers = make_key("owner")
    ds = upload(client, headers, b"a,b\n1,x\n2,y\n", "m.csv").json()
    job = submit(client, headers, "risk", {"quasi_identifiers": ["a"]}, dataset_id=ds["id"]).json()
    rng = np.random.default_rng(0)
    frame = pd.DataFrame({"age": np.r_[rng.normal(30, 5, 200), rng.normal(60, 5, 200)],
                          "colour": ["red"] * 150 + ["blue"] * 250})
    label = np.array(["young"] * 200 + ["old"] * 200)
    model = PPNBClassifier().fit(frame, label)
    metadata = {"kind": "ppnb", "label": "group", "features": ["age", "colour"],
                "classes_": [str(c) for c in model.classes_],
                "feature_kinds": {f["name"]: f["kind"] for f in model.features_}}
    with transaction() as s:
        tenant = s.execute(text("SELECT tenant FROM jobs WHERE id = :j"), {"j": job["id"]}).scalar_one()
        model_id = models.store(s, job={"id": uuid.UUID(job["id"]), "tenant": tenant, "method": "ppnb_train",
                                         "dataset_id": uuid.UUID(ds["id"]), "release_id": None},
                                encoded={"model": pickle.dumps(model), "metadata": metadata, "metrics": {}})
    return headers, f"/v1/models/{model_id}/predict"


def test_predict_scores_good_records_and_treats_null_as_missing(client, ppnb_model):
    headers, url = ppnb_model
    r = client.post(url, headers=auth(headers), json={"records": [
        {"age": 25, "colour": "red"}, {"age": "62", "colour": "blue"}, {"age": None, "colour": "blue"}]})
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["predictions"][:2] == ["young", "old"]
    assert np.allclose(np.sum(body["probabilities"], axis=1), 1.0)
    assert body["unreadable"] == {"age": [2]}  # the null age left out of record 2's score


def test_a_value_the_model_cannot_read_is_named_not_silently_skipped(client, ppnb_model):
    """A category outside the published domain was left out of the record's score with no sign
    in the answer (#3 acceptance check)."""
    headers, url = ppnb_model
    body = client.post(url, headers=auth(headers), json={"records": [
        {"age": 25, "colour": "red"}, {"age": 40, "colour": "green"}, {"age": None, "colour": True}]}).json()
    assert body["unreadable"] == {"age": [2], "colour": [1, 2]}
    assert len(body["predictions"]) == 3


@pytest.mark.parametrize("age", ["old", [1, 2], {"a": 1}, "12 years"])
def test_a_numeric_feature_that_is_not_a_number_is_named(client, ppnb_model, age):
    """Text in a numeric feature was scored silently as if missing (the prediction ignored it)."""
    headers, url = ppnb_model
    r = client.post(url, headers=auth(headers), json={"records": [{"age": 30, "colour": "red"},
                                                                  {"age": age, "colour": "red"}]})
    body = assert_problem(r, 422, "record 1", "'age'", "finite number")
    assert "years" not in body["detail"] and "old" not in body["detail"]  # values are not echoed


@pytest.mark.parametrize("age", [1e308, -1e200, 1e160])
def test_a_value_far_outside_the_training_range_is_a_422_not_a_500(client, ppnb_model, age):
    """The Gaussian log-density overflowed to NaN probabilities, which the response model
    refused: a 500 (found by the API audit with age = 1e308)."""
    headers, url = ppnb_model
    r = client.post(url, headers=auth(headers), json={"records": [{"age": 30, "colour": "red"},
                                                                  {"age": age, "colour": "red"}]})
    assert_problem(r, 422, "record 1 cannot be scored", "outside the range")


def test_keys_that_are_not_features_are_not_built_into_the_frame(client, ppnb_model, monkeypatch):
    """Every key of every record became a column: N records with one distinct key each made
    an N × N frame in the API (30,000 records, 1 MB: ~7 GB and minutes; security acceptance
    check). Only the model's features are read now."""
    headers, url = ppnb_model
    seen = []
    check = models._check_numeric_features
    monkeypatch.setattr(models, "_check_numeric_features", lambda frame, meta: (seen.append(frame.shape),
                                                                                 check(frame, meta)))
    records = [{"age": 30, "colour": "red", f"extra{i}": i} for i in range(300)]
    r = client.post(url, headers=auth(headers), json={"records": records})
    assert r.status_code == 200, r.text
    assert seen == [(300, 2)]
    assert len(r.json()["predictions"]) == 300


def test_a_boolean_is_not_a_number(client, ppnb_model):
    """true in a numeric feature was read as the number 1 and scored (acceptance check,
    recalib): JSON booleans are not numbers."""
    headers, url = ppnb_model
    r = client.post(url, headers=auth(headers), json={"records": [{"age": 30, "colour": "red"},
                                                                  {"age": True, "colour": "red"}]})
    assert_problem(r, 422, "record 1", "'age'", "finite number")


@pytest.mark.parametrize("colour", [{"a": 1}, ["red"]])
def test_a_nested_value_of_a_categorical_feature_is_named(client, ppnb_model, colour):
    """An object or array as a category gave "the records do not fit the model: TypeError",
    naming neither the record nor the feature (acceptance check, recalib)."""
    headers, url = ppnb_model
    r = client.post(url, headers=auth(headers), json={"records": [{"age": 30, "colour": "red"},
                                                                  {"age": 31, "colour": colour}]})
    body = assert_problem(r, 422, "record 1", "'colour'", "single value")
    assert "TypeError" not in body["detail"]


def test_a_model_is_read_from_the_database_once_per_process(client, ppnb_model, monkeypatch):
    """The cache was keyed by the blob's bytes: every predict read the blob and hashed it."""
    from app.blobs import repository as blobs

    headers, url = ppnb_model
    body = {"records": [{"age": 25, "colour": "red"}]}
    assert client.post(url, headers=auth(headers), json=body).status_code == 200  # loaded (or cached)
    reads = []
    real = blobs.read
    monkeypatch.setattr(blobs, "read", lambda session, blob_id: reads.append(blob_id) or real(session, blob_id))
    for _ in range(3):
        assert client.post(url, headers=auth(headers), json=body).json()["predictions"] == ["young"]
    assert reads == []


def test_a_model_links_itself_as_jobs_releases_and_reports_do(client, ppnb_model):
    """A model's links named only predict: every other resource's links start with `self`
    (apic acceptance check)."""
    headers, predict = ppnb_model
    url = predict.removesuffix("/predict")
    model = client.get(url, headers=auth(headers)).json()
    assert model["links"] == {"self": url, "predict": predict}
    listed = client.get("/v1/models", headers=auth(headers)).json()["items"]
    assert next(m for m in listed if m["id"] == model["id"])["links"] == model["links"]
