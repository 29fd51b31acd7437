"""safepub (SafePub / Li et al.'s sampled k-anonymization): k and β against an independent
computation of Li et al.'s δ(k), the exact sampler's rate, the scores' sensitivities by brute force
over every add/remove neighbour of small tables, and whole runs: every released class ≥ k,
only the quasi-identifiers released, the ε split, seeded determinism."""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from app.privacy.anonymity.axes import build_axes
from app.privacy.anonymity.lattice import Columns
from app.privacy.anonymity.safepub import run_safepub
from app.privacy.anonymity.safepub_params import (
    SafePubParams, arx_k, bernoulli_sample, beta_of, delta_of_k, log_delta_of_k, smallest_k,
)
from app.privacy.anonymity.safepub_scores import sensitivity
from app.privacy.anonymity.safepub_search import (
    Scorer, categorical_costs, exhaustive, lattice_nodes, numeric_costs, predecessors, random_walk,
    score_threshold,
)
from app.privacy.context import RunContext
from app.privacy.data import ColumnInfo, MethodInput
from app.privacy.rng import SecureRandom


# ----------------------------------------------------------------------------- δ(k) and k
def independent_delta(k: int, eps: float, n_max: int = 1500) -> float:
    """Li et al.'s δ(k) as written (γ from its formula, not 1 − e^(−2ε)), the tails summed from
    binomial masses in linear space, n = n_m … n_max (far past the maximum here), no Chernoff cut."""
    beta = 1 - math.exp(-eps)
    gamma = (math.exp(eps) - 1 + beta) / math.exp(eps)
    n = np.arange(max(math.ceil(k / gamma - 1), 1), n_max)
    j = np.arange(n_max + 1)
    masses = stats.binom.pmf(j[None, :], n[:, None], beta)
    tails = np.where(j[None, :] > np.floor(gamma * n)[:, None], masses, 0.0).sum(axis=1)
    return float(tails.max())


def arx_loop(delta: float, eps: float, start: int) -> int:
    """ARX's ParameterCalculation.calculateK loop on the independent δ(k), from k = start (δ(k) only
    falls as k grows, and δ(start − 1) ≥ δ is checked by the caller)."""
    k, delta_k = start, math.inf
    while not delta_k < delta:
        delta_k = independent_delta(k, eps)
        k += 1
    return k


# (0.2, 9.3e-7): k = 60, whose δ(k) peaks at an n past where a cut with too low a Chernoff bound
# (a doubled exponent) stops: that would understate it by 8e-7 relatively
@pytest.mark.parametrize("eps_anon, delta", [(0.9, 1e-5), (0.45, 1e-5), (1.8, 1e-6), (0.9, 1e-3), (2.5, 1e-4),
                                             (0.2, 9.3e-7)])
def test_k_is_the_smallest_whose_delta_is_within_and_matches_an_independent_sum(eps_anon, delta):
    k = smallest_k(delta, eps_anon)
    assert delta_of_k(k, eps_anon) <= delta < delta_of_k(k - 1, eps_anon)
    for j in (k - 1, k):
        ours, plain = delta_of_k(j, eps_anon), independent_delta(j, eps_anon)
        assert ours >= plain * (1 + 1e-10)  # never understated: rounded up past float errors (~1e-13)
        assert ours == pytest.approx(plain, rel=1e-6)
    assert independent_delta(k, eps_anon) <= delta < independent_delta(k - 1, eps_anon)
    assert independent_delta(k - 3, eps_anon) >= delta
    assert arx_loop(delta, eps_anon, k - 2) == k + 1 == arx_k(delta, eps_anon)  # ARX's loop: one more


def test_hand_values():
    # SafePub's setting ε = 1, ε_search = 0.1, δ = 10⁻⁵: ε_anon = 0.9
    assert beta_of(0.9) == pytest.approx(1 - math.exp(-0.9))
    assert smallest_k(1e-5, 0.9) == 58 and arx_k(1e-5, 0.9) == 59
    assert smallest_k(1e-5, 0.45) == 51 and smallest_k(1e-5, 1.8) == 91
    # k = 1: δ(1) is the chance the lone record is sampled, P(Bin(1, β) > γ) = β
    assert delta_of_k(1, 0.9) == pytest.approx(beta_of(0.9), rel=1e-8)


