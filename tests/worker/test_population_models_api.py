"""k-map and δ-presence through the API on Adult (ARX's population setting): the uploaded table
is the population, a column marks a random quarter of it as the research subset. Each release
is downloaded and checked from the download and the uploaded population alone: which
population records each released class's labels cover (the ARX hierarchies read as uploaded),
the class's population count against k_map, every class's share of research records against
δ-presence; Mondrian and the lattice; and the refusals, each naming its problem."""

from __future__ import annotations

import io
import json

import numpy as np
import pandas as pd
import pytest

from tests.privacy.test_properties_kanonymity import _covers_numeric
from tests.support.api import auth, submit, upload, wait_job

QIS = ["age", "education", "marital-status", "race", "sex", "workclass", "native-country"]


@pytest.fixture(scope="module")
def population(client, make_key, workers, adult_path):
    """Adult's 30,162 complete records (education-num left out: it determines education), a
    random 25 % marked in_study (yes/no), and two columns marking nobody and everybody."""
    headers = make_key("owner")
    raw = pd.read_csv(adult_path, na_values="?", skipinitialspace=True).dropna().reset_index(drop=True)
    raw = raw.drop(columns=["education-num"])
    rng = np.random.default_rng(7)
    raw["in_study"] = np.where(rng.random(len(raw)) < 0.25, "yes", "no")
    raw["nobody"], raw["everybody"] = 0, 1
    schema = {"income": {"role": "label"}, "age": {"bounds": [17, 90]}}
    ds = upload(client, headers, raw.to_csv(index=False).encode(), "adult_study.csv", schema=schema).json()
    hierarchies = {}
    for q in QIS:
        text = (adult_path.parent / "hierarchies" / f"{q}.csv").read_text()
        r = client.put(f"/v1/datasets/{ds['id']}/hierarchies/{q}", headers=auth(headers), content=text)
        assert r.status_code == 200, r.text
        table = pd.read_csv(io.StringIO(text), sep=";", header=None, dtype=str)
        hierarchies[q] = {row[0]: set(row) for row in table.itertuples(index=False)}
    return headers, ds, raw, hierarchies


def _release(client, headers, ds, params) -> tuple[dict, pd.DataFrame]:
    r = submit(client, headers, "kanonymity", {"quasi_identifiers": QIS, **params}, dataset_id=ds["id"])
    assert r.status_code == 202, r.text
    job = wait_job(client, headers, r.json()["id"], timeout=240)
    assert job["status"] == "succeeded", job["error"]
    rid = job["result"]["release_ids"][0]
    rel = client.get(f"/v1/releases/{rid}", headers=auth(headers)).json()
    data = client.get(f"/v1/releases/{rid}/data", headers=auth(headers), params={"format": "parquet"})
    return rel, pd.read_parquet(io.BytesIO(data.content))


def _hits(hierarchies: dict, q: str, label: str, values: np.ndarray) -> np.ndarray:
    """Which of a QI's distinct population values one released label covers: age by its
    interval (or its ARX hierarchy's label), a categorical value by any node of its hierarchy
    row, a set '{a|b}' by any member."""
    parts = set(label[1:-1].split("|")) if label.startswith("{") else {label}
    # Mondrian's closed interval '[a, b]' by value; a hierarchy's label (ARX's age hierarchy
    # puts 20 under '15-19') only by the hierarchy's row
    return np.array([bool(hierarchies[q][v] & parts) or (q == "age" and any(
        _covers_numeric(p, float(v)) for p in parts if p.startswith("[") and p.endswith("]")))
        for v in values], dtype=bool)


def _per_class(rel, frame, raw, hierarchies):
    """Per released class: (population records covered, research records covered, released).
    Each QI's distinct labels are resolved against its distinct population values once; a
    class's coverage is then the AND of its labels' rows read at every record's value code."""
    in_t = (raw["in_study"] == "yes").to_numpy()
    codes, tables = {}, {}
    for q in QIS:
        values = raw[q].astype(int).astype(str) if q == "age" else raw[q].astype(str)
        codes[q], uniques = pd.factorize(values)
        labels = frame[q].astype(str).unique()
        tables[q] = {label: _hits(hierarchies, q, label, uniques) for label in labels}
    times = np.zeros(len(raw), dtype=np.int64)
    rows = []
    for labels, group in frame.groupby([frame[q].astype(str) for q in QIS]):
        covered = np.ones(len(raw), dtype=bool)
        for q, label in zip(QIS, labels):
            covered &= tables[q][label][codes[q]]
        times += covered
        rows.append((int(covered.sum()), int((covered & in_t).sum()), len(group)))
    return rows, times, in_t


