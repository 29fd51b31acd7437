"""ERRPH and Warner: transition frequencies, domains, ε, Breach, the ε hook, reconstruction."""

import math

import numpy as np
import pandas as pd
import pytest
from scipy.stats import chi2

from app.privacy.context import RunContext
from app.privacy.data import ColumnInfo, MethodInput
from app.privacy.randomized_response import (
    ErrphParams, _errph_epsilon, breach, errph_column_epsilons, local_epsilon, run_errph,
)
from app.privacy.warner import WarnerParams, _warner_epsilon, run_warner, warner_epsilon
from app.privacy.reconstruction import ReconstructParams, run_reconstruct
from app.privacy.registry import MethodInputError, get
from app.privacy.rng import SecureRandom
from app.privacy.rr_channels import as_release_input

VALUES = ["a", "b", "c", "d", "e"]


def ctx(seed=1):
    return RunContext(SecureRandom(seed=seed))


def errph_transition(p0, p):
    """M[j, i] = P(publish j | true i) = p0·[i = j] + p_j."""
    return p0 * np.eye(len(p)) + np.asarray(p)[:, None]


def observed_transitions(truth: np.ndarray, published: np.ndarray, k: int) -> np.ndarray:
    return np.bincount(published * k + truth, minlength=k * k).reshape(k, k)  # [j, i]


def chi2_pvalue(observed: np.ndarray, matrix: np.ndarray) -> float:
    """Pearson χ² of every input value's output counts against column i of the matrix."""
    stat, dof = 0.0, 0
    for i in range(observed.shape[1]):
        n_i = observed[:, i].sum()
        expected = matrix[:, i] * n_i
        mask = expected > 0
        stat += (((observed[mask, i] - expected[mask]) ** 2) / expected[mask]).sum()
        dof += mask.sum() - 1
    return float(chi2.sf(stat, dof))