def exact_log_tail(n: int, m: int, p: float) -> float:
    """ln P(Bin(n, p) > m) summed exactly: p as the rational the float is, the masses as integers."""
    a, d = Fraction(p).numerator, Fraction(p).denominator
    total, c = 0, math.comb(n, m + 1)
    for j in range(m + 1, n + 1):
        total += c * a**j * (d - a) ** (n - j)
        c = c * (n - j) // (j + 1)
    return math.log(total) - n * math.log(d)


# the first two below SCIPY_FLOOR (e^-474, e^-514: summed in log space), the others scipy's
# (2000, 1850, 0.9): the masses fall by ~0.72 down to ~0.52 a term, so the 40 summed leave ~1e-8 of
# the tail to the geometric bound on the rest
@pytest.mark.parametrize("n, m, p", [(2000, 1800, 0.5934), (1500, 1050, 0.3), (800, 792, 0.95), (60, 55, 0.6),
                                     (2000, 1850, 0.9)])
def test_binomial_tails_in_log_space_bound_an_exact_sum_tightly(n, m, p):
    from app.privacy.anonymity.safepub_params import _log_tail_by_terms, log_binomial_tail

    exact = exact_log_tail(n, m, p)
    by_terms = float(_log_tail_by_terms(np.array([float(n)]), np.array([float(m)]), p)[0])
    assert exact <= by_terms <= exact + 1e-9  # an upper bound (δ(k) is rounded up), and a tight one
    assert float(log_binomial_tail(np.array([n]), np.array([float(m)]), p)[0]) == pytest.approx(exact, abs=1e-9)


@pytest.mark.parametrize("eps_anon, k", [(3.0, 13838), (3.5, 23931), (4.0, 38886)])
def test_delta_k_does_not_underflow_where_the_tails_pass_1e_minus_249(eps_anon, k):
    """scipy's binomial sf returns 0 below ~1e-249: taken as the tail, δ(k) read 0 (3.5, 4.0) or
    a tail 10³³ times too small (3.0) — a k too small for the δ asked. In log space δ(k) falls
    smoothly (by ~2–5 % a step here) and stays positive."""
    d = [delta_of_k(j, eps_anon) for j in (k - 1, k, k + 1)]
    assert 0 < d[2] <= d[1] <= d[0] < 1e-248
    assert d[0] / d[1] < 1.1 and d[1] / d[2] < 1.1



def test_a_delta_k_below_the_smallest_float_is_stated_as_it_never_as_0():
    """ln δ(39,000) at ε_anon = 3 is ≈ −1609: e^that is 0 in float64, and δ(k) is rounded up, so
    the stated δ(k) is the smallest positive float (a δ(k) of 0 would state δ = 0)."""
    assert log_delta_of_k(39_000, 3.0) < math.log(5e-324) - 100
    assert delta_of_k(39_000, 3.0) == 5e-324

@pytest.mark.parametrize("delta", [1e-260, 1e-300, 1e-320, 5e-324])
def test_a_tiny_delta_gives_a_positive_stated_delta_k_within_it(delta):
    from app.privacy.anonymity.safepub import calibration

    for epsilon in (1.0, 4.0):
        params = SafePubParams(epsilon=epsilon, delta=delta)
        _, k, delta_k = calibration(params)
        assert 0 < delta_k <= delta < delta_of_k(k - 1, float(params.epsilon_anon))


def test_epsilon_anon_is_dyadic_and_at_most_the_rest():
    p = SafePubParams(epsilon=1.0, search_share=0.1)
    assert p.epsilon_anon <= Fraction(1.0) - Fraction(1.0) * Fraction(0.1)
    assert float(p.epsilon_anon) == pytest.approx(0.9, abs=1e-15)
    assert p.epsilon_anon.denominator & (p.epsilon_anon.denominator - 1) == 0


# ------------------------------------------------------------------------------- sampling
def test_records_are_kept_at_rate_beta():
    n = 300_000
    kept = bernoulli_sample(n, Fraction(0.9), SecureRandom())
    beta = beta_of(0.9)
    assert abs(kept.sum() - n * beta) <= 5 * math.sqrt(n * beta * (1 - beta))


