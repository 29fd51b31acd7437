"""Privacy-model statistics (dense and pair forms), Mondrian invariants on synthetic data, and
re-identification risk against hand computation."""

import numpy as np
import pandas as pd
import pytest

from app.privacy.anonymity import models, mondrian_cuts
from app.privacy.anonymity.axes import build_axes
from app.privacy.anonymity.methods import KAnonymityParams, run_kanonymity
from app.privacy.anonymity.risk_method import RiskParams, run_risk
from app.privacy.anonymity.models import Constraints, Sensitive, class_stats
from app.privacy.anonymity.mondrian import mondrian_partition
from app.privacy.anonymity.risk import prosecutor_risk
from app.privacy.context import RunContext
from app.privacy.data import ColumnInfo, MethodInput, SourceRelease
from tests.privacy.test_anonymity_support import ordered_emd


@pytest.mark.parametrize("ordered", [False, True])
def test_dense_and_pair_statistics_agree_and_match_direct_computation(ordered, monkeypatch):
    rng = np.random.default_rng(7)
    n, classes = 3000, 60
    ids = rng.integers(0, classes, n)
    values = rng.zipf(1.6, n) % 40 if ordered else rng.choice(list("abcdefgh"), n, p=[.4, .2, .1, .1, .05, .05, .05, .05])
    sens = Sensitive.from_series("s", pd.Series(values), numeric=ordered)
    c = Constraints(k=2, l=2, alpha=0.5, t=0.3)
    dense = class_stats(ids, classes, c, sens)
    monkeypatch.setattr(models, "_DENSE_CELLS", 0)
    pairs = class_stats(ids, classes, c, sens)
    for field in ("size", "distinct", "max_share", "distance"):
        assert np.allclose(getattr(dense, field), getattr(pairs, field))
    frame = pd.DataFrame({"c": ids, "s": values})
    for cls, group in list(frame.groupby("c"))[:15]:
        assert dense.distinct[cls] == group.s.nunique()
        assert dense.max_share[cls] == pytest.approx(group.s.value_counts(normalize=True).iloc[0])
        if ordered:
            expected = ordered_emd(group.s.to_numpy(), values)
        else:
            table = pd.Series(values).value_counts(normalize=True)
            expected = 0.5 * (group.s.value_counts(normalize=True).reindex(table.index, fill_value=0)
                              - table).abs().sum()
        assert dense.distance[cls] == pytest.approx(expected, abs=1e-12)


def _synthetic(n=4000, seed=11):
    rng = np.random.default_rng(seed)
    return pd.DataFrame({
        "age": rng.integers(18, 90, n), "zip": rng.choice([f"z{i}" for i in range(30)], n),
        "income": np.round(rng.lognormal(10, 1, n)), "dx": rng.choice(["a", "b", "c", "d"], n),
    })


@pytest.mark.parametrize("k", [2, 7, 50])
def test_mondrian_partition_invariants(k):
    frame = _synthetic()
    infos = [ColumnInfo("age", "numeric"), ColumnInfo("zip", "categorical"), ColumnInfo("income", "numeric")]
    axes, _ = build_axes(frame, infos, {})
    ids = mondrian_partition(axes, Constraints(k=k))
    sizes = np.bincount(ids)
    assert ids.min() == 0 and (sizes >= k).all()
    # maximality: no class can be cut on any axis (value boundary; for the flat zip hierarchy a
    # boundary between values in its order) with k records or more on both sides
    for column in ("age", "zip", "income"):
        def cuttable(values):
            counts = values.value_counts().sort_index().to_numpy()
            left = np.cumsum(counts)[:-1]
            return bool(((left >= k) & (len(values) - left >= k)).any())
        assert not frame.assign(c=ids).groupby("c")[column].apply(cuttable).any()
    with_sensitive = mondrian_partition(axes, Constraints(k=k, l=3),
                                        Sensitive.from_series("dx", frame.dx, False))
    assert (frame.assign(c=with_sensitive).groupby("c").dx.nunique() >= 3).all()


