"""Declared bounds: one rule for what they may be (data.declared_bounds_problem: both finite,
lo < hi, a width hi − lo that is a finite normal float), applied by the schema, by every
submission (registry.declared_bounds in MethodSpec.validate_against) and by the library's
readers of bounds themselves; and equal-width bins whose names tell them apart."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from app.privacy import registry
from app.privacy.anonymity.axes import build_axes
from app.privacy.binning import edge_texts, value_texts
from app.privacy.data import ColumnInfo, declared_bounds_problem
from app.privacy.feature_selection.encoding import encode
from app.privacy.itemsets.encoding import check_numeric_bins, one_hot
from app.privacy.registry import MethodInputError, declared_bounds

REFUSED = [
    ((-1e308, 1e308), "have a width hi − lo that overflows a float64"),  # finite ends, inf width
    ((-1.7e308, 1e308), "overflows a float64"),
    ((0.0, 1e-310), "have a width of 1e-310, below 2.23e-308"),  # subnormal
    ((0.0, 5e-324), "have a width of 4.94e-324"),
    ((1.0, 1.0), "need lo < hi (a constant column needs no bounds"),
    ((5.0, 1.0), "[5, 1] need lo < hi"),  # not a constant column: nothing said of one
    ((0.0, float("inf")), "must be two finite numbers"),
    ((float("nan"), 1.0), "must be two finite numbers"),
]
ACCEPTED = [(0.0, 1.7e308), (-1e300, 1e300), (1.0, 1.0 + 1e-15), (0.0, 2.0**60), (0.0, 2.3e-308)]


@pytest.mark.parametrize("bounds,fragment", REFUSED)
def test_bounds_without_a_finite_normal_width_are_refused_naming_the_column(bounds, fragment):
    assert fragment in declared_bounds_problem(*bounds)
    assert ("constant column" in declared_bounds_problem(*bounds)) == (bounds[0] == bounds[1])
    info = ColumnInfo("x", "numeric", bounds=bounds)
    with pytest.raises(MethodInputError, match=r"^column 'x': declared bounds "):
        declared_bounds(info)
    # every method's submission applies it before its own check, whichever columns it reads
    with pytest.raises(MethodInputError, match="column 'x'"):
        registry.get("kanonymity").validate_against(registry.get("kanonymity").params(), [info], None)


@pytest.mark.parametrize("bounds", ACCEPTED)
def test_bounds_of_a_finite_normal_width_pass(bounds):
    assert declared_bounds_problem(*bounds) is None
    assert declared_bounds(ColumnInfo("x", "numeric", bounds=bounds)) == bounds
    assert declared_bounds(ColumnInfo("x", "numeric")) is None


def _frame():
    return pd.DataFrame({"x": [float(i % 60) for i in range(120)], "c": ["a", "b", "c"] * 40,
                         "y": ["p", "q"] * 60})


@pytest.mark.parametrize("bounds,fragment", REFUSED[:4])
def test_the_readers_of_bounds_refuse_them_themselves(bounds, fragment):
    """A schema stored before the rule, or a ColumnInfo built in code: kanonymity's NCP (an
    interval's width over inf was 0, and Mondrian cut as if x cost nothing), the itemsets' bins
    ('[nan,inf)', four items named '[inf,inf)') and the feature selection's edges (inf in the
    metadata) each refuse, naming the column."""
    info = ColumnInfo("x", "numeric", role="quasi_identifier", bounds=bounds)
    frame = _frame()
    with pytest.raises(MethodInputError, match="column 'x': declared bounds .*" + fragment[:20]):
        build_axes(frame[["x"]], [info], {})
    with pytest.raises(MethodInputError, match="column 'x': declared bounds"):
        one_hot(frame, [info], ["x"], 5)
    with pytest.raises(MethodInputError, match="column 'x': declared bounds"):
        encode(frame, [info], ["x"], bins=5)


def test_itemset_bins_narrower_than_the_floats_are_refused_and_others_named_apart():
    info = ColumnInfo("x", "numeric", bounds=(1.0, 1.0 + 1e-15))
    with pytest.raises(MethodInputError, match=r"column 'x': bins: 64 bins over \[1, 1.0000000000000011\] are "
                                               "narrower than the spacing of floating-point numbers"):
        check_numeric_bins(["x"], [info], 64)
    frame = pd.DataFrame({"x": [1.0, 1.0 + 5e-16, 1.0 + 1e-15] * 10})
    labels = list(one_hot(frame, [info], ["x"], 5).transactions.labels)
    assert len(labels) == 5 and len(set(labels)) == 5  # 6 digits named all five 'x=[1,1)'
    assert labels[0] == "x=[1,1.0000000000000002)" and labels[-1].endswith(",1.0000000000000011]")
    usual = one_hot(pd.DataFrame({"x": [20.0, 50.0]}), [ColumnInfo("x", "numeric", bounds=(17, 90))], ["x"], 5)
    assert list(usual.transactions.labels) == ["x=[17,31.6)", "x=[31.6,46.2)", "x=[46.2,60.8)",
                                               "x=[60.8,75.4)", "x=[75.4,90]"]  # unchanged


def test_feature_values_and_bins_close_together_get_distinct_names():
    """Three values 1, 1 + 4e-16, 1 + 1.1e-15 were three indicators named 'x=1', refused as 'a
    value spelled <missing>'; now each is named apart. Bins over a data range narrower than the
    floats' spacing are refused, naming the column."""
    values = [1.0, 1.0 + 4.440892098500626e-16, 1.0 + 1.1102230246251565e-15]
    frame = pd.DataFrame({"x": values * 10})
    features = encode(frame, [ColumnInfo("x", "numeric", bounds=(1.0, 2.0))], ["x"], bins=5)
    assert features.names == ["x=1", "x=1.0000000000000004", "x=1.0000000000000011"]
    for j, v in enumerate(values):  # each indicator marks exactly its value's records
        assert np.array_equal(features.matrix[:, j] == 1, frame["x"].to_numpy() == v)
    many = pd.DataFrame({"x": np.arange(12.0)})  # values beyond the bounds join the end bins
    with pytest.raises(MethodInputError, match=r"column 'x': bins: 5 bins over \[1, 1.0000000000000004\] are narrower"):
        encode(many, [ColumnInfo("x", "numeric", bounds=(1.0, 1.0 + 4.440892098500626e-16))], ["x"], bins=5)
    assert value_texts([30.0, 31.5]) == ["30", "31.5"] and edge_texts([17.0, 31.6, 46.2]) == ["17", "31.6", "46.2"]