# ------------------------------------------------------------------- scores, sensitivities
HIER = {"a": pd.DataFrame({"l0": ["a1", "a2", "a3", "a4"], "l1": ["A", "A", "B", "B"], "l2": ["*"] * 4}),
        "b": pd.DataFrame({"l0": ["b1", "b2", "b3"], "l1": ["*"] * 3})}
INFOS = [ColumnInfo(name="a", type="categorical", role="quasi_identifier"),
         ColumnInfo(name="b", type="categorical", role="quasi_identifier"),
         ColumnInfo(name="x", type="numeric", role="quasi_identifier", bounds=(0.0, 10.0), integer=True)]
DOMAIN = list(itertools.product(["a1", "a2", "a3", "a4"], ["b1", "b2", "b3"], [0, 3, 7, 10]))


def _parts(frame: pd.DataFrame):
    """(columns, costs, scored rows, top node) of a small table: every domain value is present
    once at the end so the trees (codes) cover the whole domain; only the first len(frame) rows
    are scored."""
    full = pd.concat([frame[["a", "b", "x"]], pd.DataFrame(DOMAIN, columns=["a", "b", "x"])], ignore_index=True)
    trees, _ = build_axes(full, INFOS, HIER, numeric="hierarchy", categorical="hierarchy", auto_levels=2)
    costs = [categorical_costs(trees[0], HIER["a"]), categorical_costs(trees[1], HIER["b"]), numeric_costs(trees[2])]
    rows = np.zeros(len(full), dtype=bool)
    rows[:len(frame)] = True
    return Columns(trees), costs, rows, tuple(t.height for t in trees)


def _scorer(frame: pd.DataFrame, metric: str, k_score: int):
    cols, costs, rows, top = _parts(frame)
    return Scorer(cols, costs, metric, k_score, rows), top


@pytest.mark.parametrize("metric", ["granularity", "discernibility"])
@pytest.mark.parametrize("k_score", [1, 2, 3, 5])
def test_every_add_remove_neighbour_moves_every_score_within_the_sensitivity(metric, k_score):
    rng = np.random.default_rng(7 * k_score + len(metric))
    bound = sensitivity(metric, 3, k_score)
    worst = Fraction(0)
    for _ in range(4):
        n = int(rng.integers(1, 9))
        base = pd.DataFrame([DOMAIN[i] for i in rng.integers(0, len(DOMAIN), n)], columns=["a", "b", "x"])
        # adding any domain record, or removing any record (both directions of the relation)
        neighbours = [pd.concat([base, pd.DataFrame([r], columns=base.columns)], ignore_index=True) for r in DOMAIN]
        neighbours += [base.drop(index=i).reset_index(drop=True) for i in range(n) if n > 1]
        scorer, top = _scorer(base, metric, k_score)
        nodes = list(itertools.product(*[range(h + 1) for h in top]))
        ours = {node: scorer.score(node) for node in nodes}
        for other in neighbours:
            theirs, _ = _scorer(other, metric, k_score)
            for node in nodes:
                move = abs(theirs.score(node) - ours[node])
                assert move <= bound, (metric, k_score, node, move, bound)
                worst = max(worst, move)
    assert worst > 0
    if metric == "granularity" and k_score > 1:
        assert worst > bound / 2  # the bound is near what a class crossing k_score moves


def test_discernibility_at_k_score_1_moves_by_at_most_1_over_every_small_table():
    """At k_s = 1 nothing is suppressed and the score is −Σ|E|²/n: adding t to a class of e
    records moves it by (A − n(2e + 1))/(n(n + 1)), in [−1, 1) (A = Σ|E|² ∈ [e², n²]); −1 exactly
    when every record is in t's class. So the sensitivity is 1, not 2. Every table of up to 7
    records over four domain records that share values pairwise (classes merge differently at
    different nodes), the empty one included, against each one-record addition, at every node."""
    values = [DOMAIN[0], DOMAIN[1], DOMAIN[13], DOMAIN[47]]  # differing on one, two or all columns
    tables = [t for n in range(8) for t in itertools.combinations_with_replacement(range(4), n)]
    scores = {}
    for t in tables:
        scorer, top = _scorer(pd.DataFrame([values[i] for i in t], columns=["a", "b", "x"]), "discernibility", 1)
        nodes = list(itertools.product(*[range(h + 1) for h in top]))
        scores[t] = [scorer.score(node) for node in nodes]
    moves = [abs(a - b) for t in tables if len(t) < 7 for i in range(4)
             for a, b in zip(scores[tuple(sorted(t + (i,)))], scores[t])]
    assert len(nodes) > 4 and sensitivity("discernibility", 3, 1) == 1
    assert max(moves) == 1  # within, and reached: one class of n records, then one more


