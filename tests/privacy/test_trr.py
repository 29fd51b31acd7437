"""TRR: the sampler, the moments against their closed form, reconstruction, breach widths,
the plain no-DP statement, chaining on an ERRPH release."""

import math

import numpy as np
import pandas as pd
import pytest
from pydantic import ValidationError
from scipy.stats import chi2

from app.privacy.context import RunContext
from app.privacy.data import ColumnInfo, MethodInput
from app.privacy.randomized_response import ErrphParams, run_errph
from app.privacy.reconstruction import ReconstructParams, run_reconstruct
from app.privacy.registry import MethodInputError, get
from app.privacy.rng import SecureRandom
from app.privacy.rr_channels import NumericChannel, as_release_input
from app.privacy.transforming_rr import TrrParams, run_trr
from app.privacy.trr_mechanism import TrrSets, breach_widths, draw_sets, reconstruct_moments, transform


def ctx(seed=1):
    return RunContext(SecureRandom(seed=seed))


def test_set_elements_are_drawn_uniformly():
    m = 50
    sets = TrrSets(a=np.arange(m, dtype=float) + 1.0, b=np.zeros(m))
    y = transform(np.ones(1_000_000), sets, SecureRandom(seed=4))
    counts = np.bincount(y.astype(int) - 1, minlength=m)
    stat = ((counts - 20_000) ** 2 / 20_000).sum()
    assert chi2.sf(stat, m - 1) > 1e-4
    # power: a sampler that never picks the last element would be caught
    skewed = counts.copy()
    skewed[-1] = 0
    assert chi2.sf(((skewed - 20_000) ** 2 / 20_000).sum(), m - 1) < 1e-6


def test_published_moments_match_the_closed_form():
    """Fixed x and sets: E[ȳ] = Ā·x̄ + B̄, E[S_y²] = (Ā² + S_A²(n-1)/n)·s_x² + S_A²·x̄² + S_B²."""
    rng = np.random.default_rng(0)
    n = 4000
    x = rng.normal(30.0, 8.0, n)
    sets = draw_sets(64, 1.0, 1.0, 0.0, 1.0, SecureRandom(seed=9))
    a_bar, s_a2, b_bar, s_b2 = sets.moments
    ys = np.array([transform(x, sets, SecureRandom(seed=100 + r)) for r in range(400)])
    means, variances = ys.mean(axis=1), ys.var(axis=1, ddof=1)
    s_x2 = x.var(ddof=1)
    expected_mean = a_bar * x.mean() + b_bar
    expected_var = (a_bar**2 + s_a2 * (n - 1) / n) * s_x2 + s_a2 * x.mean() ** 2 + s_b2
    assert abs(means.mean() - expected_mean) < 4 * means.std(ddof=1) / math.sqrt(len(means))
    assert abs(variances.mean() - expected_var) < 4 * variances.std(ddof=1) / math.sqrt(len(variances))
    # and the spread of ȳ is that of a mean of independent a·x_i + b draws
    assert means.std(ddof=1) == pytest.approx(math.sqrt((s_a2 * (x**2).sum() + n * s_b2) / n**2), rel=0.15)


def test_set_moments_use_population_formulas():
    sets = TrrSets(a=np.array([1.0, 2.0, 3.0]), b=np.array([-1.0, 1.0, 0.0]))
    assert sets.moments == pytest.approx((2.0, 2.0 / 3.0, 0.0, 2.0 / 3.0))


def test_reconstruction_is_unbiased_and_standard_errors_match_the_spread():
    params = TrrParams(a_mean=2.0, a_var=10.0, b_mean=0.0, b_var=5.0, set_size=128)
    cols = [ColumnInfo("x", "numeric")]

    def run_once(r):
        rng = np.random.default_rng(700 + r)  # a fresh sample of N(5, 3²) each time
        data = MethodInput(columns=cols, frame=pd.DataFrame({"x": rng.normal(5.0, 3.0, 5000)}))
        release = as_release_input(data, run_trr(data, params, ctx(r)), "trr", params)
        col = run_reconstruct(release, ReconstructParams(), ctx()).data["steps"][0]["columns"]["x"]
        return col["mean"], col["variance_raw"], col["mean_standard_error"], col["variance_standard_error"]

    est = np.array([run_once(r) for r in range(600)])
    for value, se, truth, tol in ((est[:, 0], est[:, 2], 5.0, 0.1), (est[:, 1], est[:, 3], 9.0, 0.15)):
        spread = value.std(ddof=1)
        assert abs(value.mean() - truth) < 4 * spread / math.sqrt(len(value))
        assert abs(se.mean() / spread - 1) < tol


