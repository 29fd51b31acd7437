"""privbayes under add/remove neighbours: the score T = S/n moves by less than 4 when a record is
added or removed (the exact move n/(n + 1)·a⊗b, on every neighbour of every small table), a
marginal by 1 in one cell and the count of records by 1; each round is the exponential
mechanism at ε_round/8 over T; n is measured, never published; the job is priced at the
replace-one ε 2·(ε − ε/20), never below what the run delivers against a replacement."""

from __future__ import annotations

import itertools
import json
import math
import re
from fractions import Fraction

import numpy as np
import pytest

import pandas as pd

from app.privacy import registry
from app.privacy.data import ColumnInfo, MethodInput
from app.privacy.dp_release.marginal_domains import build_columns, encode_frame, marginal
from app.privacy.dp_release.privbayes import PrivBayesParams, run_privbayes
from app.privacy.dp_release.privbayes_network import parent_index, parent_sets, r_score
from app.privacy.dp_release.privbayes_params import COUNT_SHARE, MARGINAL_MOVE, MAX_RECORDS, T_SENSITIVITY
from app.privacy.noise import laplace_loss
from tests.privacy.test_privbayes import SCHEMA, ctx, exact_s, spy_on_rounds, table


def t_score(x: np.ndarray, kx: int, p: np.ndarray, kp: int) -> Fraction:
    """T = S/n = Σ|c(x, π) − c(x)·c(π)/n| (0 for the empty table), through the code's S."""
    n = len(x)
    return Fraction(r_score(x, kx, p, kp, n), n) if n else Fraction(0)


def dependence(x: np.ndarray, kx: int, p: np.ndarray, kp: int) -> np.ndarray:
    """n·(c − c(x)·c(π)/n) = n·c − c(x)·c(π), cell by cell, in integers."""
    c = np.zeros((kx, kp), dtype=np.int64)
    np.add.at(c, (x, p), 1)
    return len(x) * c - np.outer(c.sum(axis=1), c.sum(axis=0))


def test_T_moves_by_exactly_n_over_n_plus_1_times_a_outer_b_on_every_add_remove_neighbour():
    """Every table of 0-5 records on 2×2, 2×3 and 3×3 domains with every record added (each
    cell) and every record removed: c − c(x)c(π)/n moves by exactly n/(n + 1)·(e_x − P[X])⊗
    (e_π − P[Π]) (P of the smaller table) — in integers, n·D' − (n + 1)·D = (n·e_x − c(x))⊗
    (n·e_π − c(π)) with D = n·c − c(x)c(π) — so |ΔT| ≤ its L1 norm < 4, whatever n."""
    worst = Fraction(0)
    checked = 0
    for kx, kp in [(2, 2), (2, 3), (3, 3)]:
        cells = list(itertools.product(range(kx), range(kp)))
        for n in range(0, 6):
            for chosen in itertools.combinations_with_replacement(range(len(cells)), n):
                x = np.array([cells[c][0] for c in chosen], dtype=np.int64)
                p = np.array([cells[c][1] for c in chosen], dtype=np.int64)
                before, dep = t_score(x, kx, p, kp), dependence(x, kx, p, kp)
                cx, cp = np.bincount(x, minlength=kx), np.bincount(p, minlength=kp)
                for x0, p0 in cells:  # D + one record; read backwards it is a removal from D + r
                    x2, p2 = np.append(x, x0), np.append(p, p0)
                    moved = t_score(x2, kx, p2, kp) - before
                    a, b = n * np.eye(kx, dtype=np.int64)[x0] - cx, n * np.eye(kp, dtype=np.int64)[p0] - cp
                    assert np.array_equal(n * dependence(x2, kx, p2, kp) - (n + 1) * dep, np.outer(a, b))
                    bound = Fraction(int(np.abs(a).sum() * np.abs(b).sum()), n * (n + 1)) if n else 0
                    assert abs(moved) <= bound < T_SENSITIVITY, (kx, kp, chosen, x0, p0, moved)
                    worst = max(worst, abs(moved))
                    checked += 1
                for at in sorted(set(chosen)):  # D − one record
                    i = chosen.index(at)
                    x2, p2 = np.delete(x, i), np.delete(p, i)
                    assert abs(t_score(x2, kx, p2, kp) - before) < T_SENSITIVITY
                    checked += 1
    assert checked > 2000 and worst > 1  # small tables: n/(n + 1) and the few levels keep it below 4


