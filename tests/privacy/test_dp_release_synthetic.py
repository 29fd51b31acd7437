"""mst (and the zCDP machinery it shares with aim): the accounting adds up to the (ε, δ) asked
for, the exact samplers have the right laws, domains come from the declared schema, and the
synthetic table keeps the structure the model measured without inventing any (the mbi 1.1
sampling bug made columns drawn from the same parent co-monotone)."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from app.privacy import registry
from app.privacy.context import RunContext
from app.privacy.data import ColumnInfo, MethodInput
from app.privacy.dp_release.marginal_domains import build_columns
from app.privacy.dp_release.marginals import SynthParams
from app.privacy.dp_release.mst import MstParams, compression, decompress, one_way_fit, run_mst
from app.privacy.dp_release.zcdp import ExactSampler, Ledger, gaussian_counts, l1_error, rho_for
from app.privacy.noise import zcdp_delta
from app.privacy.registry import MethodInputError
from app.privacy.rng import SecureRandom

N = 6000


def ctx(seed: int | None = 1) -> RunContext:
    return RunContext(SecureRandom(seed=seed))


def parent_children(n: int, seed: int = 0) -> pd.DataFrame:
    """A → B and A → C (B ⟂ C given A), a numeric x that depends on A, a boolean f, and a few
    missing cells in B."""
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 4, n)
    b = np.where(rng.random(n) < 0.7, a, rng.integers(0, 5, n))
    c = np.where(rng.random(n) < 0.7, a, rng.integers(0, 5, n))
    x = np.clip(np.rint(30 + 10 * a + rng.normal(0, 4, n)), 18, 90).astype(int)
    frame = pd.DataFrame({"a": np.array(list("pqrs"))[a], "b": b.astype(str), "c": c.astype(str),
                          "x": x, "f": rng.random(n) < 0.3})
    frame.loc[rng.choice(n, 400, replace=False), "b"] = None
    return frame


SCHEMA = [ColumnInfo("a", "categorical", categories=tuple("pqrs")),
          ColumnInfo("b", "categorical", categories=tuple("01234")),
          ColumnInfo("c", "categorical", categories=tuple("01234")),
          ColumnInfo("x", "numeric", bounds=(18, 90), integer=True),
          ColumnInfo("f", "boolean")]


@pytest.fixture(scope="module")
def data() -> MethodInput:
    return MethodInput(SCHEMA, parent_children(N))


@pytest.fixture(scope="module")
def release(data):
    params = MstParams(epsilon=5.0, bins=16, iterations=1000)
    return params, run_mst(data, params, ctx())


# ---------------------------------------------------------------------------- accounting
@pytest.mark.parametrize("epsilon,delta", [(0.5, 1e-9), (1.0, 1e-9), (2.0, 1e-6)])
def test_rho_for_is_the_largest_rho_that_converts_to_epsilon_delta(epsilon, delta):
    rho, slack, tails = rho_for(epsilon, delta, 30)
    assert 0 < slack < 1e-4 and 0 < tails < 1e-10
    assert zcdp_delta(rho, epsilon - slack) * math.exp(slack / 2) + tails <= delta
    assert zcdp_delta(rho * 1.01, epsilon - slack) * math.exp(slack / 2) + tails > delta  # tight
    # the textbook bound ρ ≥ (√(ε + ln 1/δ) - √(ln 1/δ))² is never better than the tight one
    assert rho >= (math.sqrt(epsilon + math.log(1 / delta)) - math.sqrt(math.log(1 / delta))) ** 2


def test_release_spends_exactly_its_rho_and_lists_every_step(release):
    params, result = release
    meta = result.metadata["mst"]
    rho, slack, tails = rho_for(params.epsilon, params.delta, len(meta["measurements"]))
    assert meta["rho"] == pytest.approx(rho, rel=1e-12)
    assert sum(s["rho"] for s in meta["measurements"] + meta["selections"]) == pytest.approx(meta["rho_spent"])
    assert meta["rho_spent"] <= meta["rho"] and meta["rho_spent"] == pytest.approx(meta["rho"], rel=1e-9)
    split = meta["budget_split"]
    assert params.one_way_share == 0.5 and params.one_way_weights == "levels"
    assert split["1-way"] == pytest.approx(0.5 * meta["rho"], rel=1e-9)
    assert split["select"] == pytest.approx(split["marginals chosen"]) == pytest.approx(0.25 * meta["rho"], rel=1e-9)
    one_way = {m["clique"][0]: m for m in meta["measurements"] if m["stage"] == "1-way"}
    assert sorted(one_way) == list("abcfx")
    levels = {c: meta["columns"][c]["levels"] for c in one_way}
    for c, m in one_way.items():  # ρ_c ∝ levels^(2/3), from the declared domain only
        share = levels[c] ** (2 / 3) / sum(k ** (2 / 3) for k in levels.values())
        assert m["rho"] == pytest.approx(share * split["1-way"], rel=1e-9)
    d = 5
    assert len(meta["selections"]) == d - 1 == meta["rounds"]
    for m in meta["measurements"]:
        assert m["rho"] == pytest.approx(1.0 / m["sigma"] ** 2, rel=1e-9)  # (√2)²/2σ²
        assert m["sigma"] / m["grid"] >= 16 and math.log2(m["grid"]) == int(math.log2(m["grid"]))
    for s in meta["selections"]:
        assert s["rho"] == pytest.approx(s["epsilon0"] ** 2 / 8, rel=1e-9)
        assert s["score_sensitivity"] == 2
    g = result.guarantees
    assert g["notion"] == "central_dp" and g["epsilon"] == params.epsilon
    # abs=0: approx's default abs of 1e-12 would swallow any error in a δ of 1e-9
    assert g["delta"] <= params.delta and g["delta"] == pytest.approx(meta["delta_delivered"], abs=0)
    assert g["delta"] == pytest.approx(zcdp_delta(meta["rho_spent"], params.epsilon - slack)
                                       * math.exp(slack / 2) + tails, rel=1e-6, abs=0)
    assert meta["sampler_slack_realized"]["epsilon"] <= meta["sampler_slack_reserved"]["epsilon"]
    assert g["private"] is False  # seeded test RNG
    assert registry.get("mst").epsilon_cost(params, SCHEMA) == params.epsilon
    json.dumps(result.metadata)  # plain JSON


def test_the_statements_point_at_keys_the_release_has(release):
    """They sent a reader to metadata.measurements and metadata.accountant; the measurements are
    under the method's own key and the accountant is in the guarantees (walk acceptance check)."""
    import re

    _, release = release
    text = " ".join(release.guarantees["statements"])
    paths = re.findall(r"\b(metadata|guarantees)\.([\w.]+[\w])", text)
    assert paths
    for root, path in paths:
        node = release.metadata if root == "metadata" else release.guarantees
        for key in path.split("."):
            assert key in node, (root, path)
            node = node[key]