def test_reconstruction_through_two_trr_steps_recovers_the_moments():
    rng = np.random.default_rng(3)
    data = MethodInput(columns=[ColumnInfo("x", "numeric")], frame=pd.DataFrame({"x": rng.normal(10, 2, 200_000)}))
    first, second = TrrParams(a_mean=1.5, a_var=0.5), TrrParams(a_mean=0.8, a_var=0.2, b_mean=3.0)
    once = as_release_input(data, run_trr(data, first, ctx(1)), "trr", first)
    twice = as_release_input(once, run_trr(once, second, ctx(2)), "trr", second)
    steps = run_reconstruct(twice, ReconstructParams(), ctx()).data["steps"]
    col = steps[0]["columns"]["x"]
    assert col["through_steps"] == ["trr", "trr"]
    assert abs(col["mean"] - 10.0) < 4 * col["mean_standard_error"]
    assert abs(col["variance"] - 4.0) < 4 * col["variance_standard_error"]


def test_breach_widths_against_hand_computed_values():
    widths = breach_widths(4.0)  # Ŝ_x = 2
    assert widths["0.5"] == pytest.approx(2 * 0.6744897501960817 * 2)
    assert widths["0.9"] == pytest.approx(2 * 1.6448536269514722 * 2)
    assert widths["0.999"] == pytest.approx(2 * 3.2905267314918945 * 2)
    assert breach_widths(-1.0) == {"0.5": 0.0, "0.9": 0.0, "0.999": 0.0}


def test_variance_is_clipped_and_flagged_when_the_estimate_is_not_positive():
    channel = NumericChannel(((1.0, 1.0, 0.0, 0.0),))
    y = np.array([0.0, 20.0] * 50)  # ȳ = 10, S_y² ≈ 101: (101 − 1·100)/2 > 0 …
    assert reconstruct_moments(y, channel)["variance_clipped"] is False
    y = np.array([5.0, 15.0] * 50)  # … S_y² ≈ 25: (25 − 100)/2 < 0
    rec = reconstruct_moments(y, channel)
    assert rec["variance_clipped"] is True and rec["variance"] == 0.0 and rec["variance_raw"] < 0


def test_release_states_plainly_that_trr_is_not_differentially_private():
    rng = np.random.default_rng(0)
    frame = pd.DataFrame({"x": rng.normal(0, 1, 1000), "n": rng.integers(0, 10, 1000), "y": "a"})
    cols = [ColumnInfo("x", "numeric"), ColumnInfo("n", "numeric", integer=True, bounds=(0, 9)),
            ColumnInfo("y", "categorical", role="label")]
    out = run_trr(MethodInput(columns=cols, frame=frame), TrrParams(set_size=16, publish_sets=True), ctx())
    g = out.guarantees
    assert g["notion"] == "none" and g["private"] is False and g["epsilon"] is None
    assert any("NO differential-privacy guarantee" in s for s in g["statements"])
    meta = out.metadata["trr"]["columns"]["n"]
    assert len(meta["a_set"]) == 16 and meta["a_mean"] == pytest.approx(np.mean(meta["a_set"]))
    assert set(meta["breach_width"]) == {"0.5", "0.9", "0.999"}
    assert {c.name: (c.bounds, c.integer) for c in out.columns}["n"] == (None, False)
    assert get("trr").epsilon_cost(TrrParams(), cols) is None


def test_identity_sets_publish_the_data_unchanged_and_missing_stays_missing():
    frame = pd.DataFrame({"x": [1.0, np.nan, 3.5]})
    params = TrrParams(a_mean=1.0, a_var=0.0, b_mean=0.0, b_var=0.0, set_size=4)
    out = run_trr(MethodInput(columns=[ColumnInfo("x", "numeric")], frame=frame), params, ctx())
    assert np.array_equal(out.frame["x"].to_numpy(), frame["x"].to_numpy(), equal_nan=True)


def test_parameter_errors_name_the_problem():
    with pytest.raises(ValueError, match="a_mean must not be 0"):
        TrrParams(a_mean=0.0)
    cols = [ColumnInfo("c", "categorical")]
    with pytest.raises(MethodInputError, match="'c' is categorical"):
        get("trr").validate_against(TrrParams(columns=["c"]), cols, None)
    frame = pd.DataFrame({"x": ["1", "two"]})
    with pytest.raises(MethodInputError, match="non-numeric"):
        run_trr(MethodInput(columns=[ColumnInfo("x", "numeric")], frame=frame), TrrParams(), ctx())


