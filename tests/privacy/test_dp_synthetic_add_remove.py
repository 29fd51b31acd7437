"""mst and aim under add/remove-one neighbours (``neighbouring="add_remove"``).

Under add/remove a marginal's L2 sensitivity is 1 (ρ = 1/2σ²), a selection score's is max w
(half replace-one's), and n is not public: nothing released may be computed from the raw data
outside the mechanisms. The budget counts replace-one ε, and a replacement is a removal and an
addition, so the job is debited the replace-one ε of its plan (measurements' ρ × 2, selections'
× 4) at its δ. Checked here (the sensitivities from first principles: test_zcdp_ledger_exact.py):
every ρ the release lists against the σ and ε₀ it used, the debit against the plan and the
ledger, the release field by field on add/remove neighbours (the table and the table with one record removed) with the
mechanisms' outputs held fixed — a field that reads n differs between them — and that a
replace_one release is charged as before."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest

from app.privacy import registry
from app.privacy.context import RunContext
from app.privacy.data import ColumnInfo, MethodInput
from app.privacy.dp_release import zcdp
from app.privacy.dp_release.common import NEIGHBOURING, NEIGHBOURING_ADD_REMOVE
from app.privacy.dp_release.marginals import MAX_ROWS, SynthParams, estimated_total, synthetic_rows
from app.privacy.rng import SecureRandom

COLUMNS = [ColumnInfo("g", "categorical", categories=("x", "y", "z")),
           ColumnInfo("age", "numeric", bounds=(18.0, 90.0)),
           ColumnInfo("ok", "categorical", categories=("no", "yes"), role="label")]
FAST = {"mst": {"iterations": 100}, "aim": {"iterations": 100, "rounds": 6, "round_iterations": 20}}


def _table(n: int = 300) -> pd.DataFrame:
    g = np.random.default_rng(7)
    a = g.integers(0, 3, n)
    frame = pd.DataFrame({"g": np.array(["x", "y", "z"])[a],
                          "age": np.clip(30 + 8 * a + g.normal(0, 5, n), 18, 90).round(),
                          "ok": np.where(g.random(n) < 0.3 + 0.2 * a, "yes", "no")})
    frame.loc[:4, "ok"] = None  # a missing level with a few records
    return frame


def _run(method: str, frame: pd.DataFrame, seed: int = 5, **params):
    spec = registry.get(method)
    p = spec.params(**{"epsilon": 1.0, **FAST[method], **params})
    return spec.run(MethodInput(COLUMNS, frame), p, RunContext(rng=SecureRandom(seed=seed))), p


# ----------------------------------------------------------------- sensitivities
@pytest.mark.parametrize("rho", [1e-6, 0.01, 3.0])
def test_sigma_for_add_remove_costs_one_over_two_sigma_squared(rho):
    sigma = zcdp.sigma_for(rho, zcdp.L2_SQ["add_remove"])
    assert sigma == pytest.approx(math.sqrt(1.0 / (2.0 * rho)), rel=1e-9)
    cost = zcdp.Ledger(1.0, l2_sq=1.0).gaussian_rho(sigma)
    assert cost == 1.0 / (2.0 * sigma * sigma) and cost <= rho and cost == pytest.approx(rho, rel=1e-9)
    # the same σ under replace-one costs twice as much: √2 sensitivity
    assert zcdp.Ledger(1.0).gaussian_rho(sigma) == pytest.approx(2 * cost, rel=1e-15)


# ------------------------------------------------------------------ the accountant
@pytest.mark.parametrize("method", ["mst", "aim"])
def test_every_rho_listed_is_that_of_the_sigma_and_epsilon0_used(method):
    result, params = _run(method, _table(), neighbouring="add_remove")
    meta = result.metadata[method]
    measurements, selections = meta["measurements"], meta["selections"]
    assert measurements and selections
    for m in measurements:
        assert m["rho"] == pytest.approx(1.0 / (2.0 * m["sigma"] ** 2), rel=1e-12)
    weight = 2.0  # the label's pairs weigh 2: the largest weight of mst's pairs
    top = 8.0 if method == "aim" else weight  # aim: w = (2 + 2)·2 for the label's pair
    for s in selections:
        assert s["rho"] == pytest.approx(s["epsilon0"] ** 2 / 8.0, rel=1e-9)
        assert s["score_sensitivity"] == top  # 1 × the largest weight (replace-one: 2 ×)
    measured = sum(m["rho"] for m in measurements)
    selected = sum(s["rho"] for s in selections)
    assert measured + selected == pytest.approx(meta["rho_spent"], rel=1e-12) and meta["rho_spent"] <= meta["rho"] * (1 + 1e-9)
    replaced = meta["replace_one"]
    assert replaced["rho"] == pytest.approx(2 * measured + 4 * selected, rel=1e-12)
    assert replaced["rho"] <= replaced["rho_priced"]
    # the ε debited is the smallest (7 digits) whose ρ at the job's δ covers the plan's bound
    m = len(COLUMNS) + (meta["rounds"] if method == "mst" else meta["planned_rounds"] + 1)
    eps = replaced["epsilon"]
    assert zcdp.rho_for(eps, params.delta, m)[0] >= replaced["rho_priced"]
    assert zcdp.rho_for(eps * (1 - 2e-6), params.delta, m)[0] < replaced["rho_priced"]
    assert replaced["priced"] == eps == registry.get(method).epsilon_cost(params, COLUMNS)
    assert replaced["delta"] <= params.delta
    assert 1.3 < eps < 1.7  # ε = 1 add/remove is about 1.5 replace-one here
    g = result.guarantees
    assert g["epsilon"] == 1.0 and g["delta"] <= params.delta and g["neighbouring"] == NEIGHBOURING_ADD_REMOVE
    assert g["replace_one"] == {k: replaced[k] for k in ("epsilon", "delta", "rho")}
    assert g["accountant"] == meta["accountant"] == zcdp.ACCOUNTANT_ADD_REMOVE
    said = " ".join(g["statements"])
    assert "added or removed" in said and f"priced at ε = {eps:.7g}" in said and "n is not public" in said


def test_the_plans_measurement_share_bounds_what_the_run_spent():
    """mst: ½ + ½·½ of ρ measures at the default share; aim: 0.08 + 0.9·0.92. The selections'
    share, priced at × 4, is never exceeded by the run."""
    for method, share in (("mst", 0.75), ("aim", 0.08 + 0.9 * 0.92)):
        result, params = _run(method, _table(), neighbouring="add_remove")
        meta = result.metadata[method]
        assert meta["budget_split"]["select"] <= (1 - share) * meta["rho"] * (1 + 1e-9)
        assert meta["replace_one"]["rho_priced"] == pytest.approx((2 * share + 4 * (1 - share)) * meta["rho"], rel=1e-8)


def test_replace_one_is_charged_and_stated_as_before():
    """The default relation: ρ = 1/σ², score sensitivity 2·w, the job's ε debited, no
    replace_one figures, Veil's replace-one statement, n as the size and the model's total."""
    frame = _table()
    for method in ("mst", "aim"):
        result, params = _run(method, frame)
        meta = result.metadata[method]
        assert params.neighbouring == "replace_one"
        assert all(m["rho"] == pytest.approx(1.0 / m["sigma"] ** 2, rel=1e-12) for m in meta["measurements"])
        assert all(s["score_sensitivity"] == (16.0 if method == "aim" else 4.0) for s in meta["selections"])
        assert "replace_one" not in meta and "replace_one" not in result.guarantees
        assert meta["neighbouring"] == result.guarantees["neighbouring"] == NEIGHBOURING
        assert meta["accountant"] == zcdp.ACCOUNTANT
        assert meta["noise"]["rho_per_measurement"] == "1/σ²"
        assert meta["model"]["known_total"] == len(frame) == len(result.frame) == result.metrics["rows"]
        assert registry.get(method).epsilon_cost(params, COLUMNS) == 1.0


# ---------------------------------------------------------------- the table's size
def test_the_size_is_the_rows_asked_for_else_the_estimate_rounded_within_bounds():
    ar = SynthParams(epsilon=1.0, neighbouring="add_remove")
    assert synthetic_rows(ar, 1234.4) == 1234 and synthetic_rows(ar, 0.2) == 1
    assert synthetic_rows(ar, 1e9) == MAX_ROWS
    assert synthetic_rows(SynthParams(epsilon=1.0, neighbouring="add_remove", rows=77), 1234.4) == 77
    assert synthetic_rows(SynthParams(epsilon=1.0), 1234) == 1234  # replace-one: n
    # inverse-variance weights: a total measured 4× more precisely counts 4× more; at least 1
    assert estimated_total([(100.0, 1.0), (200.0, 4.0)]) == pytest.approx((100 + 200 / 4) / 1.25)
    assert estimated_total([(-50.0, 1.0)]) == 1.0


# --------------------------------------------------- neighbours, field by field
class _FixedMechanisms:
    """The mechanisms' outputs held fixed: a measurement returns noise-only counts (a pattern of
    the marginal's shape, whatever the data), a selection draws uniformly from the job's random
    source (whatever the scores). What a release computes outside the mechanisms from the raw
    table is then the only thing that can differ between neighbours."""

    def __init__(self, monkeypatch) -> None:
        real = zcdp.gaussian_counts

        def counts(values, sigma, rng):
            _, record = real(np.zeros_like(np.asarray(values, dtype=float)), sigma, rng)
            size = np.asarray(values).size
            return np.asarray(20.0 + (np.arange(size) * 7) % 11, dtype=float).reshape(np.shape(values)), record

        monkeypatch.setattr(zcdp, "gaussian_counts", counts)
        monkeypatch.setattr(zcdp.ExactSampler, "exponential", lambda self, scores, eta: self.uniform(len(scores)))


def _published(result) -> str:
    metrics = {k: v for k, v in result.metrics.items() if k != "seconds"}  # durations: outside ε (epsilon.md)
    body = {"metadata": result.metadata, "guarantees": result.guarantees, "metrics": metrics,
            "columns": [c.__dict__ for c in result.columns],
            "frame": result.frame.astype(str).to_dict("list")}
    return json.dumps(body, sort_keys=True, default=str)


@pytest.mark.parametrize("method", ["mst", "aim"])
@pytest.mark.parametrize("rows", [None, 50])
def test_add_remove_neighbours_publish_the_same_release_field_by_field(method, rows, monkeypatch):
    """The table and the table with one record removed (a record with a missing cell, the
    first one and the last), the mechanisms' outputs held fixed: rows, metadata (the model's
    total, the missing levels, the compression), metrics, column entries and guarantees are
    identical — nothing read n, or anything else, outside the mechanisms. Under replace_one
    the same harness sees n (its public size) differ: the check has teeth."""
    _FixedMechanisms(monkeypatch)
    frame = _table(200)
    extra = {} if rows is None else {"rows": rows}
    base = _published(_run(method, frame, neighbouring="add_remove", **extra)[0])
    for drop in (0, 100, len(frame) - 1):
        neighbour = frame.drop(index=drop).reset_index(drop=True)
        assert _published(_run(method, neighbour, neighbouring="add_remove", **extra)[0]) == base, (method, drop)
    if rows is None:
        replace = [_run(method, f)[0] for f in (frame, frame.iloc[1:].reset_index(drop=True))]
        assert _published(replace[0]) != _published(replace[1])
        assert [len(r.frame) for r in replace] == [200, 199]
