"""safepub's public domain: a record with a quasi-identifier value outside it (a numeric value
outside the bounds, missing or not a hierarchy leaf; a categorical value no leaf of the hierarchy)
is dropped before the search and the sampling — the run never fails on such a record (a failure
published that one exists, outside (ε, δ)), and with the same coins the release is exactly the one
of the table without those records. A quasi-identifier without a public domain is refused at
submission, from the schema and the uploaded hierarchies alone."""

from __future__ import annotations

import math
import re

import numpy as np
import pandas as pd
import pytest

from app.privacy.anonymity.safepub import OUT_OF_DOMAIN, _check, run_safepub
from app.privacy.anonymity.safepub_domain import in_domain, public_hierarchies
from app.privacy.anonymity.safepub_params import SafePubParams
from app.privacy.context import RunContext
from app.privacy.data import ColumnInfo, MethodInput
from app.privacy.registry import MethodInputError
from app.privacy.rng import SecureRandom

HIER = {"a": pd.DataFrame({"l0": ["a1", "a2", "a3", "a4"], "l1": ["A", "A", "B", "B"], "l2": ["*"] * 4}),
        "b": pd.DataFrame({"l0": ["b1", "b2", "b3"], "l1": ["*"] * 3})}
X = ColumnInfo(name="x", type="numeric", role="quasi_identifier", bounds=(0.0, 10.0), integer=True)
INFOS = [ColumnInfo(name="a", type="categorical", role="quasi_identifier"),
         ColumnInfo(name="b", type="categorical", role="quasi_identifier"), X]
X_HIER = pd.DataFrame({"l0": ["0", "5", "10"], "l1": ["0-5", "0-5", "10"], "l2": ["*"] * 3})
PARAMS = SafePubParams(epsilon=2.0, delta=1e-5)


def _clean(n: int = 3000, seed: int = 3) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame({"a": rng.choice(["a1", "a2", "a3", "a4"], n), "b": rng.choice(["b1", "b2", "b3"], n),
                          "x": rng.choice([0.0, 5.0, 10.0], n)})
    frame.loc[rng.random(n) < 0.05, "b"] = None  # a missing categorical cell is in the domain
    return frame


OUTSIDE = pd.DataFrame({"a": ["a1", "a9", "a2", "a3", "a4", "a1"],  # a9: no leaf of a's hierarchy
                        "b": ["b1", "b2", "b3", "b1", "<missing>", "b2"],  # '<missing>' spelled out: no leaf
                        "x": [-1.0, 5.0, 10.5, np.nan, 0.0, 1e300]})  # outside [0, 10], missing


def _release(frame: pd.DataFrame, hierarchies=None, seed: int = 11, params: SafePubParams = PARAMS):
    data = MethodInput(columns=INFOS, frame=frame, hierarchies=dict(HIER if hierarchies is None else hierarchies))
    return run_safepub(data, params, RunContext(rng=SecureRandom(seed=seed)))


def _interleaved(clean: pd.DataFrame, outside: pd.DataFrame) -> pd.DataFrame:
    """The out-of-domain records spread among the clean ones (the clean ones keep their order)."""
    at = np.linspace(0, len(clean), len(outside), dtype=int)
    parts, last = [], 0
    for i, cut in enumerate(at):
        parts += [clean.iloc[last:cut], outside.iloc[[i]]]
        last = cut
    return pd.concat([*parts, clean.iloc[last:]], ignore_index=True)


def test_out_of_domain_records_are_dropped_and_the_release_is_that_of_the_table_without_them():
    clean = _clean()
    mixed = _interleaved(clean, OUTSIDE)
    assert (in_domain(mixed, {c.name: c for c in INFOS}, ["a", "b", "x"],
                      public_hierarchies({c.name: c for c in INFOS}, ["a", "b", "x"], HIER)).sum() == len(clean))
    for seed in (11, 12):
        with_them, without = _release(mixed, seed=seed), _release(clean, seed=seed)
        assert with_them.frame.equals(without.frame)  # the same coins, the same release
        assert with_them.metadata == without.metadata and with_them.guarantees == without.guarantees
    out, meta = with_them.frame, with_them.metadata["safepub"]
    assert len(out) and out.groupby(["a", "b", "x"]).size().min() >= meta["k"]
    assert meta["out_of_domain"] == OUT_OF_DOMAIN and OUT_OF_DOMAIN in with_them.guarantees["statements"]
    assert "dropped before the search and the sampling" in OUT_OF_DOMAIN and "not published" in OUT_OF_DOMAIN
    assert not any(str(len(OUTSIDE)) in w for w in with_them.guarantees["warnings"])


