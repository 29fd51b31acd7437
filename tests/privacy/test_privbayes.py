"""privbayes: ε adds up to the job's ε (δ = 0), the R score is exact and moves by at most
3/n + 2/n² when one record is replaced, the network is a DAG of at most `degree` parents
within the θ-useful cells, on Adult at a large ε the synthetic marginals are close and a
known strong pair is linked, and a seeded run is the same table twice."""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest

from app.privacy import registry
from app.privacy.context import RunContext
from app.privacy.data import ColumnInfo, MethodInput
from app.privacy.dp_release.marginal_domains import build_columns
from app.privacy.dp_release.privbayes import PrivBayesParams, run_privbayes
from app.privacy.dp_release.privbayes_conditionals import measured_sets
from app.privacy.dp_release.privbayes_network import candidate_count, parent_sets, r_score, score_sensitivity
from app.privacy.dp_release.privbayes_params import MAX_CANDIDATES
from app.privacy.arrays import project_to_simplex as simplex
from app.privacy.experiments.dp_release_evaluation import marginal_tvd
from app.privacy.experiments.dp_release_tasks import load_task
from app.privacy.registry import MethodInputError
from app.privacy.rng import SecureRandom


def ctx(seed: int | None = 1) -> RunContext:
    return RunContext(SecureRandom(seed=seed))


def table(n: int, seed: int = 0) -> pd.DataFrame:
    """a → b (strongly), c independent, x depends on a, a few missing cells in c."""
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 3, n)
    b = np.where(rng.random(n) < 0.8, a, rng.integers(0, 3, n))
    c = rng.integers(0, 4, n).astype(float)
    c[rng.random(n) < 0.3] = np.nan
    x = np.clip(np.rint(20 + 15 * a + rng.normal(0, 5, n)), 0, 60).astype(int)
    return pd.DataFrame({"a": np.array(list("pqr"))[a], "b": np.array(list("uvw"))[b],
                         "c": pd.Series(c).map(lambda v: None if np.isnan(v) else "k" + str(int(v))), "x": x})


SCHEMA = [ColumnInfo("a", "categorical", categories=tuple("pqr")),
          ColumnInfo("b", "categorical", categories=tuple("uvw")),
          ColumnInfo("c", "categorical", categories=("k0", "k1", "k2", "k3")),
          ColumnInfo("x", "numeric", bounds=(0, 60), integer=True)]


def exact_s(x: np.ndarray, p: np.ndarray) -> Fraction:
    """2n²·R from its definition, in rationals: R = ½ Σ |P[x, π] − P[x]·P[π]|."""
    n = len(x)
    joint = pd.crosstab(x, p)
    r = Fraction(0)
    for xv in joint.index:
        for pv in joint.columns:
            r += abs(Fraction(int(joint.loc[xv, pv]), n)
                     - Fraction(int(joint.loc[xv].sum()), n) * Fraction(int(joint[pv].sum()), n))
    return 2 * n * n * r / 2


def test_the_score_is_2n2_R_exactly_and_moves_by_at_most_6n_plus_4_when_a_record_is_replaced():
    rng = np.random.default_rng(3)
    worst = 0.0
    for trial in range(300):
        n = int(rng.integers(2, 40))
        kx, kp = int(rng.integers(1, 5)), int(rng.integers(1, 7))
        # skewed tables too: most records in one cell, where a replacement moves the most
        x = np.where(rng.random(n) < 0.6, 0, rng.integers(0, kx, n))
        p = np.where(rng.random(n) < 0.6, 0, rng.integers(0, kp, n))
        s = r_score(x, kx, p, kp, n)
        if trial < 60:
            assert s == exact_s(x, p)
        i = int(rng.integers(0, n))
        x2, p2 = x.copy(), p.copy()
        x2[i], p2[i] = rng.integers(0, kx), rng.integers(0, kp)
        moved = abs(r_score(x2, kx, p2, kp, n) - s)
        assert moved <= score_sensitivity(n) == 6 * n + 4
        # in R's units: the paper's 3/n + 2/n²
        assert Fraction(moved, 2 * n * n) <= Fraction(3, n) + Fraction(2, n * n)
        worst = max(worst, moved / score_sensitivity(n))
    assert worst > 0.5  # the bound is not loose by orders of magnitude
    # no parents: no dependence, score 0
    assert r_score(np.array([0, 1, 1, 2]), 3, np.zeros(4, dtype=np.int64), 1, 4) == 0