def test_ledger_refuses_to_overspend():
    ledger = Ledger(rho=0.1)
    ledger.spend(0.06, {"kind": "select"})
    with pytest.raises(RuntimeError):
        ledger.spend(0.05, {"kind": "select"})


def test_gaussian_counts_have_the_calibrated_spread_and_stay_on_the_grid():
    rng = SecureRandom(seed=3)
    counts = np.arange(20000, dtype=float) % 7
    for sigma in (5.0, 40.0):
        noisy, record = gaussian_counts(counts, sigma, rng)
        residual = noisy - counts
        assert np.all(residual / record["grid"] == np.rint(residual / record["grid"]))
        assert abs(residual.mean()) < 4 * sigma / math.sqrt(len(counts))
        assert residual.std() == pytest.approx(sigma, rel=0.03)  # a 10% error in σ is rejected


# ------------------------------------------------------------------------- exact sampling
def test_bernoulli_exp_is_exact_in_law():
    sampler = ExactSampler(SecureRandom(seed=5))
    for x in (Fraction(3, 10), Fraction(17, 10), Fraction(0)):
        draws = np.array([sampler.bernoulli_exp(x) for _ in range(20000)])
        p = math.exp(-float(x))
        assert abs(draws.mean() - p) < 4.5 * math.sqrt(p * (1 - p) / len(draws)) + 1e-12


def test_exponential_mechanism_has_the_exponential_law_and_the_test_has_power():
    sampler = ExactSampler(SecureRandom(seed=7))
    scores = [Fraction(s) for s in (0, 3, 5, 6, 10)]
    eta = Fraction(1, 4)
    draws = np.bincount([sampler.exponential(scores, eta) for _ in range(20000)], minlength=5)
    weights = np.exp([float(eta * s) for s in scores])
    right = stats.chisquare(draws, weights / weights.sum() * draws.sum()).pvalue
    wrong_w = np.exp([float(eta * s) * 1.2 for s in scores])  # a 20% error in η
    wrong = stats.chisquare(draws, wrong_w / wrong_w.sum() * draws.sum()).pvalue
    assert right > 1e-3 and wrong < 1e-6


def test_l1_score_is_exact_and_moves_by_at_most_two_when_one_record_is_replaced():
    rng = np.random.default_rng(0)
    x = rng.integers(0, 50, 400).astype(float)
    est = rng.random(400) * 50
    y = x.copy()
    y[3] -= 1
    y[200] += 1
    assert abs(l1_error(x, est) - l1_error(y, est)) <= 2
    assert l1_error(x, est) == float(Fraction(l1_error(x, est)))