def test_T_sensitivity_4_is_nearly_reached_and_the_score_is_2nR():
    """The bound is tight as the domains grow: an independent uniform table on 30 × 30 (T = 0)
    with one record added moves T by n/(n + 1)·4·(29/30)² ≈ 3.74. T = 2n·R = S/n exactly."""
    k, copies = 30, 20
    x, p = (np.repeat(np.arange(k), k * copies), np.tile(np.repeat(np.arange(k), copies), k))
    n = len(x)
    assert t_score(x, k, p, k) == 0
    moved = t_score(np.append(x, 0), k, np.append(p, 0), k)
    assert moved == Fraction(n, n + 1) * 4 * Fraction(k - 1, k) ** 2 and moved > Fraction(37, 10)
    rng = np.random.default_rng(4)
    for _ in range(20):
        m = int(rng.integers(2, 30))
        xs, ps = rng.integers(0, 3, m), rng.integers(0, 4, m)
        assert t_score(xs, 3, ps, 4) == exact_s(xs, ps) / m


def test_a_marginal_moves_by_one_in_one_cell_on_every_add_remove_neighbour():
    """Through the code's own marginal: every table of 1-4 records on a 2 × 3 × 2 domain, each
    record added (every cell) and each removed — L1 1 on 1 cell, the relation's
    (MARGINAL_MOVE['add_remove']); a replacement (every record to every cell) L1 ≤ 2 on ≤ 2 cells
    (replace_one's)."""
    shape = (2, 3, 2)
    cells = list(itertools.product(*[range(s) for s in shape]))
    axes = ("u", "v", "w")

    def counts(rows: list[tuple[int, ...]]) -> np.ndarray:
        codes = {a: np.array([r[i] for r in rows], dtype=np.int64) for i, a in enumerate(axes)}
        return marginal(codes, axes, shape)

    for n in range(1, 5):
        for chosen in itertools.combinations_with_replacement(cells, n):
            base = counts(list(chosen))
            assert base.sum() == n
            for extra in cells:
                diff = counts([*chosen, extra]) - base
                assert (np.abs(diff).sum(), np.count_nonzero(diff)) == MARGINAL_MOVE["add_remove"] == (1.0, 1)
            for i in range(n):
                rest = list(chosen[:i] + chosen[i + 1:])
                diff = (counts(rest) if rest else np.zeros(math.prod(shape))) - base
                assert (np.abs(diff).sum(), np.count_nonzero(diff)) == (1.0, 1)
                for other in cells:
                    moved = counts([*rest, other]) - base
                    assert np.abs(moved).sum() <= MARGINAL_MOVE["replace_one"][0]
                    assert np.count_nonzero(moved) <= MARGINAL_MOVE["replace_one"][1]