def test_a_missing_categorical_cell_is_released_as_the_missing_leaf():
    """b alone: its leaves cost nothing against the root's 1 a record, so the search keeps them."""
    data = MethodInput(columns=INFOS, frame=_clean(), hierarchies=dict(HIER))
    result = run_safepub(data, SafePubParams(epsilon=2.0, quasi_identifiers=["b"]), RunContext(rng=SecureRandom(seed=5)))
    assert result.metadata["safepub"]["levels"] == {"b": 0}
    assert set(result.frame["b"]) == {"b1", "b2", "b3", "<missing>"}


def test_a_numeric_value_that_is_no_leaf_of_the_uploaded_hierarchy_is_dropped():
    clean = _clean()
    hierarchies = {**HIER, "x": X_HIER}
    mixed = _interleaved(clean, pd.DataFrame({"a": ["a1", "a2"], "b": ["b1", "b2"], "x": [3.0, 7.0]}))
    with_them, without = _release(mixed, hierarchies), _release(clean, hierarchies)
    assert with_them.frame.equals(without.frame) and with_them.metadata == without.metadata
    assert with_them.metadata["safepub"]["hierarchies"]["uploaded"] == ["a", "b", "x"]


def test_a_table_with_no_record_in_the_domain_gives_an_empty_release_not_a_failure():
    outside = pd.concat([OUTSIDE] * 20, ignore_index=True)
    result = _release(outside)
    meta, clean = result.metadata["safepub"], _release(_clean()).metadata["safepub"]
    assert len(result.frame) == 0 and list(result.frame.columns) == ["a", "b", "x"]
    assert meta["search"]["lattice_size"] == clean["search"]["lattice_size"]  # public: the same lattice
    assert meta["search"]["nodes_scored"] == meta["search"]["lattice_size"]
    assert set(meta["levels"]) == {"a", "b", "x"} and meta["out_of_domain"] == OUT_OF_DOMAIN
    assert any("the release is empty" in w for w in result.guarantees["warnings"])



@pytest.mark.parametrize("metric", ["granularity", "discernibility", "entropy"])
def test_the_anchor_record_is_never_scored_every_node_scores_as_the_empty_table(monkeypatch, metric):
    """No record in the domain: the trees are built on a public anchor record, but the search must
    score the empty table (every node 0). Scored, the anchor would stand for a record the table
    does not hold: the empty table and its neighbour of one record would differ by two records."""
    import app.privacy.anonymity.safepub as safepub

    scorers = []
    real = safepub.exhaustive

    def spy(scorer, *args, **kwargs):
        scorers.append(scorer)
        return real(scorer, *args, **kwargs)

    monkeypatch.setattr(safepub, "exhaustive", spy)
    data = MethodInput(columns=INFOS, frame=pd.concat([OUTSIDE] * 20, ignore_index=True), hierarchies=dict(HIER))
    run_safepub(data, SafePubParams(epsilon=2.0, delta=1e-5, metric=metric), RunContext(rng=SecureRandom(seed=3)))
    (scorer,) = scorers
    assert len(scorer.rows) == 1 and not scorer.rows.any()
    assert len(scorer.cache) > 1 and set(scorer.cache.values()) == {0}

def test_a_quasi_identifier_without_a_public_domain_is_refused_from_the_schema():
    bare = ColumnInfo(name="c", type="categorical", role="quasi_identifier")
    params = SafePubParams(epsilon=1.0, quasi_identifiers=["c", "x"])
    with pytest.raises(MethodInputError, match="'c' has neither an uploaded hierarchy nor declared categories"):
        _check(params, [bare, X], None)
    flag = ColumnInfo(name="c", type="boolean", role="quasi_identifier")  # no categories to declare
    with pytest.raises(MethodInputError, match=r"neither .* \(upload a hierarchy\)$"):
        _check(params, [flag, X], None)
    _check(params, [ColumnInfo(name="c", type="categorical", role="quasi_identifier", has_hierarchy=True), X], None)
    _check(params, [ColumnInfo(name="c", type="categorical", role="quasi_identifier", categories=("u",)), X], None)
    unbounded = ColumnInfo(name="x", type="numeric", role="quasi_identifier")
    with pytest.raises(MethodInputError, match="numeric column 'x' has no declared bounds"):
        _check(params, [ColumnInfo(name="c", type="categorical", categories=("u",)), unbounded], None)


