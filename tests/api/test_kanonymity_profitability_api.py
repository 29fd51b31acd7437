"""kanonymity's profitability model through the API: a lattice release whose every class's payout
is recomputed from the downloaded CSV (flat hierarchies: a value covers itself, '*' the column's
values), the release's figures and wording, no_attack's derived k, and the 422s of bad
parameters (no job row)."""

from __future__ import annotations

import io
import math

import numpy as np
import pandas as pd
import pytest

from tests.api.test_raw_data_reports import _done
from tests.support.api import assert_problem, auth, run_failing_job, submit, upload

QIS = ["a", "b"]
GAME = {"adversary_cost": 4.0, "adversary_gain": 300.0, "publisher_loss": 6000.0, "publisher_benefit": 1200.0}


def _table() -> pd.DataFrame:
    rng = np.random.default_rng(11)
    n = 2_000
    return pd.DataFrame({"a": rng.choice(list("pqrstu"), n, p=[0.4, 0.3, 0.2, 0.05, 0.04, 0.01]),
                         "b": rng.choice(list("xyzw"), n, p=[0.6, 0.3, 0.08, 0.02]),
                         "v": rng.integers(0, 100, n)})


def _release(client, owner, params) -> tuple[dict, pd.DataFrame, pd.DataFrame]:
    table = _table()
    ds = upload(client, owner, table.to_csv(index=False).encode(), "game.csv").json()
    job = _done(client, owner, "kanonymity", {"quasi_identifiers": QIS, **params}, dataset_id=ds["id"])
    rid = job["result"]["release_ids"][0]
    release = client.get(f"/v1/releases/{rid}", headers=auth(owner)).json()
    data = client.get(f"/v1/releases/{rid}/data", headers=auth(owner)).content
    return release, pd.read_csv(io.BytesIO(data), dtype=str, keep_default_na=False), table


def test_lattice_release_payout_recomputed_from_the_download(client, owner):
    release, frame, table = _release(client, owner, {"k": 1, "algorithm": "lattice", "suppression": 0.1,
                                                     "metric": "publisher_payout", "profitability": GAME})
    domain = {q: table[q].nunique() for q in QIS}
    log_domain = sum(math.log(d) for d in domain.values())
    total, attacked = 0.0, 0
    for key, size in frame.groupby(QIS).size().items():
        il = sum(math.log(domain[q] if label == "*" else 1) for q, label in zip(QIS, key)) / log_domain
        attack = 300.0 / size > 4.0
        payout = 1200.0 * (1 - il) - (6000.0 / size if attack else 0.0)
        assert payout > 0, (key, size, payout)
        total += payout * size
        attacked += attack
    found = release["metadata"]["profitability"]
    assert found["publisher_payout"] == pytest.approx(total, rel=1e-12)
    assert found["classes_attack_profitable"] == attacked
    assert found["records_suppressed_by_model"] == len(table) - len(frame) > 0
    guarantees = release["guarantees"]
    assert guarantees["profitability"]["publisher_payout"] == pytest.approx(total, rel=1e-12)
    assert guarantees["private"] is (attacked == 0)
    assert any("not a formal privacy guarantee" in s for s in guarantees["statements"])


def test_no_attack_release_is_k_anonymous_at_the_ratio(client, owner):
    release, frame, _ = _release(client, owner, {"k": 1, "profitability": {"adversary_gain": 30.0,
                                                                           "no_attack": True}})
    assert frame.groupby(QIS).size().min() >= 8  # ⌈30 / 4⌉
    assert release["metadata"]["profitability"]["derived_k"] == 8
    assert release["guarantees"]["k_requested"] == 8


@pytest.mark.parametrize("params, named", [
    ({"profitability": {"adversary_cost": -1}, "algorithm": "lattice"}, "adversary_cost"),
    ({"profitability": {"attacker": "journalist"}, "algorithm": "lattice"}, "research_subset"),
    ({"profitability": {}}, "Mondrian suppresses nothing"),
    ({"metric": "publisher_payout", "algorithm": "lattice"}, "give profitability"),
    ({"profitability": {"adversary_cost": 0, "no_attack": True}}, "every attack pays"),
    ({"profitability": {"adversary_cost": 0.001, "no_attack": True}}, "above the table's 2000 records"),
])
def test_bad_parameters_are_a_422_naming_them(client, owner, params, named):
    ds = upload(client, owner, _table().to_csv(index=False).encode(), "game.csv").json()
    r = submit(client, owner, "kanonymity", {"quasi_identifiers": QIS, **params}, dataset_id=ds["id"])
    assert_problem(r, 422, named)
    assert client.get("/v1/jobs", headers=auth(owner)).json()["items"] == []  # refused before a job row


# G names a's parent and b's grandparent: the check reads a label's values from its name alone
TWO_G = "a;G;H;*\nb;K;G;*\nc;M;N;*\nd;M;N;*\n"


