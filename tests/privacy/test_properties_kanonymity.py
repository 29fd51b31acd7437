"""Property-based tests of k-anonymity (Mondrian and the lattice search) on small random tables:
random hierarchies (or none), missing cells, numeric columns with and without declared bounds,
l / α / t, suppression. Every release is checked from its strings and the raw table alone
(nothing from the library's trees): class sizes, the sensitive models, that each released
label covers its record's value, that rows are neither invented nor lost beyond the stated
suppression, and that the metrics (NCP, discernibility, classes, risk) are what the released
table gives. The lattice's optimum is compared with a brute force over every node."""

from __future__ import annotations

import itertools
import math
import re

import numpy as np
import pandas as pd
import pytest
from hypothesis import assume, given, note
from hypothesis import strategies as st

from app.privacy.anonymity.anonymize import Options, anonymize
from app.privacy.anonymity.hierarchies import MISSING_LEAF, ROOT
from app.privacy.anonymity.models import Constraints
from app.privacy.data import ColumnInfo
from app.privacy.registry import MethodInputError
from tests.privacy.test_anonymity_support import ordered_emd
from tests.support.properties import bounded

# leaf spellings that stay distinct under the service's value normalization
LEAVES = ["a", "b", "C", "x y", "é", "02", "7", "-3"]
SENSITIVE = ["flu", "cold", "hiv", "ok"]


@st.composite
def hierarchy_of(draw, name: str, leaves: list[str]) -> pd.DataFrame:
    """A random ARX-shaped hierarchy over ``leaves`` (and maybe a leaf absent from the data):
    1-3 levels of groups, each level grouping the one below, '*' on top."""
    leaves = list(leaves) + draw(st.lists(st.sampled_from(["zz", "q"]), max_size=1, unique=True))
    height = draw(st.integers(1, 3))
    rows = [[leaf] for leaf in leaves]
    current = {leaf: leaf for leaf in leaves}  # leaf -> its node at the level below
    for level in range(1, height):
        nodes = sorted(set(current.values()))
        groups = draw(st.integers(1, max(1, len(nodes))))
        assign = {node: draw(st.integers(0, groups - 1)) for node in nodes}
        current = {leaf: f"{name}{level}g{assign[node]}" for leaf, node in current.items()}
        for row in rows:
            row.append(current[row[0]])
    for row in rows:
        row.append(ROOT)
    return pd.DataFrame(rows, columns=[f"level_{i}" for i in range(height + 1)], dtype=object)


@st.composite
def tables(draw, lattice: bool):
    n = draw(st.integers(4, 40))
    n_qi = draw(st.integers(1, 3))
    frame: dict[str, list] = {}
    infos: dict[str, ColumnInfo] = {}
    hierarchies: dict[str, pd.DataFrame] = {}
    qis = []
    for i in range(n_qi):
        name = f"q{i}"
        qis.append(name)
        if draw(st.booleans()):  # categorical
            m = draw(st.integers(1, 5))
            values = draw(st.lists(st.sampled_from(LEAVES), min_size=m, max_size=m, unique=True))
            missing = not lattice and draw(st.booleans()) or lattice and draw(st.integers(0, 3)) == 0
            pool = values + ([None] if missing else [])
            frame[name] = draw(st.lists(st.sampled_from(pool), min_size=n, max_size=n))
            infos[name] = ColumnInfo(name, "categorical", "quasi_identifier")
            if draw(st.booleans()):
                hierarchies[name] = draw(hierarchy_of(name, values))
        else:
            integer = draw(st.booleans())
            if integer:
                cell = st.integers(-20, 60)
            else:
                cell = st.floats(-5, 5, allow_nan=False).map(lambda x: round(x, 2))
            column = draw(st.lists(cell, min_size=n, max_size=n))
            bounds = None
            if draw(st.booleans()):
                lo, hi = min(column), max(column)
                bounds = (math.floor(lo) - draw(st.integers(0, 5)), math.ceil(hi) + draw(st.integers(0, 5)))
            frame[name] = [float(x) for x in column]
            infos[name] = ColumnInfo(name, "numeric", "quasi_identifier", bounds=bounds, integer=integer)
    frame["other"] = list(range(n))  # an insensitive column that must come through unchanged
    infos["other"] = ColumnInfo("other", "numeric")
    sensitive = None
    if draw(st.booleans()):
        sensitive = "s"
        if draw(st.booleans()):
            frame["s"] = draw(st.lists(st.sampled_from(SENSITIVE + [None]), min_size=n, max_size=n))
            infos["s"] = ColumnInfo("s", "categorical", "sensitive")
        else:
            frame["s"] = [float(x) for x in draw(st.lists(st.integers(0, 6), min_size=n, max_size=n))]
            infos["s"] = ColumnInfo("s", "numeric", "sensitive")
    k = draw(st.integers(1, 5))
    l = alpha = t = None  # noqa: E741
    if sensitive is not None:
        l = draw(st.sampled_from([None, 2, 3]))  # noqa: E741
        alpha = draw(st.sampled_from([None, 0.5, 0.75]))
        t = draw(st.sampled_from([None, 0.25, 0.5]))
    options = Options(algorithm="lattice" if lattice else "mondrian", auto_levels=draw(st.integers(1, 3)))
    if lattice:
        options.suppression = draw(st.sampled_from([0.0, 0.1, 0.3]))
    else:
        options.categorical_release = draw(st.sampled_from(["ancestor", "children"]))
        options.categorical_coding = draw(st.sampled_from(["hierarchy", "ordered"]))
        options.numeric_generalization = draw(st.sampled_from(["interval", "hierarchy"]))
    df = pd.DataFrame(frame)
    for name, info in infos.items():
        if info.type == "categorical":
            df[name] = df[name].astype(object)
    return df, infos, hierarchies, qis, Constraints(k=k, l=l, alpha=alpha, t=t), sensitive, options