def test_a_numeric_hierarchy_without_a_leaf_within_the_bounds_is_refused_at_submission_and_at_start():
    """x's leaves 0, 5, 10 against bounds [20, 30]: no value can be in the domain. The submission's
    hook (which parses only the hierarchies it asks for) and the run, should the bounds or the
    hierarchy change in between, refuse it with the same words; a hierarchy with one leaf inside,
    or whose leaves are not numbers, is told apart."""
    from app.privacy.anonymity.safepub import _check_hierarchies

    far = ColumnInfo(name="x", type="numeric", role="quasi_identifier", bounds=(20.0, 30.0), integer=True,
                     has_hierarchy=True)
    asked = []

    def hierarchy(column):
        asked.append(column)
        return X_HIER

    params = SafePubParams(epsilon=1.0, quasi_identifiers=["a", "x"])
    words = r"hierarchy of 'x' has no leaf within the column's declared bounds \[20, 30\] \(its 3 numeric leaves span \[0, 10\]\)"
    with pytest.raises(MethodInputError, match=words):
        _check_hierarchies(params, [INFOS[0], far], hierarchy)
    assert asked == ["x"]  # a categorical column's hierarchy is not parsed
    data = MethodInput(columns=[INFOS[0], far], frame=_clean()[["a", "x"]], hierarchies={"a": HIER["a"], "x": X_HIER})
    with pytest.raises(MethodInputError, match=words):
        run_safepub(data, params, RunContext(rng=SecureRandom(seed=3)))
    inside = ColumnInfo(name="x", type="numeric", role="quasi_identifier", bounds=(10.0, 30.0), has_hierarchy=True)
    _check_hierarchies(params, [INFOS[0], inside], hierarchy)
    words_only = pd.DataFrame({"l0": ["low", "high"], "l1": ["*", "*"]})
    with pytest.raises(MethodInputError, match=r"\[20, 30\] \(none of its leaves is a number\)"):
        _check_hierarchies(params, [INFOS[0], far], lambda column: words_only)
    _check_hierarchies(params, [INFOS[0], far], lambda column: None)  # deleted since: the run decides


def test_bounds_wider_than_a_float_holds_are_refused_at_submission(monkeypatch):
    """[-1e308, 1e308] is finite, and the schema takes it, but its width overflows. Without a
    hierarchy the automatic intervals could not be built and the job failed when it started, on the
    schema alone; with one, a cell's cost (its interval's width over the bounds' width, inf/inf at
    the root) came out NaN, cast to −2⁶³ — far outside the [0, 1] the sensitivity assumes."""
    from dataclasses import replace

    from app.privacy.anonymity.axes import build_axes
    from app.privacy.anonymity.safepub_search import numeric_costs

    wide = ColumnInfo(name="x", type="numeric", role="quasi_identifier", bounds=(-1e308, 1e308))
    params = SafePubParams(epsilon=1.0, quasi_identifiers=["a", "x"])
    words = r"'x' has declared bounds \[-1e\+308, 1e\+308\] wider than a float64 holds"
    for info in (wide, replace(wide, has_hierarchy=True)):
        with pytest.raises(MethodInputError, match=words):
            _check(params, [ColumnInfo(name="a", type="categorical", categories=("a1",)), info], None)
    for given in ({"a": HIER["a"]}, {"a": HIER["a"], "x": X_HIER}):
        data = MethodInput(columns=[INFOS[0], wide], frame=_clean()[["a", "x"]], hierarchies=given)
        with pytest.raises(MethodInputError, match=words):
            run_safepub(data, params, RunContext(rng=SecureRandom(seed=3)))
    # the costs themselves refuse such a tree: built here past the axes' own refusal of these
    # bounds (registry.declared_bounds, which the submission and every reader of bounds apply)
    monkeypatch.setattr("app.privacy.anonymity.axes.declared_bounds", lambda info: tuple(map(float, info.bounds)))
    with np.errstate(all="ignore"):
        trees, _ = build_axes(_clean()[["x"]], [wide], {"x": X_HIER}, numeric="hierarchy", integer_from_data=False)
    with pytest.raises(RuntimeError, match="outside \\[0, 1\\]"), np.errstate(all="ignore"):
        numeric_costs(trees[0])


