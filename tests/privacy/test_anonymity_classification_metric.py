"""kanonymity's lattice with the classification metric (Iyengar's; ARX's with the label outside
the quasi-identifiers): optimal against a brute force over every node, the bound below every
node's loss, the release's figures recomputed from its records, the label's refusals."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest
from pydantic import ValidationError

from app.privacy.anonymity.hierarchies import parse_arx_hierarchy
from app.privacy.anonymity.label_modes import label_modes
from app.privacy.anonymity.lattice import Columns, _loss, _suppressed
from app.privacy.anonymity.methods import KAnonymityParams, run_kanonymity
from app.privacy.anonymity.models import Constraints
from app.privacy.anonymity.axes import build_axes
from app.privacy.context import RunContext
from app.privacy.data import ColumnInfo, MethodInput
from app.privacy.registry import MethodInputError
from tests.privacy.test_anonymity_support import (
    ADULT_QIS, adult_columns, adult_complete, adult_hierarchy_text, class_sizes, least_over_nodes,
)

QIS = ["education", "marital-status", "occupation", "workclass", "native-country"]


@pytest.fixture(scope="module")
def small():
    frame = adult_complete().sample(1500, random_state=5).reset_index(drop=True)
    hierarchies = {q: parse_arx_hierarchy(adult_hierarchy_text(q)) for q in ADULT_QIS}
    return frame, hierarchies


def _run(frame, hierarchies, qis=QIS, columns=None, **params):
    data = MethodInput(columns=columns or adult_columns(frame, qis=qis), frame=frame, hierarchies=hierarchies)
    return run_kanonymity(data, KAnonymityParams(quasi_identifiers=qis, **params), RunContext())


def _off_majority(frame: pd.DataFrame, keys: list, label: str) -> int:
    """Records whose label is not their group's most frequent one, by pandas."""
    counts = frame.groupby(keys + [label], dropna=False).size()
    return int(len(frame) - counts.groupby(level=list(range(len(keys)))).max().sum())


@pytest.mark.parametrize("suppression", [0.0, 0.03])
def test_lattice_classification_is_optimal_against_brute_force(small, suppression):
    frame, hierarchies = small
    loss = least_over_nodes(frame, hierarchies, QIS, 4, suppression,
                            lambda released, suppressed: (_off_majority(released, QIS, "income") + suppressed)
                            / len(frame))
    result = _run(frame, hierarchies, k=4, algorithm="lattice", suppression=suppression,
                  metric="classification", label="income")
    lattice = result.metadata["lattice"]
    assert lattice["optimal"] and lattice["metric"] == "classification"
    assert lattice["loss"] == pytest.approx(loss, abs=1e-12)
    # the release's own figures, from its records: the same loss
    released = result.frame
    assert class_sizes(released, QIS).min() >= 4
    found = result.metrics["classification"]
    assert found["suppressed"] == len(frame) - len(released) <= suppression * len(frame)
    assert found["records_off_majority"] == _off_majority(released, QIS, "income")
    assert found["loss"] == pytest.approx(loss, abs=1e-12)


def test_on_adult_the_classification_optimum_predicts_the_label_better_than_the_ncp_one():
    """ARX's Adult setting (30,162 records, 8 quasi-identifiers with its hierarchies, k = 5, 4 %
    suppression): the classification optimum's majority-label error, recomputed from each release,
    is well below the NCP optimum's (0.179 against 0.236 when measured), at a higher NCP."""
    frame = adult_complete()
    hierarchies = {q: parse_arx_hierarchy(adult_hierarchy_text(q)) for q in ADULT_QIS}
    found = {}
    for metric in ("ncp", "classification"):
        result = _run(frame, hierarchies, qis=ADULT_QIS, k=5, algorithm="lattice", suppression=0.04, metric=metric,
                      **({"label": "income"} if metric == "classification" else {}))
        assert result.metadata["lattice"]["optimal"] and class_sizes(result.frame, ADULT_QIS).min() >= 5
        off = _off_majority(result.frame, ADULT_QIS, "income")
        found[metric] = ((off + len(frame) - len(result.frame)) / len(frame), result.metrics["ncp"])
    assert found["classification"][0] < found["ncp"][0] - 0.03
    assert found["classification"][1] > found["ncp"][1]


def test_the_bound_is_below_every_nodes_loss(small):
    """The search's bound of each node (the largest single-column loss), and a finer node's loss
    without suppression, never exceed the node's loss with k's failing classes suppressed."""
    frame, hierarchies = small
    columns = adult_columns(frame, qis=QIS)
    axes, _ = build_axes(frame, [c for c in columns if c.name in QIS], hierarchies,
                         numeric="hierarchy", categorical="hierarchy", auto_levels=4)
    labels = pd.factorize(frame["income"])[0].astype(np.int64)
    cols = Columns(axes, "classification", None, labels)
    constraints = Constraints(k=6)
    nodes = np.array(list(itertools.product(*[range(t.height + 1) for t in axes])))
    bounds = cols.bound(nodes)
    unsuppressed = {}
    for node, bound in zip(nodes, bounds):
        mask = _suppressed(cols, tuple(node), constraints, ())
        loss = _loss(cols, node, mask, constraints)
        assert bound <= loss + 1e-12
        ids, n_classes = cols.classes(node)
        unsuppressed[tuple(node)] = cols.off_majority(ids, n_classes, np.ones(len(frame), dtype=bool)) / len(frame)
        assert unsuppressed[tuple(node)] <= loss + 1e-12
    for node in map(tuple, nodes):  # monotone: a coarser node (each level ≥) loses at least as much
        for q in range(len(node)):
            if node[q] < axes[q].height:
                up = node[:q] + (node[q] + 1,) + node[q + 1:]
                assert unsuppressed[node] <= unsuppressed[up] + 1e-12