def test_each_round_is_the_exponential_mechanism_on_T_at_eps_round_over_8(monkeypatch):
    """η = ε_round / (2·4) over T = S/n of every candidate, ε_round = β·(ε − ε/20)/(d − 1); the
    candidates come from τ = n̂·(1 − β)·(ε − ε/20)/(d·θ), n̂ the published noisy count (sensitivity 1
    marginals: half replace-one's noise, twice its τ). A doubled η, or replace-one's η with T,
    fails here."""
    calls = spy_on_rounds(monkeypatch)
    n, eps, beta, d = 3000, 1.3, 0.25, 4
    data = MethodInput(SCHEMA, table(n))
    params = PrivBayesParams(epsilon=eps, structure_share=beta, neighbouring="add_remove")
    meta = run_privbayes(data, params, ctx()).metadata["privbayes"]
    shared = Fraction(eps) * (1 - COUNT_SHARE)
    per_round = shared * Fraction(beta) / (d - 1)
    assert len(calls) == d - 1 and all(eta == per_round / 8 for _, eta in calls)
    assert [s["epsilon"] for s in meta["selections"]] == pytest.approx([float(per_round)] * 3)
    n_hat = meta["records_estimate"]
    assert meta["useful_cells"] == pytest.approx(n_hat * (1 - beta) * float(shared) / (d * 4.0), rel=1e-12)
    columns = build_columns(params, SCHEMA)
    codes, sizes = encode_frame(columns, data.frame), {c.name: c.size for c in columns}
    chosen = [meta["network"][0]["attribute"]]
    for (scores, _), node in zip(calls, meta["network"][1:]):
        candidates = [(x, ps) for x in sizes if x not in chosen
                      for ps in parent_sets(x, chosen, sizes, 2, meta["useful_cells"])]
        assert scores == [exact_s(codes[x], parent_index(codes, ps, sizes, n)) / n for x, ps in candidates]
        chosen.append(node["attribute"])


@pytest.mark.parametrize("eps, rows_param", [(1.0, None), (0.3, 500)])
def test_the_budget_the_price_and_n_kept_private(eps, rows_param):
    """ε/20 measures n (sensitivity 1), the rest splits β / 1 − β as under replace-one, all within
    ε; marginals have sensitivity 1 (scale ≈ m/((1 − β)ε')). The job is priced at 2·(ε − ε/20),
    the registry's ε; each marginal's loss against a replacement is exactly twice its add/remove
    loss, the rounds at most twice theirs, the count none — at most the price. n itself is
    nowhere in the release: its noisy count sets the default size."""
    n = 3000
    data = MethodInput(SCHEMA, table(n, seed=5))
    params = PrivBayesParams(epsilon=eps, neighbouring="add_remove", rows=rows_param)
    r = run_privbayes(data, params, ctx(11))
    meta, g = r.metadata["privbayes"], r.guarantees
    split = meta["epsilon_split"]
    assert split["records"] <= eps / 20 and split["records"] == pytest.approx(eps / 20, rel=1e-9)
    assert meta["records_count"]["laplace_scale"] == pytest.approx(20 / eps, rel=1e-3)
    assert split["structure"] == pytest.approx(eps * 0.95 * 0.3, rel=1e-12)
    assert sum(split.values()) <= eps and g["epsilon_delivered"] == meta["epsilon_delivered"] <= eps
    m = len(meta["measurements"])
    for mm in meta["measurements"]:
        assert mm["laplace_scale"] == pytest.approx(m / (eps * 0.95 * 0.7), rel=0.01)
        assert mm["integer_values"] and mm["grid"] <= 1.0  # counts: unrounded, shift 1/γ (no + 1)
        ar = laplace_loss(mm["grid"], mm["laplace_scale"] / mm["grid"], 1.0, 1, True)
        assert mm["epsilon_delivered"] == pytest.approx(ar, rel=1e-9) and ar <= mm["epsilon"]
        assert mm["epsilon_delivered_replace_one"] == pytest.approx(2 * ar, rel=1e-9)
    price = registry.get("privbayes").epsilon_cost(params, SCHEMA)
    assert price == pytest.approx(2 * 0.95 * eps, rel=1e-15)
    replaced = meta["replace_one"]
    assert replaced["epsilon"] == price == g["replace_one"]["epsilon"]
    assert replaced["epsilon_split"]["records"] == 0.0
    assert replaced["epsilon_split"]["structure"] == 2 * split["structure"]
    assert replaced["epsilon_split"]["conditionals"] == pytest.approx(
        sum(mm["epsilon_delivered_replace_one"] for mm in meta["measurements"]))
    assert replaced["epsilon_delivered"] <= price and replaced["epsilon_delivered"] > 0.99 * price
    assert "add/remove" in g["neighbouring"] and g["neighbouring"] == meta["neighbouring"]
    assert any(f"ε = {price:.7g}" in s and "replace-one" in s for s in g["statements"])
    # n is private: not published; its noisy count is, and sets the default size
    assert "records" not in meta and meta["records_estimate"] != n
    assert abs(meta["records_estimate"] - n) < 40 * 20 / eps
    assert len(r.frame) == (rows_param or round(meta["records_estimate"]))
    said = " ".join(g["statements"] + g["warnings"])
    assert not re.search(rf"\b{n}\b", said) and f"{n:,}" not in said and str(n) not in json.dumps(meta["score"])
    assert meta["score"]["sensitivity"].startswith("4 under add/remove")
    # replace-one: no count of records, the whole ε on the network and marginals, priced ε
    same = run_privbayes(data, PrivBayesParams(epsilon=eps, rows=rows_param), ctx(11)).metadata["privbayes"]
    assert "records" not in same["epsilon_split"] and same["records"] == n and "replace_one" not in same
    assert registry.get("privbayes").epsilon_cost(PrivBayesParams(epsilon=eps), SCHEMA) == eps