def test_an_empty_release_says_what_to_change_in_public_figures_only():
    """The warning of an empty release is a function of the parameters alone: the same for two
    tables of different sizes, and its figures are k/β now, with delta ×10 and ×100, and at the
    ε_anon that makes it least — never n or a count of records. At ε = 5 (ε_anon 4.5) it says to
    lower epsilon: "raise epsilon", as it said, would raise k/β there (k grows like e^ε_anon)."""
    from app.privacy.anonymity.safepub_params import beta_of, empty_release_warning, needed_class_size, smallest_k

    for params in (PARAMS, SafePubParams(epsilon=5.0, delta=1e-5)):
        anon = float(params.epsilon_anon)
        k, beta = smallest_k(params.delta, anon), beta_of(anon)
        said = [[w for w in _release(pd.concat([OUTSIDE] * copies, ignore_index=True), params=params)
                 .guarantees["warnings"] if "the release is empty" in w] for copies in (200, 237)]
        assert said[0] == said[1] == [empty_release_warning(params, k, beta)]
        text, now = said[0][0], math.ceil(k / beta)
        assert f"k = {k} records" in text and f"k/β = {now:,} records" in text
        assert f"{needed_class_size(1e-4, anon):,} with delta 0.0001" in text
        assert f"{needed_class_size(1e-3, anon):,} with delta 0.001" in text
        way = "raise" if anon < 1 else "lower"
        assert f"{way} epsilon to about 1.11 (ε_anon ≈ 1 at search_share 0.1): {needed_class_size(1e-5, 1.0):,}" in text
        assert needed_class_size(1e-5, 1.0) < 0.9 * now
    assert "lower epsilon" in text and now > 1000  # ε = 5: k/β in the thousands against 97 at ε_anon = 1


def test_a_k_above_n_is_told_to_lower_epsilon_not_raise_it():
    """k grows with ε_anon: at ε = 5, k = 1,031, and raising epsilon (as the 422 said) raises it."""
    from app.privacy.anonymity.safepub import _check_rows
    from app.privacy.anonymity.safepub_params import smallest_k

    assert smallest_k(1e-5, 0.5) < smallest_k(1e-5, 4.5) < smallest_k(1e-5, 6.0)
    with pytest.raises(MethodInputError, match=r"k = 1,031, above the table's 20 records: nothing could be released; "
                                               r"raise delta, or lower epsilon \(.* 4\.5 now; at ε_anon = 0\.5 .*k = 51\)"):
        _check_rows(SafePubParams(epsilon=5.0, delta=1e-5), 20)
    with pytest.raises(MethodInputError, match="raise delta$"):  # ε_anon 0.27: lowering ε barely helps
        _check_rows(SafePubParams(epsilon=0.3, delta=1e-5), 20)


def test_only_a_numeric_quasi_identifier_with_an_uploaded_hierarchy_is_parsed_at_submission():
    """The submission's hook reads a hierarchy only where the check needs one: a numeric
    quasi-identifier whose ColumnInfo says it has one (a hierarchy may be megabytes; the service
    answers None for a column without one, but only after a query per column)."""
    from app.privacy.anonymity.safepub import _check_hierarchies

    asked = []
    plain = ColumnInfo(name="y", type="numeric", role="quasi_identifier", bounds=(0.0, 10.0))
    held = ColumnInfo(name="x", type="numeric", role="quasi_identifier", bounds=(0.0, 10.0), has_hierarchy=True)
    _check_hierarchies(SafePubParams(epsilon=1.0, quasi_identifiers=["a", "y", "x"]), [INFOS[0], plain, held],
                       lambda column: asked.append(column) or X_HIER)
    assert asked == ["x"]