def test_granularity_costs_come_from_the_hierarchy_not_the_data():
    frame = pd.DataFrame({"a": ["a1", "a1"], "b": ["b1", "b1"], "x": [3, 3]})
    scorer, top = _scorer(frame, "granularity", 1)
    # a at level 1 ('A': 2 of 4 leaves, a '<missing>' leaf added: 5) costs (2-1)/(5-1); b at level 1
    # the root (3 leaves + missing: 1); x at its leaf 0
    assert scorer.score((1, 1, 0)) == -2 * (Fraction(1, 4) + 1)
    assert scorer.score((0, 0, 0)) == 0 and scorer.score(top) == -2 * 3


def test_the_walk_follows_the_scores_at_a_large_eta_and_stays_on_the_lattice():
    frame = pd.DataFrame([DOMAIN[i % len(DOMAIN)] for i in range(200)], columns=["a", "b", "x"])
    scorer, top = _scorer(frame, "granularity", 1)
    walk = random_walk(scorer, top, 50, Fraction(1000), "exponential", SecureRandom())
    assert walk.pivots[0] == top and walk.node in walk.pivots
    for before, after in zip(walk.pivots, walk.pivots[1:]):
        assert all(0 <= a <= h for a, h in zip(after, top))
    # without suppression the bottom node loses nothing: an η this large finds it
    assert walk.node == (0, 0, 0)
    assert predecessors((0, 2, 1)) == [(0, 1, 1), (0, 2, 0)]
    assert score_threshold(58, beta_of(0.9)) == math.ceil(58 / beta_of(0.9))


# ---------------------------------------------------------------------------------- runs
def _input(n: int = 6000, seed: int = 3) -> MethodInput:
    rng = np.random.default_rng(seed)  # 36 cells of ~170 records: most classes pass k at any node
    frame = pd.DataFrame({"a": rng.choice(["a1", "a2", "a3", "a4"], n), "b": rng.choice(["b1", "b2", "b3"], n),
                          "x": rng.choice([0, 5, 10], n), "secret": rng.normal(size=n)})
    infos = INFOS + [ColumnInfo(name="secret", type="numeric", role="sensitive")]
    return MethodInput(columns=infos, frame=frame, hierarchies=dict(HIER))


@pytest.mark.parametrize("metric, final", [("granularity", "exponential"), ("discernibility", "last")])
def test_a_run_releases_only_generalized_quasi_identifiers_in_classes_of_k(metric, final):
    data = _input()
    params = SafePubParams(epsilon=2.0, delta=1e-5, steps=20, metric=metric, final=final)
    result = run_safepub(data, params, RunContext())
    meta, g = result.metadata["safepub"], result.guarantees
    k = meta["k"]
    assert k == smallest_k(1e-5, float(params.epsilon_anon))
    out = result.frame
    assert list(out.columns) == ["a", "b", "x"] and 0 < len(out) < len(data.frame)
    assert out.groupby(["a", "b", "x"]).size().min() >= k
    assert g["notion"] == "central_dp" and g["private"] is True and g["delta"] == 1e-5
    assert g["epsilon"] <= 2.0 and g["epsilon"] == pytest.approx(2.0, abs=1e-12)
    assert g["replace_one"]["epsilon"] == 4.0
    assert g["replace_one"]["delta"] == pytest.approx((1 + math.exp(2.0)) * 1e-5)
    split = meta["epsilon_split"]
    assert split["search"] + split["anonymization"] <= 2.0
    draws = params.walk_steps + (final == "exponential")
    assert meta["search"]["epsilon_per_draw"] * draws == pytest.approx(split["search"])
    levels = meta["levels"]
    # the release holds the chosen level's labels only
    allowed = {"a": [{"a1", "a2", "a3", "a4"}, {"A", "B"}, {"*"}][levels["a"]],
               "b": [{"b1", "b2", "b3"}, {"*"}][levels["b"]]}
    for column, labels in allowed.items():
        assert set(out[column]) <= labels
    assert not any("suppressed" in key for key in result.metrics)