def test_a_table_no_pair_fits_spends_nothing_on_the_network_under_add_remove_either():
    """τ from the noisy count: 60 records at ε = 0.5 fit no pair; all of ε − ε/20 measures the
    d 1-way counts, the warning names the noisy n (never n), and the price stays 2·(ε − ε/20)."""
    data = MethodInput(SCHEMA, table(60, seed=7))
    out = run_privbayes(data, PrivBayesParams(epsilon=0.5, neighbouring="add_remove"), ctx(3))
    meta, g = out.metadata["privbayes"], out.guarantees
    assert meta["independent_columns"] is True and meta["epsilon_split"]["structure"] == 0.0
    assert meta["epsilon_split"]["conditionals"] == pytest.approx(0.5 * 0.95, rel=1e-9)
    assert all(m["epsilon"] == pytest.approx(0.5 * 0.95 / 4) for m in meta["measurements"])
    warning = next(w for w in g["warnings"] if "independent" in w)
    assert "n = a noisy" in warning and "n = 60" not in warning
    assert meta["replace_one"]["epsilon_delivered"] <= meta["replace_one"]["epsilon"] == pytest.approx(0.95)


def test_an_epsilon_too_small_for_the_count_or_the_marginals_is_refused_before_any_run():
    """The count and the marginals are calibrated in the check: a 422 naming epsilon, never a 500."""
    spec = registry.get("privbayes")
    with pytest.raises(registry.MethodInputError, match="noisy count of records"):
        spec.check(PrivBayesParams(epsilon=1e-10, neighbouring="add_remove"), SCHEMA, None)
    spec.check(PrivBayesParams(epsilon=0.01, neighbouring="add_remove"), SCHEMA, None)
    assert math.isclose(spec.epsilon_cost(PrivBayesParams(epsilon=0.01, neighbouring="add_remove"), SCHEMA),
                        0.019)


@pytest.mark.parametrize("relation", ["replace_one", "add_remove"])
def test_counts_of_millions_are_noised_at_the_largest_epsilon(relation):
    """Counts are integers, noised with noise's integer option: unrounded on a grid γ ≤ 1 that is
    never so fine that a count up to MAX_RECORDS leaves the exact float range (2^52 steps).
    Rounded onto the grid of least γ·t, ε = 100 put each marginal on γ ≈ 2^-31 (add/remove;
    2^-30 replace-one): 700,000 identical records, one cell of that count, failed the job with an
    internal error after the debit (2.1 million under replace-one)."""
    n = 700_000
    schema = [ColumnInfo("a", "categorical", categories=("x", "y")), ColumnInfo("b", "categorical", categories=("u", "v"))]
    frame = pd.DataFrame({"a": np.full(n, "x", dtype=object), "b": np.full(n, "u", dtype=object)})
    params = PrivBayesParams(epsilon=100.0, neighbouring=relation, rows=50)
    meta = run_privbayes(MethodInput(schema, frame), params, ctx(2)).metadata["privbayes"]
    for mm in meta["measurements"]:
        assert mm["integer_values"] and MAX_RECORDS < 2**52 * mm["grid"] and mm["grid"] <= 1.0
        assert mm["epsilon_delivered"] <= mm["epsilon"]
    if relation == "add_remove":
        assert meta["records_count"]["grid"] * 2**52 > MAX_RECORDS
        assert abs(meta["records_estimate"] - n) < 40 * 20 / 100
        assert meta["replace_one"]["epsilon_delivered"] <= meta["replace_one"]["epsilon"] == pytest.approx(190.0)


