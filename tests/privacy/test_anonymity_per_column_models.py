"""Each sensitive column with a set of models of its own (kanonymity's sensitive_models, as ARX
puts criteria on attributes one by one): Mondrian (the full cut search, the layered one, the
pair form) and the lattice (with suppression; its optimum against a brute force over every node
with each column checked by its own set) — every release checked class by class on each column
by that column's models' definitions, from the released strings and the input table only, and
each column's figures against metadata.sensitive_achieved."""

from __future__ import annotations

import math

import pandas as pd
import pytest
from hypothesis import assume, given, note
from hypothesis import strategies as st

from app.privacy.anonymity import models, mondrian_cuts
from app.privacy.anonymity.anonymize import Options, anonymize
from app.privacy.anonymity.models import Constraints
from app.privacy.data import ColumnInfo
from app.privacy.registry import MethodInputError
from tests.privacy.test_anonymity_more_models import _two_groups, beta_holds, disclosure, entropy, recursive_holds
from tests.privacy.test_anonymity_several_sensitive import counts_of, figures, table
from tests.privacy.test_properties_kanonymity import _emd, brute_force_loss, tables
from tests.support.properties import bounded

# (s: categorical with missing cells, u: numeric, w: categorical) each with a set of its own
OWN = [
    {"s": dict(l=2, l_diversity="recursive", c=3.0), "u": dict(t=0.3)},
    {"s": dict(beta=3.0), "w": dict(delta_disclosure=3.0)},
    {"s": dict(l=2, l_diversity="entropy"), "u": dict(alpha=0.8), "w": dict(t=0.25, beta=2.0, beta_likeness="basic")},
]


@pytest.mark.parametrize("path", ["mondrian", "mondrian_layered", "mondrian_pair", "lattice_pair"])
@pytest.mark.parametrize("seed", range(3))
def test_each_column_meets_its_own_models(monkeypatch, seed, path):
    if path == "mondrian_layered":
        monkeypatch.setattr(mondrian_cuts, "SEARCH_CELLS", 30)
    elif path.endswith("pair"):
        monkeypatch.setattr(models, "_DENSE_CELLS", 0)
    frame, infos = table(seed)
    options = Options(algorithm="lattice", suppression=0.05) if path == "lattice_pair" else Options()
    k = 4
    for own in OWN:
        sets = {column: Constraints(k=k, **given) for column, given in own.items()}
        result = anonymize(frame, infos, {}, ["a", "b"], Constraints(k=k), None, options, models=sets)
        assert result.metadata["sensitive"] == list(own)
        for column, con in sets.items():
            counts, q = counts_of(result.frame, frame, column)
            assert min(sum(r) for r in counts) >= k
            found = figures(counts, q, con, column == "u")  # asserts every model of con
            entry = result.metadata["sensitive_achieved"][column]
            assert entry["models"] == con.describe(with_k=False)
            for key, value in found.items():
                assert entry[key] == pytest.approx(value, rel=1e-9), (column, key)
            # the figures of models the column was not asked for are not stated
            assert set(entry) - {"models", "k", "classes", "records"} == set(found) | (
                {"recursive_c"} if con.l_diversity == "recursive" else set())
            assert result.own_models[column][0] == con


def test_a_column_of_sensitive_without_an_entry_meets_the_job_s_models():
    frame, infos = table(5)
    job = Constraints(k=4, alpha=0.7)
    result = anonymize(frame, infos, {}, ["a", "b"], job, ["s", "w"], Options(),
                       models={"u": Constraints(k=4, t=0.3)})
    assert result.metadata["sensitive"] == ["s", "w", "u"]
    for column in ("s", "w"):
        counts, q = counts_of(result.frame, frame, column)
        figures(counts, q, job, False)
    counts, q = counts_of(result.frame, frame, "u")
    figures(counts, q, Constraints(k=4, t=0.3), True)
    # the guarantee's α is the weakest of s and w only (u was not asked for α)
    assert result.achieved.alpha == pytest.approx(max(result.metadata["sensitive_achieved"][c]["alpha"]
                                                      for c in ("s", "w")))
    assert result.achieved.t is None and set(result.own_models) == {"u"}