# ------------------------------------------------------------------------------- domains
def test_domains_come_from_the_declared_schema_never_from_the_data(data):
    columns = build_columns(SynthParams(epsilon=1.0, bins=16), SCHEMA)
    by = {c.name: c for c in columns}
    assert by["a"].size == 5 and by["b"].size == 6 and by["f"].size == 3  # + missing level
    assert by["x"].bins == 16 and by["x"].bin_edges()[0] == 18 and by["x"].bin_edges()[-1] == 91
    narrow = build_columns(SynthParams(epsilon=1.0, bins={"x": 200}), SCHEMA)
    assert narrow[3].per_integer and narrow[3].size == 73 + 1
    with pytest.raises(MethodInputError, match="'x'"):
        build_columns(SynthParams(epsilon=1.0), [ColumnInfo("x", "numeric")])
    with pytest.raises(MethodInputError, match="'a'"):
        build_columns(SynthParams(epsilon=1.0), [ColumnInfo("a", "categorical")])
    with pytest.raises(MethodInputError, match="'a'.*not numeric"):
        build_columns(SynthParams(epsilon=1.0, bins={"a": 4}), SCHEMA)
    # the params can declare what the schema does not
    ok = build_columns(SynthParams(epsilon=1.0, bounds={"x": (0, 100)}, categories={"a": ["u", "v"]}),
                       [ColumnInfo("x", "numeric"), ColumnInfo("a", "categorical")])
    assert ok[0].plan.source == "params" and ok[1].size == 3
    bad = data.frame.copy()
    bad.loc[0, "a"] = "zz"
    with pytest.raises(MethodInputError, match="outside its declared categories"):
        run_mst(MethodInput(SCHEMA, bad), MstParams(epsilon=1.0), ctx())


def test_too_many_categories_are_refused_counting_the_missing_level_aloud():
    """1,024 declared categories were refused as "column 'many' has 1025 levels (limit 1024)": the
    level the message added is the missing one, which it did not say (synth acceptance sweep)."""
    def column(k: int) -> list[ColumnInfo]:
        return [ColumnInfo("many", "categorical", categories=tuple(f"c{i}" for i in range(k)))]

    assert build_columns(SynthParams(epsilon=1.0), column(1023))[0].size == 1024
    with pytest.raises(MethodInputError) as refused:
        build_columns(SynthParams(epsilon=1.0), column(1024))
    message = str(refused.value)
    assert "'many'" in message and "1024 categories" in message and "missing" in message
    assert "at most 1023 categories" in message


def test_given_bin_edges_keep_a_spike_exactly():
    """32 equal bins over capital-gain's [0, 99999] put 0 in [0, 3125) and decode it uniformly:
    the 92% of Adult's records at 0 came out at 0 almost never. A bin [0, 1) holds exactly 0."""
    gain = ColumnInfo("gain", "numeric", integer=True, bounds=(0.0, 99999.0))
    rate = ColumnInfo("rate", "numeric", bounds=(0.0, 1.0))
    [col, real] = build_columns(SynthParams(epsilon=1.0, bins={"gain": [0, 1, 5000, 99999],
                                                               "rate": [0, 0.5, 0.9, 1]}), [gain, rate])
    assert col.bins == 3 and col.bin_edges() == [0, 1, 5000, 100000] and col.describe()["edges_given"]
    values = pd.Series([0, 0, 1, 4999, 5000, 99999, None], dtype="float64")
    assert col.codes(values).tolist() == [0, 0, 1, 1, 2, 2, col.missing_level]
    decoded = col.decode(np.array([0] * 1000 + [1] * 1000 + [2] * 1000), SecureRandom(seed=2))
    assert (decoded[:1000] == 0).all() and decoded[1000:2000].min() >= 1 and decoded[1000:2000].max() <= 4999
    assert decoded[2000:].min() >= 5000 and decoded[2000:].max() <= 99999
    assert real.codes(pd.Series([0.0, 0.5, 0.95, 1.0])).tolist() == [0, 1, 2, 2]
    for bins, match in (({"gain": [1, 5, 99999]}, "start at its lower bound"),
                        ({"gain": [0, 5, 1000]}, "end at its upper bound"),
                        ({"gain": [0, 0.5, 99999]}, "integer column's edges are integers")):
        with pytest.raises(MethodInputError, match=match):
            build_columns(SynthParams(epsilon=1.0, bins=bins), [gain])
    for bins in ({"gain": [0, 5, 5, 99999]}, {"gain": [0, 99999]}):
        with pytest.raises(ValueError):
            SynthParams(epsilon=1.0, bins=bins)


def test_an_integer_column_with_fractional_bounds_takes_edges_from_its_first_to_its_last_integer():
    """bounds [20.5, 60.5] on an integer column (its integers 21..60) refused every edge list:
    the edges had to start at 20.5 and be integers at once (synth acceptance sweep)."""
    age = ColumnInfo("age", "numeric", integer=True, bounds=(20.5, 60.5))
    [col] = build_columns(SynthParams(epsilon=1.0, bins={"age": [21, 30, 60]}), [age])
    assert col.bin_edges() == [21, 30, 61]
    assert col.codes(pd.Series([17.0, 21.0, 29.0, 30.0, 60.0, 75.0])).tolist() == [0, 0, 0, 1, 1, 1]
    decoded = col.decode(np.array([0] * 500 + [1] * 500), SecureRandom(seed=4))
    assert decoded[:500].min() >= 21 and decoded[:500].max() <= 29 and decoded[500:].max() <= 60
    for bins in ([20.5, 30, 60.5], [20, 30, 60], [21, 30, 61]):
        with pytest.raises(MethodInputError, match="from 21 to 60"):
            build_columns(SynthParams(epsilon=1.0, bins={"age": bins}), [age])