def _published(result) -> str:
    metrics = {k: v for k, v in result.metrics.items() if k != "seconds"}  # durations: outside ε
    body = {"metadata": result.metadata, "guarantees": result.guarantees, "metrics": metrics,
            "columns": [c.__dict__ for c in result.columns], "frame": result.frame.astype(str).to_dict("list")}
    return json.dumps(body, sort_keys=True, default=str)


@pytest.mark.parametrize("rows, eps", [(None, 2.0), (70, 2.0), (None, 0.05)])
def test_add_remove_neighbours_publish_the_same_release_field_by_field(rows, eps, monkeypatch):
    """The mechanisms' outputs held fixed (every noisy count a pattern of its shape plus the
    real mechanism's record of a run on zeros, every choice uniform from the job's random
    source): the table and the table with one record removed publish the same rows, metadata,
    metrics and guarantees — nothing read n, or anything else, outside the mechanisms. The
    totals the simplex projection is given are compared too (the sampled rows can hide a
    changed total), and at ε = 0.05 the noise warning, which quotes records per cell, fires.
    Under replace_one the same harness sees n differ (its size, the score's sensitivity): the
    check has teeth."""
    from app.privacy.dp_release import privbayes, privbayes_conditionals, privbayes_network

    real = privbayes.laplace_mechanism

    def fixed(values, sensitivity, coords, epsilon, rng, **options):
        _, record = real(np.zeros(np.size(values)), sensitivity, coords, epsilon, rng, **options)
        return np.asarray(150.0 + (np.arange(np.size(values)) * 7) % 11, dtype=float), record

    totals: list[float] = []
    real_projection = privbayes_conditionals.project_to_simplex

    def projection(values, total):
        totals.append(float(total))
        return real_projection(values, total)

    monkeypatch.setattr(privbayes, "laplace_mechanism", fixed)
    monkeypatch.setattr(privbayes_conditionals, "project_to_simplex", projection)
    monkeypatch.setattr(privbayes_network.ExactSampler, "exponential", lambda self, scores, eta: self.uniform(len(scores)))

    def published(data: MethodInput) -> str:
        totals.clear()
        result = run_privbayes(data, params, ctx(5))
        assert totals  # the default consistency projects every measured marginal
        return _published(result) + json.dumps(totals)

    frame = table(300, seed=9)
    params = PrivBayesParams(epsilon=eps, neighbouring="add_remove", rows=rows)
    base = published(MethodInput(SCHEMA, frame))
    assert frame["c"].isna().any()
    if eps < 1:
        assert "noise's scale" in base  # noise_dominated's warning is part of what is compared
    for drop in (0, int(np.flatnonzero(frame["c"].isna())[0]), len(frame) - 1):
        neighbour = frame.drop(index=drop).reset_index(drop=True)
        assert published(MethodInput(SCHEMA, neighbour)) == base, drop
    replace = [run_privbayes(MethodInput(SCHEMA, f), PrivBayesParams(epsilon=2.0, rows=rows), ctx(5))
               for f in (frame, frame.iloc[1:].reset_index(drop=True))]
    assert _published(replace[0]) != _published(replace[1])