def test_seeded_runs_repeat_and_say_they_are_not_private():
    data = _input(800)
    params = SafePubParams(epsilon=2.0, delta=1e-4, steps=10)
    one = run_safepub(data, params, RunContext(rng=SecureRandom(seed=5)))
    two = run_safepub(data, params, RunContext(rng=SecureRandom(seed=5)))
    assert one.frame.equals(two.frame) and one.metadata["safepub"]["levels"] == two.metadata["safepub"]["levels"]
    assert one.guarantees["private"] is False


# ------------------------------------------------------------------------ exhaustive search
def test_scores_equal_a_recount_of_the_generalized_table():
    """The scorer weighs one member per kept class: the same as counting every record's cost."""
    rng = np.random.default_rng(11)
    frame = pd.DataFrame([DOMAIN[i] for i in rng.integers(0, len(DOMAIN), 40)], columns=["a", "b", "x"])
    for k_score in (1, 3, 6):
        scorer, top = _scorer(frame, "granularity", k_score)
        cols, rows = scorer.cols, np.flatnonzero(scorer.rows)
        for node in lattice_nodes(top):
            key = np.stack([cols.codes[q][level][rows] for q, level in enumerate(node)], axis=1)
            _, ids, sizes = np.unique(key, axis=0, return_inverse=True, return_counts=True)
            kept = sizes[ids.ravel()] >= k_score
            cost = sum(Fraction(int(scorer.costs[q].numerators[level][cols.codes[q][level][rows][kept]].sum()),
                                scorer.costs[q].den) for q, level in enumerate(node))
            assert scorer.score(node) == -(cost + 3 * int((~kept).sum())), (node, k_score)


def test_the_exhaustive_draw_has_the_exponential_mechanisms_law():
    """One draw over all 18 nodes at η: frequencies of 6,000 seeded draws against
    exp(η·score)/Z by a chi-square test; the top node is the most frequent."""
    frame = pd.DataFrame([DOMAIN[i % len(DOMAIN)] for i in range(60)], columns=["a", "b", "x"])
    scorer, top = _scorer(frame, "granularity", 4)
    nodes = lattice_nodes(top)
    scores = np.array([float(scorer.score(v)) for v in nodes])
    eta = Fraction(1, 20)
    weights = np.exp(float(eta) * (scores - scores.max()))
    expected = weights / weights.sum()
    rng = SecureRandom(seed=9)
    draws = [nodes.index(exhaustive(scorer, top, eta, rng).node) for _ in range(6000)]
    counts = np.bincount(draws, minlength=len(nodes))
    big = expected * 6000 >= 5
    observed = np.append(counts[big], counts[~big].sum())
    wanted = np.append(expected[big], expected[~big].sum()) * 6000
    assert stats.chisquare(observed, wanted).pvalue > 1e-3
    assert nodes[int(np.argmax(counts))] == nodes[int(np.argmax(scores))]


def test_auto_scores_the_whole_lattice_when_it_is_small_and_states_it():
    data = _input()
    result = run_safepub(data, SafePubParams(epsilon=2.0, delta=1e-5), RunContext())
    meta, g = result.metadata["safepub"], result.guarantees
    search = meta["search"]
    size = search["lattice_size"]  # a: 3 levels, b: 2, x: its automatic intervals
    assert search["strategy"] == "exhaustive" and size % 6 == 0 and search["draws"] == 1
    assert "steps" not in search and search["nodes_scored"] == size
    assert search["epsilon_per_draw"] == pytest.approx(meta["epsilon_split"]["search"])
    assert any(f"one exponential-mechanism draw over all {size} nodes" in s for s in g["statements"])
    assert result.frame.groupby(["a", "b", "x"]).size().min() >= meta["k"]
    # the walk's options ask for the walk; with search = 'exhaustive' they are refused
    walked = run_safepub(data, SafePubParams(epsilon=2.0, delta=1e-5, steps=5), RunContext())
    assert walked.metadata["safepub"]["search"]["strategy"] == "walk"
    with pytest.raises(ValueError, match="steps applies to the random walk only"):
        SafePubParams(epsilon=2.0, search="exhaustive", steps=5)
    assert SafePubParams(epsilon=1.0).strategy(20_001) == "walk"
    # a job's stored params hold every field: the round trip keeps auto's choice
    stored = SafePubParams.model_validate(SafePubParams(epsilon=2.0, delta=1e-5).model_dump(mode="json"))
    assert stored.strategy(36) == "exhaustive" and stored.steps is None and stored.walk_steps == 300
    walk = SafePubParams.model_validate(SafePubParams(epsilon=2.0, final="exponential").model_dump(mode="json"))
    assert walk.strategy(36) == "walk" and walk.walk_final == "exponential" and walk.walk_steps == 300