def test_only_a_boolean_label_whose_type_was_inferred_is_warned_of():
    """The label's text follows its type: a boolean one reads 'True'/'False'. Inferred from the
    data, that type is named (as dp_statistics names it); declared, or a categorical label (its
    text as written, whatever was inferred), nothing is said."""
    from app.privacy.anonymity.safepub import _inferred_warnings

    def label(type_, inferred):
        return [INFOS[0], ColumnInfo(name="paid", type=type_, role="label", inferred=inferred)]

    warned = _inferred_warnings(label("boolean", ("type",)), [], "paid")
    assert len(warned) == 1 and "paid (boolean)" in warned[0] and "a two-level domain" in warned[0]
    assert _inferred_warnings(label("boolean", ()), [], "paid") == []
    assert _inferred_warnings(label("categorical", ("type",)), [], "paid") == []
    assert _inferred_warnings(label("boolean", ("type",)), [], None) == []


def test_an_empty_release_at_the_best_epsilon_says_no_epsilon_helps():
    """At ε_anon ≈ 1.08 k/β (97) is within 10 % of its least over the ε_anon tried (97 at 1): the
    warning advises no change of epsilon, and says so, in figures of the parameters alone."""
    from app.privacy.anonymity.safepub_params import (
        ADVICE_ANON, beta_of, empty_release_warning, needed_class_size, smallest_k,
    )

    params = SafePubParams(epsilon=1.2, delta=1e-5)
    anon = float(params.epsilon_anon)
    now = needed_class_size(1e-5, anon)
    assert min(needed_class_size(1e-5, a) for a in ADVICE_ANON) >= 0.9 * now
    text = empty_release_warning(params, smallest_k(1e-5, anon), beta_of(anon))
    assert f"k/β = {now:,} records" in text and "epsilon to about" not in text
    assert "no ε_anon of 0.25, 0.5, … 4 makes it 10 % smaller at this delta (ε_anon = 1.08 now" in text


def test_a_k_above_n_just_past_half_is_not_told_to_lower_epsilon():
    """k is not strictly increasing in ε_anon: at δ = 0.03, ε_anon ≈ 0.53 gives k = 11 and 0.5
    gives 12. Lowering epsilon would not help there, so the 422 advises raising delta only."""
    from app.privacy.anonymity.safepub import _check_rows
    from app.privacy.anonymity.safepub_params import smallest_k

    params = SafePubParams(epsilon=0.53 / 0.9, delta=0.03)
    anon = float(params.epsilon_anon)
    assert 0.5 < anon and smallest_k(0.03, anon) == 11 < smallest_k(0.03, 0.5) == 12
    with pytest.raises(MethodInputError, match=r"give k = 11, above the table's 10 records: nothing could be "
                                               r"released; raise delta$"):
        _check_rows(params, 10)


def test_the_leaves_within_bounds_are_the_numbers_of_the_distinct_leaf_keys():
    """leaves_within_bounds floats the distinct leaf keys at once: the same numbers as keying and
    floating one leaf at a time — '5', '5.0' and '005' are one leaf, 0 and -0 one (+0, also "-0e0"), each
    spelling of an infinite number its own, a word none."""
    from app.privacy.anonymity.hierarchies import NUMBER, leaf_key
    from app.privacy.anonymity.safepub_domain import leaves_within_bounds

    spelled = ["0", "-0", "-0.0", "-0e0", "-.0", "5", "5.0", "005", " 7 ", "1e3", "1E+3", "2.5", ".5", "1e999", "2e999",
               "-1e999", "x", "nan", "*"]
    rng = np.random.default_rng(4)
    for _ in range(200):
        leaves = list(rng.choice(spelled, size=rng.integers(1, 9), replace=False))
        keys = {leaf_key(v, numeric=True) for v in leaves}
        expected = np.sort([float(k) for k in keys if re.fullmatch(NUMBER, k)])
        lo, hi = sorted(rng.choice([-2000.0, -1.0, 0.0, 1.0, 6.0, 2000.0], size=2, replace=False))
        info = ColumnInfo(name="x", type="numeric", bounds=(lo, hi))
        hierarchy = pd.DataFrame({"l0": leaves, "l1": ["*"] * len(leaves)}, dtype=object)
        inside = expected[(expected >= lo) & (expected <= hi)]
        if not len(inside):
            with pytest.raises(MethodInputError, match=f"its {len(expected):,} numeric leaves" if len(expected)
                               else "none of its leaves is a number"):
                leaves_within_bounds(info, hierarchy)
            continue
        got = leaves_within_bounds(info, hierarchy)
        assert got.tolist() == inside.tolist(), (leaves, lo, hi)
        assert np.signbit(got).tolist() == np.signbit(inside).tolist(), (leaves, lo, hi)  # key '0' is +0