# ------------------------------------------------------------------------- transitions
@pytest.fixture(scope="module")
def errph_million():
    n = 1_000_000
    truth = np.repeat(np.arange(5), n // 5)
    frame = pd.DataFrame({"c": np.array(VALUES, dtype=object)[truth]})
    cols = [ColumnInfo("c", "categorical", categories=tuple(VALUES))]
    p0, p = 0.4, [0.2, 0.15, 0.1, 0.1, 0.05]
    out = run_errph(MethodInput(columns=cols, frame=frame), ErrphParams(p0=p0, p={"c": p}), ctx(7))
    published = pd.Categorical(out.frame["c"], categories=VALUES).codes.astype(np.int64)
    return truth, published, p0, p


def test_errph_transition_frequencies_match_the_matrix(errph_million):
    truth, published, p0, p = errph_million
    observed = observed_transitions(truth, published, 5)
    assert chi2_pvalue(observed, errph_transition(p0, p)) > 1e-4


def test_errph_chi_square_detects_a_wrong_p0(errph_million):
    truth, published, p0, p = errph_million
    observed = observed_transitions(truth, published, 5)
    wrong_p0 = 0.41
    wrong_p = np.asarray(p) * (1 - wrong_p0) / (1 - p0)
    assert chi2_pvalue(observed, errph_transition(wrong_p0, wrong_p)) < 1e-6


def test_errph_outputs_stay_in_the_domain(errph_million):
    _, published, _, _ = errph_million
    assert published.min() >= 0 and published.max() <= 4  # no code -1: nothing left the domain


@pytest.fixture(scope="module")
def warner_million():
    n = 1_000_000
    truth = np.arange(n) % 2 == 0
    frame = pd.DataFrame({"f": truth})
    out = run_warner(MethodInput(columns=[ColumnInfo("f", "boolean")], frame=frame), WarnerParams(p=0.7), ctx(3))
    return truth.astype(np.int64), out.frame["f"].to_numpy().astype(np.int64)


def test_warner_transition_frequencies_and_power(warner_million):
    truth, published = warner_million
    observed = observed_transitions(truth, published, 2)
    matrix = lambda p: np.array([[p, 1 - p], [1 - p, p]])  # noqa: E731
    assert chi2_pvalue(observed, matrix(0.7)) > 1e-4
    assert chi2_pvalue(observed, matrix(0.705)) < 1e-6
    assert set(np.unique(published)) <= {0, 1}


def test_warner_whole_record_flips_every_column_together():
    rng = np.random.default_rng(0)
    n = 200_000
    frame = pd.DataFrame({"a": rng.random(n) < 0.3, "b": rng.random(n) < 0.6, "c": rng.random(n) < 0.5})
    cols = [ColumnInfo(c, "boolean") for c in "abc"]
    out = run_warner(MethodInput(columns=cols, frame=frame), WarnerParams(p=0.8, whole_record=True), ctx(2))
    flips = np.column_stack([out.frame[c].to_numpy() != frame[c].to_numpy() for c in "abc"])
    assert (flips.all(axis=1) | ~flips.any(axis=1)).all()  # all flipped or none
    rate = flips[:, 0].mean()
    assert abs(rate - 0.2) < 4 * math.sqrt(0.2 * 0.8 / n)
    assert out.guarantees["epsilon"] == math.inf
    assert any("NOT differentially private" in s for s in out.guarantees["statements"])


def test_warner_boolean_columns_as_the_service_loads_them_have_the_domain_false_true():
    """Datasets load boolean columns as pandas' nullable "boolean" dtype, not numpy's bool: the
    boolean branch (domain {False, True} by type, no warning) never ran, so the domain was read
    from the data — a column that happened to be all True failed the job ("1 distinct values")
    and every boolean column was warned about as undeclared (the mechaudit acceptance check)."""
    frame = pd.DataFrame({"all_true": pd.array([True] * 400, dtype="boolean"),
                          "mixed": pd.array([True, False, None, False] * 100, dtype="boolean")})
    cols = [ColumnInfo("all_true", "boolean", distinct=1), ColumnInfo("mixed", "boolean", distinct=2, missing=100)]
    out = run_warner(MethodInput(columns=cols, frame=frame), WarnerParams(p=0.75, missing="preserve"), ctx())
    meta = out.metadata["warner"]["columns"]
    assert meta["all_true"]["domain"] == ["False", "True"] and meta["mixed"]["domain"] == ["False", "True"]
    assert not [w for w in out.guarantees["warnings"] if "domain read from the data" in w]
    assert 0.15 < (out.frame["all_true"] == False).mean() < 0.35  # noqa: E712 — flipped w.p. 1/4
    assert (out.frame["mixed"].isna().to_numpy() == frame["mixed"].isna().to_numpy()).all()
    assert meta["mixed"]["missing_cells_left_out"] == 100
    with pytest.raises(MethodInputError, match="missing"):
        run_warner(MethodInput(columns=cols, frame=frame), WarnerParams(p=0.75, columns=["mixed"]), ctx())


def test_warner_cut_points_binarize_then_flip_and_publish_the_cut():
    frame = pd.DataFrame({"x": np.arange(1000, dtype=float), "g": ["u", "v", "w", "u"] * 250})
    cols = [ColumnInfo("x", "numeric"), ColumnInfo("g", "categorical", distinct=3)]
    params = WarnerParams(p=1.0, allow_zero_probabilities=True, cut_points={"x": 499.5, "g": ["u", "w"]})
    out = run_warner(MethodInput(columns=cols, frame=frame), params, ctx())
    assert (out.frame["x"].to_numpy() == (frame["x"] > 499.5).to_numpy()).all()
    assert (out.frame["g"].to_numpy() == frame["g"].isin(["u", "w"]).to_numpy()).all()
    meta = out.metadata["warner"]["columns"]
    assert meta["x"]["binarize"] == {"threshold": 499.5} and meta["g"]["binarize"] == {"in": ["u", "w"]}
    assert {c.name: c.type for c in out.columns}["x"] == "boolean"


def test_warner_rejects_non_binary_columns_and_p_half():
    cols = [ColumnInfo("g", "categorical", distinct=3)]
    with pytest.raises(MethodInputError, match="not binary"):
        _warner_epsilon(WarnerParams(columns=["g"]), cols)
    with pytest.raises(ValueError, match="pure noise"):
        WarnerParams(p=0.5)


def test_warner_refuses_missing_cells_at_submission_when_the_profile_shows_them():
    """missing='error' on a column with missing cells was accepted (202, ε debited), failed in
    the worker and was refunded; the profile's missing count allows a 422 (#3 acceptance check)."""
    spec = get("warner")
    cols = [ColumnInfo("b", "boolean", distinct=2, missing=3), ColumnInfo("n", "numeric", missing=2),
            ColumnInfo("g", "categorical", distinct=3, missing=4)]
    with pytest.raises(MethodInputError, match="column 'b' has 3 missing cells; set missing='preserve'"):
        spec.validate_against(WarnerParams(columns=["b"]), cols, None)
    with pytest.raises(MethodInputError, match="column 'n' has 2 missing cells"):
        spec.validate_against(WarnerParams(columns=["n"], cut_points={"n": 1.5}), cols, None)
    spec.validate_against(WarnerParams(columns=["b"], missing="preserve"), cols, None)
    spec.validate_against(WarnerParams(columns=["g"], cut_points={"g": ["x"]}), cols, None)  # '<missing>' is a value


# ------------------------------------------------------------------------- missing values
def test_missing_as_category_is_randomized_and_preserve_leaves_it_missing():
    n = 100_000
    values = np.array(["a", "b", None], dtype=object)[np.arange(n) % 3]
    frame = pd.DataFrame({"c": values})
    cols = [ColumnInfo("c", "categorical", distinct=2, missing=int(pd.isna(values).sum()))]
    data = MethodInput(columns=cols, frame=frame)
    cat = run_errph(data, ErrphParams(p0=0.5), ctx())
    assert cat.metadata["errph"]["c"]["domain"] == ["a", "b", "<missing>"]
    was_missing = pd.isna(values)
    now_missing = cat.frame["c"].isna().to_numpy()
    assert 0.55 < now_missing[was_missing].mean() < 0.78  # kept 1/2 + drawn 1/6 = 2/3
    assert 0.1 < now_missing[~was_missing].mean() < 0.23  # drawn 1/6
    assert cat.metadata["errph"]["c"]["local_epsilon"] == pytest.approx(math.log(1 + 3 * 0.5 / 0.5))

    kept = run_errph(data, ErrphParams(p0=0.5, missing="preserve"), ctx())
    assert (kept.frame["c"].isna().to_numpy() == was_missing).all()
    assert kept.metadata["errph"]["c"]["k"] == 2
    assert any("missing" in w for w in kept.guarantees["warnings"])


def test_a_value_spelled_like_the_missing_category_is_refused_before_any_randomness():
    """A literal '<missing>' beside missing cells gave the domain that label twice; the
    reconstruction then counted neither (published shares 0, estimates −0.2, 37% of the cells
    lost; the #7 acceptance check). Checked for every column before any is randomized, so the
    job's ε is refunded."""
    frame = pd.DataFrame({"ok": ["x", "y"] * 3, "c": ["<missing>", "a", None, "b", "a", None]})
    cols = [ColumnInfo("ok", "categorical", distinct=2), ColumnInfo("c", "categorical", distinct=3, missing=2)]
    data = MethodInput(columns=cols, frame=frame)
    rng = SecureRandom(seed=1)
    with pytest.raises(MethodInputError, match="column 'c' holds a value spelled '<missing>'"):
        run_errph(data, ErrphParams(), RunContext(rng))
    assert rng.bytes_drawn == 0
    kept = run_errph(data, ErrphParams(missing="preserve"), ctx())
    assert kept.metadata["errph"]["c"]["domain"] == ["<missing>", "a", "b"]


def test_values_outside_declared_categories_are_an_error():
    frame = pd.DataFrame({"c": ["a", "b", "z", None]})
    cols = [ColumnInfo("c", "categorical", categories=("a", "b"), missing=1)]
    with pytest.raises(MethodInputError, match="outside its declared categories"):
        run_errph(MethodInput(columns=cols, frame=frame), ErrphParams(), ctx())


# ------------------------------------------------------------------------------ ε, Breach
def test_epsilon_formulas_against_hand_computed_values():
    assert local_epsilon(0.5, np.full(4, 0.125)) == pytest.approx(math.log(5.0))  # ln(1 + 4·0.5/0.5)
    assert local_epsilon(0.4, [0.3, 0.2, 0.1]) == pytest.approx(math.log(0.5 / 0.1))
    assert local_epsilon(0.4, [0.6, 0.0]) == math.inf
    assert warner_epsilon(0.75) == pytest.approx(math.log(3.0))
    assert warner_epsilon(0.25) == pytest.approx(math.log(3.0))
    assert warner_epsilon(1.0) == math.inf


def test_breach_against_hand_computed_values():
    pi = np.array([0.4, 0.3, 0.2, 0.1])
    b = breach(0.5, np.full(4, 0.125), pi)
    # p0 · k·p0·π / (k·p0·π + 1 − p0) with k = 4, p0 = 0.5: 0.5·0.8/1.3 for π = 0.4
    assert b[0] == pytest.approx(0.5 * 0.8 / 1.3)
    assert b[3] == pytest.approx(0.5 * 0.2 / 0.7)
    assert breach(0.5, np.full(4, 0.125), np.full(4, 0.25)) == pytest.approx(np.full(4, 0.25))  # p0²
    # RRPH (k = 2) at the uniform prior beats Warner's max(θ, 1−θ) ≥ 0.5 iff p0 < 1/√2
    for p0 in (0.5, 0.7, 0.71, 0.9):
        rrph = breach(p0, np.full(2, (1 - p0) / 2), np.full(2, 0.5)).max()
        assert (rrph < 0.5) == (p0 < 1 / math.sqrt(2))


def test_release_reports_epsilon_breach_and_equivalence():
    rng = np.random.default_rng(1)
    frame = pd.DataFrame({"c": rng.choice(VALUES[:4], 50_000, p=[0.4, 0.3, 0.2, 0.1]), "y": "x"})
    cols = [ColumnInfo("c", "categorical", distinct=4), ColumnInfo("y", "categorical", role="label")]
    out = run_errph(MethodInput(columns=cols, frame=frame), ErrphParams(p0=0.5), ctx())
    meta = out.metadata["errph"]["c"]
    assert out.guarantees["epsilon"] == pytest.approx(math.log(5.0))
    assert meta["keep_probability"] == pytest.approx(0.5 + 0.5 / 4)
    assert meta["breach_at_uniform_prior"] == pytest.approx(0.25)
    assert meta["breach_at_reconstructed"] == pytest.approx(0.5 * 0.8 / 1.3, abs=0.01)
    assert out.guarantees["unprotected_columns"] == ["y"] and out.guarantees["private"] is False


def test_zero_probability_needs_consent_and_makes_epsilon_infinite():
    frame = pd.DataFrame({"c": ["a", "b", "c"] * 100})
    data = MethodInput(columns=[ColumnInfo("c", "categorical", distinct=3)], frame=frame)
    with pytest.raises(MethodInputError, match="allow_zero_probabilities"):
        run_errph(data, ErrphParams(p0=0.5, p={"c": {"a": 0.5}}), ctx())
    out = run_errph(data, ErrphParams(p0=0.5, p={"c": {"a": 0.5}}, allow_zero_probabilities=True), ctx())
    assert out.guarantees["epsilon"] == math.inf
    assert any("infinite" in w for w in out.guarantees["warnings"])


def test_probabilities_whose_thresholds_realize_infinite_epsilon_need_consent_too():
    """p0 within 2^-33 of 1, a p_j whose segment holds no 32-bit word, a warner p whose flip
    threshold rounds to 0: each realizes ε = ∞ (cells published as they are) and was accepted
    without allow_zero_probabilities, debiting ∞ (the #eps acceptance check); mask and png
    already asked for the consent."""
    cols = [ColumnInfo("c", "categorical", distinct=3)]
    for params in (ErrphParams(p0=1 - 1e-11), ErrphParams(p0=0.5, p={"c": [1e-12, 0.25, 0.25 - 1e-12]})):
        with pytest.raises(MethodInputError, match="allow_zero_probabilities"):
            get("errph").epsilon_cost(params, cols)
        consented = params.model_copy(update={"allow_zero_probabilities": True})
        assert get("errph").epsilon_cost(consented, cols) == math.inf
    with pytest.raises(ValueError, match="allow_zero_probabilities"):
        WarnerParams(p=1 - 1e-11)
    assert warner_epsilon(WarnerParams(p=1 - 1e-11, allow_zero_probabilities=True).p) == math.inf


def test_missing_cells_left_missing_make_the_release_not_private():
    """missing='preserve' publishes whether each cell is missing as it is: a missing cell and a
    value are told apart surely, so the record-level ε does not hold between such records. The
    release said private: true with every column randomized (the #eps acceptance check)."""
    frame = pd.DataFrame({"c": ["a", "b", None] * 100, "d": ["u", "v", "v"] * 100})
    cols = [ColumnInfo("c", "categorical", distinct=2, missing=100), ColumnInfo("d", "categorical", distinct=2)]
    data = MethodInput(columns=cols, frame=frame)
    unseeded = RunContext(SecureRandom())
    assert run_errph(data, ErrphParams(p0=0.5), unseeded).guarantees["private"] is True
    for out in (run_errph(data, ErrphParams(p0=0.5, missing="preserve"), unseeded),
                run_warner(data, WarnerParams(p=0.8, missing="preserve"), unseeded)):
        assert out.guarantees["private"] is False
        assert any("both missing or both present" in w for w in out.guarantees["warnings"])
    complete = MethodInput(columns=[cols[1]], frame=frame[["d"]])
    assert run_warner(complete, WarnerParams(p=0.8, missing="preserve"), unseeded).guarantees["private"] is True


def test_a_missing_category_read_from_the_data_is_named_in_the_warnings():
    """With declared categories the domain still depends on the data: missing='category' adds
    '<missing>' only when the column has missing cells, so the published domain (and k, ε)
    tells whether any cell is missing. Nothing said so (the mechaudit acceptance check);
    docs/epsilon.md promises that facts read from the data and published exactly are named in
    the warnings."""
    frame = pd.DataFrame({"c": ["a", "b", None] * 100, "d": ["u", "v", "v"] * 100, "e": ["x", "y", None] * 100})
    cols = [ColumnInfo("c", "categorical", categories=("a", "b"), missing=100),
            ColumnInfo("d", "categorical", categories=("u", "v")),
            ColumnInfo("e", "categorical", distinct=2, missing=100)]
    out = run_errph(MethodInput(columns=cols, frame=frame), ErrphParams(p0=0.5), RunContext(SecureRandom()))
    assert out.metadata["errph"]["c"]["domain"] == ["a", "b", "<missing>"]
    assert out.metadata["errph"]["d"]["domain"] == ["u", "v"]
    about_missing = [w for w in out.guarantees["warnings"] if "'<missing>' category" in w]
    assert len(about_missing) == 1
    assert "'c' (has missing cells)" in about_missing[0] and "'d' (has none)" in about_missing[0]
    assert "'e'" not in about_missing[0]  # its domain, <missing> included, is already named as read from the data
    assert out.guarantees["private"] is True  # outside ε, like a domain read from the data
    preserved = run_errph(MethodInput(columns=cols, frame=frame), ErrphParams(p0=0.5, missing="preserve"), ctx())
    assert not [w for w in preserved.guarantees["warnings"] if "'<missing>' category" in w]


# --------------------------------------------------------------------------- the ε hook
@pytest.mark.parametrize("params", [
    ErrphParams(p0=0.5),
    ErrphParams(p0=0.3, per_column={"c": {"p0": 0.7}}),
    ErrphParams(p0=0.5, p={"c": [0.2, 0.1, 0.1, 0.05, 0.05]}),
    ErrphParams(p0=0.5, p={"d": {"u": 0.3, "v": 0.2}}),
    ErrphParams(p0=0.5, missing="preserve"),
])
def test_debited_epsilon_equals_the_reported_one(params):
    rng = np.random.default_rng(0)
    frame = pd.DataFrame({"c": rng.choice(["a", "b", "c", "d"], 2000), "d": rng.choice(["u", "v"], 2000),
                          "e": rng.choice([True, False], 2000)})
    frame.loc[:9, "c"] = None
    cols = [ColumnInfo("c", "categorical", distinct=4, missing=10), ColumnInfo("d", "categorical", distinct=2),
            ColumnInfo("e", "boolean", distinct=2)]
    debited = get("errph").epsilon_cost(params, cols)
    out = run_errph(MethodInput(columns=cols, frame=frame), params, ctx())
    assert debited == pytest.approx(out.guarantees["epsilon"])
    assert debited == pytest.approx(sum(c["local_epsilon"] for c in out.metadata["errph"].values()))


def test_uniform_epsilon_is_ln_1_plus_k_p0_over_1_minus_p0():
    cols = [ColumnInfo("c", "categorical", distinct=9), ColumnInfo("d", "categorical", categories=("x", "y"))]
    expected = math.log(1 + 9 * 0.6 / 0.4) + math.log(1 + 2 * 0.6 / 0.4)
    assert _errph_epsilon(ErrphParams(p0=0.6), cols) == pytest.approx(expected)


def test_run_fails_when_the_data_disagrees_with_the_profile_used_for_pricing():
    frame = pd.DataFrame({"c": ["a", "b", "c"] * 10})
    data = MethodInput(columns=[ColumnInfo("c", "categorical", distinct=2)], frame=frame)
    with pytest.raises(MethodInputError, match="re-profiled"):
        run_errph(data, ErrphParams(), ctx())


def test_epsilon_cannot_be_priced_without_a_domain_size():
    with pytest.raises(MethodInputError, match="cannot be priced"):
        _errph_epsilon(ErrphParams(), [ColumnInfo("c", "categorical")])


def test_check_names_the_bad_parameter():
    spec = get("errph")
    cols = [ColumnInfo("c", "categorical", distinct=3), ColumnInfo("x", "numeric")]
    with pytest.raises(MethodInputError, match="'x' is numeric"):
        spec.validate_against(ErrphParams(columns=["x"]), cols, None)
    with pytest.raises(MethodInputError, match="unknown column 'zz'"):
        spec.validate_against(ErrphParams(columns=["zz"]), cols, None)
    with pytest.raises(MethodInputError, match="p has 2 entries, the domain has 3"):
        spec.validate_against(ErrphParams(p={"c": [0.25, 0.25]}), cols, None)
    with pytest.raises(MethodInputError, match="add up to"):
        spec.validate_against(ErrphParams(p={"c": [0.1, 0.1, 0.1]}), cols, None)


# ------------------------------------------------------------------------- reconstruction
PI = np.array([0.45, 0.3, 0.15, 0.07, 0.03])


def _reconstruct(data, result, method, params, columns=None):
    release = as_release_input(data, result, method, params)
    report = run_reconstruct(release, ReconstructParams(columns=columns, plots=False), ctx())
    return report.data["steps"]


def _replicate(run_once, repeats):
    estimates, errors = zip(*(run_once(r) for r in range(repeats)))
    return np.array(estimates), np.array(errors)


def _assert_unbiased_with_matching_se(estimates, errors, truth, se_tolerance=0.15):
    spread = estimates.std(axis=0, ddof=1)
    assert np.all(np.abs(estimates.mean(axis=0) - truth) < 4 * spread / math.sqrt(len(estimates)))
    ratio = errors.mean(axis=0) / spread
    assert np.all(np.abs(ratio - 1) < se_tolerance), ratio


def test_errph_reconstruction_is_unbiased_and_its_standard_errors_match_the_spread():
    cols = [ColumnInfo("c", "categorical", categories=tuple(VALUES))]
    params = ErrphParams(p0=0.35, p={"c": [0.3, 0.1, 0.1, 0.1, 0.05]})

    def run_once(r):
        rng = np.random.default_rng(1000 + r)  # a fresh sample of the population each time
        data = MethodInput(columns=cols, frame=pd.DataFrame({"c": rng.choice(VALUES, 3000, p=PI)}))
        col = _reconstruct(data, run_errph(data, params, ctx(r)), "errph", params)[0]["columns"]["c"]
        assert np.all(np.asarray(col["consistent"]) >= 0) and sum(col["consistent"]) == pytest.approx(1)
        return col["estimate"], col["standard_error"]

    _assert_unbiased_with_matching_se(*_replicate(run_once, 400), PI)


def test_reconstruct_draws_the_published_and_reconstructed_distributions():
    cols = [ColumnInfo("c", "categorical", categories=tuple(VALUES)), ColumnInfo("d", "categorical")]
    frame = pd.DataFrame({"c": np.random.default_rng(3).choice(VALUES, 2000, p=PI),
                          "d": ["u", "v"] * 1000})
    data = MethodInput(columns=cols, frame=frame)
    params = ErrphParams(p0=0.5)
    release = as_release_input(data, run_errph(data, params, ctx()), "errph", params)
    report = run_reconstruct(release, ReconstructParams(), ctx())
    plot = report.plots["distributions"]
    assert plot.png.startswith(b"\x89PNG") and b"<svg" in plot.svg
    assert b"c (errph)" in plot.svg and b"d (errph)" in plot.svg  # one panel per column
    assert run_reconstruct(release, ReconstructParams(plots=False), ctx()).plots == {}


def test_reconstruct_plot_of_a_chain_names_which_distribution_each_panel_shows():
    """Acceptance check: errph on an errph release drew two panels both titled "c (errph)", one
    the original data (both steps undone), the other the input of the second step."""
    cols = [ColumnInfo("c", "categorical", categories=tuple(VALUES))]
    data = MethodInput(columns=cols, frame=pd.DataFrame({"c": np.random.default_rng(4).choice(VALUES, 2000, p=PI)}))
    first, second = ErrphParams(p0=0.6), ErrphParams(p0=0.7)
    once = as_release_input(data, run_errph(data, first, ctx()), "errph", first)
    twice = as_release_input(once, run_errph(once, second, ctx(1)), "errph", second)
    svg = run_reconstruct(twice, ReconstructParams(), ctx()).plots["distributions"].svg.decode()
    assert "c: original data (errph → errph undone)" in svg
    assert "c: input of step 2 (errph undone)" in svg
    assert "c (errph)" not in svg
    assert "error bars ± 1.96 standard errors" in svg


def test_reconstruction_through_a_chain_of_two_errph_steps():
    cols = [ColumnInfo("c", "categorical", categories=tuple(VALUES))]
    first, second = ErrphParams(p0=0.6), ErrphParams(p0=0.7)

    def run_once(r):
        rng = np.random.default_rng(5000 + r)
        data = MethodInput(columns=cols, frame=pd.DataFrame({"c": rng.choice(VALUES, 3000, p=PI)}))
        once = as_release_input(data, run_errph(data, first, ctx(r)), "errph", first)
        steps = _reconstruct(once, run_errph(once, second, ctx(10_000 + r)), "errph", second)
        col = steps[0]["columns"]["c"]  # the first step, undone through the second
        assert col["through_steps"] == ["errph", "errph"]
        return col["estimate"], col["standard_error"]

    _assert_unbiased_with_matching_se(*_replicate(run_once, 300), PI)


def _warner_replicates(p, n, share, seed, repeats=400):
    """π̂ and its SE over releases of fresh samples of a boolean column (a share of True)."""
    def run_once(r):
        rng = np.random.default_rng(seed + r)
        data = MethodInput(columns=[ColumnInfo("f", "boolean")], frame=pd.DataFrame({"f": rng.random(n) < share}))
        params = WarnerParams(p=p)
        col = _reconstruct(data, run_warner(data, params, ctx(r)), "warner", params)[0]["columns"]["f"]
        return [col["pi_hat"]], [col["pi_hat_standard_error"]]

    return _replicate(run_once, repeats)


def test_warner_pi_hat_is_unbiased_and_its_standard_error_matches():
    estimates, errors = _warner_replicates(0.75, 2000, 0.3, 9000)
    _assert_unbiased_with_matching_se(estimates, errors, np.array([0.3]))
    # the spec's closed form: Var(π̂) = π(1-π)/n + p(1-p)/(n(2p-1)²)
    closed = math.sqrt(0.3 * 0.7 / 2000 + 0.75 * 0.25 / (2000 * 0.25))
    assert errors.mean() == pytest.approx(closed, rel=0.03)


def test_reconstruct_only_the_named_columns():
    rng = np.random.default_rng(0)
    frame = pd.DataFrame({"c": rng.choice(VALUES, 1000), "d": rng.choice(["u", "v"], 1000)})
    cols = [ColumnInfo("c", "categorical", distinct=5), ColumnInfo("d", "categorical", distinct=2)]
    data = MethodInput(columns=cols, frame=frame)
    params = ErrphParams()
    steps = _reconstruct(data, run_errph(data, params, ctx()), "errph", params, columns=["d"])
    assert list(steps[0]["columns"]) == ["d"]
    # a column no step randomized: refused by the check (it used to give a silent empty report)
    only_c = ErrphParams(columns=["c"])
    release = as_release_input(data, run_errph(data, only_c, ctx()), "errph", only_c)
    with pytest.raises(MethodInputError, match=r"column 'd' was not randomized or transformed .*\(errph\)"):
        get("reconstruct").validate_against(ReconstructParams(columns=["d"]), release.columns, release.source)
    for wrong in ({"itemsets": [["c"]]}, {"max_len": 2}, {"estimator": "stratified"}):
        with pytest.raises(MethodInputError, match="applies to transaction releases"):
            run_reconstruct(release, ReconstructParams(**wrong), ctx())


def test_reconstruct_on_a_release_with_nothing_to_invert_is_refused_by_the_check():
    """An mst (or kanonymity) release has no reconstruction: the job was accepted (202) and then
    failed as invalid_input; the chain is known at submission (acceptance check)."""
    from app.privacy.data import SourceRelease

    cols = [ColumnInfo("c", "categorical", distinct=5)]
    for chain_method in ("mst", "kanonymity"):
        source = SourceRelease(release_id="r1", method=chain_method, params={},
                               guarantees={"protected_columns": ["c"]}, metadata={})
        with pytest.raises(MethodInputError, match=rf"nothing to reconstruct: no step of this release \({chain_method}\)"):
            get("reconstruct").validate_against(ReconstructParams(), cols, source)


def test_binarizing_by_a_value_list_places_missing_cells_by_the_list():
    frame = pd.DataFrame({"g": ["u", None, "v", "w"] * 50, "x": [1.0, np.nan, 3.0, 4.0] * 50})
    cols = [ColumnInfo("g", "categorical", distinct=3, missing=50), ColumnInfo("x", "numeric")]
    data = MethodInput(columns=cols, frame=frame)
    sure = dict(p=1.0, allow_zero_probabilities=True)
    out = run_warner(data, WarnerParams(cut_points={"g": ["u", "<missing>"]}, **sure), ctx())
    assert (out.frame["g"].to_numpy() == np.array([True, True, False, False] * 50)).all()
    with pytest.raises(MethodInputError, match="missing cells"):
        run_warner(data, WarnerParams(cut_points={"x": 2.0}, **sure), ctx())
    kept = run_warner(data, WarnerParams(cut_points={"x": 2.0}, missing="preserve", **sure), ctx())
    assert kept.frame["x"].isna().sum() == 50 and kept.metadata["warner"]["columns"]["x"]["missing_cells_left_out"] == 50


def test_errph_output_schema_declares_the_published_domain_so_a_second_step_is_priced_exactly():
    rng = np.random.default_rng(3)
    frame = pd.DataFrame({"c": rng.choice(["a", "b", None], 5000)})
    data = MethodInput(columns=[ColumnInfo("c", "categorical", distinct=2, missing=int(frame.c.isna().sum()))],
                       frame=frame)
    first = run_errph(data, ErrphParams(p0=0.5), ctx(1))
    out = {c.name: c for c in first.columns}["c"]
    assert out.categories == ("a", "b") and out.distinct == 2
    assert out.missing == int(first.frame["c"].isna().sum()) > 0
    release = as_release_input(data, first, "errph", ErrphParams(p0=0.5))
    params = ErrphParams(p0=0.7)
    debited = get("errph").epsilon_cost(params, release.columns)
    second = run_errph(release, params, ctx(2))
    assert debited == pytest.approx(second.guarantees["epsilon"]) == pytest.approx(math.log(1 + 3 * 0.7 / 0.3))


def test_a_cut_point_that_leaves_the_column_constant_is_refused_before_any_draw():
    """A typo in a value list ('zzz') or a number above every value made a constant column
    that was randomized and charged; refused now, before any randomness is drawn (so the
    worker refunds the job)."""
    frame = pd.DataFrame({"d": ["flu", "cold"] * 20, "x": np.arange(40.0)})
    cols = [ColumnInfo("d", "categorical", distinct=2), ColumnInfo("x", "numeric")]
    data = MethodInput(columns=cols, frame=frame)
    for cuts, name in (({"d": ["zzz"]}, "d"), ({"x": 1e9}, "x"), ({"x": -1.0}, "x")):
        rng = SecureRandom()
        with pytest.raises(MethodInputError, match=f"column '{name}': every cell falls .* constant"):
            run_warner(data, WarnerParams(columns=["d", "x"], cut_points={"d": ["flu"], "x": 20.0, **cuts}),
                       RunContext(rng))
        assert rng.bytes_drawn == 0
    assert run_warner(data, WarnerParams(columns=["d", "x"], cut_points={"d": ["flu"], "x": 20.0}),
                      ctx()).frame["x"].dtype == bool


def test_a_cut_column_is_boolean_by_the_cut_not_by_the_data():
    """A cut point makes a column boolean: the release's type is the method's, not inferred from
    the data (the column's inferred 'type' and 'integer' used to be carried over, so a DP release
    on it would warn its two-level domain was read from the data). An uncut column keeps its own."""
    frame = pd.DataFrame({"x": np.arange(100, dtype=float), "b": np.arange(100) % 2 == 0})
    cols = [ColumnInfo("x", "numeric", inferred=("type", "integer")),
            ColumnInfo("b", "boolean", inferred=("type",))]
    params = WarnerParams(p=0.9, cut_points={"x": 49.5})
    out = run_warner(MethodInput(columns=cols, frame=frame), params, ctx())
    assert {c.name: (c.type, c.inferred) for c in out.columns} == {"x": ("boolean", ()), "b": ("boolean", ("type",))}


def test_a_chain_that_randomizes_the_missing_cells_an_earlier_step_preserved_is_not_inverted():
    """errph(missing='preserve') then errph(missing='category'): the first step's p_j are shares
    of the non-missing cells only, so the two do not compose into one affine channel. The
    composed inversion used to be reported with a bias of -p_j·π_missing/p0 per value (and the
    missing share dropped); now the first step's section leaves the column out with a note."""
    rng = np.random.default_rng(11)
    n = 200_000
    values = rng.choice(np.array(VALUES + [None], dtype=object), n, p=[0.3, 0.25, 0.15, 0.1, 0.05, 0.15])
    cols = [ColumnInfo("c", "categorical", categories=tuple(VALUES), missing=int(pd.isna(values).sum()))]
    data = MethodInput(columns=cols, frame=pd.DataFrame({"c": values}))
    first, second = ErrphParams(p0=0.5, missing="preserve"), ErrphParams(p0=0.6)
    once = as_release_input(data, run_errph(data, first, ctx(1)), "errph", first)
    steps = _reconstruct(once, run_errph(once, second, ctx(2)), "errph", second)
    assert "c" not in steps[0]["columns"]
    assert any("'c'" in note and "cannot be inverted" in note for note in steps[0]["notes"])
    # the second step alone still reconstructs the first release's column (missing share included)
    assert steps[1]["columns"]["c"]["domain"][-1] == "<missing>"


def test_a_column_the_release_says_little_about_is_named_in_the_notes():
    """p0 near 0 leaves the estimate unbiased but its SEs far wider than [0, 1]: it is returned,
    and the notes say so (the recalib acceptance check: ±4·10⁶ estimates, not a word)."""
    g = np.random.default_rng(3)
    cols = [ColumnInfo("c", "categorical", categories=tuple(VALUES))]
    data = MethodInput(columns=cols, frame=pd.DataFrame({"c": g.choice(VALUES, 2000, p=PI)}))
    noted = {}
    for p0 in (1e-6, 0.5):
        params = ErrphParams(p0=p0)
        section = _reconstruct(data, run_errph(data, params, ctx()), "errph", params)[0]
        widest = max(section["columns"]["c"]["standard_error"])
        noted[p0] = (widest, [n for n in section["notes"] if "says little" in n])
    assert noted[1e-6][0] > 1000 and len(noted[1e-6][1]) == 1 and "'c'" in noted[1e-6][1][0]
    assert noted[0.5][0] < 0.05 and noted[0.5][1] == []


RARE_PI = np.array([0.85, 0.08, 0.04, 0.02, 0.01])


def test_a_rare_value_no_cell_was_published_as_still_has_a_standard_error():
    """The SE was √(λ̂(1−λ̂)/n)/p0 at the published share itself: a rare value that no cell
    happened to take had an SE of 0 — an interval of one point — though the noise alone
    publishes it with probability p_j (calib acceptance check: on Adult samples of 100 rows at
    p0 = 0.9, 63 % of native-country's SEs were 0 and its 95 % intervals covered 36 %). 400
    seeded releases of fresh 100-row samples at p0 = 0.95: the rarest value (1 %) had 17 % of
    its SEs at 0 and covered 82 %; now it has none and covers 99 %. (A value with ~5 expected
    published cells still covers ~85 %: the normal approximation, which the notes name.)"""
    cols = [ColumnInfo("c", "categorical", categories=tuple(VALUES))]
    params = ErrphParams(p0=0.95)

    def run_once(r):
        rng = np.random.default_rng(2000 + r)
        data = MethodInput(columns=cols, frame=pd.DataFrame({"c": rng.choice(VALUES, 100, p=RARE_PI)}))
        col = _reconstruct(data, run_errph(data, params, ctx(r)), "errph", params)[0]["columns"]["c"]
        return col["estimate"], col["standard_error"]

    estimates, errors = _replicate(run_once, 400)
    assert errors.min() > 0
    # the floor: a value published by the noise alone, p_j = 0.01, at n = 100
    assert errors.min() >= math.sqrt(0.01 * 0.99 / 100) / 0.95 - 1e-12
    covered = (np.abs(estimates - RARE_PI) <= 1.96 * errors).mean(axis=0)
    assert covered[-1] >= 0.92, covered
    assert np.all(covered >= 0.8), covered


def test_warner_rare_value_keeps_a_standard_error_when_no_cell_shows_it():
    """Warner at p = 0.99 on a 1 % value of 100 records: 14 % of the SEs were 0 (calib check on
    Adult's rare binaries: coverage 76-86 %); λ lies in [1 − p, p], so the SE is read there."""
    estimates, errors = _warner_replicates(0.99, 100, 0.01, 7000)
    assert (estimates <= -0.0102).mean() > 0.05  # releases with no positive cell published
    assert errors.min() >= math.sqrt(0.01 * 0.99 / 100) / 0.98 - 1e-12


def test_values_with_few_published_cells_are_named_in_the_notes():
    """±1.96·SE on a handful of published cells undercovers (the count is nearly Poisson):
    the notes name such values, and say nothing when every value has 10 cells or more."""
    cols = [ColumnInfo("c", "categorical", categories=tuple(VALUES))]
    frame = pd.DataFrame({"c": np.random.default_rng(9).choice(VALUES, 100, p=RARE_PI)})
    data = MethodInput(columns=cols, frame=frame)
    params = ErrphParams(p0=0.95)
    section = _reconstruct(data, run_errph(data, params, ctx()), "errph", params)[0]
    counts = np.round(np.asarray(section["columns"]["c"]["published_share"]) * 100)
    few = [VALUES[i] for i in np.flatnonzero(counts < 10)]
    assert few  # the rare values
    [note] = [n for n in section["notes"] if "published cells" in n]
    verb = "has" if len(few) == 1 else "have"
    assert f"{len(few)} of its 5 values {verb} fewer than 10 published cells" in note
    assert all(repr(v) in note for v in few) and "rough" in note
    big = MethodInput(columns=cols, frame=pd.DataFrame({"c": np.random.default_rng(9).choice(VALUES, 20_000, p=RARE_PI)}))
    section = _reconstruct(big, run_errph(big, params, ctx()), "errph", params)[0]
    assert not [n for n in section["notes"] if "published cells" in n]


def test_errph_and_mask_give_a_boolean_column_the_domain_false_true():
    """As warner and mst: the type is the domain. errph refused an all-True boolean column
    ('fewer than 2 values') and mask published only its 'flag=True' item, each reading — and
    disclosing — which values occur (mechaudit acceptance check's open point)."""
    from app.privacy.itemsets.release import MaskParams, run_mask

    frame = pd.DataFrame({"flag": pd.array([True] * 400, dtype="boolean")})
    cols = [ColumnInfo("flag", "boolean", distinct=1)]
    data = MethodInput(columns=cols, frame=frame)
    params = ErrphParams(p0=0.5)
    assert errph_column_epsilons(params, cols) == {"flag": pytest.approx(math.log(3))}  # k = 2
    out = run_errph(data, params, ctx())
    assert out.metadata["errph"]["flag"]["domain"] == ["False", "True"]
    assert not [w for w in out.guarantees["warnings"] if "domain read from the data" in w]
    assert 0.15 < (out.frame["flag"] == False).mean() < 0.35  # noqa: E712 — p0 + (1-p0)/2 keeps
    masked = run_mask(data, MaskParams(p=0.9), ctx())
    assert masked.transactions.labels == ("flag=False", "flag=True")
    assert not [w for w in masked.guarantees["warnings"] if "read from the data" in w]


def test_errph_warns_when_a_column_published_raw_determines_a_randomized_one():
    """errph on Adult randomized education and published education-num as it is — a code for
    education: 'education' was listed as protected at ε 2.83 and disclosed in full (the RR
    acceptance run). The release says so now; a column that merely correlates does not warn,
    nor does an identifier-like key with a value per record."""
    rng = np.random.default_rng(0)
    n = 3000
    level = rng.integers(0, 16, n)
    frame = pd.DataFrame({"education": np.array([f"e{v}" for v in range(16)])[level],
                          "education_num": level + 1,
                          "hours": np.clip(30 + 2 * level + rng.integers(-20, 20, n), 1, 99),
                          "row_id": np.arange(n),
                          "sex": np.where(rng.random(n) < 0.5, "F", "M")})
    columns = [ColumnInfo("education", "categorical"), ColumnInfo("education_num", "numeric", integer=True),
               ColumnInfo("hours", "numeric"), ColumnInfo("row_id", "numeric"), ColumnInfo("sex", "categorical")]
    out = run_errph(MethodInput(columns, frame), ErrphParams(p0=0.5), RunContext(SecureRandom(seed=1)))
    g = out.guarantees
    assert g["columns"]["education"]["determined_by_unprotected"] == ["education_num"]
    assert g["columns"]["sex"]["determined_by_unprotected"] == []
    (warning,) = [w for w in g["warnings"] if "determines" in w]
    assert warning.startswith("column 'education' is randomized, but 'education_num', published as it is, determines it")
    assert out.metadata["errph"]["education"]["determined_by_unprotected"] == ["education_num"]


@pytest.mark.parametrize("missing", ["category", "preserve"])
def test_errph_determinant_check_counts_a_missing_cell_as_a_value(missing):
    """The check reads errph's own codes (not a second factorization of the column): a missing
    cell is a value there too, whichever way the release treats missing cells — a raw code that
    is missing exactly where the randomized column is still determines it; one missing cell
    more in the randomized column (its code present) breaks that."""
    rng = np.random.default_rng(3)
    n = 2000
    level = rng.integers(0, 6, n)
    education = pd.Series(np.array([f"e{v}" for v in range(6)])[level], dtype=object)
    code = pd.Series(level + 1.0)
    gone = level == 5
    education[gone], code[gone] = None, np.nan
    columns = [ColumnInfo("education", "categorical"), ColumnInfo("education_num", "numeric")]

    def determined(frame):
        out = run_errph(MethodInput(columns, frame), ErrphParams(p0=0.5, missing=missing),
                        RunContext(SecureRandom(seed=1)))
        return out.guarantees["columns"]["education"]["determined_by_unprotected"]

    assert determined(pd.DataFrame({"education": education, "education_num": code})) == ["education_num"]
    education[np.flatnonzero(level == 0)[0]] = None  # a missing education whose code is 1
    assert determined(pd.DataFrame({"education": education, "education_num": code})) == []


@pytest.mark.parametrize("a_size, b_size", [(3, 4), (1000, 5000)])  # counted by bincount / by a sort
def test_distinct_pairs_counts_what_a_sort_counts(a_size, b_size):
    from app.privacy.guarantees import _distinct_pairs

    rng = np.random.default_rng(7)
    a, b = rng.integers(0, a_size, 500), rng.integers(0, b_size, 500)
    assert _distinct_pairs(a, a_size, b, b_size) == len(set(zip(a.tolist(), b.tolist())))


def test_local_epsilon_of_a_subnormal_probability_is_finite_and_silent():
    """Found by tests/privacy/test_properties_channels.py: (p0 + p_j) / p_j overflowed for a
    p_j below ~1e-308, so local_epsilon said ∞ (with a RuntimeWarning) where the largest ratio
    of the matrix is e^714.66."""
    import warnings

    from app.privacy.randomized_response import local_epsilon

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        eps = local_epsilon(0.05, np.array([0.95, 2.113820165596e-312]))
    assert eps == pytest.approx(math.log(0.05 + 2.113820165596e-312) - math.log(2.113820165596e-312))
    assert eps == pytest.approx(714.6623199250672)