@pytest.mark.parametrize("params, field, message", [
    ({"a_mean": 1e308, "b_mean": -1e308}, "a_mean", r"within ±1e\+75"),  # every cell was inf
    ({"b_mean": -1e308}, "b_mean", r"within ±1e\+75"),
    ({"a_mean": 1e-12}, "a_mean", "at least 1e-09"),
    ({"per_column": {"x": {"b_mean": 1e76}}}, "b_mean", r"within ±1e\+75"),
    ({"a_mean": float("inf")}, "a_mean", "finite"),
])
def test_gaussian_means_must_keep_the_transform_finite(params, field, message):
    with pytest.raises(ValidationError, match=message) as info:
        TrrParams(**params)
    assert info.value.errors()[0]["loc"][-1] == field


def test_reach_of_the_transform_is_checked_on_declared_bounds_and_on_the_data():
    """|a·x + b| ≤ max|a|·max|x| + max|b| must stay within MAX_PUBLISHED: refused at submit
    from declared bounds, and at the run from the column and the sets drawn; what passes is
    published finite with finite moments."""
    frame = pd.DataFrame({"x": [1e10, -3.0, np.nan, 2.0]})
    near = TrrParams(a_mean=1e64, a_var=0.0, b_var=0.0)  # reaches 1e74: allowed
    far = TrrParams(a_mean=1e66, a_var=0.0, b_var=0.0)  # reaches 1e76: not
    declared = [ColumnInfo("x", "numeric", bounds=(-1e10, 1e10))]
    get("trr").validate_against(near, declared, None)
    with pytest.raises(MethodInputError, match=r"column 'x': .*beyond ±1e\+75.*lower \|a_mean\|"):
        get("trr").validate_against(far, declared, None)
    get("trr").validate_against(far, [ColumnInfo("x", "numeric")], None)  # no bounds: the run checks
    with pytest.raises(MethodInputError, match=r"beyond ±1e\+75.*lower \|a_mean\|"):
        run_trr(MethodInput(columns=[ColumnInfo("x", "numeric")], frame=frame), far, ctx())
    with pytest.raises(MethodInputError, match=r"lower \|b_mean\| or b_var"):
        run_trr(MethodInput(columns=[ColumnInfo("x", "numeric")], frame=frame),
                TrrParams(b_mean=9e74, b_var=0.0, a_mean=1e65, a_var=0.0), ctx())
    out = run_trr(MethodInput(columns=[ColumnInfo("x", "numeric")], frame=frame), near, ctx())
    y = out.frame["x"].to_numpy()
    assert np.isnan(y[2]) and np.isfinite(np.delete(y, 2)).all()
    assert y[0] == pytest.approx(1e74)
    assert math.isfinite(reconstruct_moments(np.delete(y, 2), NumericChannel(((1e64, 0.0, 0.0, 0.0),)))
                         ["variance_standard_error"])
    inf_frame = pd.DataFrame({"x": [1.0, np.inf]})
    with pytest.raises(MethodInputError, match="'x' holds infinite values"):
        run_trr(MethodInput(columns=[ColumnInfo("x", "numeric")], frame=inf_frame), TrrParams(), ctx())


def test_a_column_no_allowed_a_can_scale_is_told_to_be_left_out():
    """A legal 1e300 was refused with 'lower |a_mean| or a_var', which no allowed a_mean (≥ 1e-9)
    can follow (the #7 acceptance check)."""
    frame = pd.DataFrame({"x": [1.0, 1e300, 2.0], "y": [1.0, 2.0, 3.0]})
    cols = [ColumnInfo("x", "numeric"), ColumnInfo("y", "numeric")]
    with pytest.raises(MethodInputError, match="column 'x' holds values too large for trr: .*leave it out"):
        run_trr(MethodInput(columns=cols, frame=frame), TrrParams(), ctx())
    with pytest.raises(MethodInputError, match="column 'x' holds values too large for trr"):
        get("trr").validate_against(TrrParams(), [ColumnInfo("x", "numeric", bounds=(0.0, 1e300))], None)
    assert run_trr(MethodInput(columns=cols, frame=frame), TrrParams(columns=["y"]), ctx()).frame["x"][1] == 1e300


