"""k-map and δ-presence over a research subset (ARX's population setting): random tables through
Mondrian and the lattice (with suppression), every release checked from its strings and the
raw population alone — which population records each released class's labels cover, its
population count against k_map, every class's share of research records against δ-presence
(the classes releasing nothing too) — and the lattice's optimum against a brute force over
every node, which is what the claim that both models are monotone under merging (so the
projections' pruning stays sound, suppression included) is tested by."""

from __future__ import annotations

import math
import re

import numpy as np
import pandas as pd
import pytest
from hypothesis import assume, given, note
from hypothesis import strategies as st

from app.privacy.anonymity.anonymize import anonymize
from app.privacy.anonymity.hierarchies import MISSING_LEAF
from app.privacy.anonymity.models import Constraints, Population
from app.privacy.anonymity.verify import VerificationError
from app.privacy.registry import MethodInputError
from tests.privacy.test_properties_kanonymity import (
    _covers_categorical, _covers_numeric, _label, _levels_of, brute_force_loss, tables,
)
from tests.support.properties import bounded

DELTAS = [None, (0.0, 0.5), (0.1, 0.9), (0.2, 0.7), (0.0, 1.0), (0.25, 0.5)]


@st.composite
def population_cases(draw, lattice: bool):
    frame, infos, hierarchies, qis, _, _, options = draw(tables(lattice))
    frame = frame.drop(columns=[c for c in ("s",) if c in frame.columns])
    n = len(frame)
    in_subset = np.array(draw(st.lists(st.booleans(), min_size=n, max_size=n)), dtype=bool)
    assume(in_subset.any())
    k = draw(st.integers(1, 4))
    k_map = draw(st.sampled_from([None, 2, 3, 5, 8]))
    delta = draw(st.sampled_from(DELTAS))
    if k_map is None and delta is None:
        k_map = 3
    if delta is not None and not lattice:  # as the method does: disjoint released classes
        options.categorical_release = "children"
    pop = Population(in_subset=in_subset, k_map=k_map, delta_min=delta and delta[0],
                     delta_max=delta and delta[1])
    return frame, infos, hierarchies, qis, Constraints(k=k, population=pop), None, options


def _run(case):
    frame, infos, hierarchies, qis, constraints, sensitive, options = case
    try:
        return anonymize(frame, infos, hierarchies, qis, constraints, sensitive, options)
    except MethodInputError as exc:  # infeasible on the whole population: refused
        assert any(w in str(exc) for w in ("fewer than k", "k_map", "delta_presence", "delta_max")), exc
        return None


def _covers(case, result, q: str, label: str, value) -> bool:
    frame, infos, hierarchies, *_ = case
    order = result.metadata["generalization"][q].get("order")
    if order is not None:
        leaf = _label(value) or MISSING_LEAF
        match = re.fullmatch(r"\[(.+) \.\. (.+)\]", label)
        return label == leaf if match is None else \
            order.index(match.group(1)) <= order.index(leaf) <= order.index(match.group(2))
    if infos[q].type == "numeric":
        return _covers_numeric(label, value)
    return _covers_categorical(label, _label(value), hierarchies.get(q))


def _coverage(case, result, labels: tuple) -> np.ndarray:
    """Which population records a released tuple of labels covers, value by value."""
    frame, _, _, qis, *_ = case
    covered = np.ones(len(frame), dtype=bool)
    for q, label in zip(qis, labels):
        covered &= np.array([_covers(case, result, q, label, v) for v in frame[q]], dtype=bool)
    return covered