@pytest.mark.parametrize("n_classes, n_labels", [(30, 3), (5000, 400)])  # bincount, then the sparse branch
def test_label_modes_against_pandas(n_classes, n_labels):
    rng = np.random.default_rng(n_labels)
    ids = rng.integers(0, n_classes, 4000)
    labels = rng.integers(0, n_labels, 4000)
    weights = rng.integers(0, 3, 4000).astype(float)
    frame = pd.DataFrame({"c": ids, "y": labels, "w": weights})
    expected = frame.groupby(["c", "y"])["w"].sum().groupby(level=0).max().reindex(range(n_classes), fill_value=0)
    assert (label_modes(ids, n_classes, labels, weights, n_labels) == expected.to_numpy().astype(np.int64)).all()


def test_a_numeric_label_and_the_schema_label():
    """A numeric label's values read as categories; no label given: the schema's column of role
    'label'."""
    rng = np.random.default_rng(1)
    frame = pd.DataFrame({"a": rng.integers(0, 40, 600), "b": rng.choice(list("pqrs"), 600)})
    frame["y"] = (frame["a"] >= 20).astype(int) * 2 + 2  # Breast Cancer's 2 / 4
    columns = [ColumnInfo("a", "numeric", "quasi_identifier"), ColumnInfo("b", "categorical", "quasi_identifier"),
               ColumnInfo("y", "numeric", "label")]
    result = run_kanonymity(MethodInput(columns, frame), KAnonymityParams(
        k=5, algorithm="lattice", metric="classification"), RunContext())
    # a determines y: the optimum keeps a's split at 20 and no record is off its class's majority
    assert result.metrics["classification"]["label"] == "y"
    assert result.metrics["classification"]["records_off_majority"] == 0
    assert result.metadata["lattice"]["loss"] == 0
    assert class_sizes(result.frame, ["a", "b"]).min() >= 5


def test_label_refusals(small):
    frame, hierarchies = small
    with pytest.raises(ValidationError, match="label applies to metric 'classification' only"):
        KAnonymityParams(algorithm="lattice", label="income")
    with pytest.raises(ValidationError, match="metric 'entropy' applies to algorithm 'lattice' only, and this "
                       "job runs 'mondrian'"):
        KAnonymityParams(metric="entropy")
    cases = [({"label": "education"}, "label: column 'education' is a quasi-identifier"),
             ({"label": "nope"}, "label: unknown column 'nope'")]
    for params, words in cases:
        with pytest.raises(MethodInputError, match=words):
            _run(frame, hierarchies, k=4, algorithm="lattice", metric="classification", **params)
    no_label = [ColumnInfo(c.name, c.type, "insensitive" if c.role == "label" else c.role)
                for c in adult_columns(frame, qis=QIS)]
    with pytest.raises(MethodInputError, match="needs one label column; the schema declares none: pass label"):
        _run(frame, hierarchies, columns=no_label, k=4, algorithm="lattice", metric="classification")
    # the library's own entry point, without the method's resolution: a ValueError, not a KeyError
    from app.privacy.anonymity.anonymize import Options, anonymize
    infos = {c.name: c for c in adult_columns(frame, qis=QIS)}
    for algorithm in ("lattice", "mondrian"):
        with pytest.raises(ValueError, match="metric 'classification' reads Options.label, the label column: None"):
            anonymize(frame, infos, hierarchies, QIS, Constraints(k=4), None,
                      Options(algorithm=algorithm, metric="classification"))


def test_a_label_of_one_value_is_warned_of():
    rng = np.random.default_rng(3)
    frame = pd.DataFrame({"a": rng.integers(0, 40, 300), "y": [None] * 300})
    columns = [ColumnInfo("a", "numeric", "quasi_identifier"), ColumnInfo("y", "categorical", "label")]
    result = run_kanonymity(MethodInput(columns, frame), KAnonymityParams(
        k=5, algorithm="lattice", metric="classification"), RunContext())
    assert result.metrics["classification"]["loss"] == 0
    assert any("the label 'y' holds a single value" in w for w in result.guarantees["warnings"])
    plain = run_kanonymity(MethodInput(columns, frame.assign(y=np.where(frame["a"] > 20, "p", "q"))),
                           KAnonymityParams(k=5, algorithm="lattice", metric="classification"), RunContext())
    assert not any("holds a single value" in w for w in plain.guarantees["warnings"])


def test_every_release_reports_the_schemas_label(small):
    """Whatever the metric, a release whose schema declares a label released as is reports
    metrics.classification, recomputed here from its records; none when the label is a QI."""
    frame, hierarchies = small
    for params in ({}, {"algorithm": "lattice", "suppression": 0.03}, {"algorithm": "lattice", "metric": "entropy"}):
        result = _run(frame, hierarchies, k=4, **params)
        found = result.metrics["classification"]
        assert found["label"] == "income" and found["suppressed"] == len(frame) - len(result.frame)
        assert found["records_off_majority"] == _off_majority(result.frame, QIS, "income")
        assert not any("holds a single value" in w for w in result.guarantees["warnings"])
    as_qi = _run(frame, hierarchies, qis=QIS + ["income"], k=4)
    assert "classification" not in as_qi.metrics