def _label(value) -> str | None:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    return str(value)


def _covers_categorical(label: str, value, hierarchy: pd.DataFrame | None) -> bool:
    """The released label holds the raw value: the value, an ancestor of it in its hierarchy,
    '*', or a set of such nodes; a missing cell is '<missing>' (its own leaf under the root)."""
    leaf = MISSING_LEAF if value is None else value
    if label == ROOT:
        return True
    parts = label[1:-1].split("|") if label.startswith("{") and label.endswith("}") else [label]
    ancestors = {leaf}
    if hierarchy is not None and value is not None:
        row = hierarchy[hierarchy.level_0 == value]
        assert len(row) == 1
        ancestors |= set(row.iloc[0].astype(str))
    return bool(ancestors & set(parts))


_CLOSED = re.compile(r"^\[(.+), (.+)\]$")
_HALF_OPEN = re.compile(r"^\[(.+), (.+)\)$")
_DASH = re.compile(r"^(-?[0-9.e+]+)-(-?[0-9.e+]+)$")


def _numeric_extent(label: str) -> tuple[float, float, bool] | None:
    """(a, b, b included) of an interval label, None for a single value or '*'."""
    for pattern, closed in ((_CLOSED, True), (_HALF_OPEN, False), (_DASH, True)):
        m = pattern.match(label)
        if m:
            return float(m.group(1)), float(m.group(2)), closed
    return None


def _parts(label: str) -> list[str]:
    return label[1:-1].split("|") if label.startswith("{") and label.endswith("}") else [label]


def _covers_numeric(label: str, value: float) -> bool:
    if label == ROOT:
        return True
    if label.startswith("{"):
        return any(_covers_numeric(part, value) for part in _parts(label))
    extent = _numeric_extent(label)
    if extent is None:
        return float(label) == value
    a, b, closed = extent
    return a <= value and (value <= b if closed else value < b)


def _categorical_ncp(labels: pd.Series, raw: pd.Series, hierarchy: pd.DataFrame | None) -> np.ndarray:
    """(leaves in the data under the label − 1) / (leaves in the data − 1), a set label the
    union of its parts."""
    present = {MISSING_LEAF if v is None else v for v in raw}
    under: dict[str, set[str]] = {ROOT: set(present)}
    for leaf in present:
        under.setdefault(leaf, set()).add(leaf)
        if hierarchy is not None and leaf != MISSING_LEAF:
            for node in hierarchy[hierarchy.level_0 == leaf].iloc[0].astype(str):
                under.setdefault(node, set()).add(leaf)
    total = len(present) - 1

    def one(text: str) -> float:
        parts = text[1:-1].split("|") if text.startswith("{") and text.endswith("}") else [text]
        leaves = set().union(*(under[p] for p in parts))
        return (len(leaves) - 1) / total if total else 0.0
    return labels.map({t: one(t) for t in labels.unique()}).to_numpy(dtype=float)


def _numeric_ncp(labels: pd.Series, lo: float, hi: float) -> np.ndarray:
    """Width of the released interval, clipped to the column's range, over the range."""
    def one(text: str) -> float:
        if hi == lo:
            return 0.0
        if text == ROOT:
            return 1.0
        extents = [_numeric_extent(part) for part in _parts(text)]
        if extents == [None]:
            return 0.0
        a = min(e[0] if e else float(p) for e, p in zip(extents, _parts(text)))
        b = max(e[1] if e else float(p) for e, p in zip(extents, _parts(text)))
        return (min(b, hi) - max(a, lo)) / (hi - lo)
    return labels.map({t: one(t) for t in labels.unique()}).to_numpy(dtype=float)