def test_per_column_models_differ_from_one_set_on_every_column():
    """recursive (c,l) on s and t on u is a different release from both models on both columns:
    the per-column one keeps finer classes, and its u-column need not be (c,l)-diverse."""
    frame, infos = table(1)
    own = {"s": Constraints(k=4, l=2, l_diversity="recursive", c=2.0), "u": Constraints(k=4, t=0.2)}
    per = anonymize(frame, infos, {}, ["a", "b"], Constraints(k=4), None, Options(), models=own)
    both = anonymize(frame, infos, {}, ["a", "b"], Constraints(k=4, l=2, l_diversity="recursive", c=2.0, t=0.2),
                     ["s", "u"], Options())
    assert per.metrics["classes"] >= both.metrics["classes"]
    assert per.metrics["ncp"] <= both.metrics["ncp"] + 1e-12


def test_refusals_read_from_the_data_name_the_column_whose_models_fail():
    """A column's own set is checked on the whole table by itself: the column another set
    names is not refused for models it was not asked for, and the refusal names the column."""
    frame, infos = _two_groups(["x", "x", "<missing>", "<missing>", "x", "x", None, None])
    frame["w"] = ["p", "q"] * 4
    infos["w"] = ColumnInfo("w", "categorical", "sensitive")
    with pytest.raises(MethodInputError, match="'s' holds a value spelled '<missing>'"):
        anonymize(frame, infos, {}, ["g"], Constraints(k=2), None, Options(), models={"s": Constraints(k=2, l=2)})
    frame["s"] = ["x", "y"] * 4
    with pytest.raises(MethodInputError, match="sensitive column 'w' has 2 distinct values in the whole table: "
                                               "l = 3 is impossible"):
        anonymize(frame, infos, {}, ["g"], Constraints(k=3), None, Options(),
                  models={"s": Constraints(k=3, alpha=0.5), "w": Constraints(k=3, l=3)})
    result = anonymize(frame, infos, {}, ["g"], Constraints(k=3), None, Options(),
                       models={"s": Constraints(k=3, alpha=0.5), "w": Constraints(k=3, l=2)})
    assert result.metadata["sensitive_achieved"]["w"]["l"] == 2


# ----------------------------------------------------- random tables: definitions and brute force
MODEL_SETS = [dict(l=2), dict(l=2, l_diversity="entropy"), dict(l=2, l_diversity="recursive", c=2.0),
              dict(alpha=0.75), dict(t=0.5), dict(t=0.25), dict(beta=1.5, beta_likeness="basic"),
              dict(beta=2.0), dict(delta_disclosure=2.5), dict(l=2, alpha=0.8)]
SENSITIVE_VALUES = ["flu", "cold", "hiv", "ok"]


@st.composite
def per_column_tables(draw, lattice: bool):
    frame, infos, hierarchies, qis, con, _, options = draw(tables(lattice))
    frame, n = frame.drop(columns=["s"], errors="ignore"), len(frame)
    infos = {name: info for name, info in infos.items() if name != "s"}
    frame["s"] = pd.Series(draw(st.lists(st.sampled_from(SENSITIVE_VALUES + [None]), min_size=n, max_size=n)),
                           dtype=object)
    frame["u"] = [float(x) for x in draw(st.lists(st.integers(0, 4), min_size=n, max_size=n))]
    infos["s"] = ColumnInfo("s", "categorical", "sensitive")
    infos["u"] = ColumnInfo("u", "numeric", "sensitive")
    own = {"s": Constraints(k=con.k, **draw(st.sampled_from(MODEL_SETS))),
           "u": Constraints(k=con.k, **draw(st.sampled_from(MODEL_SETS)))}
    return frame, infos, hierarchies, qis, Constraints(k=con.k), own, options