def test_a_hierarchy_naming_two_levels_nodes_alike_is_a_422_at_submission(client, owner):
    """At level 2 the release holds 'G' for b alone (IL 0, payout 10 − 40/6 > 0), which the check
    read as G's union {a, b} (IL 1/2, payout −1.67): a sound release failed as an internal error.
    A fact of the hierarchy alone: refused at submission naming the column and the name, no job;
    the same hierarchy with the name changed runs."""
    table = pd.DataFrame({"g": [x for x in "abcd" for _ in range(6)], "v": range(24)})
    ds = upload(client, owner, table.to_csv(index=False).encode(), "two_g.csv").json()
    params = {"quasi_identifiers": ["g"], "k": 1, "algorithm": "lattice", "suppression": 0.5,
              "metric": "publisher_payout", "profitability": {"adversary_cost": 1.0, "adversary_gain": 8.0,
                                                              "publisher_loss": 40.0, "publisher_benefit": 10.0}}
    for text in (TWO_G, TWO_G.replace("K;G", "K;L")):
        r = client.put(f"/v1/datasets/{ds['id']}/hierarchies/g", headers=auth(owner), content=text)
        assert r.status_code == 200, r.text
        if text == TWO_G:
            r = submit(client, owner, "kanonymity", params, dataset_id=ds["id"])
            assert_problem(r, 422, "hierarchy of column 'g': 1 name(s) label nodes of two levels")
            assert "'G'" in r.json()["detail"]
            assert client.get("/v1/jobs", headers=auth(owner)).json()["items"] == []
            without = {**{key: value for key, value in params.items() if key not in ("profitability", "metric")},
                       "k": 2}  # k-anonymity alone reads no label's values by name: accepted
            assert submit(client, owner, "kanonymity", without, dataset_id=ds["id"]).status_code == 202
        else:
            job = _done(client, owner, "kanonymity", params, dataset_id=ds["id"])
            release = client.get(f"/v1/releases/{job['result']['release_ids'][0]}", headers=auth(owner)).json()
            assert release["metadata"]["profitability"]["publisher_payout"] > 0


def test_a_hierarchy_changed_to_two_levels_nodes_alike_after_submission_fails_the_job(client, owner):
    """The submission's check ran on the hierarchy then; a PUT while the job is queued (allowed:
    only schema changes wait for active jobs) gives the run the ambiguous one, which the run refuses
    in the submission's words — not a VerificationError failing the job as internal."""
    table = pd.DataFrame({"g": [x for x in "abcd" for _ in range(6)], "v": range(24)})
    ds = upload(client, owner, table.to_csv(index=False).encode(), "two_g.csv").json()
    url = f"/v1/datasets/{ds['id']}/hierarchies/g"
    assert client.put(url, headers=auth(owner), content=TWO_G.replace("K;G", "K;L")).status_code == 200
    params = {"quasi_identifiers": ["g"], "k": 1, "algorithm": "lattice", "suppression": 0.5,
              "metric": "publisher_payout", "profitability": {"adversary_cost": 1.0, "adversary_gain": 8.0,
                                                              "publisher_loss": 40.0, "publisher_benefit": 10.0}}
    r = submit(client, owner, "kanonymity", params, dataset_id=ds["id"])
    assert r.status_code == 202, r.text
    assert client.put(url, headers=auth(owner), content=TWO_G).status_code == 200
    job, failed = run_failing_job(client, owner, r.json()["id"])
    assert "hierarchy of column 'g': 1 name(s) label nodes of two levels" in job["error"]["message"]
    assert "'G'" in job["error"]["message"]
    # kanonymity debits no ε: nothing to refund, nothing on the ledger
    assert job["epsilon"] is None and not job["epsilon_refunded"] and failed == [{"error": "invalid_input", "attempt": 1}]
    assert client.get(f"/v1/datasets/{ds['id']}/budget", headers=auth(owner)).json()["entry_count"] == 0



def test_journalist_no_attack_release_is_k_map_over_the_research_subset(client, owner):
    """research_subset 'in' marks about a third of the 2,000 records; no-attack against the
    journalist at ⌈30 / 4⌉ = 8 is k-map: every class of the downloaded release matches at least 8
    population records (counted here from the uploaded table, flat hierarchies: a label is its
    value or '*'), while some classes hold fewer than 8 released records."""
    table = _table().assign(inside=np.where(np.random.default_rng(3).random(2_000) < 0.3, "yes", "no"))
    ds = upload(client, owner, table.to_csv(index=False).encode(), "game.csv").json()
    params = {"quasi_identifiers": QIS, "k": 1, "algorithm": "lattice", "suppression": 0.1,
              "research_subset": "inside",
              "profitability": {"attacker": "journalist", "adversary_gain": 30.0, "no_attack": True}}
    job = _done(client, owner, "kanonymity", params, dataset_id=ds["id"])
    rid = job["result"]["release_ids"][0]
    release = client.get(f"/v1/releases/{rid}", headers=auth(owner)).json()
    frame = pd.read_csv(io.BytesIO(client.get(f"/v1/releases/{rid}/data", headers=auth(owner)).content),
                        dtype=str, keep_default_na=False)
    assert "inside" not in frame.columns and len(frame) > 0
    released = frame.groupby(QIS).size()
    for key in released.index:
        matches = np.ones(len(table), dtype=bool)
        for q, label in zip(QIS, key):
            matches &= (table[q] == label).to_numpy() if label != "*" else True
        assert matches.sum() >= 8, (key, matches.sum())
    assert released.min() < 8  # k-map, not k-anonymity at 8
    assert release["metadata"]["profitability"]["derived_k"] == 8
    assert release["guarantees"]["k_map_requested"] == 8 and release["guarantees"]["k_map"] >= 8