def test_an_integer_columns_lower_bound_has_its_own_bin_by_default():
    """Equal bins decoded uniformly turned Adult's capital-gain zeros (92 %) into values spread
    over [0, 3125): 0.0 % zeros in aim's synthetic table, and 99 % of its rows held both a gain
    and a loss (#8 acceptance run). The lower bound is its own bin by default now."""
    gain = ColumnInfo("gain", "numeric", integer=True, bounds=(0.0, 99999.0))
    [col] = build_columns(SynthParams(epsilon=1.0), [gain])
    edges = col.bin_edges()
    assert col.bins == 32 and edges[:2] == [0, 1] and edges[-1] == 100000
    widths = np.diff(edges[1:])  # the other 31 bins: runs of 3225 or 3226 integers, 1 .. 99999
    assert len(widths) == 31 and set(widths) <= {3225, 3226} and widths.sum() == 99999
    assert col.describe()["lower_bound_alone"] and not col.describe()["edges_given"]
    assert col.codes(pd.Series([0.0, 1.0, 3226.0, 3227.0, 99999.0])).tolist() == [0, 1, 1, 2, 31]
    # a column whose integers fit keeps one level per integer, a real-valued one equal bins
    narrow = build_columns(SynthParams(epsilon=1.0), [ColumnInfo("k", "numeric", integer=True, bounds=(0, 20))])
    assert narrow[0].per_integer and not narrow[0].describe()["lower_bound_alone"]
    # through a release: the spike survives (and nothing else is in its bin)
    rng = np.random.default_rng(3)
    values = np.where(rng.random(N) < 0.9, 0, rng.integers(1, 99999, N))
    frame = pd.DataFrame({"gain": values, "a": np.array(list("pq"))[rng.integers(0, 2, N)]})
    schema = [gain, ColumnInfo("a", "categorical", categories=("p", "q"))]
    out = run_mst(MethodInput(schema, frame), MstParams(epsilon=10.0), ctx()).frame
    assert abs((out["gain"] == 0).mean() - 0.9) < 0.02
    assert out["gain"][out["gain"] > 0].min() >= 1


def test_check_names_the_column_without_reading_data():
    spec = registry.get("mst")
    with pytest.raises(MethodInputError, match="'age'"):
        spec.validate_against(MstParams(epsilon=1.0), [ColumnInfo("age", "numeric")], None)
    with pytest.raises(MethodInputError, match="unknown column"):
        spec.validate_against(MstParams(epsilon=1.0, columns=["nope"]), SCHEMA, None)
    spec.validate_against(MstParams(epsilon=1.0, columns=["a", "x"]), SCHEMA, None)


def test_compression_merges_rare_levels_and_folds_a_rare_missing_level():
    y = np.array([500.0, 30.0, 400.0, 10.0, 1.0])  # level 4 is "missing"
    mapping = compression(y, sigma=20.0, missing_level=4, enabled=True)
    assert mapping.tolist() == [0, 2, 1, 2, 0]  # 1 and 3 share a level; missing goes with 0
    out = decompress(np.array([0, 1, 2, 2, 2, 2] * 500), mapping, 4, y, SecureRandom(seed=1))
    assert set(out[0::6]) == {0} and set(out[1::6]) == {2}
    shared = out.reshape(-1, 6)[:, 2:].ravel()  # back in proportion to the noisy counts 30 : 10
    assert set(shared) == {1, 3} and abs((shared == 1).mean() - 0.75) < 0.03
    fit = one_way_fit(y, mapping, 900)
    assert fit.sum() == pytest.approx(1.0) and np.all(fit >= 0)


# ------------------------------------------------------------------------------- release
def test_release_has_the_declared_columns_values_and_size(release, data):
    params, result = release
    out = result.frame
    assert list(out.columns) == ["a", "b", "c", "x", "f"] and len(out) == N
    assert set(out["a"].dropna()) <= set("pqrs") and set(out["b"].dropna()) <= set("01234")
    assert out["x"].dtype.kind == "i" and out["x"].between(18, 90).all()
    assert out["f"].dtype == bool
    assert out["a"].isna().sum() == 0  # no missing value in a: its missing level is not released
    assert 200 < out["b"].isna().sum() < 600  # 400 in the data
    infos = {c.name: c for c in result.columns}
    assert infos["x"].bounds == (18.0, 90.0) and infos["a"].categories == tuple("pqrs")


@pytest.mark.parametrize("method", ["mst", "aim"])
def test_a_boolean_column_stays_boolean_in_a_release_of_a_release(release, method):
    """A release lists a boolean column's domain as text (categories "False", "True": the
    schema's categories are text), and a job on that release read those as text categories: its
    synthetic f came out as the strings "True"/"False" (a category column in the Parquet
    download, where `f == True` holds nowhere) while its schema still said boolean (synth
    acceptance sweep). A boolean column's categories are its truth values."""
    _, first = release
    assert first.frame["f"].dtype == bool
    info = next(c for c in first.columns if c.name == "f")
    assert info.type == "boolean" and info.categories == ("False", "True")
    spec = registry.get(method)
    params = spec.params(epsilon=2.0, bins=16, iterations=200, columns=["a", "f"])
    again = spec.run(MethodInput(first.columns, first.frame), params, ctx(3)).frame
    assert again["f"].dtype == bool and set(again["f"]) <= {False, True}
    assert 0.2 < again["f"].mean() < 0.4  # 0.3 in the data