def _cuttable_classes(frame, ids, column, c: Constraints, table) -> int:
    """Classes that some value boundary of ``column`` (sorted; text order for the flat zip
    hierarchy) cuts into two sides that both satisfy k, distinct l, α and t (equal-distance
    EMD to ``table``), recomputed from the raw cells."""
    codes = pd.Categorical(frame.dx, categories=table.index).codes
    m = len(table)
    found = 0
    for _, idx in frame.groupby(ids).indices.items():
        keys = frame[column].to_numpy()[idx]
        order = np.argsort(keys, kind="stable")
        keys, dx = keys[order], codes[idx][order]
        cum = np.cumsum(np.eye(m)[dx], axis=0)
        cuts = np.flatnonzero(keys[1:] != keys[:-1]) + 1
        left = cum[cuts - 1]
        right = cum[-1] - left

        def fine(side):
            size = side.sum(axis=1, keepdims=True)
            ok = size[:, 0] >= c.k
            if c.l is not None:
                ok &= (side > 0).sum(axis=1) >= c.l
            if c.alpha is not None:
                ok &= (side / size).max(axis=1) <= c.alpha + 1e-12
            if c.t is not None:
                ok &= 0.5 * np.abs(side / size - table.to_numpy()).sum(axis=1) <= c.t + 1e-12
            return ok
        found += bool((fine(left) & fine(right)).any())
    return found


@pytest.mark.parametrize("constraints", [Constraints(k=5, l=3), Constraints(k=5, alpha=0.5),
                                         Constraints(k=5, t=0.12)])
def test_mondrian_with_sensitive_constraints_leaves_no_class_cuttable(constraints):
    """With l/α/t every boundary is searched when the two nearest the median fail: no
    released class can be cut anywhere on any axis with both sides satisfying the model. The
    two-nearest search leaves such classes behind on this table."""
    frame = _synthetic(n=2500, seed=5)
    rng = np.random.default_rng(5)  # a sensitive value tied to age and zip, so cuts matter
    skew = (frame.age > 60) | frame.zip.isin(["z1", "z2", "z3"])
    frame["dx"] = np.where(skew & (rng.random(len(frame)) < 0.6), "a", frame.dx)
    infos = [ColumnInfo("age", "numeric"), ColumnInfo("zip", "categorical"), ColumnInfo("income", "numeric")]
    axes, _ = build_axes(frame, infos, {})
    sens = Sensitive.from_series("dx", frame.dx, False)
    table = frame.dx.value_counts(normalize=True).sort_index()
    ids = mondrian_partition(axes, constraints, sens)
    nearest = mondrian_partition(axes, constraints, sens, search="nearest")
    assert sum(_cuttable_classes(frame, nearest, q, constraints, table)
               for q in ("age", "zip", "income")) > 0
    for q in ("age", "zip", "income"):
        assert _cuttable_classes(frame, ids, q, constraints, table) == 0, q
    classes = frame.assign(c=ids).groupby("c").dx
    assert classes.size().min() >= constraints.k
    if constraints.l:
        assert classes.nunique().min() >= constraints.l
    if constraints.alpha:
        assert classes.apply(lambda v: v.value_counts(normalize=True).iloc[0]).max() <= constraints.alpha
    if constraints.t:
        tv = classes.apply(lambda v: 0.5 * (v.value_counts(normalize=True).reindex(table.index, fill_value=0)
                                            - table).abs().sum())
        assert tv.max() <= constraints.t + 1e-12
    # The full search refines the two-nearest partition: every class lies inside one of its.
    assert (pd.Series(nearest).groupby(ids).nunique() == 1).all()


def test_full_cut_search_fallback_matches_the_dense_search(monkeypatch):
    """The layered fallback (used when the count table would be too large) picks the same
    cuts as the dense search whenever those lie among the boundaries it tries."""
    frame = _synthetic(n=1500, seed=9)
    infos = [ColumnInfo("age", "numeric"), ColumnInfo("zip", "categorical"), ColumnInfo("income", "numeric")]
    axes, _ = build_axes(frame, infos, {})
    sens = Sensitive.from_series("income", frame.income, True)  # ordered EMD on many values
    c = Constraints(k=4, t=0.35)
    dense = mondrian_partition(axes, c, sens)
    monkeypatch.setattr(mondrian_cuts, "SEARCH_CELLS", 0)
    layered = mondrian_partition(axes, c, sens)
    assert pd.crosstab(dense, layered).astype(bool).sum(axis=1).max() == 1  # same partition
    assert np.bincount(layered).min() >= 4


def test_prosecutor_risk_by_hand():
    # classes of sizes 1, 2, 3 and 4 (10 records)
    ids = np.array([0, 1, 1, 2, 2, 2, 3, 3, 3, 3])
    r = prosecutor_risk(ids, threshold=3)
    assert r["highest"] == 1.0 and r["smallest_class"] == 1
    assert r["average"] == pytest.approx(4 / 10)  # mean of 1/f = classes / n
    assert r["average"] == pytest.approx(np.mean([1, .5, .5, 1 / 3, 1 / 3, 1 / 3, .25, .25, .25, .25]))
    assert r["records_at_risk"] == pytest.approx(3 / 10)  # sizes 1 and 2 are below 3
    assert r["sample_uniques"] == 1 and r["sample_uniques_share"] == pytest.approx(0.1)


