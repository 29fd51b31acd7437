"""Bad inputs of mst, aim, dppro and icahdp are refused by the params model or the method's
check — which run before the job's ε is debited — with a message naming the parameter and the
range that works, never by a job that fails in the worker (the bad-input sweep's F2, F3, F4 and
F10). Where a limit is a floor of the noise samplers, the value the message names does run."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest
from pydantic import ValidationError

from app.privacy import registry
from app.privacy.context import RunContext
from app.privacy.data import ColumnInfo, MethodInput
from app.privacy.dp_release.encoding import plan_column
from app.privacy.dp_release.feasibility import gaussian_feasible, laplace_minimum, smallest
from app.privacy.noise import calibrate_gaussian, calibrate_laplace
from app.privacy.registry import MethodInputError
from app.privacy.rng import SecureRandom

N = 40
SMALL = pd.DataFrame({"age": [20 + i % 30 for i in range(N)],
                      "sex": ["M" if i % 2 else "F" for i in range(N)],
                      "zip": [1000 + i % 7 for i in range(N)],
                      "disease": [["flu", "cold", "hiv"][i % 3] for i in range(N)],
                      "income": ["hi" if i % 4 == 0 else "lo" for i in range(N)]})
SCHEMA = [ColumnInfo("age", "numeric", integer=True), ColumnInfo("sex", "categorical"),
          ColumnInfo("zip", "numeric", integer=True), ColumnInfo("disease", "categorical"),
          ColumnInfo("income", "categorical", role="label")]
DECLARED = {"bounds": {"age": [0, 100], "zip": [1000, 1010]},
            "categories": {"sex": ["M", "F"], "disease": ["flu", "cold", "hiv"], "income": ["hi", "lo"]}}
FAST = {"mst": {"iterations": 100}, "aim": {"iterations": 100, "round_iterations": 10}}


def params(method: str, **extra):
    return registry.get(method).params(**{**DECLARED, **FAST.get(method, {}), **extra})


def run(method: str, p, frame: pd.DataFrame = SMALL, schema=SCHEMA):
    return registry.get(method).run(MethodInput(schema, frame), p, RunContext(SecureRandom(seed=5)))


def refused(method: str, p, *fragments: str) -> str:
    with pytest.raises(MethodInputError) as info:
        registry.get(method).validate_against(p, SCHEMA, None)
    for fragment in fragments:
        assert fragment in str(info.value), str(info.value)
    return str(info.value)


# ----------------------------------------------------------------- F2: small ε or δ
@pytest.mark.parametrize("method,extra,name", [
    ("mst", {"epsilon": 1.0, "delta": 1e-250}, "delta"),
    ("mst", {"epsilon": 1e-5}, "epsilon"),
    ("aim", {"epsilon": 1e-4}, "epsilon"),
    ("aim", {"epsilon": 1.0, "delta": 1e-250}, "delta"),
    ("dppro", {"epsilon": 1.0, "delta": 1e-250}, "delta"),
    ("dppro", {"epsilon": 1e-8}, "epsilon"),
    ("dppro", {"epsilon": 5e-324}, "epsilon"),
    ("icahdp", {"epsilon": 1e-6}, "epsilon"),
    ("icahdp", {"epsilon": 5e-324}, "epsilon"),
    ("icahdp", {"epsilon": 1e-6, "sensitive": {"sex": 0.9, "age": 0.2}}, "epsilon"),
])
def test_an_epsilon_or_delta_the_samplers_cannot_serve_is_refused_at_check_and_the_named_minimum_runs(
        method, extra, name):
    message = refused(method, params(method, **extra), f"{name} = ", "too small for this job")
    lowest = float(re.search(rf"{name} must lie in \[([-+0-9.e]+), ", message).group(1))
    assert lowest > extra[name]
    ok = params(method, **{**extra, name: lowest})
    registry.get(method).validate_against(ok, SCHEMA, None)
    result = run(method, ok)
    assert len(result.frame) == N
    if method != "icahdp":  # icahdp is pure ε-DP
        assert 0 < result.guarantees["delta"] <= ok.delta
    assert result.guarantees["epsilon"] == ok.epsilon
    if method in ("mst", "aim"):  # the named minimum is tight (to its rounding up to 2 digits)
        refused(method, params(method, **{**extra, name: lowest * 0.85}), f"{name} = ")


def test_the_samplers_own_delta_is_negligible_so_a_tiny_delta_is_served():
    """The discrete Gaussian's acceptance test holds every acceptance probability to a small
    relative error down to e^-512 (beyond ~33σ), so the δ it costs itself is ~1e-236 per
    measurement, far inside the reserve; δ = 1e-15 (refused while a 53-bit uniform decided
    every acceptance: its floor was ~1.9e-13 per measurement) runs and is delivered."""
    from app.privacy.dp_release.zcdp import TAIL_PER_MEASUREMENT
    from app.privacy.noise import gaussian_slack

    assert max(gaussian_slack(s, 2)[1] for s in np.geomspace(16.0, 3e10, 200)) < 1e-230
    assert TAIL_PER_MEASUREMENT <= 1e-200
    for method in ("mst", "aim", "dppro"):
        p = params(method, epsilon=1.0, delta=1e-15)
        registry.get(method).validate_against(p, SCHEMA, None)
        result = run(method, p)
        assert len(result.frame) == N
        assert result.guarantees["epsilon"] == 1.0
        assert 1e-17 < result.guarantees["delta"] <= 1e-15  # delivered, and nearly all of it used


def test_laplace_floor_is_always_calibrated_and_is_a_real_floor():
    """The check accepts a discrete Laplace share ≥ laplace_minimum(coords) whatever the
    sensitivity; calibrate_laplace then succeeds for every such share (it is erratic just
    above its own floor), and well below it nothing works."""
    for coords in (1, 7, 72, 5000):
        floor = laplace_minimum(coords)
        for sensitivity in (0.05 * coords, float(coords), 31.6 * coords):
            for eps in np.geomspace(floor, 3 * floor, 25):
                calibrate_laplace(sensitivity, coords, float(eps))
            with pytest.raises(ValueError):
                calibrate_laplace(sensitivity, coords, 0.45 * floor)


def test_gaussian_feasibility_does_not_depend_on_the_sensitivity():
    lowest = smallest(lambda e: gaussian_feasible(10, e, 1e-6), 1e-7, 1.0)
    for sensitivity in (0.3, 50.0):
        calibrate_gaussian(sensitivity, 10, lowest, 1e-6)
        with pytest.raises(ValueError):
            calibrate_gaussian(sensitivity, 10, 0.97 * lowest, 1e-6)


def test_wide_aim_is_served_at_the_default_delta_and_refused_before_the_debit_at_a_tiny_epsilon():
    """T = 16d: 60 columns make 17d + 1 = 1021 measurements. Their δ reserve is negligible, so
    the default δ = 1e-9 serves them (it did not while the sampler's tails cost ~1e-12 each);
    their ε reserve (2e-6 each) exceeds ε = 0.002, which is refused at the check."""
    schema = [ColumnInfo(f"c{i}", "categorical", categories=("a", "b")) for i in range(60)]
    aim = registry.get("aim")
    aim.validate_against(aim.params(epsilon=1.0), schema, None)
    with pytest.raises(MethodInputError, match=r"epsilon = 0.002 is too small.*1021 noisy measurements"):
        aim.validate_against(aim.params(epsilon=0.002), schema, None)


# ------------------------------------------------------------ F3: mixed category kinds
@pytest.mark.parametrize("method", ["mst", "aim", "dppro", "icahdp"])
@pytest.mark.parametrize("categories,fragment", [
    (["M", "F", 2], "mix integers and text"),
    (["M", "F", 1, True], "mix booleans, integers and text"),
    (["M", 1.0, 1], "mix decimals, integers and text"),
    ([1, 1.0], "mix decimals and integers"),
    ([0.0, -0.0], "must be distinct"),
    (["M", "M"], "must be distinct"),
])
def test_categories_of_mixed_kinds_are_a_validation_error_naming_the_column(method, categories, fragment):
    with pytest.raises(ValidationError, match=re.escape(fragment)) as info:
        registry.get(method).params(epsilon=1.0, categories={"sex": categories})
    assert "categories of 'sex'" in str(info.value)


def test_schema_categories_of_mixed_kinds_are_refused_at_check_and_one_kind_runs():
    schema = [ColumnInfo("sex", "categorical", categories=("M", "F", 1)), *SCHEMA[2:]]
    for method in ("mst", "aim", "dppro", "icahdp"):
        p = registry.get(method).params(epsilon=1.0, bounds={"zip": [1000, 1010]},
                                        categories={k: v for k, v in DECLARED["categories"].items()
                                                    if k != "sex"})
        with pytest.raises(MethodInputError, match="column 'sex': categories mix integers and text"):
            registry.get(method).validate_against(p, schema, None)
    # integers matched to the text of the data, released as the declared integers
    frame = SMALL.assign(zip=SMALL["zip"].astype(str))
    schema = [*SCHEMA[:2], ColumnInfo("zip", "categorical"), *SCHEMA[3:]]
    cats = {**DECLARED["categories"], "zip": list(range(1000, 1007))}
    out = run("dppro", registry.get("dppro").params(epsilon=1.0, bounds={"age": [0, 100]},
                                                      categories=cats), frame, schema).frame
    assert set(out["zip"]) <= set(range(1000, 1007))
    assert plan_column(schema[2], None, {"zip": [True, False]}, None, require_declared=True).width == 2


@pytest.mark.parametrize("method", ["mst", "aim"])
@pytest.mark.parametrize("bins,fragment", [
    ({"zip": 4, "age": 1}, "bins of 'age' must lie in [2, 256]"),
    ({"age": [0, 100]}, "bins of 'age' must lie in [2, 256]"),
    ({"zip": 4, "age": [0, 50, 30, 100]}, "bins of 'age': its edges must increase strictly"),
    (300, "bins must lie in [2, 256]"),
])
def test_bins_out_of_range_are_a_validation_error_naming_the_column(method, bins, fragment):
    # a per-column bins map names the column at fault, as the bounds and categories errors do
    with pytest.raises(ValidationError, match=re.escape(fragment)):
        registry.get(method).params(epsilon=1.0, bins=bins)


# -------------------------------------------------------------------- F4: wide bounds
@pytest.mark.parametrize("bounds,fragment", [
    ([-1e308, 1e308], "range hi - lo that is finite"),
    ([0.0, 1e-310], "at least 1e-300"),
    ([5.0, 1.0], "need lo < hi"),
])
def test_bounds_without_a_usable_range_are_a_validation_error(bounds, fragment):
    for method in ("mst", "aim", "dppro", "icahdp"):
        with pytest.raises(ValidationError, match=re.escape(fragment)):
            registry.get(method).params(epsilon=1.0, bounds={"age": bounds})


@pytest.mark.parametrize("method", ["mst", "aim", "dppro", "icahdp"])
def test_integer_bounds_beyond_2_53_are_refused_at_check(method):
    for bounds in ([-1e100, 1e100], [0, 1e300], [0, 2.0**53 + 2]):
        refused(method, params(method, epsilon=1.0, bounds={**DECLARED["bounds"], "age": bounds}),
                "column 'age'", "±2^53")
    if method == "icahdp":  # paper mode checks the bounds it is given too
        refused(method, params(method, epsilon=1.0, mode="paper",
                               bounds={**DECLARED["bounds"], "age": [0, 1e300]}), "column 'age'")


@pytest.mark.parametrize("method", ["mst", "dppro", "icahdp"])
def test_the_widest_accepted_bounds_release_values_inside_them(method):
    """icahdp and dppro once published -2^63 in every row for bounds ±1e308 (int64 overflow)."""
    frame = SMALL.assign(w=np.linspace(-5.0, 5.0, N))
    schema = [*SCHEMA, ColumnInfo("w", "numeric")]
    bounds = {"age": [-(2.0**53), 2.0**53], "zip": [1000, 1010], "w": [-8e307, 8e307]}
    p = registry.get(method).params(epsilon=1.0, bounds=bounds, categories=DECLARED["categories"],
                                    **FAST.get(method, {}))
    registry.get(method).validate_against(p, schema, None)
    out = run(method, p, frame, schema).frame
    for name, (lo, hi) in bounds.items():
        assert out[name].between(lo, hi).all(), name
    assert out["age"].dtype == np.int64 and out["age"].abs().max() <= 2**53


# ------------------------------------------------------ F10: icahdp paper, empty column
def test_paper_mode_drops_an_all_missing_column_and_names_it_when_kept():
    frame = pd.DataFrame({"a": [None] * 30, "b": ["x" if i % 2 else "z" for i in range(30)],
                          "y": ["p" if i % 3 else "q" for i in range(30)]})
    schema = [ColumnInfo("a", "categorical"), ColumnInfo("b", "categorical"),
              ColumnInfo("y", "categorical", role="label")]
    p = registry.get("icahdp").params(epsilon=1.0, mode="paper")
    registry.get("icahdp").validate_against(p, schema, None)
    result = run("icahdp", p, frame, schema)
    assert list(result.frame.columns) == ["b", "y"]
    assert result.metadata["icahdp"]["dropped_columns"] == {"a": "too many missing values"}
    kept = registry.get("icahdp").params(epsilon=1.0, mode="paper", max_missing=1.0)
    with pytest.raises(MethodInputError, match="column 'a' has no values to read its categories from"):
        run("icahdp", kept, frame, schema)


@pytest.mark.parametrize("method", ["mst", "aim", "dppro", "icahdp"])
def test_every_undeclared_domain_is_named_at_once(method):
    """One column at a time made a user declare, resubmit and meet the next (found following the
    aim page): the refusal lists them all, bounds and categories apart."""
    spec = registry.get(method)
    extra = {"epsilon": 1.0}
    partial = spec.params(bounds={"zip": [1000, 1010]}, categories={"income": ["hi", "lo"]}, **extra)
    with pytest.raises(MethodInputError) as refused:
        spec.validate_against(partial, SCHEMA, None)
    message = str(refused.value)
    assert "3 column(s) have no declared domain — bounds for 'age'; categories for 'sex', 'disease'" in message
    assert "'zip'" not in message and "'income'" not in message
    spec.validate_against(registry.get(method).params(**DECLARED, **extra), SCHEMA, None)


# ------------------------------------------ icahdp strict: a user basis of the wrong height
BOOL_FRAME = SMALL.assign(flag=[i % 3 == 0 for i in range(N)])
BOOL_SCHEMA = SCHEMA + [ColumnInfo("flag", "boolean")]


def test_a_basis_of_the_wrong_height_is_refused_at_submission_with_a_boolean_column():
    """An undeclared boolean column (its domain is its type) made the check skip the basis
    height: the job was accepted, then failed in the worker after its DP mean had drawn noise,
    so its ε was not refunded (an acceptance check through the API)."""
    def age_and_flag(basis):
        return registry.get("icahdp").params(epsilon=1.0, columns=["age", "flag"],
                                             bounds={"age": [0, 100]}, basis=basis)
    with pytest.raises(MethodInputError, match="basis has 1 rows, the encoding is 3 wide"):
        registry.get("icahdp").validate_against(age_and_flag([[1.0]]), BOOL_SCHEMA, None)
    fits = age_and_flag([[1.0], [0.0], [0.0]])
    registry.get("icahdp").validate_against(fits, BOOL_SCHEMA, None)
    assert run("icahdp", fits, BOOL_FRAME, BOOL_SCHEMA).metadata["icahdp"]["k"] == 1


def test_a_basis_refused_while_running_has_drawn_no_randomness():
    """The worker refunds an input error only when no randomness was drawn: the basis is
    checked before the DP mean's noise."""
    ctx = RunContext(SecureRandom(seed=5))
    p = registry.get("icahdp").params(epsilon=1.0, columns=["age", "zip"], basis=[[1.0]],
                                      bounds=DECLARED["bounds"])
    with pytest.raises(MethodInputError, match="basis has 1 rows, the encoding is 2 wide"):
        registry.get("icahdp").run(MethodInput(SCHEMA, SMALL), p, ctx)
    assert ctx.rng.bytes_drawn == 0


def test_a_basis_with_huge_entries_is_orthonormalized_not_a_failure():
    """QR of columns whose norm overflows returned NaN and the job failed as an internal error
    after its noise (ε kept); scaled first, the span is what the user gave."""
    def age_and_zip(basis):
        return registry.get("icahdp").params(epsilon=1.0, columns=["age", "zip"], basis=basis,
                                             bounds=DECLARED["bounds"])
    meta = run("icahdp", age_and_zip([[1e308], [1e308]])).metadata["icahdp"]
    assert np.allclose(np.abs(meta["basis"]), [[2**-0.5], [2**-0.5]])
    tiny = age_and_zip([[5e-324], [0.0]])
    assert np.allclose(np.abs(run("icahdp", tiny).metadata["icahdp"]["basis"]), [[1.0], [0.0]])


@pytest.mark.parametrize("method", ["mst", "aim", "dppro", "icahdp"])
def test_an_identifier_named_in_columns_is_refused_not_released(method):
    """icahdp.md says identifiers are never released, yet one named in `columns` was released
    (noised) by every DP method (found through the API)."""
    schema = SCHEMA + [ColumnInfo("pid", "numeric", role="identifier")]
    p = registry.get(method).params(**{**DECLARED, "bounds": {**DECLARED["bounds"], "pid": [0, 100]}},
                                    epsilon=1.0, columns=["pid", "age", "sex"])
    with pytest.raises(MethodInputError, match="column 'pid' is an identifier, which is never released"):
        registry.get(method).validate_against(p, schema, None)


def test_icahdp_with_every_column_sensitive_is_refused_at_submission():
    p = registry.get("icahdp").params(epsilon=1.0, columns=["age", "sex"], bounds={"age": [0, 100]},
                                      categories={"sex": ["M", "F"]}, sensitive={"age": 0.3, "sex": 0.3})
    refused("icahdp", p, "every released column is sensitive")


def test_the_inferred_facts_warning_says_what_the_release_shows():
    schema = [ColumnInfo("age", "numeric", integer=True, inferred=("integer",)),
              ColumnInfo("zip", "numeric", integer=True), ColumnInfo("sex", "categorical")]
    p = registry.get("dppro").params(epsilon=1.0, delta=1e-9, columns=["age", "zip", "sex"],
                                     bounds=DECLARED["bounds"], categories={"sex": ["M", "F"]})
    result = run("dppro", p, SMALL, schema)
    # the other warning: categories declared by the job ('sex'), whose outside values are missing
    [warning] = [w for w in result.guarantees["warnings"] if "schema facts" in w]
    assert "the schema facts age (integer) were inferred" in warning
    assert "(integer values)" in warning and "two-level" not in warning and "decimal" not in warning


def test_too_many_columns_says_to_name_the_ones_needed():
    """The refusal said "2000 columns to release (limit 100)" and not what to do (scale
    acceptance run: a 2,000-column upload)."""
    from app.privacy.dp_release.mst import MstParams

    wide = [ColumnInfo(f"c{i}", "boolean") for i in range(101)]
    with pytest.raises(MethodInputError, match=r"the table has 101 columns to release; a synthetic "
                                               r"table has at most 100: name the ones you need in 'columns'"):
        registry.get("mst").validate_against(MstParams(epsilon=1.0), wide, None)
    named = MstParams(epsilon=1.0, columns=[f"c{i}" for i in range(101)])
    with pytest.raises(MethodInputError, match="'columns' names 101 columns"):
        registry.get("mst").validate_against(named, wide, None)
    registry.get("mst").validate_against(MstParams(epsilon=1.0, columns=["c0", "c1"]), wide, None)