def test_one_way_marginals_are_close_and_the_measured_dependence_survives(release, data):
    _, result = release
    real, syn = data.frame, result.frame
    for col in ["a", "b", "c", "f"]:
        p = real[col].astype(str).value_counts(normalize=True)
        q = syn[col].astype(str).value_counts(normalize=True)
        assert 0.5 * p.subtract(q, fill_value=0).abs().sum() < 0.03, col
    chosen = {tuple(sorted(s["chosen"])) for s in result.metadata["mst"]["selections"]}
    assert {("a", "b"), ("a", "c"), ("a", "x")} <= chosen
    assert abs(_cramers_v(syn["a"], syn["b"]) - _cramers_v(real["a"], real["b"])) < 0.08
    assert abs(syn.groupby("a", observed=True)["x"].mean() - real.groupby("a")["x"].mean()).max() < 3


def _cramers_v(u: pd.Series, v: pd.Series) -> float:
    table = pd.crosstab(u.astype(str), v.astype(str)).to_numpy()
    chi2 = stats.chi2_contingency(table, correction=False)[0]
    return math.sqrt(chi2 / table.sum() / (min(table.shape) - 1))


def _conditional_independence_pvalue(frame: pd.DataFrame) -> float:
    """G-test of B ⟂ C given A: 2·Σ_a n_a·I(B; C | A = a) against χ² with Σ_a (r_B - 1)(r_C - 1)."""
    g, dof = 0.0, 0
    for _, part in frame.dropna(subset=["b", "c"]).groupby("a", observed=True):
        table = pd.crosstab(part["b"].astype(str), part["c"].astype(str)).to_numpy()
        if min(table.shape) < 2:
            continue
        g += stats.chi2_contingency(table, correction=False, lambda_="log-likelihood")[0]
        dof += (table.shape[0] - 1) * (table.shape[1] - 1)
    return float(stats.chi2.sf(g, dof))


def test_columns_sampled_from_the_same_parent_are_not_co_monotone(release):
    """B and C hang off A in the model (B ⟂ C | A exactly): the synthetic table must not
    couple them. mbi 1.1.0's randomized rounding drew both in the same row order inside each
    parent group, so they came out co-monotone; the same statistic flags such a table."""
    _, result = release
    syn = result.frame.dropna(subset=["b", "c"]).astype({"b": str, "c": str})
    assert _conditional_independence_pvalue(syn) > 1e-3
    comonotone = syn.copy()
    for _, index in syn.groupby("a", observed=True).groups.items():
        comonotone.loc[index, "b"] = np.sort(syn.loc[index, "b"].to_numpy())
        comonotone.loc[index, "c"] = np.sort(syn.loc[index, "c"].to_numpy())
    assert _conditional_independence_pvalue(comonotone) < 1e-6


def test_rows_parameter_sets_the_size_and_seeded_runs_repeat(data):
    small = MethodInput(SCHEMA, data.frame.iloc[:800].reset_index(drop=True))
    params = MstParams(epsilon=1.0, rows=123, iterations=200, columns=["a", "x"])
    one = run_mst(small, params, ctx(9))
    two = run_mst(small, params, ctx(9))
    assert list(one.frame.columns) == ["a", "x"] and len(one.frame) == 123
    pd.testing.assert_frame_equal(one.frame, two.frame)


def test_registry_import_does_not_load_jax():
    code = ("import sys\nfrom app.privacy import registry\nregistry.load_all()\n"
            "assert 'mst' in registry.load_all()\n"
            "print('jax' in sys.modules, 'mbi' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"]


# ------------------------------------------------------------------------------------ aim
def test_numpy_mirror_descent_is_mbis_estimator():
    """pgm.MirrorDescent (AIM's model) against mbi's MirrorDescent on the same noisy
    measurements: the same marginals, in and across cliques (mbi's variable elimination)."""
    from app.privacy.dp_release.mbi_bridge import load_mbi
    from app.privacy.dp_release.pgm import Measurement, MirrorDescent

    mbi = load_mbi()
    rng = np.random.default_rng(0)
    names = list("abcdef")
    sizes = dict(zip(names, [3, 4, 2, 5, 3, 4]))
    joint = rng.random([sizes[a] for a in names]) ** 3
    joint *= 10_000 / joint.sum()

    def true(cl):
        table = joint.sum(axis=tuple(i for i, a in enumerate(names) if a not in cl))
        kept = [a for a in names if a in cl]
        return np.transpose(table, [kept.index(a) for a in cl])

    cliques = [(a,) for a in names] + [("a", "b"), ("b", "c"), ("c", "d"), ("a", "d"), ("e", "f"),
                                       ("d", "e", "a")]
    measured = [Measurement(cl, true(cl) + rng.normal(0, 5, true(cl).shape), 5.0) for cl in cliques]
    mine = MirrorDescent(sizes, measured, 10_000)
    maximal = mine.run(600)
    from mbi.marginal_loss import LinearMeasurement

    domain = mbi.Domain(names, [sizes[a] for a in names])
    theirs = mbi.estimation.MirrorDescent().estimate(
        domain, [LinearMeasurement(m.values.ravel(), m.clique, m.sigma) for m in measured],
        known_total=10_000.0, iters=600)
    pairs = mine.tree.all_pairs(maximal, 10_000)
    for cl in [("a", "b"), ("c", "f"), ("b", "e"), ("a", "f"), ("d",)]:
        np.testing.assert_allclose(pairs[cl], np.asarray(theirs.project(cl).datavector(flatten=False)),
                                   atol=1e-4)
    assert mine.tree.project(maximal, ("d", "e", "a")).sum() == pytest.approx(10_000)