def test_the_score_sensitivity_holds_on_every_neighbour_of_every_small_table_and_on_skewed_large_ones():
    """Adversarial neighbours, not random ones: every table of 2-5 records on 2×2, 2×3 and 3×3
    domains with every replacement of one record; and at n = 10^5 one huge cell (n − 1 records)
    or two halves, the odd record moved into the big cell's row, column or neither, and a record
    of the big cell moved everywhere. The worst move is about 4n (the huge cell's odd record
    moved off its row and column), inside 6n + 4."""
    worst = Fraction(0)
    for kx, kp in [(2, 2), (2, 3), (3, 3)]:
        cells = list(itertools.product(range(kx), range(kp)))
        for n in range(2, 6):
            for chosen in itertools.combinations_with_replacement(range(len(cells)), n):
                x = np.array([cells[c][0] for c in chosen])
                p = np.array([cells[c][1] for c in chosen])
                s = r_score(x, kx, p, kp, n)
                for i in sorted(set(chosen)):
                    at = chosen.index(i)
                    for cell in cells:
                        x2, p2 = x.copy(), p.copy()
                        x2[at], p2[at] = cell
                        moved = abs(r_score(x2, kx, p2, kp, n) - s)
                        assert moved <= score_sensitivity(n), (kx, kp, chosen, at, cell, moved)
                        worst = max(worst, Fraction(moved, score_sensitivity(n)))
    assert worst > Fraction(1, 2)
    n = 100_000
    for kx, kp in [(2, 2), (3, 5)]:
        for shape in ("one huge cell", "two halves"):
            x, p = np.zeros(n, dtype=np.int64), np.zeros(n, dtype=np.int64)
            if shape == "one huge cell":
                x[-1], p[-1] = kx - 1, kp - 1
            else:
                x[n // 2:], p[n // 2:] = 1, 1
            s = r_score(x, kx, p, kp, n)
            moves = []
            for i in (0, n - 1):
                for cell in itertools.product(range(kx), range(kp)):
                    x2, p2 = x.copy(), p.copy()
                    x2[i], p2[i] = cell
                    moves.append(abs(r_score(x2, kx, p2, kp, n) - s))
            assert max(moves) <= score_sensitivity(n)
            if shape == "one huge cell":
                assert max(moves) >= 4 * n - 12  # the bound is within 1.5× of the worst case


def test_the_score_is_exact_in_int64_at_large_n():
    n = 2_000_000
    x = np.zeros(n, dtype=np.int64)
    x[: n // 2] = 1
    # X = Π: S = Σ|n·c − c·c| over the 4 cells = 2·(n·n/2 − n²/4) + 2·(n²/4) = n²
    assert r_score(x, 2, x, 2, n) == n * n


def test_epsilon_adds_up_to_the_jobs_and_each_round_and_marginal_gets_its_share():
    data = MethodInput(SCHEMA, table(3000))
    params = PrivBayesParams(epsilon=1.3, structure_share=0.25, degree=2)
    r = run_privbayes(data, params, ctx())
    meta, g = r.metadata["privbayes"], r.guarantees
    d = 4
    split = meta["epsilon_split"]
    assert split["structure"] == pytest.approx(1.3 * 0.25, rel=1e-15)
    assert split["structure"] + split["conditionals"] <= 1.3
    assert split["structure"] + split["conditionals"] == pytest.approx(1.3, rel=1e-9)
    assert [s["epsilon"] for s in meta["selections"]] == pytest.approx([1.3 * 0.25 / (d - 1)] * (d - 1))
    shares = {m["epsilon"] for m in meta["measurements"]}
    assert len(shares) == 1 and shares.pop() == pytest.approx(1.3 * 0.75 / len(meta["measurements"]))
    assert all(m["epsilon_delivered"] <= m["epsilon"] for m in meta["measurements"])
    # Laplace scale ≈ 2m/((1 − β)ε) counts
    m = len(meta["measurements"])
    assert all(m_["laplace_scale"] == pytest.approx(2 * m / (1.3 * 0.75), rel=0.01) for m_ in meta["measurements"])
    assert g["notion"] == "central_dp" and g["epsilon"] == 1.3 and g["delta"] == 0.0
    assert g["private"] is False  # seeded: test mode
    assert registry.get("privbayes").epsilon_cost(params, SCHEMA) == 1.3


def test_the_network_is_a_dag_of_at_most_k_theta_useful_parents():
    data = MethodInput(SCHEMA, table(4000, seed=2))
    sizes = {c.name: c.size for c in build_columns(PrivBayesParams(epsilon=1.0), SCHEMA)}
    for degree, theta, eps in [(1, 4.0, 1.0), (2, 4.0, 2.0), (3, 0.0, 1.0), (2, 4.0, 0.05)]:
        meta = run_privbayes(data, PrivBayesParams(epsilon=eps, degree=degree, theta=theta),
                             ctx(degree)).metadata["privbayes"]
        seen: list[str] = []
        for node in meta["network"]:
            assert node["attribute"] not in seen and set(node["parents"]) <= set(seen)
            assert len(node["parents"]) <= degree
            cells = sizes[node["attribute"]] * math.prod(sizes[p] for p in node["parents"])
            if node["parents"] and theta:
                assert cells <= meta["useful_cells"]
            seen.append(node["attribute"])
        assert sorted(seen) == sorted(sizes)
        if theta == 0:
            assert meta["useful_cells"] is None
            # without the θ rule every attribute after the k-th gets k parents
            assert [len(nd["parents"]) for nd in meta["network"]] == [min(i, degree) for i in range(4)]


def test_parent_sets_are_the_maximal_useful_ones():
    sizes = {"x": 3, "a": 4, "b": 5, "c": 10}
    chosen = ["a", "b", "c"]
    # τ = 60: {a, b} (60 cells) fits, {a, c} (120) does not; {c} (30) alone is maximal
    assert parent_sets("x", chosen, sizes, 2, 60.0) == [("a", "b"), ("c",)]
    # τ = 2: not even x alone: the empty set
    assert parent_sets("x", chosen, sizes, 2, 2.0) == [()]
    assert parent_sets("x", chosen, sizes, 1, math.inf) == [("a",), ("b",), ("c",)]
    assert parent_sets("x", [], sizes, 2, math.inf) == [()]


def test_a_set_inside_a_later_one_is_read_from_it():
    network = [("a", ()), ("b", ("a",)), ("c", ("a", "b")), ("d", ("c",))]
    measured, source = measured_sets(network)
    assert measured == [2, 3] and source == [2, 2, 2, 3]


def test_simplex_is_the_projection_onto_tables_of_n_records():
    rng = np.random.default_rng(1)
    for _ in range(50):
        y = rng.normal(5, 10, int(rng.integers(1, 30)))
        n = float(rng.integers(1, 200))
        p = simplex(y, n)
        assert p.min() >= 0 and p.sum() == pytest.approx(n)
        # KKT: one λ with p = y − λ where p > 0 and y ≤ λ where p = 0
        lam = (y - p)[p > 0]
        assert np.allclose(lam, lam[0]) and np.all(y[p == 0] <= lam[0] + 1e-9)


def test_missing_levels_come_from_the_data_only_when_measured_above_the_noise():
    data = MethodInput(SCHEMA, table(5000, seed=4))
    out = run_privbayes(data, PrivBayesParams(epsilon=2.0), ctx(5))
    meta = out.metadata["privbayes"]
    assert meta["missing_released"] == {"a": False, "b": False, "c": True, "x": False}
    frame = out.frame
    assert frame[["a", "b", "x"]].notna().all().all()
    assert 0.2 < frame["c"].isna().mean() < 0.4  # 30 % in the data


def test_seeded_runs_are_the_same_table_and_another_seed_another():
    data = MethodInput(SCHEMA, table(2000, seed=6))
    params = PrivBayesParams(epsilon=1.0, rows=700)
    one, two, other = (run_privbayes(data, params, ctx(s)) for s in (9, 9, 10))
    pd.testing.assert_frame_equal(one.frame, two.frame)
    assert one.metadata == two.metadata and one.guarantees == two.guarantees
    assert len(one.frame) == 700 and not one.frame.equals(other.frame)
    assert list(one.frame.columns) == ["a", "b", "c", "x"]
    assert one.frame["x"].dtype.kind == "i" and one.frame["x"].between(0, 60).all()


def test_too_many_candidates_are_refused_naming_degree_and_columns():
    wide = [ColumnInfo(f"c{i}", "categorical", categories=("0", "1")) for i in range(60)]
    assert candidate_count(60, 3) > MAX_CANDIDATES
    with pytest.raises(MethodInputError, match="lower degree or release fewer columns"):
        registry.get("privbayes").check(PrivBayesParams(epsilon=1.0, degree=3), wide, None)
    registry.get("privbayes").check(PrivBayesParams(epsilon=1.0, degree=1), wide, None)


@pytest.fixture(scope="module")
def adult() -> MethodInput:
    data = load_task("adult_income").data
    return MethodInput(data.columns, data.frame.sample(n=12_000, random_state=0).reset_index(drop=True))


def test_adult_at_a_large_epsilon_links_a_strong_pair_and_keeps_the_marginals(adult):
    """ε = 50: the noise is negligible; the synthetic 1-way marginals are as close as sampling
    allows and every release links relationship with sex or marital-status, or education with
    education-num (near-functional pairs)."""
    strong = [{"relationship", "sex"}, {"relationship", "marital-status"}, {"education", "education-num"}]
    for seed in (1, 2):
        out = run_privbayes(adult, PrivBayesParams(epsilon=50.0), ctx(seed))
        edges = [{node["attribute"], p} for node in out.metadata["privbayes"]["network"] for p in node["parents"]]
        assert any(pair in edges for pair in strong), edges
        one, two = marginal_tvd(adult.frame, out.frame, adult.columns)
        assert one < 0.02 and two < 0.06, (one, two)
    # and at ε = 1 still far better than independent columns would be on the 2-way marginals
    one, two = marginal_tvd(adult.frame, run_privbayes(adult, PrivBayesParams(epsilon=1.0), ctx(3)).frame,
                            adult.columns)
    assert one < 0.04 and two < 0.1, (one, two)


def test_when_no_two_columns_fit_tau_the_release_says_its_columns_are_independent_and_spends_all_on_them():
    """Breast Cancer at ε = 1 (683 records, 9 columns of 11 levels, the class of 4) has τ = 6
    cells, its smallest pair 44: no column can get a parent, whatever the data, so the network
    is no network. That is known before
    the data are read (n, ε, θ, the domains): no ε goes to choosing it — its order is drawn
    uniformly — all of ε measures the d 1-way marginals, and a warning says the synthetic
    columns are independent and what would link them."""
    data = MethodInput(SCHEMA, table(60, seed=7))
    # τ = 60·0.7·0.5/(2·4·4) ≈ 0.66 cells: below any pair (the smallest, a × b: 4 × 4 = 16)
    out = run_privbayes(data, PrivBayesParams(epsilon=0.5), ctx(3))
    meta, g = out.metadata["privbayes"], out.guarantees
    assert all(node["parents"] == [] for node in meta["network"])
    assert meta["epsilon_split"]["structure"] == 0.0 and g["epsilon_split"]["structure"] == 0.0
    assert meta["epsilon_split"]["conditionals"] == pytest.approx(0.5, rel=1e-9)
    assert meta["epsilon_split"]["conditionals"] <= 0.5
    assert len(meta["measurements"]) == 4
    assert all(m["epsilon"] == pytest.approx(0.5 / 4) for m in meta["measurements"])
    assert all(s["epsilon"] == 0.0 for s in meta["selections"])
    warning = " ".join(g["warnings"])
    assert "independent" in warning and "16 cells" in warning and "theta" in warning and "epsilon" in warning
    assert meta["independent_columns"] is True  # a flag; the reason is the warning
    assert any("no data read" in s for s in g["statements"])
    # where a pair fits, the structure keeps its share and no such warning
    linked = run_privbayes(MethodInput(SCHEMA, table(3000)), PrivBayesParams(epsilon=1.0), ctx(3))
    assert linked.metadata["privbayes"]["epsilon_split"]["structure"] == pytest.approx(0.3)
    assert not any("independent" in w for w in linked.guarantees["warnings"])
    assert linked.metadata["privbayes"]["independent_columns"] is False
    assert any("the exponential mechanism, 3 rounds" in s for s in linked.guarantees["statements"])


def test_one_column_has_no_network_to_choose_and_says_so():
    data = MethodInput(SCHEMA, table(500))
    out = run_privbayes(data, PrivBayesParams(epsilon=1.0, columns=["a"]), ctx(4))
    meta, g = out.metadata["privbayes"], out.guarantees
    assert list(out.frame.columns) == ["a"] and meta["selections"] == []
    assert meta["epsilon_split"]["structure"] == 0.0 and meta["independent_columns"] is False
    assert any("one column: no network to choose" in s for s in g["statements"])
    assert not any("0 rounds" in s for s in g["statements"])


def test_noise_alone_rarely_releases_a_missing_level():
    """A column without missing values: its missing level's noisy count is pure Laplace noise
    (a sum over c cells). 5 standard deviations of a single Laplace are passed with chance
    ½·e^(−5√2) ≈ 4·10⁻⁴ — over 86 columns and many releases an all-noise missing level showed
    (CoIL, acceptance run). The threshold holds the chance at 10⁻⁶ for any c, by its Chernoff
    bound; measured over 10⁶ draws for small c (where 5σ failed), the bound's y checked for each."""
    from app.privacy.dp_release.privbayes_conditionals import laplace_sum_threshold
    from app.privacy.dp_release.privbayes_params import MISSING_FALSE_RELEASE

    rng = np.random.default_rng(3)
    for cells in (1, 2, 8, 64):
        y = laplace_sum_threshold(1.0, cells)
        assert y > 0
        if cells == 1:  # the exact tail ½·e^(−y)
            assert 0.5 * math.exp(-y) == pytest.approx(MISSING_FALSE_RELEASE)
        else:  # the Chernoff bound at y is the target (the smallest such y)
            u = (math.sqrt(cells**2 + y**2) - cells) / y
            assert -u * y - cells * math.log1p(-u * u) == pytest.approx(math.log(MISSING_FALSE_RELEASE))
        if cells <= 8:
            sums = rng.laplace(0.0, 1.0, size=(1_000_000, cells)).sum(axis=1)
            assert (sums >= y).sum() <= 3  # the former rule: ≈ 420 at c = 1
        # never below the former 5σ rule, which releasing real missing levels was measured with
        assert y >= 5.0 * math.sqrt(2.0 * cells) - 1e-9
    assert laplace_sum_threshold(3.0, 4) == pytest.approx(3.0 * laplace_sum_threshold(1.0, 4))


def spy_on_rounds(monkeypatch) -> list[tuple[list[Fraction], Fraction]]:
    """Every exponential-mechanism draw's (scores, η), as the structure makes them."""
    from app.privacy.dp_release import privbayes_network

    calls = []
    original = privbayes_network.ExactSampler.exponential

    def spy(self, scores, eta):
        calls.append((list(scores), eta))
        return original(self, scores, eta)

    monkeypatch.setattr(privbayes_network.ExactSampler, "exponential", spy)
    return calls


def test_each_round_is_the_exponential_mechanism_at_its_share_with_the_score_sensitivity(monkeypatch):
    """The structure's ε rests on η: every round samples ∝ exp(η·S) with η = ε_round / (2·(6n + 4))
    over the exact S of every candidate, ε_round = β·ε/(d − 1). The metadata reports ε_round, not
    η: a doubled η (a round 2·ε_round-DP) passed every other test."""
    from app.privacy.dp_release.marginal_domains import encode_frame
    from app.privacy.dp_release.privbayes_network import parent_index, useful_cells

    calls = spy_on_rounds(monkeypatch)
    n, eps, beta, d = 3000, 1.3, 0.25, 4
    data = MethodInput(SCHEMA, table(n))
    params = PrivBayesParams(epsilon=eps, structure_share=beta, degree=2)
    meta = run_privbayes(data, params, ctx()).metadata["privbayes"]
    per_round = Fraction(eps) * Fraction(beta) / (d - 1)
    assert len(calls) == d - 1
    assert all(eta == per_round / (2 * (6 * n + 4)) for _, eta in calls)
    # the scores are S of each candidate, in the order the network was built
    columns = build_columns(params, SCHEMA)
    codes, sizes = encode_frame(columns, data.frame), {c.name: c.size for c in columns}
    tau = useful_cells(n, eps, beta, d, params.theta)
    chosen = [meta["network"][0]["attribute"]]
    for (scores, _), node in zip(calls, meta["network"][1:]):
        candidates = [(x, ps) for x in sizes if x not in chosen for ps in parent_sets(x, chosen, sizes, 2, tau)]
        assert scores == [exact_s(codes[x], parent_index(codes, ps, sizes, n)) for x, ps in candidates]
        assert max(scores) > 0
        chosen.append(node["attribute"])


def test_a_release_warns_when_a_marginal_is_mostly_noise():
    """θ = 0 lifts the usefulness rule: at ε = 0.5, 3,000 records over a 4 × 5 × 33 marginal are
    ~4.5 a cell against a Laplace scale of ~11 — the release says so and names theta; the default
    θ = 4 measures nothing below its noise there and says nothing. At ε = 0.05 even θ = 4's
    1-way counts of the 33-level column (91 a cell, scale 160) are mostly noise: said, without theta."""
    data = MethodInput(SCHEMA, table(3000))
    for eps, theta, warned in ((0.5, 0, True), (0.5, 4, False), (0.05, 4, True)):
        out = run_privbayes(data, PrivBayesParams(epsilon=eps, theta=theta), ctx(5))
        measurements = out.metadata["privbayes"]["measurements"]
        weak = [m for m in measurements if 3000 / m["cells"] < m["laplace_scale"]]
        warning = [w for w in out.guarantees["warnings"] if "mostly noise" in w]
        assert bool(weak) == warned and len(warning) == int(warned), (eps, theta, warning)
        if warned:
            assert warning[0].startswith(f"{len(weak)} of the {len(measurements)} measured marginals")
            assert ("larger theta" in warning[0]) == (theta < 1)