def test_trr_on_an_errph_release_carries_both_steps():
    rng = np.random.default_rng(5)
    frame = pd.DataFrame({"c": rng.choice(["a", "b", "c"], 20_000, p=[0.5, 0.3, 0.2]),
                          "x": rng.normal(50, 5, 20_000), "y": rng.choice(["p", "q"], 20_000)})
    cols = [ColumnInfo("c", "categorical", distinct=3), ColumnInfo("x", "numeric"),
            ColumnInfo("y", "categorical", role="label")]
    data = MethodInput(columns=cols, frame=frame)
    e, t = ErrphParams(p0=0.5), TrrParams()
    first = as_release_input(data, run_errph(data, e, ctx(1)), "errph", e)
    second = as_release_input(first, run_trr(first, t, ctx(2)), "trr", t)
    assert [s["method"] for s in second.source.steps()] == ["errph", "trr"]
    steps = run_reconstruct(second, ReconstructParams(), ctx()).data["steps"]
    assert [s["method"] for s in steps] == ["errph", "trr"]
    c = steps[0]["columns"]["c"]
    assert np.allclose(c["consistent"], [0.5, 0.3, 0.2], atol=4 * max(c["standard_error"]))
    x = steps[1]["columns"]["x"]
    assert abs(x["mean"] - 50) < 4 * x["mean_standard_error"]
    assert (second.frame["y"] == frame["y"]).all()  # the label is untouched