def _emd(class_values: pd.Series, table: pd.Series, ordered: bool) -> float:
    if ordered:
        return ordered_emd(class_values.to_numpy(dtype=float), table.to_numpy(dtype=float)) \
            if table.nunique() > 1 else 0.0
    p = class_values.fillna("<missing>").value_counts(normalize=True)
    q = table.fillna("<missing>").value_counts(normalize=True)
    return 0.5 * float(p.reindex(q.index, fill_value=0).sub(q).abs().sum())


def check_release(frame, infos, hierarchies, qis, constraints, sensitive, options, result) -> None:
    out = result.frame
    n = len(frame)
    m = result.metrics
    # rows: none invented, none changed outside the quasi-identifiers, only suppressed ones lost
    assert out.index.is_unique and set(out.index) <= set(frame.index)
    assert list(out.columns) == list(frame.columns)
    kept = frame.loc[out.index]
    for c in frame.columns:
        if c not in qis:
            pd.testing.assert_series_equal(out[c], kept[c], check_dtype=False)
    suppressed = n - len(out)
    assert m["suppressed"] == suppressed and m["records"] == len(out)
    assert m["suppressed_share"] == pytest.approx(suppressed / n)
    if options.algorithm == "mondrian":
        assert suppressed == 0
    else:
        assert suppressed <= math.floor(options.suppression * n + 1e-9)
    if not len(out):
        return
    # every released label covers its record's raw value
    generalization = result.metadata["generalization"]
    for q in qis:
        order = generalization[q].get("order")
        for label, value in zip(out[q], kept[q]):
            if order is not None:  # categories as ordered codes: '[first .. last]' in that order
                leaf = _label(value) or MISSING_LEAF
                match = re.fullmatch(r"\[(.+) \.\. (.+)\]", label)
                assert label == leaf if match is None else \
                    order.index(match.group(1)) <= order.index(leaf) <= order.index(match.group(2))
            elif infos[q].type == "numeric":
                assert _covers_numeric(label, value), (q, label, value)
            else:
                assert _covers_categorical(label, _label(value), hierarchies.get(q)), (q, label, value)
    # the models, recomputed from the released strings and the input table's sensitive column
    classes = out.groupby(qis, dropna=False, sort=False)
    sizes = classes.size()
    assert sizes.min() >= constraints.k
    if sensitive is not None:
        s = classes[sensitive]
        if constraints.l is not None:
            assert s.apply(lambda v: v.nunique(dropna=False)).min() >= constraints.l
        if constraints.alpha is not None:
            top = s.apply(lambda v: v.value_counts(normalize=True, dropna=False).iloc[0])
            assert top.max() <= constraints.alpha + 1e-9
        if constraints.t is not None:
            ordered = infos[sensitive].type == "numeric"
            distances = [_emd(v, frame[sensitive], ordered) for _, v in s]
            assert max(distances) <= constraints.t + 1e-9
    # metrics from the released table
    assert m["classes"] == len(sizes) and m["smallest_class"] == sizes.min()
    assert m["discernibility"] == pytest.approx(float((sizes.astype(float) ** 2).sum()) + suppressed * n)
    assert m["average_class_size"] == pytest.approx(len(out) / len(sizes))
    assert m["normalized_average_class_size"] == pytest.approx(len(out) / len(sizes) / constraints.k)
    risk = m["risk"]
    assert risk["highest"] == pytest.approx(1 / sizes.min())
    assert risk["average"] == pytest.approx(len(sizes) / len(out))
    assert risk["sample_uniques"] == int((sizes == 1).sum())
    per_record = out.groupby(qis, dropna=False, sort=False)[qis[0]].transform("size")
    assert risk["records_at_risk"] == pytest.approx(float((per_record < options.risk_threshold).mean()))
    for q in qis:
        described = generalization[q]
        if infos[q].type == "numeric":
            lo, hi = infos[q].bounds or (min(frame[q]), max(frame[q]))
            if described["kind"] == "interval":
                assert described["range"] == [lo, hi]
            else:
                assert described["range_width"] == hi - lo
            expected = _numeric_ncp(out[q], lo, hi)
        elif described["kind"] == "ordered":
            order = described["order"]

            def ordered_ncp(text, order=order):
                match = re.fullmatch(r"\[(.+) \.\. (.+)\]", text)
                return 0.0 if match is None else \
                    (order.index(match.group(2)) - order.index(match.group(1))) / max(len(order) - 1, 1)
            expected = out[q].map(ordered_ncp).to_numpy(dtype=float)
        else:
            expected = _categorical_ncp(out[q], [_label(v) for v in frame[q]], hierarchies.get(q))
        assert m["ncp_per_qi"][q] == pytest.approx((expected.sum() + suppressed) / n, abs=1e-9), q
    assert m["ncp"] == pytest.approx(np.mean([m["ncp_per_qi"][q] for q in qis]))