@pytest.fixture(scope="module")
def aim_release(data):
    from app.privacy.dp_release.aim import AimParams, run_aim

    params = AimParams(epsilon=3.0, bins=16, iterations=500)
    return params, run_aim(data, params, ctx(2))


def test_aim_spends_its_rho_adaptively_and_lists_every_step(aim_release):
    params, result = aim_release
    meta = result.metadata["aim"]
    assert meta["rho_spent"] <= meta["rho"] and meta["rho_spent"] == pytest.approx(meta["rho"], rel=1e-9)
    measurements, selections = meta["measurements"], meta["selections"]
    assert meta["budget_split"]["1-way"] == pytest.approx(0.08 * meta["rho"], rel=1e-9)
    assert meta["round_rho"] == pytest.approx(0.92 * meta["rho"] / (16 * 5 - 5), rel=1e-9)
    first = [m for m in measurements if m["stage"] == "1-way"]
    assert len(first) == 5 and first[0]["clique"] == ["a"]
    assert first[3]["sigma"] < first[0]["sigma"]  # x (17 levels) gets more of the share than a (5)
    assert (first[0]["sigma"] / first[3]["sigma"]) ** 2 == pytest.approx((17 / 5) ** (2 / 3), rel=1e-9)
    assert measurements[5]["sigma"] == pytest.approx(math.sqrt(1 / (0.9 * meta["round_rho"])), rel=1e-9)
    assert len(selections) == meta["rounds"] == len(measurements) - 5
    assert meta["rounds"] <= meta["planned_rounds"] + 1 and meta["planned_rounds"] == 16 * 5
    for m in measurements:
        assert m["rho"] == pytest.approx(1.0 / m["sigma"] ** 2, rel=1e-9)
    for s in selections:
        assert s["rho"] == pytest.approx(s["epsilon0"] ** 2 / 8, rel=1e-9)
    sigmas = [m["sigma"] for m in measurements[5:-1]]  # σ only ever halves (annealing) until the last
    assert all(b == pytest.approx(a) or b == pytest.approx(a / 2) for a, b in zip(sigmas, sigmas[1:]))
    halvings = sum(b < a * 0.75 for a, b in zip(sigmas, sigmas[1:]))
    assert halvings <= meta["annealed"] <= halvings + 1  # the last round resets σ to spend the rest
    g = result.guarantees
    assert g["notion"] == "central_dp" and g["epsilon"] == 3.0 and g["delta"] <= params.delta
    assert registry.get("aim").epsilon_cost(params, SCHEMA) == 3.0
    json.dumps(result.metadata)


def test_aim_release_keeps_the_marginals_and_the_dependence(aim_release, data):
    _, result = aim_release
    real, syn = data.frame, result.frame
    assert list(syn.columns) == list(real.columns) and len(syn) == N
    assert syn["a"].isna().sum() == 0 and syn["x"].dtype.kind == "i"  # no spurious missing level
    assert 250 < syn["b"].isna().sum() < 550
    for col in ["a", "b", "c", "f"]:
        p = real[col].astype(str).value_counts(normalize=True)
        q = syn[col].astype(str).value_counts(normalize=True)
        assert 0.5 * p.subtract(q, fill_value=0).abs().sum() < 0.03, col
    assert abs(_cramers_v(syn["a"], syn["b"]) - _cramers_v(real["a"], real["b"])) < 0.08
    assert abs(syn.groupby("a", observed=True)["x"].mean() - real.groupby("a")["x"].mean()).max() < 3