def test_risk_method_on_a_dataset_and_on_its_release():
    frame = _synthetic(2000)
    columns = [ColumnInfo("age", "numeric", "quasi_identifier"),
               ColumnInfo("zip", "categorical", "quasi_identifier"),
               ColumnInfo("income", "numeric", "insensitive"), ColumnInfo("dx", "categorical", "sensitive")]
    raw = run_risk(MethodInput(columns=columns, frame=frame), RiskParams(threshold=4), RunContext())
    sizes = frame.groupby(["age", "zip"]).size()
    assert raw.data["highest"] == 1 / sizes.min()
    assert raw.data["average"] == pytest.approx(len(sizes) / len(frame))
    assert raw.data["sample_uniques"] == int((sizes == 1).sum())
    assert raw.data["records_at_risk"] == pytest.approx(sizes[sizes < 4].sum() / len(frame))
    assert raw.tables["class_sizes"]["records"].sum() == len(frame)
    assert raw.plots["class_sizes"].png.startswith(b"\x89PNG")
    release = run_kanonymity(MethodInput(columns=columns, frame=frame), KAnonymityParams(k=6),
                             RunContext())
    source = SourceRelease("r1", "kanonymity", {}, release.guarantees, release.metadata)
    after = run_risk(MethodInput(columns=release.columns, frame=release.frame, source=source),
                     RiskParams(), RunContext())
    assert after.data["input"] == "release" and after.data["highest"] <= 1 / 6
    assert after.data["highest"] == pytest.approx(release.metrics["risk"]["highest"])
    assert after.data["sample_uniques"] == 0


def test_release_metrics_are_consistent():
    frame = _synthetic(3000)
    columns = [ColumnInfo("age", "numeric", "quasi_identifier"),
               ColumnInfo("zip", "categorical", "quasi_identifier"),
               ColumnInfo("income", "numeric", "quasi_identifier"), ColumnInfo("dx", "categorical")]
    r = run_kanonymity(MethodInput(columns=columns, frame=frame), KAnonymityParams(k=5), RunContext())
    sizes = r.frame.groupby(["age", "zip", "income"]).size()
    m = r.metrics
    assert m["classes"] == len(sizes) and m["smallest_class"] == sizes.min()
    assert m["discernibility"] == pytest.approx((sizes.astype(float) ** 2).sum())
    assert m["average_class_size"] == pytest.approx(len(frame) / len(sizes))
    assert m["normalized_average_class_size"] == pytest.approx(len(frame) / len(sizes) / 5)
    assert m["suppressed"] == 0 and m["ncp"] == pytest.approx(np.mean(list(m["ncp_per_qi"].values())))
    assert "range_from_data" in r.metadata  # no declared bounds: said so


def test_lattice_with_automatic_numeric_hierarchy_and_declared_bounds():
    frame = _synthetic(3000)
    frame["member"] = frame["dx"] == "a"  # a boolean quasi-identifier
    columns = [ColumnInfo("age", "numeric", "quasi_identifier", bounds=(0.0, 120.0), integer=True),
               ColumnInfo("zip", "categorical"), ColumnInfo("member", "boolean", "quasi_identifier"),
               ColumnInfo("income", "numeric"), ColumnInfo("dx", "categorical")]
    r = run_kanonymity(MethodInput(columns=columns, frame=frame),
                       KAnonymityParams(k=8, algorithm="lattice", auto_levels=3), RunContext())
    assert r.metadata["automatic_hierarchies"] == ["age"]
    assert "range_from_data" not in r.metadata  # bounds were declared
    assert r.frame.groupby(["age", "member"]).size().min() >= 8
    level = r.metadata["lattice"]["levels"]["age"]
    # finest width: the smallest 1/2/5·10^e ≥ 120 / 2^3 = 15, i.e. 20; doubling per level, from 0
    assert level in (1, 2, 3)
    width = 20 * 2 ** (level - 1)
    spans = []
    for label, value in zip(r.frame["age"], frame["age"]):
        a, b = map(int, label.split("-"))
        assert a % width == 0 and b - a + 1 == width and a <= value <= b
        spans.append((min(b, 120) - max(a, 0)) / 120)
    # NCP: the released interval's width (clipped to the declared range 0..120) over that range
    assert r.metrics["ncp_per_qi"]["age"] == pytest.approx(np.mean(spans))