def _describe(case) -> str:
    frame, infos, hierarchies, qis, constraints, sensitive, options = case
    return (f"frame=\n{frame.to_string()}\ninfos={[i for i in infos.values()]}\n"
            f"hierarchies={ {q: h.values.tolist() for q, h in hierarchies.items()} }\n"
            f"constraints={constraints} options={options}")


def _run(case):
    frame, infos, hierarchies, qis, constraints, sensitive, options = case
    try:
        return anonymize(frame, infos, hierarchies, qis, constraints, sensitive, options)
    except MethodInputError as exc:  # infeasible on the whole table: refused, never released
        message = str(exc)
        assert any(word in message for word in ("fewer than k", "is impossible", "distinct values",
                                                 "holds", "missing cells", "hierarchy")), message
        return None


def _release_and_check(case) -> None:
    result = _run(case)
    assume(result is not None)
    try:
        check_release(*case, result)
    except AssertionError:
        note(_describe(case))
        raise


@bounded(90)
@given(tables(lattice=False))
def test_mondrian_releases_meet_every_model_and_state_their_metrics(case):
    _release_and_check(case)


@bounded(60)
@given(tables(lattice=True))
def test_lattice_releases_meet_every_model_and_state_their_metrics(case):
    _release_and_check(case)


def _levels_of(frame, info, hierarchy, auto_levels) -> list[tuple[list[str], np.ndarray]]:
    """Per generalization level of a quasi-identifier (0 = the value, last = '*'): each record's
    label and its NCP, from the hierarchy table (the automatic one for a numeric column)."""
    from app.privacy.anonymity.hierarchies import interval_hierarchy

    name = info.name
    if info.type == "numeric":
        values = frame[name].to_numpy(dtype=float)
        lo, hi = info.bounds or (values.min(), values.max())
        integer = info.integer or bool(np.all(values == np.round(values)))
        table, _ = interval_hierarchy(values, float(lo), float(hi), auto_levels, integer)
        rows = {float(r[0]): list(r) for r in table.astype(str).values}
        paths = [rows[v] for v in values]
        out = []
        for j in range(len(paths[0])):
            labels = pd.Series([p[j] if j else p[0] for p in paths])
            ncp = np.zeros(len(values)) if j == 0 else _numeric_ncp(labels, float(lo), float(hi))
            out.append((labels.tolist(), ncp))
        return out
    raw = [_label(v) for v in frame[name]]
    height = hierarchy.shape[1] - 1 if hierarchy is not None else 1
    rows = {r[0]: list(r) for r in hierarchy.astype(str).values} if hierarchy is not None else {}
    out = []
    for j in range(height + 1):
        if j == height:
            labels = [ROOT] * len(raw)
        else:
            labels = [MISSING_LEAF if v is None else (rows[v][j] if rows else v) for v in raw]
        out.append((labels, _categorical_ncp(pd.Series(labels), raw, hierarchy)))
    return out


def brute_force_loss(frame, infos, hierarchies, qis, options, class_ok, *, counted=None, node_ok=None) -> float:
    """Least loss over every node of the lattice whose violating classes (``class_ok(rows)``
    false) are within the suppression limit: mean NCP over records and QIs, a suppressed record
    counting 1 on every QI (spec 04). ``counted`` (a mask: a population's research subset) are
    the records that may be released — the only ones suppressed, limited and in the loss;
    ``node_ok(classes)`` rules a node out whatever the suppression (δ-presence)."""
    n, width = len(frame), len(qis)
    counted = np.ones(n, dtype=bool) if counted is None else counted
    n_counted = int(counted.sum())
    limit = math.floor(options.suppression * n_counted + 1e-9)
    per_qi = [_levels_of(frame, infos[q], hierarchies.get(q), options.auto_levels) for q in qis]
    best = math.inf
    for node in itertools.product(*[range(len(levels)) for levels in per_qi]):
        keys = list(zip(*[per_qi[i][level][0] for i, level in enumerate(node)]))
        ncp = sum(per_qi[i][level][1] for i, level in enumerate(node))
        groups: dict[tuple, list[int]] = {}
        for row, key in enumerate(keys):
            groups.setdefault(key, []).append(row)
        if node_ok is not None and not node_ok(list(groups.values())):
            continue
        bad = np.zeros(n, dtype=bool)
        for rows in groups.values():
            if not class_ok(rows):
                bad[rows] = True
        bad &= counted
        if bad.sum() > limit:
            continue
        best = min(best, (ncp[counted & ~bad].sum() + bad.sum() * width) / (n_counted * width))
    return best