def test_aim_never_gives_mass_back_to_a_missing_level_it_masked():
    """A missing level whose first noisy count is below 5σ gets no mass in the model (aim.md),
    and the metadata says which columns release missing cells. The mask was only where the
    potentials started (-10⁴): every later measurement of the column pulled its missing level
    back up, and on a 2,000-row table whose x is 19 % missing (σ ≈ 102 at ε = 1, 5σ above its
    381 missing cells) 3 releases of 6 held 144-385 missing x while the metadata said "released
    for no column" (synth acceptance sweep)."""
    from app.privacy.dp_release.aim import AimParams, run_aim

    rng = np.random.default_rng(7)
    n = 2000
    frame = pd.DataFrame({"many": [f"c{k}" for k in rng.integers(0, 1000, n)],
                          "x": rng.integers(0, 100, n).astype(float),
                          "y": np.round(rng.normal(50, 10, n), 3),
                          "lab": rng.choice(["a", "b"], n)})
    frame.loc[rng.random(n) < 0.19, "x"] = np.nan
    schema = [ColumnInfo("many", "categorical", categories=tuple(f"c{k}" for k in range(1000))),
              ColumnInfo("x", "numeric", bounds=(0, 99), integer=True),
              ColumnInfo("y", "numeric", bounds=(0, 100)),
              ColumnInfo("lab", "categorical", categories=("a", "b"), role="label")]
    for seed in range(6):  # seed 4 released 375 missing x, its metadata said none
        result = run_aim(MethodInput(schema, frame), AimParams(epsilon=1.0), ctx(seed))
        said = result.metadata["aim"]["missing_levels"].split("released for ")[-1]
        released = set() if said == "no column" else set(said.split(", "))
        holding = {c for c in result.frame.columns if result.frame[c].isna().any()}
        assert holding == released, (seed, holding, said)


def test_aim_refuses_fewer_rounds_than_columns():
    from app.privacy.dp_release.aim import AimParams

    with pytest.raises(MethodInputError, match="rounds"):
        registry.get("aim").validate_against(AimParams(epsilon=1.0, rounds=3), SCHEMA, None)


def _random_cliques(rng: np.random.Generator, names: list[str]) -> list[tuple[str, ...]]:
    singles = [(a,) for a in names if rng.random() < 0.8]  # some attributes in no clique
    pairs = [tuple(rng.choice(names, size=min(len(names), int(rng.choice([2, 2, 3]))), replace=False))
             for _ in range(int(rng.integers(0, 2 * len(names) + 1)))]
    return singles + pairs


@pytest.mark.parametrize("seed", range(6))
def test_clique_graph_cells_are_mbis_hypothetical_model_size(seed):
    """AIM's size filter asks for the junction tree's size with every candidate in every round;
    CliqueGraph answers what mbi's hypothetical_model_size answers (its triangulation, its
    greedy order and tie-breaks, its tree shortcut), 50-100× faster."""
    from mbi import Domain, junction_tree

    from app.privacy.dp_release.pgm import CliqueGraph, maximal_subset

    rng = np.random.default_rng(seed)
    for trial in range(60):
        d = int(rng.integers(1, 12 if trial < 40 else 30))
        names = [f"v{i}" for i in rng.permutation(d)]
        sizes = {a: int(rng.choice([1, 2, 2, 3, 5, 10, 16])) for a in names}
        cliques = _random_cliques(rng, names)
        if trial % 10 == 0 and d > 1:  # a tree: mbi's dfs order, no fill
            cliques = [(names[i], names[int(rng.integers(0, i))]) for i in range(1, d)]
        extra = tuple(rng.choice(names, size=min(d, int(rng.choice([1, 2]))), replace=False))
        domain = Domain(list(sizes), list(sizes.values()))
        theirs = junction_tree.hypothetical_model_size(domain, maximal_subset(cliques + [extra]))
        assert CliqueGraph(sizes, cliques).cells(extra) * 8 / 2**20 == pytest.approx(theirs, rel=1e-12)
        if cliques:
            ref = junction_tree.hypothetical_model_size(domain, maximal_subset(cliques))
            assert CliqueGraph(sizes, cliques).cells() * 8 / 2**20 == pytest.approx(ref, rel=1e-12)


def test_workload_weights_are_the_papers_sum_over_the_workload():
    from app.privacy.dp_release.aim import workload_weights

    columns = build_columns(SynthParams(epsilon=1.0, bins=16), SCHEMA)
    names = [c.name for c in columns]
    weights = workload_weights(names, columns, max_cells=60)  # x (17) × a, b or c (5-6) only
    workload = [r for r in weights if len(r) == 2]
    assert 0 < len(workload) < 10  # the cell limit left some pairs out
    for r, w in weights.items():  # w_r = Σ_{s ∈ W} |r ∩ s|, as the paper writes it
        assert w == (sum(len(set(r) & set(s)) for s in workload) or 1.0), r


