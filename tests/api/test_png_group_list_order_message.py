"""png with a group column and a list of keep probabilities: the list follows the declared
categories' order (the data's values sorted as text only when none are declared). The 422 for
a list of the wrong length told a caller to give them "in sorted order" even when the column's
categories were declared in another order, which would give each group another group's p
(walk acceptance check)."""
from __future__ import annotations

import pandas as pd

from app.privacy import registry
from app.privacy.context import RunContext
from app.privacy.data import ColumnInfo, MethodInput
from app.privacy.rng import SecureRandom
from tests.support.api import assert_problem, submit, upload

CSV = b"g,a\ny,1\nx,0\ny,1\nx,0\ny,0\n"


def test_a_wrong_length_list_is_told_the_declared_order_when_categories_are_declared(client, owner):
    ds = upload(client, owner, CSV, "g.csv", schema={"g": {"categories": ["y", "x"]}}).json()
    body = assert_problem(submit(client, owner, "png", {"ps": [0.9, 0.8, 0.7], "group_column": "g"},
                                 dataset_id=ds["id"]), 422,
                          "ps lists 3 probabilities; column 'g' has 2 values",
                          "in the order of its declared categories")
    assert "sorted" not in body["detail"]
    # and that is the order a job applies: group 'y' first, keep probability 0.9
    frame = pd.DataFrame({"g": ["y", "x", "y", "x", "y"], "a": ["1", "0", "1", "0", "0"]})
    columns = [ColumnInfo("g", "categorical", categories=("y", "x")), ColumnInfo("a", "categorical")]
    spec = registry.get("png")
    result = spec.run(MethodInput(columns=columns, frame=frame),
                      spec.params(ps=[0.9, 0.6], group_column="g", columns=["a"]),
                      RunContext(rng=SecureRandom(seed=1)))
    groups = result.metadata["itemsets"]["groups"]
    assert groups["labels"] == ["y", "x"] and groups["ps"] == [0.9, 0.6]

def test_a_wrong_length_list_is_told_the_text_order_without_declared_categories(client, owner):
    ds = upload(client, owner, CSV, "g.csv").json()
    assert_problem(submit(client, owner, "png", {"ps": [0.9, 0.8, 0.7], "group_column": "g"},
                          dataset_id=ds["id"]), 422,
                   "ps lists 3 probabilities; column 'g' has 2 values", "sorted as text")