def _brute_force_optimum(frame, infos, hierarchies, qis, constraints, sensitive, options) -> float:
    def class_ok(rows: list[int]) -> bool:
        ok = len(rows) >= constraints.k
        if sensitive is not None and constraints.needs_sensitive:
            s = frame[sensitive].iloc[rows]
            if constraints.l is not None:
                ok &= s.nunique(dropna=False) >= constraints.l
            if constraints.alpha is not None:
                ok &= s.value_counts(normalize=True, dropna=False).iloc[0] <= constraints.alpha + 1e-12
            if constraints.t is not None:
                ok &= _emd(s, frame[sensitive], infos[sensitive].type == "numeric") <= constraints.t + 1e-12
        return ok
    return brute_force_loss(frame, infos, hierarchies, qis, options, class_ok)


@bounded(60)
@given(tables(lattice=True))
def test_the_lattice_release_is_the_brute_force_optimum(case):
    result = _run(case)
    assume(result is not None and result.metadata["lattice"]["optimal"])
    best = _brute_force_optimum(*case)
    try:
        assert result.metrics["ncp"] == pytest.approx(best, abs=1e-9)
        assert result.metadata["lattice"]["loss"] == pytest.approx(result.metrics["ncp"], abs=1e-9)
    except AssertionError:
        note(_describe(case) + f"\nlevels={result.metadata['lattice']['levels']} "
             f"loss={result.metadata['lattice']['loss']} ncp={result.metrics['ncp']} brute force={best}")
        raise


@st.composite
def any_tables(draw):
    """Columns of floats (NaN, -0.0), text (None), categoricals (unused categories) and
    nullable booleans."""
    n = draw(st.integers(1, 30))
    frame = {}
    for i in range(draw(st.integers(1, 3))):
        kind = draw(st.sampled_from(["float", "text", "category", "boolean"]))
        if kind == "float":
            cells = st.sampled_from([0.0, -0.0, 1.5, 2.0, float("nan")])
            frame[f"c{i}"] = pd.Series(draw(st.lists(cells, min_size=n, max_size=n)), dtype=float)
        elif kind == "text":
            cells = st.sampled_from(["a", "b", "A", None, "", "0"])
            frame[f"c{i}"] = pd.Series(draw(st.lists(cells, min_size=n, max_size=n)), dtype=object)
        elif kind == "category":
            cells = st.sampled_from(["x", "y", None])
            frame[f"c{i}"] = pd.Categorical(draw(st.lists(cells, min_size=n, max_size=n)),
                                            categories=["x", "y", "unused"])
        else:
            cells = st.sampled_from([True, False, None])
            frame[f"c{i}"] = pd.Series(draw(st.lists(cells, min_size=n, max_size=n)), dtype="boolean")
    return pd.DataFrame(frame), draw(st.integers(1, 6))


@bounded(150)
@given(any_tables())
def test_prosecutor_risk_equals_a_pandas_groupby(case):
    from app.privacy.anonymity.risk import frame_risk

    frame, threshold = case
    qis = list(frame.columns)
    risk = frame_risk(frame, qis, threshold)
    # missing equal to missing; -0.0 equal to 0.0 (pandas groups them so too)
    sizes = frame.groupby(qis, dropna=False, observed=True).size()
    per_record = frame.groupby(qis, dropna=False, observed=True)[qis[0]].transform("size")
    n = len(frame)
    try:
        assert risk["records"] == n and risk["classes"] == len(sizes)
        assert risk["smallest_class"] == sizes.min() and risk["highest"] == pytest.approx(1 / sizes.min())
        assert risk["average"] == pytest.approx(len(sizes) / n)
        assert risk["sample_uniques"] == int((sizes == 1).sum())
        assert risk["sample_uniques_share"] == pytest.approx((sizes == 1).sum() / n)
        assert risk["records_at_risk"] == pytest.approx(float((per_record < threshold).mean()))
    except AssertionError:
        note(f"frame=\n{frame!r}\nsizes=\n{sizes!r}\nrisk={risk}")
        raise