def test_untouched_columns_say_whether_they_are_raw_or_an_earlier_steps():
    """On a dataset a column this step leaves alone is raw; on a release it is as that release
    published it (errph's randomized cat here), which 'exactly as in the input' blurred."""
    n = 200
    data = MethodInput(
        columns=[ColumnInfo("x", "numeric"), ColumnInfo("cat", "categorical", categories=("a", "b"))],
        frame=pd.DataFrame({"x": np.arange(n, dtype=float), "cat": ["a", "b"] * (n // 2)}))
    e = ErrphParams(p0=0.5, columns=["cat"])
    errph = run_errph(data, e, ctx())
    raw = [s for s in errph.guarantees["statements"] if s.startswith("columns not randomized")]
    assert raw == ["columns not randomized are released exactly as in the dataset and carry no "
                   "guarantee: x"]
    on_release = run_trr(as_release_input(data, errph, "errph", e), TrrParams(columns=["x"]), ctx(2))
    kept = [s for s in on_release.guarantees["statements"] if s.startswith("columns not transformed")]
    assert len(kept) == 1 and "keep that release's protection" in kept[0] and kept[0].endswith(": cat")


def test_a_transformed_column_is_not_integer_by_the_method_not_by_the_data():
    """trr makes a column's values decimals: the release's 'integer: false' is the method's, not a
    fact read from the data, so a DP release on it must not warn that it was inferred (the
    inferred 'integer' used to be carried over); the type, still the data's, stays inferred."""
    frame = pd.DataFrame({"n": np.arange(200) % 10})
    cols = [ColumnInfo("n", "numeric", integer=True, inferred=("type", "integer"))]
    out = run_trr(MethodInput(columns=cols, frame=frame), TrrParams(set_size=16), ctx())
    assert [(c.integer, c.inferred) for c in out.columns] == [(False, ("type",))]


def test_release_warns_that_published_sets_let_grid_values_be_recovered_exactly():
    """The sets are published in full: for whole-number data the one candidate (y - b)/a that is
    a whole number is almost always the true value. The release used to give only the breach
    widths (an interval of several units) as its privacy figure, without saying this."""
    rng = np.random.default_rng(2)
    frame = pd.DataFrame({"n": rng.integers(17, 91, 2000), "z": rng.normal(0, 1, 2000)})
    cols = [ColumnInfo("n", "numeric", integer=True), ColumnInfo("z", "numeric")]
    out = run_trr(MethodInput(columns=cols, frame=frame), TrrParams(set_size=16, publish_sets=True), ctx(3))
    meta = out.metadata["trr"]["columns"]["n"]
    a, b = np.array(meta["a_set"]), np.array(meta["b_set"])
    cand = (out.frame["n"].to_numpy()[:, None, None] - b[None, None, :]) / a[None, :, None]
    cand = cand.reshape(len(frame), -1)
    on_grid = (np.abs(cand - np.round(cand)) < 1e-7) & (cand >= 0) & (cand <= 150)
    only = on_grid.sum(axis=1) == 1
    recovered = np.round(cand[np.arange(len(frame)), on_grid.argmax(axis=1)])
    assert (only & (recovered == frame["n"].to_numpy())).mean() > 0.95  # the attack the warning names
    assert meta["breach_width"]["0.5"] > 10  # while the breach width suggests a wide interval
    assert any("recovered exactly" in w and "published in full" in w for w in out.guarantees["warnings"])
    assert not any("give the sets away" in w for w in out.guarantees["warnings"])

    # by default only the moments are published: no sets to run the attack with, no warning
    default = run_trr(MethodInput(columns=cols, frame=frame), TrrParams(set_size=16), ctx(3))
    meta = default.metadata["trr"]["columns"]["n"]
    assert "a_set" not in meta and "b_set" not in meta and meta["a_var"] > 0
    assert default.guarantees["warnings"] == []
    assert any("not the sets" in s for s in default.guarantees["statements"])

    # sets of one or two values follow from their moments: warned, published or not
    identity = TrrParams(a_mean=1.0, a_var=0.0, b_mean=0.0, b_var=0.0, set_size=4)
    same = run_trr(MethodInput(columns=cols, frame=frame), identity, ctx())
    assert any("at most two distinct values each for n, z" in w for w in same.guarantees["warnings"])
    pair = run_trr(MethodInput(columns=cols, frame=frame), TrrParams(set_size=2), ctx())
    assert pair.metadata["trr"]["columns"]["n"]["determined_by_moments"]
    assert any("give the sets away" in w for w in pair.guarantees["warnings"])


def test_a_variance_standard_error_resting_on_one_extreme_value_is_flagged():
    """Bank's `previous`: one value held 31 % of the fourth moment, and 95 % variance intervals
    covered the truth 30 % of the time (recalib acceptance check). The notes now say so."""
    params = TrrParams(a_mean=1.0, a_var=1.0, b_mean=0.0, b_var=1.0)
    g = np.random.default_rng(5)
    x = g.poisson(0.5, 5000).astype(float)
    flagged = {}
    for name, column in (("plain", x), ("heavy", np.concatenate([x[:-1], [275.0]]))):
        data = MethodInput(columns=[ColumnInfo("x", "numeric")], frame=pd.DataFrame({"x": column}))
        release = as_release_input(data, run_trr(data, params, ctx()), "trr", params)
        section = run_reconstruct(release, ReconstructParams(), ctx()).data["steps"][0]
        flagged[name] = (section["columns"]["x"]["extreme_share_of_fourth_moment"],
                         [n for n in section["notes"] if "fourth central moment" in n])
    assert flagged["plain"][0] < 0.3 and flagged["plain"][1] == []
    assert flagged["heavy"][0] > 0.5 and len(flagged["heavy"][1]) == 1


def test_release_warns_when_cells_holding_zero_are_recognizable():
    """A cell holding 0 is published as y = b, a draw from B alone. On Adult's capital-gain
    (91.7% zeros, the others ≥ 114) every published |y| < 4 came from a 0, so 91.7% of the
    records' values were disclosed exactly, while the release's only privacy figure said the 50%
    breach interval was 10,277 wide and its warnings were empty (rrit acceptance run)."""
    rng = np.random.default_rng(5)
    n = 5000
    gain = np.where(rng.random(n) < 0.9, 0, rng.integers(114, 99999, n))
    frame = pd.DataFrame({"gain": gain, "age": rng.integers(17, 91, n), "small": rng.poisson(0.8, n)})
    cols = [ColumnInfo(c, "numeric", integer=True) for c in frame.columns]
    out = run_trr(MethodInput(columns=cols, frame=frame), TrrParams(), ctx(4))
    y = out.frame["gain"].to_numpy()
    near = np.abs(y) < 4
    assert (gain[near] == 0).mean() > 0.99 and (near & (gain == 0)).mean() > 0.85  # the attack
    warned = [w for w in out.guarantees["warnings"] if "published as y = b" in w]
    assert len(warned) == 1 and "for: gain" in warned[0] and "breach widths" in warned[0]
    assert "age" not in warned[0] and "small" not in warned[0]  # no zeros / zeros not told apart
    meta = out.metadata["trr"]["columns"]
    assert meta["gain"]["zeros_recognizable"] and not meta["age"]["zeros_recognizable"]
    assert not meta["small"]["zeros_recognizable"]
