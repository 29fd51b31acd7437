"""icahdp (strict, paper) and dppro: what each release states is what it did."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest

from app.privacy import registry
from app.privacy.context import RunContext
from app.privacy.data import ColumnInfo, MethodInput
from app.privacy.dp_release.budget import mutual_information, personalized_budgets
from app.privacy.dp_release.dppro import DpproParams, run_dppro
from app.privacy.dp_release.encoding import Encoding, plan_column
from app.privacy.dp_release.icahdp import IcahdpParams, icahdp_epsilon, run_icahdp
from app.privacy.experiments import datasets_dir
from app.privacy.experiments.dp_release_tasks import ADULT_BOUNDS, declared_schema
from app.privacy.noise import on_grid
from app.privacy.registry import MethodInputError
from app.privacy.rng import SecureRandom



def ctx(seed: int | None = 1) -> RunContext:
    return RunContext(SecureRandom(seed=seed))


@pytest.fixture(scope="module")
def adult() -> MethodInput:
    frame = pd.read_csv(datasets_dir() / "adult" / "adult_train.csv", na_values="?",
                        skipinitialspace=True, nrows=3000)
    return MethodInput(columns=declared_schema(frame, ADULT_BOUNDS), frame=frame)


@pytest.fixture(scope="module")
def strict_release(adult):
    params = IcahdpParams(epsilon=1.0, sensitive={"race": 0.9, "sex": 0.2, "capital-gain": 0.95},
                          threshold=0.01)
    return params, run_icahdp(adult, params, ctx())


def test_strict_shares_add_up_to_epsilon_and_each_step_delivers_at_most_its_share(strict_release):
    params, result = strict_release
    split = result.guarantees["epsilon_split"]
    assert set(split) == {"filter", "mean", "covariance", "projection",
                          "sensitive:race", "sensitive:sex", "sensitive:capital-gain"}
    assert sum(split.values()) == pytest.approx(params.epsilon, abs=1e-12)
    assert result.metadata["epsilon_split"] == split
    noise = result.metadata["icahdp"]["noise"]
    for step, share in split.items():
        record = noise[step]
        assert record["epsilon_share"] == pytest.approx(share)
        assert record["epsilon_delivered"] <= share
    assert result.guarantees["epsilon_delivered"] <= params.epsilon
    assert result.guarantees["notion"] == "central_dp" and result.guarantees["epsilon"] == 1.0
    assert result.guarantees["private"] is False  # seeded test RNG


def test_personalized_budgets_give_the_most_sensitive_the_least(strict_release):
    _, result = strict_release
    eps = result.metadata["icahdp"]["personalized_budget"]["assignment"]
    assert eps["capital-gain"] == pytest.approx(eps["race"])  # same level (3 of 3)
    assert eps["sex"] > eps["race"]
    assert sum(eps.values()) == pytest.approx(0.2 * 1.0)
    attr = result.guarantees["attribute_epsilon"]
    assert attr["sex"] == pytest.approx(eps["sex"]) and attr["age"] == pytest.approx(0.8)


def test_strict_values_lie_within_bounds_on_the_output_grid_and_categories_are_declared(
        adult, strict_release):
    _, result = strict_release
    out = result.frame
    assert len(out) == len(adult.frame)
    columns = result.metadata["icahdp"]["columns"]
    for name, info in columns.items():
        if info["type"] == "numeric":
            lo, hi = info["bounds"]
            values = out[name].to_numpy(dtype=float)
            assert values.min() >= lo and values.max() <= hi
            assert on_grid(values, info["grid"])
            assert pd.api.types.is_integer_dtype(out[name])  # all Adult numerics are integer
        else:
            assert set(out[name].astype(str)) <= set(map(str, info["categories"]))
    assert not out.isna().any().any()


def test_strict_noise_records_name_sampler_grid_and_rng(strict_release):
    _, result = strict_release
    json.dumps([result.metadata, result.guarantees, result.metrics], allow_nan=False)  # storable
    for record in result.metadata["icahdp"]["noise"].values():
        assert "discrete Laplace" in record["sampler"]
        assert record["grid"] == 2.0 ** record["grid_exponent"]
        assert record["rng"] == SecureRandom(seed=1).name


def test_epsilon_hook_equals_reported_epsilon(adult, strict_release):
    params, result = strict_release
    spec = registry.get("icahdp")
    assert spec.epsilon_cost(params, adult.columns) == result.guarantees["epsilon"]
    dp = DpproParams(epsilon=0.7, delta=1e-6)
    out = run_dppro(adult, dp, ctx())
    assert registry.get("dppro").epsilon_cost(dp, adult.columns) == out.guarantees["epsilon"] == 0.7


def test_missing_bound_is_an_error_naming_the_column(adult):
    columns = [ColumnInfo(c.name, c.type, categories=c.categories, integer=c.integer,
                          bounds=None if c.name == "hours-per-week" else c.bounds)
               for c in adult.columns]
    data = MethodInput(columns=columns, frame=adult.frame)
    spec = registry.get("icahdp")
    for call in (lambda: run_icahdp(data, IcahdpParams(epsilon=1.0), ctx()),
                 lambda: spec.validate_against(IcahdpParams(epsilon=1.0), columns, None),
                 lambda: run_dppro(data, DpproParams(epsilon=1.0), ctx()),
                 lambda: registry.get("dppro").validate_against(DpproParams(epsilon=1.0), columns, None)):
        with pytest.raises(MethodInputError, match="'hours-per-week'"):
            call()
    # declared through the params it works, and the paper mode may read it from the data
    run_icahdp(data, IcahdpParams(epsilon=1.0, k=2, bounds={"hours-per-week": (1, 99)}), ctx())
    paper = run_icahdp(data, IcahdpParams(epsilon=1.0, mode="paper", k=2), ctx())
    assert any("hours-per-week" in s for s in paper.metadata["icahdp"]["non_private_steps"])


def test_undeclared_categories_are_an_error_in_strict_mode(adult):
    columns = [ColumnInfo(c.name, c.type, bounds=c.bounds, integer=c.integer,
                          categories=None if c.name == "race" else c.categories) for c in adult.columns]
    with pytest.raises(MethodInputError, match="'race'"):
        registry.get("icahdp").validate_against(IcahdpParams(epsilon=1.0), columns, None)


def test_paper_mode_says_it_is_not_private_and_lists_its_raw_data_steps(adult):
    params = IcahdpParams(epsilon=1.0, mode="paper", k_candidates=[2, 4])
    result = run_icahdp(adult, params, ctx())
    g = result.guarantees
    assert g["private"] is False and g["notion"] == "none" and g["epsilon"] is None
    steps = result.metadata["icahdp"]["non_private_steps"]
    assert any("entropy filter" in s for s in steps) and any("covariance" in s for s in steps)
    assert any("mutual information" in s for s in steps)
    assert result.metadata["icahdp"]["k"] in (2, 4)
    assert set(result.metadata["icahdp"]["mutual_information"]) == {"2", "4"}
    # the hook debits what the two candidate releases spent
    assert icahdp_epsilon(params, adult.columns) == 2.0
    assert result.metadata["icahdp"]["epsilon_noise_spent"] == pytest.approx(2.0)


def test_paper_mode_lists_the_missing_value_check_when_it_drops_nothing(adult):
    """Spec 03: paper mode's metadata lists each step that consulted the raw data. The missing-
    value filter reads every column's exact missing share; when it dropped nothing it was not
    listed, as if it had not read the data (spec23 acceptance check). With max_missing = 1 no
    column can be dropped, so nothing is read and nothing is listed."""
    steps = run_icahdp(adult, IcahdpParams(epsilon=1.0, mode="paper", k=2), ctx()).metadata["icahdp"]["non_private_steps"]
    assert any("missing values" in s and "dropped: none" in s for s in steps), steps
    steps = run_icahdp(adult, IcahdpParams(epsilon=1.0, mode="paper", k=2, max_missing=1.0),
                       ctx()).metadata["icahdp"]["non_private_steps"]
    assert not any("fraction of missing values" in s for s in steps), steps


def test_paper_mode_lists_the_imputation_only_where_a_cell_was_missing(adult):
    """'missing numeric cells imputed by the exact mean' was listed on every paper-mode release,
    also when no numeric column held a missing cell (or the only one was dropped: walk2 check)."""
    steps = run_icahdp(adult, IcahdpParams(epsilon=1.0, mode="paper", k=2), ctx()).metadata["icahdp"]["non_private_steps"]
    assert not any("imputed" in s for s in steps), steps
    frame = adult.frame.copy()
    frame.loc[frame.index[:50], "age"] = np.nan
    holed = MethodInput(adult.columns, frame)
    steps = run_icahdp(holed, IcahdpParams(epsilon=1.0, mode="paper", k=2), ctx()).metadata["icahdp"]["non_private_steps"]
    assert "missing numeric cells imputed by the exact mean: age" in steps, steps


def test_paper_mode_names_the_columns_it_changed(adult):
    """Paper mode protects nothing, but it changes every column it releases: its guarantees list
    them in protected_columns, as trr's (notion none) do, since that list is how later steps
    know which columns a step changed. It listed none, so frequent_itemsets on a paper-mode
    release counted education and sex with no note that icahdp had changed them, as it says for
    a strict one (walk acceptance check)."""
    from app.privacy.data import columns_changed_by
    result = run_icahdp(adult, IcahdpParams(epsilon=1.0, mode="paper", k=2), ctx())
    released = list(result.frame.columns)
    g = result.guarantees
    assert g["notion"] == "none" and g["private"] is False
    assert g["protected_columns"] == released and g["unprotected_columns"] == []
    step = {"method": "icahdp", "guarantees": g}
    assert columns_changed_by([step], released) == {c: ["icahdp"] for c in released}


def test_dppro_states_its_gaussian_guarantee_exactly(adult):
    params = DpproParams(epsilon=1.0, delta=1e-6, k=8)
    result = run_dppro(adult, params, ctx())
    g = result.guarantees
    assert g["notion"] == "central_dp" and g["epsilon"] == 1.0
    assert 0 < g["delta"] <= 1e-6
    rec = result.metadata["dppro"]["noise"]
    assert rec["mechanism"] == "gaussian" and rec["epsilon_delivered"] <= 1.0
    R = np.asarray(result.metadata["dppro"]["projection_matrix"])
    assert R.shape == (len(result.metadata["dppro"]["encoded_columns"]), 8)
    assert rec["sensitivity"] == pytest.approx(np.linalg.norm(R, 2) * math.sqrt(6 + 2 * 9))


def test_one_hot_round_trip_and_missing_cell_is_an_all_zero_block():
    info = ColumnInfo("colour", "categorical", categories=("red", "green", "blue"))
    plan = plan_column(info, None, None, None, require_declared=True)
    enc = Encoding([plan, plan_column(ColumnInfo("x", "numeric", bounds=(0, 10)), None, None, None,
                                      require_declared=True)])
    frame = pd.DataFrame({"colour": ["blue", "red", None, "green"], "x": [0.0, 10.0, 2.5, 7.5]})
    X = enc.encode(frame)
    assert X.shape == (4, 4)
    assert X[2, :3].sum() == 0 and np.all(X[[0, 1, 3], :3].sum(axis=1) == 1)
    back = enc.decode(X, frame.index)
    assert list(back["colour"].astype(str))[::3] == ["blue", "green"] and back["colour"][1] == "red"
    assert np.allclose(back["x"], frame["x"])
    assert enc.l1_diameter == 3 and enc.max_l1_norm == 2
    with pytest.raises(MethodInputError, match="outside its declared categories"):
        enc.encode(pd.DataFrame({"colour": ["purple"], "x": [1.0]}))


def test_budget_assignment_uses_the_matching_and_keeps_the_total():
    out = personalized_budgets({"a": 0.1, "b": 0.5, "c": 0.95, "d": 0.96}, 0.6, 3)
    eps = out["assignment"]
    assert sum(eps.values()) == pytest.approx(0.6)
    assert eps["a"] > eps["b"] > eps["c"] == pytest.approx(eps["d"])
    assert out["levels"] == {"a": 1, "b": 2, "c": 3, "d": 3}


def test_budget_ladder_is_the_papers_and_each_level_gets_its_rung():
    """ε_j = ε_sens·j/(1 + … + s): three levels get 0.3, 0.2, 0.1 of 0.6, the most sensitive the
    least; two attributes of one level share the two smallest rungs, (0.06 + 0.12)/2 each. A
    preference of 1 is level m, not m + 1. Mutation testing: a ladder from j = 0 (the most
    sensitive got ε = 0 and the rest were rescaled), or a level m + 1 at preference 1, passed
    test_budget_assignment_uses_the_matching_and_keeps_the_total (orders and the total only)."""
    out = personalized_budgets({"a": 0.1, "b": 0.5, "c": 1.0}, 0.6, 3)
    assert out["levels"] == {"a": 1, "b": 2, "c": 3}
    assert out["candidate_budgets"] == pytest.approx([0.1, 0.2, 0.3], rel=1e-12)
    assert out["assignment"] == pytest.approx({"a": 0.3, "b": 0.2, "c": 0.1}, rel=1e-12)
    shared = personalized_budgets({"a": 0.1, "b": 0.5, "c": 0.95, "d": 0.96}, 0.6, 3)
    assert shared["candidate_budgets"] == pytest.approx([0.06, 0.12, 0.18, 0.24], rel=1e-12)
    assert shared["assignment"] == pytest.approx({"a": 0.24, "b": 0.18, "c": 0.09, "d": 0.09}, rel=1e-12)


def test_discretize_puts_each_value_in_its_bin_and_missing_or_unknown_values_last():
    """bins equal-width bins over [lo, hi], values beyond clipped into the end bins, a missing
    or undeclared value in the extra last code: the histograms the noise is added to have a
    fixed length whatever the data (mutation testing: a size of bins - 1, hi landing in the
    missing code, or an unknown category kept at -1 passed every test)."""
    from app.privacy.dp_release.budget import discretize
    from app.privacy.dp_release.encoding import ColumnPlan

    plan = ColumnPlan("x", "numeric", lo=-10.0, hi=10.0)
    codes, size = discretize(np.array([-10.0, -6.01, -6.0, 9.99, 10.0, 11.0, -11.0, np.nan]), plan, 5)
    assert size == 6 and codes.tolist() == [0, 0, 1, 4, 4, 4, 0, 5]
    cats = ColumnPlan("c", "categorical", categories=("a", "b"))
    codes, size = discretize(pd.Series(["b", "a", None, "zz"]), cats, 5)
    assert size == 3 and codes.tolist() == [1, 0, 2, 2]


def test_entropy_of_noisy_counts_and_the_mean_mutual_information_exactly():
    """H in nats of a histogram whose noisy counts may be ≤ 0 (those count as 0; all of them
    ≤ 0 is H = 0), and I(original, release) averaged over the columns (0 with none)."""
    from app.privacy.dp_release.budget import entropy_of_counts, mean_mutual_information
    from app.privacy.dp_release.encoding import ColumnPlan

    assert entropy_of_counts(np.array([2.0, 2.0])) == pytest.approx(math.log(2))
    assert entropy_of_counts(np.array([1.0, 1.0, 2.0])) == pytest.approx(1.5 * math.log(2))
    assert entropy_of_counts(np.array([-3.0, 5.0, 0.0])) == 0.0
    assert entropy_of_counts(np.array([0.0, -1.0])) == 0.0
    assert entropy_of_counts(np.array([0.25, 0.25, -0.5])) == pytest.approx(math.log(2))  # 0.5 after clipping
    plans = [ColumnPlan("a", "categorical", categories=("x", "y")),
             ColumnPlan("b", "categorical", categories=("x", "y"))]
    original = pd.DataFrame({"a": ["x", "y"] * 50, "b": ["x"] * 100})
    release = pd.DataFrame({"a": ["x", "y"] * 50, "b": ["y", "x"] * 50})
    # a is released as it is (I = H(a) = ln 2); b is constant in the original (I = 0)
    assert mean_mutual_information(original, release, plans, 4) == pytest.approx(math.log(2) / 2)
    assert mean_mutual_information(original, release, [], 4) == 0.0


def test_mutual_information_of_a_copy_is_its_entropy_and_of_noise_is_near_zero():
    rng = np.random.default_rng(0)
    x = rng.integers(0, 4, 20_000)
    assert mutual_information(x, x, 4) == pytest.approx(math.log(4), abs=0.01)
    assert mutual_information(x, rng.integers(0, 4, 20_000), 4) < 0.002


def synthetic(n: int = 20_000) -> MethodInput:
    rng = np.random.default_rng(3)
    a = rng.uniform(0, 100, n)
    frame = pd.DataFrame({"a": a, "b": np.clip(a + rng.normal(0, 5, n), 0, 100),
                          "g": np.where(a > 50, "hi", "lo")})
    cols = [ColumnInfo("a", "numeric", bounds=(0, 100)), ColumnInfo("b", "numeric", bounds=(0, 100)),
            ColumnInfo("g", "categorical", categories=("hi", "lo"))]
    return MethodInput(columns=cols, frame=frame)


def test_large_epsilon_releases_carry_the_signal():
    """A test that can fail: at ε = 100 the projection noise is small, so correlations and the
    category/number link survive (a broken pipeline would give noise)."""
    data = synthetic()
    # the Gaussian needs σ ≈ Δ/10 even at ε = 100, so DPPro keeps less of the signal
    for result, min_corr in ((run_icahdp(data, IcahdpParams(epsilon=100.0, k=2), ctx(5)), 0.7),
                             (run_dppro(data, DpproParams(epsilon=100.0, k=40), ctx(5)), 0.3)):
        out = result.frame
        assert np.corrcoef(out["a"], out["b"])[0, 1] > min_corr
        assert out.loc[out["g"] == "hi", "a"].mean() > out.loc[out["g"] == "lo", "a"].mean() + 5
    # per-record error: small at ε = 100, large at ε = 0.05 (the noise is really there)
    strong = run_icahdp(data, IcahdpParams(epsilon=100.0, k=2), ctx(7)).frame
    weak = run_icahdp(data, IcahdpParams(epsilon=0.05, k=2), ctx(6)).frame
    assert np.abs(strong["a"] - data.frame["a"]).mean() < 6  # b ≈ 2.8/60 per entry of Z
    assert np.abs(weak["a"] - data.frame["a"]).mean() > 20


def test_a_k_beyond_the_encoded_width_is_capped_and_said_so():
    data = synthetic(500)  # 4 encoded dimensions
    meta = run_icahdp(data, IcahdpParams(epsilon=1.0, k=64), ctx()).metadata["icahdp"]
    assert meta["k"] == 4 and "k = 64 asked, capped at the encoded width 4" in meta["k_source"]
    assert run_icahdp(data, IcahdpParams(epsilon=1.0, k=2), ctx()).metadata["icahdp"]["k_source"] == "user"


def test_user_basis_replaces_the_covariance_share():
    data = synthetic(2000)
    basis = [[1.0], [1.0], [0.0], [0.0]]
    result = run_icahdp(data, IcahdpParams(epsilon=1.0, basis=basis), ctx())
    split = result.guarantees["epsilon_split"]
    assert "covariance" not in split and sum(split.values()) == pytest.approx(1.0)
    assert result.metadata["icahdp"]["k"] == 1
    assert np.allclose(np.abs(result.metadata["icahdp"]["basis"]), [[2**-0.5], [2**-0.5], [0], [0]])
    with pytest.raises(MethodInputError, match="rows"):
        registry.get("icahdp").validate_against(
            IcahdpParams(epsilon=1.0, basis=[[1.0]]), data.columns, None)


def test_a_basis_whose_columns_are_not_independent_is_refused():
    """An all-zero basis was accepted without a word and orthonormalized into the standard axes,
    a basis the caller never gave (edges acceptance check); a repeated column the same."""
    for basis, column in (([[0.0], [0.0], [0.0], [0.0]], 1), ([[1.0, 2.0], [1.0, 2.0], [0.0, 0.0], [0.0, 0.0]], 2),
                          ([[1.0, 0.0], [0.0, 0.0], [0.0, 0.0], [0.0, 0.0]], 2)):
        with pytest.raises(ValueError, match=f"basis column {column} is zero or a combination"):
            IcahdpParams(epsilon=1.0, basis=basis)
    IcahdpParams(epsilon=1.0, basis=[[1.0, 1.0], [1.0, -1.0], [0.0, 1e-9], [0.0, 0.0]])  # independent


def test_params_reject_shares_that_leave_nothing_for_the_projection():
    with pytest.raises(ValueError):
        IcahdpParams(epsilon=1.0, mean_share=0.5, covariance_share=0.5)
    with pytest.raises(ValueError):
        IcahdpParams(epsilon=1.0, sensitive={"x": 1.5})


def test_calibrated_decoding_matches_the_dp_category_frequencies(adult):
    """Plain argmax of a noise-dominated block spreads the categories evenly; the calibrated
    decoding releases them about as often as the DP mean says (post-processing)."""
    calibrated = run_icahdp(adult, IcahdpParams(epsilon=0.5, k=3), ctx(8))
    plain = run_icahdp(adult, IcahdpParams(epsilon=0.5, k=3, calibrate=False), ctx(8))
    meta = calibrated.metadata["icahdp"]
    names, mean = meta["encoded_columns"], np.asarray(meta["mean"])
    cats = meta["columns"]["race"]["categories"]
    dp_freq = np.clip([mean[names.index(f"race={c}")] for c in cats], 0, None)
    dp_freq /= dp_freq.sum()
    released = calibrated.frame["race"].astype(str).value_counts(normalize=True)
    assert np.allclose([released.get(c, 0.0) for c in cats], dp_freq, atol=0.02)
    white = adult.frame["race"].eq("White").mean()
    assert white > 0.8 and plain.frame["race"].astype(str).eq("White").mean() < 0.5
    assert "offsets" in meta["decoding"] and "plain argmax" in plain.metadata["icahdp"]["decoding"]


def test_check_names_the_offending_parameter_before_any_work(adult):
    spec = registry.get("icahdp")
    with pytest.raises(MethodInputError, match="'salary'"):
        spec.validate_against(IcahdpParams(epsilon=1.0, sensitive={"salary": 0.5}), adult.columns, None)
    with pytest.raises(MethodInputError, match="'race'.*not numeric"):
        spec.validate_against(IcahdpParams(epsilon=1.0, bounds={"race": (0, 1)}), adult.columns, None)
    with pytest.raises(MethodInputError, match="'age'.*not released"):
        spec.validate_against(IcahdpParams(epsilon=1.0, columns=["sex"], bounds={"age": (0, 99)}),
                              adult.columns, None)
    spec.validate_against(IcahdpParams(epsilon=1.0, mode="paper"),
                          [ColumnInfo("x", "numeric")], None)  # paper mode may read bounds