def check_population(case, result) -> None:
    frame, infos, hierarchies, qis, constraints, _, options = case
    pop = constraints.population
    subset = pd.Series(pop.in_subset, index=frame.index)
    out = result.frame
    n_t = int(pop.in_subset.sum())
    # only research records, unchanged outside the quasi-identifiers, the rest suppressed at most
    assert set(out.index) <= set(frame.index[pop.in_subset])
    for c in frame.columns:
        if c not in qis:
            pd.testing.assert_series_equal(out[c], frame.loc[out.index, c], check_dtype=False)
    suppressed = n_t - len(out)
    assert result.metrics["suppressed"] == suppressed and result.metrics["records"] == len(out)
    assert suppressed == 0 if options.algorithm == "mondrian" else \
        suppressed <= math.floor(options.suppression * n_t + 1e-9)
    assert result.metadata["population"]["records"] == len(frame)
    assert result.metadata["population"]["research_subset"] == n_t
    if not len(out):
        return
    classes = out.groupby(qis, dropna=False, sort=False)
    assert classes.size().min() >= constraints.k
    times_covered = np.zeros(len(frame), dtype=np.int64)
    counts, ratios = [], []
    for labels, rows in classes:
        labels = labels if isinstance(labels, tuple) else (labels,)
        covered = _coverage(case, result, labels)
        assert covered[frame.index.get_indexer(rows.index)].all()  # its records' values
        times_covered += covered
        p, t = int(covered.sum()), int((covered & pop.in_subset).sum())
        counts.append(p)
        if pop.k_map is not None:
            assert p >= pop.k_map, (labels, p)
        if pop.presence:
            assert t == len(rows)  # every research record its labels cover is released
            ratios.append(t / p)
    if pop.k_map is not None:
        assert result.achieved.k_map == min(counts)
    if not pop.presence:
        return
    assert times_covered.max() <= 1  # no population record with two released classes
    alone = times_covered == 0
    if options.algorithm == "mondrian":  # nothing suppressed: records of no class are not in T
        assert not (alone & pop.in_subset).any()
        ratios += [0.0] if alone.any() else []
    elif alone.any():  # the lattice's classes at the released levels (suppressed ones included)
        levels = result.metadata["lattice"]["levels"]
        per_qi = [_levels_of(frame, infos[q], hierarchies.get(q), options.auto_levels)[levels[q]][0]
                  for q in qis]
        keys = pd.Series(list(zip(*per_qi)), index=frame.index)[alone]
        for _, rows in subset[alone].groupby(keys):
            ratios.append(rows.sum() / len(rows))
    assert min(ratios) >= pop.delta_min - 1e-12 and max(ratios) <= pop.delta_max + 1e-12, ratios
    assert result.achieved.delta_presence_min == pytest.approx(min(ratios))
    assert result.achieved.delta_presence_max == pytest.approx(max(ratios))


def _release_and_check(case) -> None:
    result = _run(case)
    assume(result is not None)
    try:
        check_population(case, result)
    except AssertionError:
        frame, *_, constraints, _, options = case
        pop = constraints.population
        note(f"frame=\n{frame.assign(T=pop.in_subset).to_string()}\nk={constraints.k} k_map={pop.k_map} "
             f"delta=({pop.delta_min}, {pop.delta_max}) options={options}")
        raise


@bounded(150)
@given(st.booleans().flatmap(lambda lattice: population_cases(lattice)))
def test_mondrian_and_the_lattice_meet_k_map_and_delta_presence_on_the_population(case):
    _release_and_check(case)


def brute_force_population_loss(case) -> float:
    """Least loss over every node (tests.privacy.test_properties_kanonymity.brute_force_loss):
    its classes over the whole population; a node with a class outside δ-presence (its share
    counting every research record) is out whatever the suppression; the research records of
    classes failing k or k-map are suppressed, at most the limit (a share of the subset); the
    loss is over the subset's records, a suppressed one counting 1 on every QI."""
    frame, infos, hierarchies, qis, constraints, _, options = case
    pop = constraints.population
    in_t = pop.in_subset

    def present(classes) -> bool:
        return not pop.presence or all(
            pop.delta_min - 1e-12 <= in_t[rows].sum() / len(rows) <= pop.delta_max + 1e-12 for rows in classes)

    def released_ok(rows) -> bool:
        t = int(in_t[rows].sum())
        return not t or t >= constraints.k and (pop.k_map is None or len(rows) >= pop.k_map)
    return brute_force_loss(frame, infos, hierarchies, qis, options, released_ok, counted=in_t, node_ok=present)


@bounded(90)
@given(population_cases(lattice=True))
def test_the_lattice_with_a_population_is_the_brute_force_optimum(case):
    result = _run(case)
    assume(result is not None)
    assume(result.metadata["lattice"]["optimal"])
    best = brute_force_population_loss(case)
    note(f"options={case[-1]} population={case[4].population}")
    assert result.metadata["lattice"]["loss"] == pytest.approx(best, rel=1e-9, abs=1e-12)


def _adultish(n: int = 60, seed: int = 0) -> tuple[pd.DataFrame, dict]:
    from app.privacy.data import ColumnInfo
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame({"age": rng.integers(20, 60, n).astype(float),
                          "sex": rng.choice(["F", "M"], n).astype(object)})
    infos = {"age": ColumnInfo("age", "numeric", "quasi_identifier"),
             "sex": ColumnInfo("sex", "categorical", "quasi_identifier")}
    return frame, infos


