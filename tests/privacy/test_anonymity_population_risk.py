"""Population-based risk (risk.py's ``population_risk``) against the truth of a synthetic
population: 400,000 people whose quasi-identifiers are drawn from a mixture of three products of
Zipf-skewed categorical distributions (known structure: the share of population uniques and the
number of classes are counted, not modelled). Samples drawn without replacement at π = 0.01, 0.1
and 0.5; the truth for a sample is the share of its records unique in the population, and
Σ f/F / n for the marketer.

Tolerances are measured, not guessed: 20 samples per fraction on four populations (population
uniqueness 0.0001, 0.078, 0.42, 0.77; `python -m benchmarks.risk_population_accuracy`, table in
docs/methods/risk.md) gave these largest absolute errors of Dankar's choice — 0.3043 at π = 0.01,
0.0975 at 0.1, 0.0105 at 0.5 — and of the marketer estimate 0.2044, 0.0601, 0.0019. The bounds below
are those maxima with 20-60 % headroom: they fail if an estimator is broken, not if a sample is
unlucky. That the estimators are weak at π = 0.01 is the literature's finding too (Dankar et al.
2012: no estimator is accurate everywhere at small fractions). The tests also hold the ordering
that makes Dankar's rule right on the two populations drawn here (moderate and high uniqueness):
Pitman beats Zayatz and SNB at π ≤ 0.1, SNB beats both at 0.5 (on the 'mid' population SNB is the
closer at 0.1 too: the rule is not optimal everywhere).
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import binom, nbinom

from app.privacy.anonymity.risk import (
    _pitman_loglik, _shlosser, _snb_moments, population_risk, size_histogram,
)

N = 400_000
POPULATIONS = {"moderate": (60, 2, 5, 40, 16, 7), "high": (80, 2, 6, 60, 16, 7, 12)}
DANKAR_TOL = {0.01: 0.35, 0.1: 0.12, 0.5: 0.015}
MARKETER_TOL = {0.01: 0.25, 0.1: 0.07, 0.5: 0.003}
SAMPLES = 5


def _population(cards, seed: int = 11, skew: float = 1.1, mix: int = 3) -> np.ndarray:
    """Class id of each of N people: a mixture of `mix` products of Zipf(skew) categoricals."""
    rng = np.random.default_rng(seed)
    comp = rng.integers(0, mix, N)
    key = np.zeros(N, dtype=np.int64)
    for c in cards:
        w = 1.0 / np.arange(1, c + 1) ** skew
        probs = np.array([w[rng.permutation(c)] for _ in range(mix)])
        cdf = np.cumsum(probs / probs.sum(axis=1, keepdims=True), axis=1)
        col = np.minimum((rng.random(N)[:, None] > cdf[comp]).sum(axis=1), c - 1)
        key = key * c + col
    return np.unique(key, return_inverse=True)[1].ravel()


@pytest.fixture(scope="module", params=sorted(POPULATIONS))
def runs(request):
    """{π: [(truth, marketer truth, estimate), …]} for SAMPLES samples of one population."""
    pop = _population(POPULATIONS[request.param])
    sizes = np.bincount(pop)
    rng = np.random.default_rng(5)
    out = {}
    for pi in DANKAR_TOL:
        rows = []
        for _ in range(SAMPLES):
            idx = rng.choice(N, int(round(pi * N)), replace=False)
            sample = pop[idx]
            f = np.bincount(sample, minlength=len(sizes))
            seen = f > 0
            truth = float((sizes[sample] == 1).mean())
            marketer = float((f[seen] / sizes[seen]).sum() / len(idx))
            ids = np.unique(sample, return_inverse=True)[1].ravel()
            rows.append((truth, marketer, population_risk(ids, pi)))
        out[pi] = rows
    return out


def _share(estimate: dict, name: str) -> float:
    share = estimate["uniqueness"][name]["share"]
    assert share is not None, estimate["uniqueness"][name]
    return share


@pytest.mark.parametrize("pi", sorted(DANKAR_TOL))
def test_dankars_choice_is_within_the_measured_tolerance_of_the_truth(runs, pi):
    for truth, _, est in runs[pi]:
        dankar = est["uniqueness"]["dankar"]
        # the rule as ARX applies it: Pitman at π ≤ 0.1 (it has a fit on these populations),
        # the smaller of Zayatz and SNB above
        if pi <= 0.1:
            assert dankar["model"] == "pitman"
        else:
            assert dankar["model"] == min(("zayatz", "snb"), key=lambda k: _share(est, k))
        assert dankar["share"] == _share(est, dankar["model"])
        assert abs(dankar["share"] - truth) <= DANKAR_TOL[pi], (pi, truth, dankar)
        assert est["population_size"] == N


@pytest.mark.parametrize("pi", sorted(DANKAR_TOL))
def test_the_estimators_rank_as_dankars_rule_assumes(runs, pi):
    err = {name: np.mean([abs(_share(est, name) - truth) for truth, _, est in runs[pi]])
           for name in ("zayatz", "pitman", "snb")}
    if pi <= 0.1:
        assert err["pitman"] < err["zayatz"] and err["pitman"] < err["snb"], err
        # Zayatz takes the sample's class sizes for the population's: it over-estimates
        assert all(_share(est, "zayatz") > truth for truth, _, est in runs[pi])
    else:
        assert err["snb"] < err["zayatz"] and err["snb"] < err["pitman"], err
        assert err["snb"] <= 0.011, err


@pytest.mark.parametrize("pi", sorted(MARKETER_TOL))
def test_the_marketer_estimate_is_within_the_measured_tolerance(runs, pi):
    for _, truth, est in runs[pi]:
        m = est["marketer"]
        assert abs(m["estimated"] - truth) <= MARKETER_TOL[pi], (pi, truth, m)
        assert m["model"] == ("pitman" if pi <= 0.1 else "shlosser")
        # the table taken as the population over-states a sample's marketer risk
        assert m["table_as_population"] > truth


# ----------------------------------------------------------------------------------- edges
def test_with_the_whole_population_every_estimate_is_the_sample_uniques():
    ids = _population((20, 2, 5, 7, 9))[:50_000]
    ids = np.unique(ids, return_inverse=True)[1].ravel()
    sizes = np.bincount(ids)
    est = population_risk(ids, 1.0)
    expected = (sizes == 1).sum() / len(ids)
    assert expected > 0
    for name in ("zayatz", "pitman", "snb", "dankar"):
        assert est["uniqueness"][name]["share"] == pytest.approx(expected)
        assert "the table is the population" in est["uniqueness"][name]["reason"]
    assert est["marketer"]["estimated"] == est["marketer"]["table_as_population"] == len(sizes) / len(ids)
    assert "accuracy" not in est  # observed, not estimated


def test_estimates_carry_their_measured_accuracy():
    est = population_risk(np.unique(_population((20, 2, 5, 7, 9))[:5_000], return_inverse=True)[1].ravel(), 0.1)
    assert est["accuracy"].startswith("model estimates, not measurements")
    assert "0.31 at a sampling fraction of 0.01" in est["accuracy"]


def test_large_classes_only_give_no_population_uniques():
    # 40 classes of 10,000 people: a 10 % sample has no uniques, so none of its records is one
    pop = np.repeat(np.arange(40), 10_000)
    idx = np.random.default_rng(0).choice(len(pop), 40_000, replace=False)
    est = population_risk(np.unique(pop[idx], return_inverse=True)[1].ravel(), 0.1)
    for name in ("zayatz", "pitman", "snb", "dankar"):
        assert est["uniqueness"][name]["share"] == 0.0
        assert "no sample uniques" in est["uniqueness"][name]["reason"]
    assert est["marketer"]["estimated"] == pytest.approx(40 / 400_000, rel=1e-9)


def test_a_table_of_uniques_from_a_population_of_uniques():
    ids = np.arange(5_000)
    est = population_risk(ids, 0.1)
    u = est["uniqueness"]
    assert u["zayatz"]["share"] == pytest.approx(1.0)       # P(F=1 | f=1) = 1: no larger class
    assert u["pitman"]["share"] is None and "every record is unique" in u["pitman"]["reason"]
    assert u["snb"]["share"] is None and "no class of size 2" in u["snb"]["reason"]
    assert u["dankar"]["model"] == "zayatz" and u["dankar"]["share"] == pytest.approx(1.0)


def test_an_empty_table_and_a_fraction_outside_0_1():
    est = population_risk(np.array([], dtype=np.int64), 0.5)
    assert all(v["share"] is None and v["reason"] for v in est["uniqueness"].values())
    for bad in (0.0, -0.1, 1.01):
        with pytest.raises(ValueError, match="sampling_fraction"):
            population_risk(np.arange(3), bad)


# ------------------------------------------------------------------- the formulas, by hand
def test_snb_moments_match_the_models_definition_summed_exactly():
    """P(f=1), P(f=2) of a class whose size F − 1 ~ NegBin(α, β), f ~ Binomial(F, π)."""
    F = np.arange(1, 20_000)
    for alpha, beta, pi in [(0.7, 0.2, 0.1), (2.5, 0.6, 0.5), (0.2, 0.05, 0.01)]:
        pF = nbinom.pmf(F - 1, alpha, beta)
        p1, p2 = _snb_moments(alpha, beta, pi)
        assert p1 == pytest.approx(float((pF * binom.pmf(1, F, pi)).sum()), rel=1e-9)
        assert p2 == pytest.approx(float((pF * binom.pmf(2, F, pi)).sum()), rel=1e-9)


def test_pitmans_gradient_is_the_likelihoods():
    j, s = np.array([1, 2, 3, 7, 40]), np.array([300, 60, 20, 4, 1])
    n, u = int((j * s).sum()), int(s.sum())
    for theta, alpha in [(50.0, 0.3), (400.0, 0.8), (5.0, 0.05)]:
        _, gt, ga = _pitman_loglik(theta, alpha, j, s, n, u)
        h = 1e-6
        num_t = (_pitman_loglik(theta + h, alpha, j, s, n, u)[0] - _pitman_loglik(theta - h, alpha, j, s, n, u)[0]) / (2 * h)
        num_a = (_pitman_loglik(theta, alpha + h, j, s, n, u)[0] - _pitman_loglik(theta, alpha - h, j, s, n, u)[0]) / (2 * h)
        assert gt == pytest.approx(num_t, rel=1e-5, abs=1e-6)
        assert ga == pytest.approx(num_a, rel=1e-5, abs=1e-6)


def test_shlossers_estimator_with_the_whole_population_counts_the_classes():
    j, s = size_histogram(np.array([0, 0, 1, 2, 2, 2, 3]))
    assert _shlosser(j, s, 1.0) == 4
    assert _shlosser(j, s, 0.5) > 4     # with a sample, unseen classes are added


def test_pitmans_population_figures_hold_at_a_large_population():
    """E[S₁] and E[K] read Γ(θ+α+N−1)/Γ(θ+N) as a difference of log-gammas of ~N ln N, which
    loses the digits at large N: with n = 1,100 and π = 10⁻¹² (N = 1.1·10¹⁵) the share was 0.0718
    for 1.4·10⁻⁶ and K 4.9·10¹⁰ for 2.9·10⁹, at N = 1.1·10¹⁷ K was negative. Against the large-N
    forms Γ(θ+1)/Γ(θ+α)·N^(α−1) and Γ(θ+1)/(αΓ(θ+α))·N^α − θ/α, exact to O(1/N) there."""
    from scipy.special import gammaln

    from app.privacy.anonymity.risk import _pitman, size_histogram

    ids = np.r_[np.arange(500), 500 + np.arange(400) // 2, 1000 + np.arange(200) // 20]
    j, s = size_histogram(ids)
    for pi in (1e-6, 1e-9, 1e-12, 1e-14):
        n = len(ids)
        N = int(round(n / pi))
        fit = _pitman(j, s, n, N)
        theta, alpha = fit["theta"], fit["alpha"]
        lead = gammaln(theta + 1) - gammaln(theta + alpha)
        assert fit["share"] == pytest.approx(np.exp(lead + (alpha - 1) * np.log(N)), rel=1e-6), pi
        assert fit["classes_in_population"] == pytest.approx(np.exp(lead + alpha * np.log(N)) / alpha
                                                             - theta / alpha, rel=1e-6), pi


def test_zayatz_on_a_table_of_uniques_says_its_one_is_by_construction():
    """Every record unique: Zayatz takes the population's class sizes to be the sample's, all 1,
    so P(F=1 | f=1) = 1 whatever the population — the share 1.0 (chosen by Dankar's rule, Pitman
    and SNB having no fit) came with no reason, as if measured."""
    for pi in (0.01, 0.5):
        u = population_risk(np.arange(50), pi)["uniqueness"]
        assert u["zayatz"]["share"] == pytest.approx(1.0)
        assert "by construction" in u["zayatz"]["reason"]
        assert u["dankar"]["model"] == "zayatz" and "by construction" in u["dankar"]["reason"]
    assert population_risk(np.r_[np.arange(50), 0], 0.01)["uniqueness"]["zayatz"]["reason"] is None


def test_without_sample_uniques_the_marketer_estimate_still_carries_its_accuracy():
    """No sample uniques: the uniqueness share is observed (0), but the marketer figure is still
    Shlosser's estimate of the population's classes (here the classes seen: K/N = 50/2,000,
    a lower reading if the population has classes the sample missed) — said, as for any estimate."""
    est = population_risk(np.repeat(np.arange(50), 4), 0.1)
    assert est["uniqueness"]["dankar"]["share"] == 0.0
    assert est["marketer"]["model"] == "shlosser" and est["marketer"]["estimated"] == pytest.approx(50 / 2_000)
    assert est["accuracy"].startswith("the marketer figure is a model estimate")
    assert "0.21 at a sampling fraction of 0.01" in est["accuracy"]
    assert "Dankar" not in est["accuracy"]  # the uniqueness share is observed here


def test_the_accuracy_notes_do_not_understate_the_measured_errors():
    """The notes' figures against the page's accuracy table (the largest absolute error per
    fraction over the four populations) — the table's 0.3043 for Dankar's choice at π = 0.01
    read 'off by up to 0.30', its marketer 0.2044 and 0.0601 '0.20' and '0.06'."""
    import re
    from pathlib import Path

    from app.privacy.anonymity.risk import ACCURACY_NOTE, MARKETER_ACCURACY_NOTE

    page = (Path(__file__).resolve().parents[2] / "docs" / "methods" / "risk.md").read_text()
    dankar, marketer = {}, {}
    for line in page.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 8 and cells[1] in ("0.01", "0.1", "0.5") and "×" in cells[6]:
            dankar[cells[1]] = max(dankar.get(cells[1], 0.0), float(cells[6].split(",")[1]))
            marketer[cells[1]] = max(marketer.get(cells[1], 0.0), float(cells[7].split("/")[1]))
    measured_dankar = [dankar["0.01"], dankar["0.1"], dankar["0.5"]]
    measured_marketer = [marketer["0.01"], marketer["0.1"], marketer["0.5"]]
    fractions = r"up to ([\d.]+) at a sampling fraction of 0\.01, ([\d.]+) at 0\.1 and ([\d.]+) at 0\.5"
    both = re.search(fractions + r"; the marketer estimate by up to ([\d.]+), ([\d.]+) and ([\d.]+)", ACCURACY_NOTE)
    said = [float(x) for x in both.groups()]
    assert all(s >= m for s, m in zip(said, measured_dankar + measured_marketer)), (said, dankar, marketer)
    alone = [float(x) for x in re.search(fractions, MARKETER_ACCURACY_NOTE).groups()]
    assert all(s >= m for s, m in zip(alone, measured_marketer)), (alone, marketer)