def test_a_label_columns_candidates_weigh_label_weight_times_more(data):
    """At ε = 0.5 on Adult 3 AIM releases in 10 linked the label to one column only and their
    synthetic table predicted the majority class; the label's candidates weigh more by default
    (docs/methods/aim.md, "The label's weight"), and 1 is the paper's workload."""
    from app.privacy.dp_release.aim import AimParams, run_aim, workload_weights

    columns = build_columns(SynthParams(epsilon=1.0, bins=16), SCHEMA)
    names = [c.name for c in columns]
    plain = workload_weights(names, columns, max_cells=60)
    weighted = workload_weights(names, columns, max_cells=60, labels=frozenset({"a"}), label_weight=2.5)
    for r, w in plain.items():
        assert weighted[r] == (2.5 * w if "a" in r else w), r
    assert AimParams(epsilon=1.0).label_weight == 2.0
    labelled = MethodInput([ColumnInfo(**{**c.__dict__, "role": "label"}) if c.name == "a" else c for c in SCHEMA],
                           data.frame)
    meta = run_aim(labelled, AimParams(epsilon=3.0, bins=16, iterations=100), ctx(3)).metadata["aim"]
    assert meta["workload"]["label_columns"] == ["a"] and meta["workload"]["label_weight"] == 2.0
    assert "× 2 when r holds a label column (a)" in meta["workload"]["weights"]
    unlabelled = run_aim(data, AimParams(epsilon=3.0, bins=16, iterations=100), ctx(3)).metadata["aim"]
    assert unlabelled["workload"]["label_columns"] == [] and unlabelled["workload"]["weights"] == "w_r = Σ_{s ∈ W} |r ∩ s|"


def test_mst_weighs_the_labels_pairs_and_pays_for_it_in_the_selections_sensitivity(data):
    """mst's tree held 3 of Adult's label pairs and misclassified 0.195 at ε = 1; with the label's
    pairs weighing 2 it holds 5-6 and misclassifies ~0.17 (mst.md, "The label's weight"). A
    weighted score moves by up to 2·w when one record changes: η is divided by w."""
    labelled = MethodInput([ColumnInfo(**{**c.__dict__, "role": "label"}) if c.name == "a" else c for c in SCHEMA],
                           data.frame)
    meta = run_mst(labelled, MstParams(epsilon=3.0, bins=16, iterations=200), ctx(4)).metadata["mst"]
    assert meta["label_columns"] == ["a"] and meta["label_weight"] == 2.0
    selections = [s for s in meta["selections"]]
    assert selections and all(s["score_sensitivity"] == 4.0 and "× 2 for a pair holding a label column" in s["score"]
                              for s in selections)
    assert meta["rho_spent"] == pytest.approx(meta["rho"], rel=1e-9)  # the budget is unchanged
    plain = run_mst(data, MstParams(epsilon=3.0, bins=16, iterations=200), ctx(4)).metadata["mst"]
    assert plain["label_columns"] == [] and all(s["score_sensitivity"] == 2.0 for s in plain["selections"])
    # the weighted scores themselves: a label pair's is w times its L1 error
    from app.privacy.dp_release.mst import select_tree
    from app.privacy.dp_release.zcdp import Ledger

    columns = build_columns(SynthParams(epsilon=1.0, bins=16), SCHEMA)
    names = [c.name for c in columns]
    from app.privacy.dp_release.marginal_domains import encode_frame
    codes = encode_frame(columns, data.frame)
    model = {c.name: np.full(c.size, 1.0 / c.size) for c in columns}
    pairs = [(0, 1), (1, 2)]  # a-b holds the label, b-c does not
    chosen = select_tree(pairs, names, codes, model, N, 1e6, 1, Ledger(1e7), SecureRandom(seed=1),
                         frozenset({"a"}), 1e6)  # a weight that decides it whatever the noise
    assert chosen == [("a", "b")]


# ------------------------------------------------------------------- 1-way budget split
def test_levels_split_minimizes_the_expected_l1_noise_of_the_one_way_marginals():
    from app.privacy.dp_release.marginals import one_way_rhos

    columns = build_columns(SynthParams(epsilon=1.0, bins=16), SCHEMA)
    levels = np.array([c.size for c in columns], dtype=float)
    noise = lambda rhos: float(np.sum(levels / np.sqrt(rhos)))  # Σ_c k_c·σ_c (∝ E‖noise‖₁)  # noqa: E731
    best = np.array(one_way_rhos(columns, 0.3, "levels"))
    uniform = np.array(one_way_rhos(columns, 0.3, "uniform"))
    assert best.sum() == pytest.approx(0.3) and uniform.sum() == pytest.approx(0.3)
    assert np.allclose(uniform, 0.06)
    assert noise(best) < noise(uniform)
    rng = np.random.default_rng(0)
    for _ in range(200):  # no other split of the same total does better
        other = best * np.exp(rng.normal(0, 0.3, len(best)))
        assert noise(best) <= noise(0.3 * other / other.sum()) + 1e-9


def test_aim_paper_start_is_available(data):
    from app.privacy.dp_release.aim import AimParams, run_aim

    params = AimParams(epsilon=3.0, bins=16, iterations=200, one_way_share=None, one_way_weights="uniform")
    meta = run_aim(data, params, ctx(3)).metadata["aim"]
    T = meta["planned_rounds"]
    assert meta["round_rho"] == pytest.approx(meta["rho"] / T, rel=1e-12)
    for m in meta["measurements"][:5]:  # σ = √(T/0.9ρ) for every column
        assert m["stage"] == "1-way" and m["sigma"] == pytest.approx(math.sqrt(T / (0.9 * meta["rho"])), rel=1e-9)
    assert meta["rho_spent"] == pytest.approx(meta["rho"], rel=1e-9)
