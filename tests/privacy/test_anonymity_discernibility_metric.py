"""kanonymity's lattice with the discernibility metric (Bayardo & Agrawal; ARX's
MetricSDNMDiscernability): optimal against a brute force over every node, equal to the release's
metrics.discernibility, its bound below every node's loss."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from app.privacy.anonymity.axes import build_axes
from app.privacy.anonymity.lattice import Columns, _loss, _suppressed
from app.privacy.anonymity.models import Constraints
from tests.privacy.test_anonymity_classification_metric import QIS, _run, small  # noqa: F401  (fixture)
from tests.privacy.test_anonymity_support import adult_columns, class_sizes, least_over_nodes


@pytest.mark.parametrize("suppression", [0.0, 0.03])
def test_lattice_discernibility_is_optimal_against_brute_force(small, suppression):  # noqa: F811
    frame, hierarchies = small
    best = least_over_nodes(frame, hierarchies, QIS, 4, suppression, lambda released, suppressed: float(
        (class_sizes(released, QIS).to_numpy() ** 2).sum() + suppressed * len(frame)))
    result = _run(frame, hierarchies, k=4, algorithm="lattice", suppression=suppression, metric="discernibility")
    lattice = result.metadata["lattice"]
    assert lattice["optimal"] and lattice["metric"] == "discernibility"
    assert lattice["loss"] == best == result.metrics["discernibility"]
    assert class_sizes(result.frame, QIS).min() >= 4
    sizes = class_sizes(result.frame, QIS).to_numpy()
    assert float((sizes ** 2).sum() + (len(frame) - len(result.frame)) * len(frame)) == best


def test_the_bound_is_below_every_nodes_loss(small):  # noqa: F811
    frame, hierarchies = small
    columns = adult_columns(frame, qis=QIS)
    axes, _ = build_axes(frame, [c for c in columns if c.name in QIS], hierarchies,
                         numeric="hierarchy", categorical="hierarchy", auto_levels=4)
    cols = Columns(axes, "discernibility")
    constraints = Constraints(k=6)
    nodes = np.array(list(itertools.product(*[range(t.height + 1) for t in axes])))
    unsuppressed = {}
    for node, bound in zip(nodes, cols.bound(nodes)):
        loss = _loss(cols, node, _suppressed(cols, tuple(node), constraints, ()), constraints)
        unsuppressed[tuple(node)] = cols.class_loss(*cols.classes(node))
        assert bound <= unsuppressed[tuple(node)] <= loss
    for node in unsuppressed:  # monotone: a coarser node (one level up) discerns less
        for q in range(len(node)):
            if node[q] < axes[q].height:
                assert unsuppressed[node] <= unsuppressed[node[:q] + (node[q] + 1,) + node[q + 1:]]


def test_mondrian_refuses_it():
    from pydantic import ValidationError

    from app.privacy.anonymity.params import KAnonymityParams
    with pytest.raises(ValidationError, match="metric 'discernibility' applies to algorithm 'lattice' only"):
        KAnonymityParams(metric="discernibility")