@pytest.mark.parametrize("algorithm", ["mondrian", "lattice"])
def test_k_map_holds_on_the_population(client, population, algorithm):
    headers, ds, raw, hierarchies = population
    extra = {"algorithm": "lattice", "suppression": 0.04} if algorithm == "lattice" else {}
    rel, frame = _release(client, headers, ds, {"k": 1, "k_map": 10, "research_subset": "in_study", **extra})
    assert "in_study" not in frame.columns and "nobody" in frame.columns
    assert len(frame) + rel["metrics"]["suppressed"] == (raw["in_study"] == "yes").sum()
    rows, _, _ = _per_class(rel, frame, raw, hierarchies)
    smallest = min(p for p, _, _ in rows)
    assert smallest >= 10
    g = rel["guarantees"]
    assert g["k_map"] == smallest and g["k_map_requested"] == 10 and g["private"] is True
    assert rel["metadata"]["population"] == {
        "research_subset_column": "in_study", "records": len(raw), "research_subset": int((raw["in_study"] == "yes").sum()),
        "released": len(frame), "suppressed": rel["metrics"]["suppressed"], "smallest_population_class": smallest,
        # how the check counted: Mondrian's classes proven disjoint by its split tree, or
        # (ancestor labels that overlap) counted exactly; the lattice's levels by their labels
        "check": {"method": "hint groups", "k_map": "exact",
                  "disjoint": "every quasi-identifier's distinct labels cover disjoint values"}
        if algorithm == "lattice" else rel["metadata"]["population"]["check"]}
    assert rel["metadata"]["population"]["check"]["k_map"] == "exact"
    assert any(s.startswith(f"k-map: every released class's quasi-identifiers match at least {smallest} records "
                            "of the population (k_map requested: 10)") for s in g["statements"])
    # k-map alone is weaker than k-anonymity of the released records: classes of 1 are allowed
    assert frame.groupby([frame[q].astype(str) for q in QIS]).size().min() < 10


@pytest.mark.parametrize("algorithm", ["mondrian", "lattice"])
def test_delta_presence_holds_on_every_class_of_the_population(client, population, algorithm):
    headers, ds, raw, hierarchies = population
    extra = {"algorithm": "lattice", "suppression": 0.04} if algorithm == "lattice" else {}
    rel, frame = _release(client, headers, ds, {"k": 2, "delta_presence": [0.05, 0.5],
                                                "research_subset": "in_study", **extra})
    rows, times, in_t = _per_class(rel, frame, raw, hierarchies)
    assert times.max() == 1  # every population record matches one released class, no more
    ratios = []
    for p, t, released in rows:
        assert t == released  # every research record a class covers is released
        ratios.append(t / p)
    assert 0.05 <= min(ratios) and max(ratios) <= 0.5
    assert frame.groupby([frame[q].astype(str) for q in QIS]).size().min() >= 2  # and k = 2
    g = rel["guarantees"]
    assert g["delta_presence"] == pytest.approx([min(ratios), max(ratios)])
    assert g["delta_presence_requested"] == [0.05, 0.5]
    assert any(s.startswith("δ-presence: in every class of the population, those without a released record too")
               for s in g["statements"])
    if algorithm == "mondrian":  # sets of children: released classes never share a person
        assert rel["metadata"]["population"]["categorical_release"] == "children"


def test_refusals_name_the_problem(client, population):
    headers, ds, raw, _ = population
    qis = QIS[:3]
    for params, named in [
        ({"k_map": 10}, "k_map and delta_presence are read over a research subset"),
        ({"research_subset": "in_study"}, "research_subset is read by k_map, delta_presence and profitability's journalist"),
        ({"k": 1}, "k = 1 asks no k-anonymity at all"),
        ({"research_subset": "in_study", "delta_presence": [0.5, 0.1]}, "delta_min is above delta_max"),
        ({"research_subset": "in_study", "delta_presence": [0.1, 1.5]}, "delta_presence"),
        ({"research_subset": "in_study", "k_map": 5, "sensitive": "occupation", "l": 2},
         "k_map, delta_presence and the journalist attacker do not combine with the sensitive-column models"),
        ({"research_subset": "nope", "k_map": 5}, "unknown research_subset column 'nope'"),
        ({"research_subset": "race", "k_map": 5}, "research_subset column 'race' has 5 distinct values"),
        ({"research_subset": "age", "k_map": 5, "quasi_identifiers": ["age", "sex"]},
         "research_subset column 'age' is also a quasi-identifier"),
        ({"research_subset": "in_study", "k_map": 40_000}, "the population has 30162 records, fewer than k_map = 40000"),
    ]:
        r = submit(client, headers, "kanonymity", {"quasi_identifiers": qis, **params}, dataset_id=ds["id"])
        assert r.status_code == 422 and named in r.text, (params, r.text)
    # what only the data shows: the job fails, naming it
    for params, named in [
        ({"research_subset": "nobody", "k_map": 5}, "the research subset is empty"),
        ({"research_subset": "everybody", "k": 1, "delta_presence": [0.0, 0.9]},
         "every record of the table is in the research subset"),
        ({"research_subset": "in_study", "k": 1, "delta_presence": [0.5, 0.9]},
         "outside delta_presence [0.5, 0.9]: the classes' shares average to it"),
        ({"research_subset": "sex", "k_map": 5, "quasi_identifiers": ["age", "race"]},
         "research_subset column 'sex' holds 'female', 'male'"),
    ]:
        r = submit(client, headers, "kanonymity", {"quasi_identifiers": qis, **params}, dataset_id=ds["id"])
        assert r.status_code == 202, r.text
        job = wait_job(client, headers, r.json()["id"], timeout=120)
        assert job["status"] == "failed" and named in json.dumps(job["error"], ensure_ascii=False), (params, job)
