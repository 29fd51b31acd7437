"""k-map estimated from a sample (ARX's KMap with a population model): the derived k against an
independent computation (summed probability masses, ARX's route, with its off-by-one removed),
cases worked by hand, the exact binomial sampling model the Poisson approximates, and a
simulation — a population drawn, sampled at the fraction, the sample anonymized with the
derived k, and every released class's population count read from its labels."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy.stats import binom, poisson

from app.privacy.anonymity.anonymize import Options, anonymize
from app.privacy.anonymity.kmap_estimate import estimate, estimate_statements, estimate_warnings
from app.privacy.anonymity.models import Constraints
from app.privacy.anonymity.methods import KAnonymityParams
from app.privacy.data import ColumnInfo
from tests.privacy.test_properties_kanonymity import _covers_numeric

ESTIMATORS = ("poisson", "zero_truncated_poisson")
GRID = [(k, pi, alpha) for k in (2, 3, 5, 10, 20, 50, 100, 1000, 100_000)
        for pi in (1e-4, 0.001, 0.01, 0.05, 0.1, 0.3, 0.5, 0.9, 1.0) for alpha in (0.001, 0.01, 0.05, 0.2)]


def _by_masses(k: int, pi: float, alpha: float, estimator: str) -> int:
    """The smallest c ≥ 1 whose tail is ≤ α, summing the pmf from 0 up (as ARX's loop does):
    the tail at c is 1 − Σ_{j<c} pmf(j) (zero-truncated: the masses from 1, over 1 − pmf(0));
    k when no c below k does."""
    lam = pi * k
    masses = poisson.pmf(np.arange(k), lam)
    if estimator == "zero_truncated_poisson":
        masses = np.concatenate([[0.0], masses[1:] / (1.0 - masses[0])])
    tails = 1.0 - np.concatenate([[0.0], np.cumsum(masses)[:-1]])  # tails[c] = 1 − Σ_{j<c} masses
    passing = np.flatnonzero(tails[1:] <= alpha + 1e-12)  # c = 1 .. k − 1
    return int(passing[0]) + 1 if len(passing) else k


@pytest.mark.parametrize("estimator", ESTIMATORS)
def test_derived_k_equals_the_summed_masses(estimator):
    for k, pi, alpha in GRID:
        got = estimate(k, estimator, alpha, 1, population_size=max(1, round(1 / pi))) if pi == 1.0 else \
            estimate(k, estimator, alpha, 1000, sampling_fraction=pi)
        want = _by_masses(k, pi, alpha, estimator)
        assert got.derived_k == want, (k, pi, alpha, estimator, got)
        assert got.capped_at_k_map == (want == k)
        if not got.capped_at_k_map:  # the stated error is the tail at the derived k, within α
            lam = pi * k
            tail = poisson.sf(want - 1, lam) / (poisson.sf(0, lam) if estimator != "poisson" else 1.0)
            assert got.type_i_error == pytest.approx(tail, rel=1e-9) and got.type_i_error <= alpha
            # and the threshold below it does not meet α (it is the smallest)
            if want > 1:
                before = poisson.sf(want - 2, lam) / (poisson.sf(0, lam) if estimator != "poisson" else 1.0)
                assert before > alpha
        else:
            assert got.type_i_error == 0.0


def test_cases_worked_by_hand():
    # k_map 10 at π = 0.1: λ = 1; P(X ≥ 4) = 1 − e⁻¹(1 + 1 + 1/2 + 1/6) = 0.01899 > 0.01,
    # P(X ≥ 5) = 1 − e⁻¹(8/3 + 1/24) = 0.00366 ≤ 0.01: c = 5 (ARX's Poisson search says 6);
    # given X ≥ 1 (÷ 1 − e⁻¹ = 0.63212): 0.03004 and 0.00579: c = 5 too
    p = estimate(10, "poisson", 0.01, 1000, sampling_fraction=0.1)
    assert (p.derived_k, p.arx_derived_k, p.expected_sample_size) == (5, 6, pytest.approx(1.0))
    assert p.type_i_error == pytest.approx(1 - math.exp(-1) * (1 + 1 + 1 / 2 + 1 / 6 + 1 / 24), rel=1e-12)
    z = estimate(10, "zero_truncated_poisson", 0.01, 1000, sampling_fraction=0.1)
    assert (z.derived_k, z.arx_derived_k) == (5, 5)
    assert z.type_i_error == pytest.approx(p.type_i_error / (1 - math.exp(-1)), rel=1e-12)
    # k_map 3 at π = 0.001: λ = 0.003, P(X ≥ 1) = 1 − e^−0.003 = 0.0030 ≤ 0.01: c = 1 — a class of
    # ≤ 3 people rarely shows at all; ARX's Poisson search says 2. Zero-truncated: P(X ≥ 2 | X ≥ 1)
    # ≈ λ/2 = 0.0015: c = 2
    assert estimate(3, "poisson", 0.01, 1000, sampling_fraction=0.001).derived_k == 1
    assert estimate(3, "poisson", 0.01, 1000, sampling_fraction=0.001).arx_derived_k == 2
    assert estimate(3, "zero_truncated_poisson", 0.01, 1000, sampling_fraction=0.001).derived_k == 2
    # k_map 5 at π = 0.3: λ = 1.5, P(X ≥ 5) = 0.0186 > 0.01, so c = 6 > 5: k_map itself, certain
    capped = estimate(5, "poisson", 0.01, 1000, sampling_fraction=0.3)
    assert (capped.derived_k, capped.capped_at_k_map, capped.type_i_error) == (5, True, 0.0)
    # ARX's own test cases (TestAnonymizationKMap): Adult's 30,162 records from the USA population
    # (ARX's Region.USA, 317,238,626 in ARXPopulationModel), zero-truncated at 0.01 — k = 3:
    # λ = 2.9·10⁻⁴, P(X ≥ 2 | X ≥ 1) ≈ λ/2: c = 2; k = 1000: λ = 0.0951, P(X ≥ 2 | X ≥ 1) = 0.047,
    # P(X ≥ 3 | X ≥ 1) = 0.0015: c = 3
    for k, want in ((3, 2), (1000, 3)):
        arx = estimate(k, "zero_truncated_poisson", 0.01, 30_162, population_size=317_238_626)
        assert arx.derived_k == want and arx.arx_derived_k == want


@pytest.mark.parametrize("estimator", ESTIMATORS)
def test_the_exact_binomial_sampling_meets_the_significance(estimator):
    """The model is Poisson; sampling each person with probability π makes a class of F people
    show Binomial(F, π) records. On the grid (significance ≤ 0.2) for every F ≤ k_map the
    binomial's chance of passing (given that it shows, zero-truncated) stays within the
    significance; not everywhere (the test below)."""
    for k, pi, alpha in GRID:
        if k > 1000 or pi == 1.0:
            continue
        est = estimate(k, estimator, alpha, 1000, sampling_fraction=pi)
        if est.capped_at_k_map:
            continue
        F = np.arange(1, k + 1)
        tail = binom.sf(est.derived_k - 1, F, pi)
        if estimator == "zero_truncated_poisson":
            tail = tail / binom.sf(0, F, pi)
        assert tail.max() <= alpha + 1e-12, (k, pi, alpha, estimator, est.derived_k, tail.max())


def test_the_exact_binomial_sampling_exceeds_the_significance_where_the_docs_say():
    """Anderson & Samuels bound the binomial's tail by the Poisson's for c ≥ πF + 1 only, and a
    tail within α does not imply it. The Poisson's derived k of 1: P(f ≥ 1) = 1 − (1 − π)^F is
    above 1 − e^(−πF), most at F = 2 (k_map 2): at λ = −ln(1 − α), 0.25 % above α at 0.01 and
    5.3 % at 0.2. Significance 0.5: both estimators reach 1.2·α. Below 0.25 (zero-truncated 0.4),
    a derived k ≥ 2 held (a coarser scan than the docs')."""
    est = estimate(2, "poisson", 0.01, 1000, sampling_fraction=0.005025)
    assert est.derived_k == 1 and est.type_i_error <= 0.01 < binom.sf(0, 2, 0.005025) < 0.01 * 1.0026
    for alpha, excess in ((0.01, 1.0026), (0.2, 1.054)):
        lam = -math.log1p(-alpha)
        assert alpha < 1 - (1 - lam / 2) ** 2 < alpha * excess
    for estimator in ESTIMATORS:
        high = estimate(56, estimator, 0.5, 1000, sampling_fraction=0.976)
        F = np.arange(1, 57)
        tail = binom.sf(high.derived_k - 1, F, 0.976) / binom.sf(0, F, 0.976)
        assert high.derived_k == 55 and tail.max() > 1.2 * 0.5
        for alpha in ((0.25, 0.4) if estimator == "zero_truncated_poisson" else (0.25,)):
            for k in range(2, 41):
                for pi in np.geomspace(1e-3, 0.999, 40):
                    est = estimate(k, estimator, alpha, 10**6, sampling_fraction=float(pi))
                    if est.capped_at_k_map or est.derived_k == 1:
                        continue
                    F = np.arange(1, k + 1)
                    tail = binom.sf(est.derived_k - 1, F, pi)
                    if estimator == "zero_truncated_poisson":
                        tail = tail / binom.sf(0, F, pi)
                    assert tail.max() <= alpha, (estimator, k, pi, alpha)


def test_population_size_and_sampling_fraction_agree():
    a = estimate(20, "zero_truncated_poisson", 0.01, 5_000, population_size=100_000)
    b = estimate(20, "zero_truncated_poisson", 0.01, 5_000, sampling_fraction=0.05)
    assert a.derived_k == b.derived_k == 5 and a.population_size == b.population_size == 100_000
    with pytest.raises(ValueError, match="exactly one of sampling_fraction and population_size"):
        estimate(20, "poisson", 0.01, 5_000)
    with pytest.raises(ValueError, match="below the sample's 5000 records"):
        estimate(20, "poisson", 0.01, 5_000, population_size=4_999)


def _population(rng: np.random.Generator, size: int) -> pd.DataFrame:
    """Three integer quasi-identifiers: a skewed age-like one, a long-tailed code, a small one."""
    return pd.DataFrame({"a": np.minimum(rng.geometric(0.04, size), 90), "b": rng.zipf(1.6, size) % 40,
                         "c": rng.integers(0, 3, size)}).astype(float)


def _uniform(rng: np.random.Generator, size: int) -> pd.DataFrame:
    """Three uniform codes of 40 values: 64,000 cells for 100,000 people, nearly all small."""
    return pd.DataFrame({q: rng.integers(0, 40, size) for q in "abc"}).astype(float)


def _released_population_counts(population: pd.DataFrame, release: pd.DataFrame) -> np.ndarray:
    """Per released class, the population records its labels cover (each QI's distinct labels
    resolved against its distinct population values once, then ANDed per class)."""
    qis = list(population.columns)
    codes, uniques = {}, {}
    for q in qis:
        codes[q], uniques[q] = pd.factorize(population[q])
    counts = []
    for labels, _ in release.groupby(qis):
        covered = np.ones(len(population), dtype=bool)
        for q, label in zip(qis, labels):
            hits = np.array([_covers_numeric(label, float(v)) for v in uniques[q]])
            covered &= hits[codes[q]]
        counts.append(int(covered.sum()))
    return np.array(counts)


def _simulate(make, pi: float, k_map: int, estimator: str, algorithm: str, seed: int) -> tuple[float, int]:
    rng = np.random.default_rng(seed)
    population = make(rng, 100_000)
    sample = population[rng.random(len(population)) < pi].reset_index(drop=True)
    est = estimate(k_map, estimator, 0.01, len(sample), sampling_fraction=pi)
    infos = {q: ColumnInfo(q, "numeric", "quasi_identifier", bounds=(0.0, 90.0)) for q in "abc"}
    out = anonymize(sample, infos, {}, list("abc"), Constraints(k=est.derived_k), None,
                    Options(algorithm=algorithm)).frame
    assert out.groupby(list("abc")).size().min() >= est.derived_k
    counts = _released_population_counts(population, out)
    return float((counts < k_map).mean()), est.derived_k


@pytest.mark.parametrize("make, pi, k_map, algorithm", [
    (_population, 0.05, 10, "mondrian"), (_population, 0.01, 50, "mondrian"),
    (_population, 0.05, 10, "lattice"), (_uniform, 0.05, 10, "mondrian"), (_uniform, 0.01, 10, "mondrian"),
])
def test_simulation_released_classes_from_small_population_classes(make, pi, k_map, algorithm):
    """Zero-truncated Poisson at significance 0.01: on three seeds each, the share of released
    classes whose labels match fewer than k_map people of the drawn population stays below 0.01
    in these settings (measured up to 0.0056; docs/methods/kanonymity.md has the table, and the
    test below a setting where it does not)."""
    for seed in range(3):
        share, _ = _simulate(make, pi, k_map, "zero_truncated_poisson", algorithm, seed)
        assert share <= 0.01, (seed, share)


def test_simulation_the_significance_is_not_a_share_of_released_classes():
    """The significance bounds the chance that a small population class passes, not the share
    of released classes that come from one — what the statement says. The Poisson estimator counts
    every small class, most of which never show in a small sample: on uniform cells at π = 0.01,
    k_map = 10 it derives 2 and about 0.2 of Mondrian's classes match fewer than 10 people, where
    zero-truncated derives 3 and stays below 0.01. And Mondrian fits its classes to the sample (an
    interval ends at the sample's values), which the model's fixed cells do not: at k_map = 50
    both derive 4 and 0.03 to 0.06 of the classes fall below; the lattice's cells, fixed by the
    hierarchy, none."""
    share, derived = _simulate(_uniform, 0.01, 10, "poisson", "mondrian", 0)
    assert derived == 2 and share > 0.1
    share, derived = _simulate(_uniform, 0.01, 10, "zero_truncated_poisson", "mondrian", 0)
    assert derived == 3 and share < 0.01
    share, derived = _simulate(_uniform, 0.01, 50, "zero_truncated_poisson", "mondrian", 1)
    assert derived == 4 and share > 0.02
    share, derived = _simulate(_uniform, 0.01, 50, "zero_truncated_poisson", "lattice", 1)
    assert derived == 4 and share == 0.0


def test_parameters_refuse_what_makes_no_sense():
    base = {"k_map": 10, "k_map_estimator": "poisson"}
    for params, named in [
        ({**base}, "give exactly one of sampling_fraction (the table's share of it) and population_size"),
        ({**base, "sampling_fraction": 0.1, "population_size": 1000}, "(both were given)"),
        ({**base, "sampling_fraction": 0.1, "research_subset": "in_study"}, "drop k_map_estimator"),
        ({"k_map_estimator": "poisson", "sampling_fraction": 0.1}, "k_map_estimator estimates k-map: give k_map"),
        ({"k_map": 10, "sampling_fraction": 0.1}, "sampling_fraction is read by k_map_estimator only"),
        ({"k_map": 10, "population_size": 10, "significance": 0.05},
         "population_size, significance are read by k_map_estimator only"),
        ({**base, "sampling_fraction": 0.1, "delta_presence": [0.1, 0.5]}, "delta_presence is read over a research subset"),
        ({"k_map": 10}, "(or estimate k_map from the table as a sample of a population"),
    ]:
        with pytest.raises(ValueError, match=None) as info:
            KAnonymityParams(**params)
        assert named in str(info.value), (params, str(info.value))
    # k = 1 and the sensitive-column models are allowed with an estimated k-map
    KAnonymityParams(k=1, **base, sampling_fraction=0.1)
    KAnonymityParams(k=3, l=2, sensitive="s", **base, population_size=10_000)


def test_k_map_1_says_why_the_release_is_not_private():
    """k_map = 1 is capped (a released record matches itself): derived k 1, and with k = 1 the
    release is not k-anonymous — run_kanonymity states it not private, so a warning says why
    (the derived-k-of-1 warning alone covered the uncapped case)."""
    for pi in (0.001, 0.5):
        est = estimate(1, "poisson", 0.01, 1000, sampling_fraction=pi)
        assert est.derived_k == 1 and est.capped_at_k_map
        warnings = estimate_warnings(est, 1)
        assert any(w.startswith("k_map = 1 with k = 1 asks nothing of the release") and "not stated private" in w
                   for w in warnings), warnings
        # k = 2 is above the derived k: that warning alone, without advising k = 1 (nothing then)
        [above] = estimate_warnings(est, 2)
        assert above.startswith("k = 2 (5 by default) is above the derived k = 1") and "give k = 1" not in above
        assert len(estimate_warnings(estimate(2, "zero_truncated_poisson", 0.01, 1000, sampling_fraction=pi), 1)) == 0


def test_the_statement_bounds_every_small_class():
    """The type I error is the tail at a class of exactly k_map people; a smaller one shows the
    derived k less often: the statement says 'at most' that figure."""
    est = estimate(10, "poisson", 0.01, 30_162, sampling_fraction=0.01)
    statement = estimate_statements(est, est.derived_k)[0]
    assert f"with probability at most {est.type_i_error:.3g} under the model (its value at 10 people)" in statement


# --- the largest k_map a table meets as a sample (risk's estimated k-map level) -------------

def _largest_by_scan(smallest: int, pi: float, alpha: float, estimator: str, population: int) -> int:
    """k_map = 1, 2, … while the smallest class meets its derived k: min(c, k_map) ≤ s when
    k_map ≤ s or the tail at s is within α (the tail falls with c), the tail summed from the
    masses below s; then every k_map for a while after it is checked refused by the derived k
    itself (a scan: nothing assumes the derived k grows)."""
    def tail_at_smallest(k: int) -> float:
        lam = pi * k
        below = sum(math.exp(-lam) * lam ** j / math.factorial(j) for j in range(smallest))
        if estimator == "zero_truncated_poisson":
            return (1.0 - below) / (1.0 - math.exp(-lam)) if smallest > 1 else 1.0
        return 1.0 - below
    k = 1
    while k < population and (k + 1 <= smallest or tail_at_smallest(k + 1) <= alpha + 1e-12):
        k += 1
    assert all(_by_masses(j, pi, alpha, estimator) > smallest for j in range(k + 1, min(k + 30, population) + 1))
    return k


@pytest.mark.parametrize("estimator", ESTIMATORS)
def test_largest_k_map_equals_a_scan(estimator):
    from app.privacy.anonymity.kmap_estimate import largest_k_map
    for smallest in (1, 2, 3, 5, 10, 25):
        for pi in (0.001, 0.01, 0.05, 0.1, 0.3, 0.5, 1.0):
            for alpha in (0.01, 0.05):
                records = 2_000
                population = max(round(records / pi), records)
                got = largest_k_map(smallest, estimator, alpha, records, sampling_fraction=pi)
                want = _largest_by_scan(smallest, pi, alpha, estimator, population)
                assert got.k_map == want, (smallest, pi, alpha, estimator, got)
                assert got.derived_k == _by_masses(want, pi, alpha, estimator) <= smallest
                assert got.k_map >= smallest  # k_map ≤ the smallest class holds for certain
                if got.k_map < population:
                    assert got.next_derived_k == _by_masses(want + 1, pi, alpha, estimator) > smallest
                else:
                    assert got.next_derived_k is None
                # the same as kanonymity's estimate at that k_map
                same = estimate(want, estimator, alpha, records, sampling_fraction=pi)
                assert (got.type_i_error, got.capped_at_k_map) == (same.type_i_error, same.capped_at_k_map)


def test_largest_k_map_cases_worked_by_hand():
    from app.privacy.anonymity.kmap_estimate import largest_k_map
    # smallest class 5 at π = 0.1, α = 0.01: k_map 10 (λ = 1) derives 5 (see above); k_map 11
    # (λ = 1.1): P(X ≥ 5) = 1 − e^−1.1 (1 + 1.1 + 0.605 + 0.22183 + 0.06100) = 0.00537 ≤ 0.01 → 5;
    # … up to λ = 1.2 … the last k_map whose tail at 5 stays within 0.01
    got = largest_k_map(5, "poisson", 0.01, 1_000, sampling_fraction=0.1)
    lam = 0.1 * got.k_map
    tail = 1 - math.exp(-lam) * sum(lam ** j / math.factorial(j) for j in range(5))
    lam1 = 0.1 * (got.k_map + 1)
    tail1 = 1 - math.exp(-lam1) * sum(lam1 ** j / math.factorial(j) for j in range(5))
    assert tail <= 0.01 < tail1 and got.k_map == 12  # λ = 1.2: 0.00775; 1.3: 0.01056
    # π = 1 (the table is the population): nothing is estimated, k-map is the smallest class
    whole = largest_k_map(7, "zero_truncated_poisson", 0.01, 1_000, sampling_fraction=1.0)
    assert (whole.k_map, whole.capped_at_k_map) == (7, True)
    # the table is one class of all its records: k-map up to the population, for certain
    one = largest_k_map(1_000, "poisson", 0.01, 1_000, sampling_fraction=0.5)
    assert one.k_map >= 1_000 and one.derived_k <= 1_000


@pytest.mark.parametrize("estimator", ESTIMATORS)
def test_a_tiny_significance_or_fraction_is_found_in_few_steps(estimator, monkeypatch):
    """scipy's quantile is NaN below a significance of about 1e-16 (and for the zero-truncated
    test at a tiny λ): the search then started at k_map and stepped down one at a time — 35 s at
    k_map 10^6 in the submission check, and risk's level, which asks for many k_map, ran for
    minutes. The threshold is still the smallest c whose tail is within the significance."""
    from app.privacy.anonymity import kmap_estimate

    calls = []
    original = kmap_estimate.sample_tail

    def counted(c, lam, est):
        calls.append(c)
        return original(c, lam, est)

    monkeypatch.setattr(kmap_estimate, "sample_tail", counted)
    for k_map, alpha, pi in [(10**6, 1e-20, 1e-6), (10**6, 1e-300, 1e-6), (10**6, 0.01, 1e-300),
                             (10**6, 1e-17, 0.5), (1_000, 1e-200, 0.1)]:
        calls.clear()
        est = estimate(k_map, estimator, alpha, 1000, sampling_fraction=pi)
        assert len(calls) <= 100, (k_map, alpha, pi, len(calls))
        lam = pi * k_map
        tail = [poisson.sf(c - 1, lam) / (1.0 if estimator == "poisson" else -math.expm1(-lam))
                for c in (est.derived_k - 1, est.derived_k)]
        assert est.capped_at_k_map or tail[1] <= alpha
        assert est.derived_k == 1 or tail[0] > alpha  # the smallest (capped: none below k_map)
    calls.clear()
    level = kmap_estimate.largest_k_map(30, estimator, 1e-20, 30_162, sampling_fraction=0.01)
    assert level.derived_k <= 30 < level.next_derived_k and len(calls) <= 5_000, len(calls)


def test_the_type_i_error_is_stated_as_an_upper_bound_and_never_as_at_most_0():
    """A tail below double precision (π = 1e-300, a significance of 1e-301: derived k 2, the
    tail ~1e-600) is not 0; a figure is rounded up, not to the nearest."""
    from app.privacy.anonymity.wording import probability_at_most

    est = estimate(3, "zero_truncated_poisson", 1e-301, 10, sampling_fraction=1e-300)
    assert est.derived_k == 2 and est.type_i_error == 0.0
    text = estimate_statements(est, 1)[0]
    assert "below 1e-300" in text and "at most 0 " not in text
    assert probability_at_most(1.2344e-5) == "at most 1.24e-05"
    assert probability_at_most(0.01) == "at most 0.01"
    est = estimate(10, "poisson", 0.01, 1000, sampling_fraction=0.1)
    shown = float(estimate_statements(est, 1)[0].split("probability at most ")[1].split(" ")[0])
    assert shown >= est.type_i_error and shown <= est.type_i_error * 1.01


def test_l_is_bounded_by_the_release_k_not_the_k_given():
    """With an estimated k-map the release's k is max(k, derived k): l (the job's and a
    sensitive_models entry's) may exceed the k given up to that, and above it is refused when
    the records are known (the submission's check_rows), naming l and the release's k."""
    from app.privacy.anonymity.methods import _kanonymity_rows
    from app.privacy.registry import MethodInputError

    base = {"k_map": 10, "k_map_estimator": "poisson", "sampling_fraction": 0.1}
    derived = estimate(10, "poisson", 0.01, 1000, sampling_fraction=0.1).derived_k
    assert derived == 5
    for models in ({"l": 5, "sensitive": "s"}, {"sensitive_models": {"s": {"l": 5}}}):
        params = KAnonymityParams(k=1, **base, **models)   # refused before: l above k = 1
        _kanonymity_rows(params, 1000)
        assert params.model_set(max(params.k, derived)).k == 5
    for models, where in (({"l": 6, "sensitive": "s"}, "l = 6"),
                          ({"sensitive_models": {"s": {"l": 6}}}, "sensitive_models['s']: l = 6")):
        params = KAnonymityParams(k=1, **base, **models)
        with pytest.raises(MethodInputError) as info:
            _kanonymity_rows(params, 1000)
        assert str(info.value).startswith(where) and "release's k = 5" in str(info.value)
    # without an estimate, l is still bounded by k at once
    with pytest.raises(ValueError, match="l cannot exceed k"):
        KAnonymityParams(k=2, l=3, sensitive="s")


def test_a_release_with_l_above_k_given_is_l_diverse_and_k_map_anonymous():
    from app.privacy import registry
    from app.privacy.context import RunContext
    from app.privacy.data import MethodInput
    from app.privacy.rng import SecureRandom

    rng = np.random.default_rng(5)
    n = 1000
    frame = pd.DataFrame({"age": rng.integers(20, 70, n), "zip": rng.choice(list("abcdef"), n),
                          "s": rng.choice(list("pqrstuvw"), n)})
    columns = [ColumnInfo(name="age", type="numeric", role="quasi_identifier"),
               ColumnInfo(name="zip", type="categorical", role="quasi_identifier"),
               ColumnInfo(name="s", type="categorical", role="sensitive")]
    params = KAnonymityParams(k=1, l=5, sensitive="s", k_map=10, k_map_estimator="poisson", sampling_fraction=0.1)
    out = registry.get("kanonymity").run(MethodInput(columns, frame), params, RunContext(SecureRandom(seed=1)))
    assert len(out.frame) == n  # Mondrian suppresses nothing
    groups = out.frame.astype(str).groupby(["age", "zip"])["s"]
    assert (groups.size() >= 5).all() and (groups.nunique() >= 5).all() and groups.ngroups > 1
