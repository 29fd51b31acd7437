"""0135845: each level's distinct labels by pd.factorize of their text instead of np.unique of a
'U' copy. Against the sort-based reading (kept below as the reference), on generated numeric
hierarchies whose labels are str, int or float (a frame built in code holds them so): the same
labels found wrong for the same leaves, and the same warnings. (Not generated: a label ending in
'\\x00', which the 'U' copy cut to '0-9' and read as an interval; read as written now, it is none.)"""

from __future__ import annotations

import numpy as np
import pandas as pd
from hypothesis import given
from hypothesis import strategies as st

from app.privacy.anonymity import interval_labels
from app.privacy.anonymity.hierarchies import NUMBER_ANCHORED, full_match
from app.privacy.anonymity.interval_labels import _held, read_interval
from tests.support.properties import bounded


def reference_outside(hierarchy: pd.DataFrame, only: set[str] | None = None):
    """The former _leaves_outside_labels: distinct labels by np.unique of their 'U' text."""
    rows = hierarchy.to_numpy(dtype=object)
    leaves = rows[:, 0].astype(str)
    x = pd.to_numeric(pd.Series(leaves), errors="coerce").to_numpy(dtype=float)
    numbers = full_match(NUMBER_ANCHORED, leaves.astype(object)) & np.isfinite(x)
    wrong = np.zeros(rows.shape, dtype=bool)
    for level in range(1, rows.shape[1]):
        labels, inverse = np.unique(rows[:, level].astype(str), return_inverse=True)
        read = [read_interval(label) if only is None or label in only else None for label in labels]
        if any(read):
            wrong[:, level] = numbers & ~_held(read, inverse, x)
    return rows, leaves, x, wrong


LABELS = st.one_of(st.sampled_from(["0-9", "10-19", "0-19", "[0, 10)", "(5, 15]", "<10", ">=20", "20+", "*",
                                    "G1", "5", "2020-01", "x"]),
                   st.integers(-5, 30), st.sampled_from([1.0, 2.5, -0.0]))
LEAVES = st.one_of(st.integers(-5, 30).map(str), st.sampled_from(["7.5", "1e1", "x", "007"]), st.integers(-5, 30))


@st.composite
def hierarchies(draw):
    width = draw(st.integers(2, 4))
    rows = [[draw(LEAVES)] + [draw(LABELS) for _ in range(width - 1)] for _ in range(draw(st.integers(1, 12)))]
    return pd.DataFrame(rows, columns=[f"level_{i}" for i in range(width)], dtype=object)


@given(hierarchies(), st.sets(st.sampled_from(["0-9", "10-19", "<10", "20+", "5", "G1"])), st.booleans())
@bounded(300)
def test_factorized_labels_find_what_the_sorted_ones_found(hierarchy, released, filtered):
    only = released if filtered else None
    got = interval_labels._leaves_outside_labels(hierarchy, only)
    want = reference_outside(hierarchy, only)
    assert got[3].tolist() == want[3].tolist()
    assert got[1].tolist() == want[1].tolist()
    data = frozenset(str(v) for v in range(0, 12))
    warned = interval_labels.interval_label_warnings(hierarchy, data)
    released_warned = interval_labels.released_outside_labels("age", hierarchy, released)
    original = interval_labels._leaves_outside_labels
    try:  # the public warnings, over the reference reading
        interval_labels._leaves_outside_labels = reference_outside
        assert warned == interval_labels.interval_label_warnings(hierarchy, data)
        assert released_warned == interval_labels.released_outside_labels("age", hierarchy, released)
    finally:
        interval_labels._leaves_outside_labels = original
