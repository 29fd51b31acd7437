"""The population check's fast path (verify_population): the population records grouped by the
generalization's labels (each checked to cover its record's value), the groups' boxes proven
disjoint by the labels themselves (the lattice's full-domain levels) or by Mondrian's split
tree, routed and checked, never trusted. Compared with the exact count (every released class
against every distinct population tuple) on random releases of Mondrian and the lattice, as
released and tampered (a class's label widened to its column's top, which makes boxes overlap):
the same figures and the same verdicts. And the fast path's refusals: a hint that does not
cover its value, overlapping classes behind a split tree that claims otherwise, forged trees,
and a δ-presence release it cannot prove whose exact count is too large (the job fails naming
the sizes)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pandas as pd
import pytest
from hypothesis import assume, event, given, note
from hypothesis import strategies as st

import app.privacy.anonymity.anonymize as anonymize_module
import app.privacy.anonymity.verify_population as verify_module
from app.privacy.anonymity.anonymize import Options, anonymize
from app.privacy.anonymity.axes import NumericAxis
from app.privacy.anonymity.automatic_intervals import number_text
from app.privacy.anonymity.models import Constraints, Population
from app.privacy.anonymity.verify import VerificationError
from app.privacy.anonymity.verify_population import (
    SplitTree, _hint_groups, _split_tree_refutes, label_cover, verify_population,
)
from app.privacy.data import ColumnInfo
from app.privacy.registry import MethodInputError
from tests.privacy.test_anonymity_population import _run, population_cases
from tests.support.properties import bounded


def _captured(monkeypatch, case) -> dict | None:
    """Run the case through anonymize, keeping what it handed verify_population (and the axes)."""
    seen: dict = {"axes": {}}
    real_verify, real_cover = verify_module.verify_population, verify_module.label_cover

    def verify(*args, **kwargs):
        seen.update(args=args, kwargs=kwargs)
        return real_verify(*args, **kwargs)

    def cover(axis):
        seen["axes"][axis.column] = axis
        return real_cover(axis)
    monkeypatch.setattr(anonymize_module, "verify_population", verify)
    monkeypatch.setattr(anonymize_module, "label_cover", cover)
    result = _run(case)
    return None if result is None else {**seen, "result": result}


def _verdict(released, index, in_subset, qis, covers, hints, kwargs, **how):
    try:
        return verify_population(released, index, in_subset, qis, covers, hints, **kwargs, **how)
    except VerificationError as exc:
        return exc


def _figures(found):
    if isinstance(found, Exception):
        return "refused"
    return (found.classes, found.k_map, found.delta_presence_min, found.delta_presence_max)


def _top(axis) -> str:
    """A label covering every value of the axis."""
    if isinstance(axis, NumericAxis) and axis.categories is not None:
        return axis.categories[0] if len(axis.categories) == 1 else \
            f"[{axis.categories[0]} .. {axis.categories[-1]}]"
    if isinstance(axis, NumericAxis):
        return f"[{number_text(axis.values[0])}, {number_text(axis.values[-1])}]"
    return axis.labels[0]


def _widened(released, hints, qis, axes, rng, among=None):
    """A released class's label of one QI replaced by that column's top label, in the release
    and in the generalization of every population record of the class's group (so the hints
    still cover their values): its box now overlaps others, unless it was the top already."""
    among = among or qis
    q = among[rng.integers(len(among))]
    tuples = released[qis].astype(str).agg("\x1f".join, axis=1)
    chosen = tuples.iloc[rng.integers(len(tuples))]
    whole = pd.DataFrame({c: pd.Series(hints[c], dtype=object).astype(str) for c in qis}).agg("\x1f".join, axis=1)
    top = _top(axes[q])
    hints = {c: np.asarray(hints[c], dtype=object).copy() for c in qis}
    hints[q][(whole == chosen).to_numpy()] = top
    released = released.copy()
    released.loc[(tuples == chosen).to_numpy(), q] = top
    return released, hints


@bounded(120)
@given(st.booleans().flatmap(lambda lattice: population_cases(lattice)), st.integers(0, 2**32 - 1))
def test_the_fast_path_and_the_exact_count_agree_on_random_and_tampered_releases(case, seed):
    with pytest.MonkeyPatch.context() as monkeypatch:
        seen = _captured(monkeypatch, case)
    assume(seen is not None)
    released, index, in_subset, qis, covers, hints = seen["args"]
    kwargs = seen["kwargs"]
    method = seen["result"].metadata["population"]["check"]
    algorithm = case[-1].algorithm
    note(f"algorithm={algorithm} check={method}")
    event(f"{algorithm}, {'δ-presence' if kwargs['delta_min'] is not None else 'k-map'}: "
          f"{method.get('disjoint') or method['method']}")
    presence = kwargs["delta_min"] is not None
    # as released: both pass with the same figures; δ-presence is proven by the fast path itself
    fast = _verdict(released, index, in_subset, qis, covers, hints, kwargs)
    exact = _verdict(released, index, in_subset, qis, covers, hints, kwargs, exact=True)
    assert _figures(fast) == _figures(exact) != "refused"
    if presence:
        assert fast.population_check["method"] == "hint groups"
        assert fast.population_check["disjoint"] == (
            "the split tree sends every class to a leaf of its own" if algorithm == "mondrian" and
            not all(_hint_groups(qis, covers, hints, [])[0].labels_disjoint) else
            "every quasi-identifier's distinct labels cover disjoint values")
    if not len(released):
        return
    # tampered: a class widened to its column's top on one QI
    rng = np.random.default_rng(seed)
    wide, wide_hints = _widened(released, hints, qis, seen["axes"], rng)
    fast = _verdict(wide, index, in_subset, qis, covers, wide_hints, kwargs)
    exact = _verdict(wide, index, in_subset, qis, covers, wide_hints, kwargs, exact=True)
    note(f"tampered: fast {fast!r}, exact {exact!r}")
    event("tampered: " + ("refused" if isinstance(fast, Exception) else fast.population_check["method"]))
    assert _figures(fast) == _figures(exact)
    # k-map's lower bound, the exact count never run: below or at the exact figure, and a pass
    # only where the exact count passes too
    if kwargs["k_map"] is not None and not presence:
        with pytest.MonkeyPatch.context() as monkeypatch:
            monkeypatch.setattr(verify_module, "_EXACT_CELLS_K_MAP", -1)
            bound = _verdict(wide, index, in_subset, qis, covers, wide_hints, kwargs)
        if not isinstance(bound, Exception):
            assert not isinstance(exact, Exception) and bound.k_map <= exact.k_map
            if bound.population_check["k_map"] == "exact":
                assert bound.k_map == exact.k_map


# ------------------------------------------------------------------------------ refusals
def _mondrian_release(delta=(0.2, 0.6), k_map=None, n=400, seed=3, coding="ordered"):
    """A Mondrian release of a random population (two ordered QIs and a numeric one), with what
    anonymize handed the check."""
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame({"a": rng.choice(list("pqrstu"), n).astype(object),
                          "b": rng.choice(list("xyz"), n).astype(object),
                          "c": rng.integers(0, 30, n).astype(float)})
    infos = {"a": ColumnInfo("a", "categorical", "quasi_identifier"),
             "b": ColumnInfo("b", "categorical", "quasi_identifier"),
             "c": ColumnInfo("c", "numeric", "quasi_identifier")}
    pop = Population(in_subset=rng.random(n) < 0.4, k_map=k_map, delta_min=delta and delta[0],
                     delta_max=delta and delta[1])
    case = (frame, infos, {}, ["a", "b", "c"], Constraints(k=1, population=pop), None,
            Options(categorical_coding=coding, categorical_release="children"))
    with pytest.MonkeyPatch.context() as monkeypatch:
        seen = _captured(monkeypatch, case)
    return seen


def test_a_hint_that_does_not_cover_its_value_is_refused():
    seen = _mondrian_release()
    released, index, in_subset, qis, covers, hints = seen["args"]
    hints = {q: np.asarray(v, dtype=object).copy() for q, v in hints.items()}
    outside = np.flatnonzero(~in_subset)[0]  # a record no release shows: only its hint says where it is
    codes = covers["c"].codes
    other = np.flatnonzero(codes != codes[outside])[0]
    hints["c"][outside] = number_text(seen["axes"]["c"].values[codes[other]])
    with pytest.raises(VerificationError, match="generalization of 'c' does not cover a population record's value"):
        verify_population(released, index, in_subset, qis, covers, hints, **seen["kwargs"])


def test_overlapping_classes_behind_the_split_tree_are_refused(monkeypatch):
    """Two released classes made to overlap (one's interval of 'c' widened over its neighbour's,
    in the release and the generalization alike): the split tree no longer routes it, the exact
    count finds population records matching both and refuses; with the exact count out of
    reach the job fails, naming the sizes, rather than pass."""
    seen = _mondrian_release()
    released, index, in_subset, qis, covers, hints = seen["args"]
    kwargs = seen["kwargs"]
    assert verify_population(released, index, in_subset, qis, covers, hints, **kwargs).population_check[
        "disjoint"] == "the split tree sends every class to a leaf of its own"
    rng = np.random.default_rng(0)
    for _ in range(20):  # a widening that does overlap a released neighbour
        wide, wide_hints = _widened(released, hints, qis, seen["axes"], rng, among=["c"])
        groups, _ = _hint_groups(qis, covers, wide_hints, [])
        if _split_tree_refutes(kwargs["splits"], qis, groups):
            break
    assert "lie on both sides of a cut" in _split_tree_refutes(kwargs["splits"], qis, groups)
    with pytest.raises(VerificationError, match="match two released classes"):
        verify_population(wide, index, in_subset, qis, covers, wide_hints, **kwargs)
    monkeypatch.setattr(verify_module, "_EXACT_CELLS", 0)
    with pytest.raises(MethodInputError, match=r"could not take its fast path \(a class's labels of 'c' lie on "
                       r"both sides of a cut\), and counting exactly would compare \d+ released classes with "
                       r"\d+ distinct tuples"):
        verify_population(wide, index, in_subset, qis, covers, wide_hints, **kwargs)


def _forgeries(tree: SplitTree) -> dict[str, tuple[SplitTree, str]]:
    inner = np.flatnonzero(tree.axis >= 0)
    v = int(inner[len(inner) // 2])
    moved = tree.threshold.copy()
    moved[inner] = 0  # every cut at the bottom: every class goes right, to one leaf
    cycle_left = tree.left.copy()
    cycle_left[v] = 0  # a child numbered before its parent: routing could loop
    other_axis = tree.axis.copy()
    other_axis[v] = len(tree.columns)  # a cut on a column the tree does not name
    return {
        "thresholds moved": (replace(tree, threshold=moved), "two classes end at one leaf"),
        "a loop": (replace(tree, left=cycle_left), "a child not numbered after its parent"),
        "an unknown axis": (replace(tree, axis=other_axis), "not a quasi-identifier"),
        "a column that is no quasi-identifier": (replace(tree, columns=["zzz"] + tree.columns[1:]),
                                                 "not a quasi-identifier"),
        "no cut at all": (SplitTree(tree.columns, np.array([-1]), np.array([0]), np.array([-1]),
                                    np.array([-1])), "two classes end at one leaf"),
        "a cut on another column": (replace(tree, axis=np.where(tree.axis >= 0, (tree.axis + 1) % 3, -1)),
                                    "lie on both sides of a cut"),
        "arrays of other lengths": (replace(tree, left=tree.left[:-1]), "malformed"),
    }


@pytest.mark.parametrize("forgery", list(_forgeries(_mondrian_release()["kwargs"]["splits"])))
def test_a_forged_split_tree_proves_nothing(monkeypatch, forgery):
    """A forged tree is refused by the check of it, whatever it claims; the release then stands
    or falls by the exact count (this one is sound: it passes with the same figures), and with
    the exact count out of reach the job fails instead of trusting the tree."""
    seen = _mondrian_release()
    released, index, in_subset, qis, covers, hints = seen["args"]
    kwargs = seen["kwargs"]
    forged, why = _forgeries(kwargs["splits"])[forgery]
    groups, _ = _hint_groups(qis, covers, hints, [])
    assert why in _split_tree_refutes(forged, qis, groups)
    honest = verify_population(released, index, in_subset, qis, covers, hints, **kwargs)
    found = verify_population(released, index, in_subset, qis, covers, hints, **{**kwargs, "splits": forged})
    assert found.population_check["method"] == "exact" and why in found.population_check["why"]
    assert _figures(found) == _figures(honest)
    monkeypatch.setattr(verify_module, "_EXACT_CELLS", 0)
    with pytest.raises(MethodInputError, match="could not take its fast path"):
        verify_population(released, index, in_subset, qis, covers, hints, **{**kwargs, "splits": forged})


def test_k_map_alone_states_a_lower_bound_when_the_exact_count_is_out_of_reach(monkeypatch):
    """Mondrian with ancestor labels (a hierarchy's LCA) releases classes whose boxes overlap
    (a class of a1, a2 released as 'A' covers a3 of its neighbour): k-map needs no
    disjointness, the groups' counts bound each class's population count from below, and
    metadata.population.check and the statement say it is a bound."""
    from app.privacy.anonymity.kanonymity_guarantee import population_statements
    leaves = ["a1", "a2", "a3", "b1", "b2", "b3", "b4"]
    rng = np.random.default_rng(0)
    n = 300
    frame = pd.DataFrame({"a": rng.choice(leaves, n).astype(object), "c": rng.integers(0, 40, n).astype(float)})
    hierarchy = pd.DataFrame({"level_0": leaves, "level_1": ["A"] * 3 + ["B"] * 4, "level_2": ["*"] * 7})
    infos = {"a": ColumnInfo("a", "categorical", "quasi_identifier"),
             "c": ColumnInfo("c", "numeric", "quasi_identifier")}
    constraints = Constraints(k=1, population=Population(in_subset=rng.random(n) < 0.3, k_map=20))

    def release():
        return anonymize(frame, infos, {"a": hierarchy}, ["a", "c"], constraints, None, Options())
    exact = release()
    assert exact.metadata["population"]["check"]["method"] == "exact"  # cheap here: counted exactly
    monkeypatch.setattr(verify_module, "_EXACT_CELLS_K_MAP", -1)
    bound = release()
    check = bound.metadata["population"]["check"]
    assert check["method"] == "hint groups" and check["k_map"] == "lower bound"
    assert "lie on both sides of a cut" in check["why"] and "was not run" in check["why"]
    assert 20 <= bound.achieved.k_map <= exact.achieved.k_map
    statement = next(s for s in population_statements(bound, constraints, "in") if s.startswith("k-map"))
    assert "; a lower bound: each class counted as the population records the generalization" in statement
    assert "lower bound" not in next(s for s in population_statements(exact, constraints, "in")
                                     if s.startswith("k-map"))


def test_the_lattice_is_proven_by_its_labels_and_mondrian_by_its_split_tree():
    seen = _mondrian_release()
    assert seen["result"].metadata["population"]["check"] == {
        "method": "hint groups", "k_map": "exact",
        "disjoint": "the split tree sends every class to a leaf of its own"}
    rng = np.random.default_rng(1)
    n = 300
    frame = pd.DataFrame({"a": rng.choice(list("pqrs"), n).astype(object), "c": rng.integers(0, 30, n).astype(float)})
    infos = {"a": ColumnInfo("a", "categorical", "quasi_identifier"),
             "c": ColumnInfo("c", "numeric", "quasi_identifier")}
    pop = Population(in_subset=rng.random(n) < 0.3, delta_min=0.0, delta_max=0.8)
    result = anonymize(frame, infos, {}, ["a", "c"], Constraints(k=2, population=pop), None,
                       Options(algorithm="lattice", suppression=0.1))
    assert result.metadata["population"]["check"]["disjoint"] == \
        "every quasi-identifier's distinct labels cover disjoint values"


def test_label_covers_as_ranges_are_the_masks():
    """The ranges a label is read as (the fast path's) and the mask (the exact count's) agree,
    for intervals, ordered codings and hierarchy nodes and sets."""
    seen = _mondrian_release(coding="hierarchy")
    for axis in seen["axes"].values():
        cover = label_cover(axis)
        labels = set(np.asarray(seen["args"][5][axis.column], dtype=object).tolist()) | {_top(axis)}
        for label in labels:
            mask = np.zeros(cover.domain, dtype=bool)
            for a, b in cover.spans(str(label)):
                mask[a:b] = True
            assert (mask == cover.covers(str(label))).all(), label


@bounded(80)
@given(population_cases(lattice=False))
def test_mondrian_s_split_tree_describes_its_partition(case):
    """Every record routed down the tree by its own codes ends at its class's leaf, one leaf
    per class: the certificate Mondrian emits is its partition (the check verifies it anyway)."""
    from app.privacy.anonymity.axes import build_axes
    from app.privacy.anonymity.mondrian import mondrian_partition
    frame, infos, hierarchies, qis, constraints, _, options = case
    axes, _ = build_axes(frame, [infos[q] for q in qis], hierarchies, numeric=options.numeric_generalization,
                         categorical=options.categorical_coding, auto_levels=options.auto_levels)
    ids, tree = mondrian_partition(axes, constraints, with_tree=True)
    plain = mondrian_partition(axes, constraints)
    assert (ids == plain).all()
    assert tree.columns == qis
    codes = np.column_stack([a.codes if isinstance(a, NumericAxis) else a.leaf_codes for a in axes])
    node = np.zeros(len(frame), dtype=np.int64)
    while (tree.axis[node] >= 0).any():
        inner = np.flatnonzero(tree.axis[node] >= 0)
        at = node[inner]
        right = codes[inner, tree.axis[at]] >= tree.threshold[at]
        node[inner] = np.where(right, tree.right[at], tree.left[at])
    pairs = pd.DataFrame({"class": ids, "leaf": node}).drop_duplicates()
    assert pairs["class"].is_unique and pairs["leaf"].is_unique