def _class_ok(values: pd.Series, table: pd.Series, con: Constraints, numeric: bool) -> bool:
    """One class meets ``con`` on this column, by the definitions (missing is a value)."""
    keys = lambda v: v.astype(object).where(v.notna(), "<missing>").astype(str)  # noqa: E731
    domain = sorted(keys(table).unique())
    q = keys(table).value_counts(normalize=True).reindex(domain).tolist()
    counts = keys(values).value_counts().reindex(domain, fill_value=0).tolist()
    ok = True
    if con.l is not None:
        ok &= sum(x > 0 for x in counts) >= con.l
        if con.l_diversity == "entropy":
            ok &= entropy(counts) >= math.log(con.l) - 1e-12
        if con.l_diversity == "recursive":
            ok &= recursive_holds(counts, con.c, con.l)
    if con.alpha is not None:
        ok &= max(counts) / sum(counts) <= con.alpha + 1e-12
    if con.t is not None:
        ok &= _emd(values, table, numeric) <= con.t + 1e-12
    if con.delta_disclosure is not None:
        ok &= disclosure(counts, q) < con.delta_disclosure
    if con.beta is not None:
        ok &= beta_holds(counts, q, con.beta, con.beta_likeness == "enhanced")
    return bool(ok)


def _run(case):
    frame, infos, hierarchies, qis, con, own, options = case
    try:
        return anonymize(frame, infos, hierarchies, qis, con, None, options, models=own)
    except MethodInputError as exc:  # infeasible on the whole table: refused, never released
        assert any(w in str(exc) for w in ("fewer than k", "is impossible", "hierarchy")), str(exc)
        return None


def _describe(case) -> str:
    frame, infos, hierarchies, qis, con, own, options = case
    return (f"frame=\n{frame.to_string()}\nhierarchies={ {q: h.values.tolist() for q, h in hierarchies.items()} }"
            f"\nk={con.k} own={own} options={options}")


def _check(case) -> None:
    frame, infos, hierarchies, qis, con, own, options = case
    result = _run(case)
    assume(result is not None)
    out = result.frame
    try:
        if not len(out):
            return
        classes = out.groupby(qis, dropna=False, sort=False)
        assert classes.size().min() >= con.k
        for column, model in own.items():
            assert all(_class_ok(v, frame[column], model, column == "u") for _, v in classes[column]), column
    except AssertionError:
        note(_describe(case))
        raise


@bounded(60)
@given(per_column_tables(lattice=False))
def test_mondrian_meets_each_column_s_own_models(case):
    _check(case)


@bounded(40)
@given(per_column_tables(lattice=True))
def test_the_lattice_meets_each_column_s_own_models(case):
    _check(case)


def _brute_force(case) -> float:
    """Least loss over every node whose classes failing k or any column's own models are within
    the suppression limit."""
    frame, infos, hierarchies, qis, con, own, options = case
    return brute_force_loss(frame, infos, hierarchies, qis, options, lambda rows: len(rows) >= con.k and all(
        _class_ok(frame[column].iloc[rows], frame[column], model, column == "u") for column, model in own.items()))


@bounded(40)
@given(per_column_tables(lattice=True))
def test_the_lattice_with_per_column_models_is_the_brute_force_optimum(case):
    """Pruning by projections stays sound with a set per column: each set is monotone under
    merging (and its k/distinct-l part with suppression), so is their conjunction."""
    result = _run(case)
    assume(result is not None and result.metadata["lattice"]["optimal"])
    best = _brute_force(case)
    try:
        assert result.metrics["ncp"] == pytest.approx(best, abs=1e-9)
    except AssertionError:
        note(_describe(case) + f"\nlevels={result.metadata['lattice']['levels']} ncp={result.metrics['ncp']} "
             f"brute force={best}")
        raise