@pytest.mark.parametrize("delta, message", [
    ((0.5, 0.9), "a share of 0.25"),  # 15 of 60: no generalization averages elsewhere
    ((0.0, 0.2), "a share of 0.25"),
])
def test_a_whole_table_share_outside_the_bounds_is_refused(delta, message):
    frame, infos = _adultish()
    in_t = np.arange(60) < 15
    pop = Population(in_subset=in_t, delta_min=delta[0], delta_max=delta[1])
    with pytest.raises(MethodInputError, match=message):
        anonymize(frame, infos, {}, ["age", "sex"], Constraints(k=1, population=pop), None, _options())


def _options(**kw):
    from app.privacy.anonymity.anonymize import Options
    return Options(**kw)


def test_an_empty_subset_and_a_subset_equal_to_the_population_are_refused():
    frame, infos = _adultish()
    with pytest.raises(MethodInputError, match="research subset is empty"):
        anonymize(frame, infos, {}, ["age"], Constraints(k=1, population=Population(
            np.zeros(60, dtype=bool), k_map=2)), None, _options())
    with pytest.raises(MethodInputError, match="every record of the table is in the research subset"):
        anonymize(frame, infos, {}, ["age"], Constraints(k=1, population=Population(
            np.ones(60, dtype=bool), delta_min=0.0, delta_max=0.9)), None, _options())
    with pytest.raises(MethodInputError, match="fewer than k_map = 61"):
        anonymize(frame, infos, {}, ["age"], Constraints(k=1, population=Population(
            np.ones(60, dtype=bool), k_map=61)), None, _options())


def test_ancestor_labels_that_overlap_fail_the_delta_presence_check():
    """Two Mondrian classes released at the same ancestor can both match a population record
    (the reason the method releases child sets with δ-presence): the check refuses such a
    release rather than state one share for that record."""
    from app.privacy.anonymity.verify_population import LabelCover, verify_population
    population = pd.DataFrame({"a": ["x", "y", "x", "y"], "b": [1.0, 2.0, 2.0, 1.0]})
    released = pd.DataFrame({"a": ["*", "*"], "b": ["[1, 2]", "2"]}, index=[0, 1])
    covers = {"a": LabelCover(np.array([0, 1, 0, 1]), 2, lambda label: np.array([True, True])
                              if label == "*" else np.array([label == "x", label == "y"])),
              "b": LabelCover(np.array([0, 1, 1, 0]), 2, lambda label: np.array([True, True])
                              if label.startswith("[") else np.array([label == "1", label == "2"]))}
    in_t = np.array([True, True, False, False])
    with pytest.raises(VerificationError, match="match two released classes"):
        verify_population(released, population.index, in_t, ["a", "b"], covers,
                          {"a": np.array(["*"] * 4), "b": np.array(["[1, 2]", "2", "2", "[1, 2]"])},
                          k_map=None, delta_min=0.0, delta_max=1.0)
    # k-map alone counts every population record a class's labels cover
    found = verify_population(released, population.index, in_t, ["a", "b"], covers, {}, k_map=2,
                              delta_min=None, delta_max=None)
    assert found.k_map == 2


def test_risk_reports_the_k_map_and_delta_presence_a_table_meets():
    """risk with research_subset: per class of the quasi-identifiers, the population count of
    the classes holding research records (k-map: the smallest) and every class's share of
    research records (δ-presence: the range, a class without any at 0), by hand."""
    from app.privacy.anonymity.risk_method import RiskParams, _check_risk, run_risk
    from app.privacy.context import RunContext
    from app.privacy.data import ColumnInfo, MethodInput
    frame = pd.DataFrame({"zip": ["a"] * 4 + ["b"] * 3 + ["c"] * 2,
                          "in": ["yes", "no", "no", "no", "YES", "yes", "no", "no", "no"]})
    columns = [ColumnInfo("zip", "categorical", "quasi_identifier"), ColumnInfo("in", "categorical")]
    report = run_risk(MethodInput(columns=columns, frame=frame), RiskParams(research_subset="in"), RunContext())
    figures = report.data["population_models"]
    assert figures == {"research_subset": "in", "records": 9, "research_records": 3, "classes": 3,
                       "classes_without_research_records": 1, "k_map": 3, "delta_presence": [0.0, 2 / 3]}
    assert "population_models" not in run_risk(MethodInput(columns=columns, frame=frame), RiskParams(),
                                               RunContext()).data
    with pytest.raises(MethodInputError, match="research_subset column 'zip' is also a quasi-identifier"):
        _check_risk(RiskParams(research_subset="zip"), columns, None)
    with pytest.raises(MethodInputError, match="research_subset column 'zip' holds 'a', 'b', 'c'"):
        run_risk(MethodInput(columns=columns, frame=frame), RiskParams(research_subset="zip",
                                                                          quasi_identifiers=["in"]), RunContext())