def _interval_labels(data: MethodInput) -> set[str]:
    """The labels of x's generalized levels (every node above the leaves) in safepub's tree."""
    from app.privacy.anonymity.safepub import _in_domain_table, _trees

    qis = ["a", "b", "x"]
    table, _, hierarchies, uploaded = _in_domain_table(data, qis)
    tree = _trees(table, {c.name: c for c in data.columns}, qis, hierarchies, uploaded)[0][2]
    return {tree.labels[v] for v in range(len(tree.labels)) if tree.depth[v] < tree.height}


def test_the_integer_flag_of_automatic_intervals_is_the_schemas_never_the_datas():
    """Whether every value is whole shapes an automatic hierarchy's labels ('0-4' or '[0, 5)'): read
    from the data, one added record of 2.5 changed every released label of x (no (ε, δ) holds).
    The schema's flag alone decides; inferred at upload, the release warns that it shows it."""
    declared = [*INFOS[:2], ColumnInfo(name="x", type="numeric", role="quasi_identifier", bounds=(0.0, 10.0))]
    whole = _input(600)
    whole = MethodInput(columns=declared, frame=whole.frame, hierarchies=whole.hierarchies)
    extra = whole.frame.iloc[:1].assign(x=2.5)
    added = MethodInput(columns=declared, frame=pd.concat([whole.frame, extra], ignore_index=True),
                        hierarchies=whole.hierarchies)
    params = SafePubParams(epsilon=2.0, delta=1e-4)
    # the same intervals, and the record's own ones ([2, 3), [2, 4)) beside them
    assert _interval_labels(whole) < _interval_labels(added)
    assert any(label.startswith("[") for label in _interval_labels(whole))  # not integer: '[a, b)'
    inferred = [*INFOS[:2], ColumnInfo(name="x", type="numeric", role="quasi_identifier", bounds=(0.0, 10.0),
                                       integer=True, inferred=("integer",))]
    for columns, warned in ((INFOS, False), (inferred, True)):
        data = MethodInput(columns=columns, frame=whole.frame, hierarchies=whole.hierarchies)
        warnings = run_safepub(data, params, RunContext(rng=SecureRandom(seed=2))).guarantees["warnings"]
        assert any("x (integer)" in w and "inferred from the data at upload" in w for w in warnings) is warned


@pytest.mark.parametrize("k_score", [3, 5])
def test_discernibility_moves_beyond_k_minus_1_when_a_class_crosses_beside_a_large_one(k_score):
    """Adding t to a class of k_score − 1 records beside one class of n − (k_score − 1): the move
    k²/(n + 1) − A/(n(n + 1)) − (k − 1) passes −(k − 1) (A/n > k²), so the sensitivity must be k,
    not k − 1 — the small random tables above never get there."""
    big, small = DOMAIN[0], DOMAIN[-1]
    n = 8 * k_score * k_score
    base = pd.DataFrame([big] * (n - k_score + 1) + [small] * (k_score - 1), columns=["a", "b", "x"])
    added = pd.concat([base, pd.DataFrame([small], columns=base.columns)], ignore_index=True)
    bottom = (0, 0, 0)
    move = abs(_scorer(added, "discernibility", k_score)[0].score(bottom)
               - _scorer(base, "discernibility", k_score)[0].score(bottom))
    assert k_score - 1 < move <= sensitivity("discernibility", 3, k_score) == k_score


def test_the_search_draws_at_eta_epsilon_over_twice_the_sensitivity():
    """The exponential mechanism over scores that move both ways (n changes) needs η = ε_draw/(2Δ)."""
    data = _input(2000)
    for params in (SafePubParams(epsilon=1.0, delta=1e-4), SafePubParams(epsilon=1.0, delta=1e-4, steps=7)):
        meta = run_safepub(data, params, RunContext(rng=SecureRandom(seed=3))).metadata["safepub"]
        search = meta["search"]
        draws = 1 if search["strategy"] == "exhaustive" else 7
        delta_score = sensitivity("granularity", 3, score_threshold(meta["k"], beta_of(float(params.epsilon_anon))))
        assert search["sensitivity"] == delta_score
        assert Fraction(search["eta"]) == params.epsilon_search / draws / (2 * delta_score)


def test_sampled_classes_below_k_are_suppressed_and_those_of_k_kept():
    """300 classes of exactly k_score = ⌈k/β⌉ records: the search keeps them all (the bottom node
    costs nothing), the sample holds about k of each, and the release keeps exactly the classes
    whose sampled count reached k (a class of k − 1 released would break Li et al.'s theorem)."""
    params = SafePubParams(epsilon=2.0, delta=1e-5)  # k = 91, k_score = 110, β = 0.83
    eps_anon = float(params.epsilon_anon)
    k = smallest_k(1e-5, eps_anon)
    k_score = score_threshold(k, beta_of(eps_anon))
    labels = [f"c{i:03d}" for i in range(300)]
    frame = pd.DataFrame({"c": np.repeat(labels, k_score)})
    data = MethodInput(columns=[ColumnInfo(name="c", type="categorical", role="quasi_identifier",
                                           categories=tuple(labels))], frame=frame)
    out = run_safepub(data, params, RunContext()).frame
    assert run_safepub(data, params, RunContext(rng=SecureRandom(seed=1))).metadata["safepub"]["levels"] == {"c": 0}
    sizes = out["c"].value_counts()
    assert sizes.min() >= k and 0 < len(sizes) < 300  # some classes fell below k and are gone
    # P(Bin(k_score, β) ≥ k) of the classes are expected to be kept
    p = stats.binom.sf(k - 1, k_score, beta_of(eps_anon))
    assert abs(len(sizes) - 300 * p) <= 5 * math.sqrt(300 * p * (1 - p)), (len(sizes), 300 * p)


@pytest.mark.parametrize("eps_anon", [0.05, 0.9, 5.0, 12.0])
def test_the_chernoff_cut_bounds_every_later_tail(eps_anon):
    """δ(k)'s scan stops once its maximum reaches e^(−n·KL(γ‖β)): that must bound
    P(Bin(n, β_hi) > ⌊γ_lo·n⌋) for every n, computed here by scipy on a range of n."""
    from app.privacy.anonymity.safepub_params import REL, _chernoff_exponent

    beta, gamma = beta_of(eps_anon), -math.expm1(-2 * eps_anon)
    exponent = _chernoff_exponent(eps_anon, beta, gamma)
    n = np.unique(np.geomspace(1, 10 / exponent, 400).astype(np.int64))
    tail = stats.binom.logsf(np.floor(gamma * (1 - REL) * n), n, beta * (1 + REL))
    assert (tail <= -n * exponent + 1e-9).all()
    assert (tail >= -n * exponent - 10 - np.log(n + 1)).any()  # a tight bound, not a loose one


@pytest.mark.parametrize("epsilon, search_share", [(20.0, 0.1), (1e-6, 0.5)])
def test_a_hopeless_epsilon_is_refused_quickly(epsilon, search_share):
    """k grows like e^(ε_anon)·ln(1/δ) at a large ε_anon and δ(k)'s maximum moves far out at a tiny
    one: both once took minutes to hours inside the submission's check."""
    import time

    from app.privacy.anonymity.safepub import calibration
    from app.privacy.registry import MethodInputError

    started = time.perf_counter()
    with pytest.raises(MethodInputError, match="no k up to 10⁷ reaches delta"):
        calibration(SafePubParams(epsilon=epsilon, search_share=search_share))
    assert time.perf_counter() - started < 10
    started = time.perf_counter()
    beta, k, delta_k = calibration(SafePubParams(epsilon=10.0))  # ε_anon 9: k ≈ 10⁵, fast
    assert 50_000 < k < 200_000 and delta_k <= 1e-5 < delta_of_k(k - 1, 9.0)
    assert time.perf_counter() - started < 10
