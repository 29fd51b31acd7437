"""The risk report's class-size table and the figures of a table with no records, by hand.
Mutation testing of risk.py: the table's per-size risk (1/size) could be anything — size, 1, 0 —
and every test passed, since none read that column; an empty table's figures could be 1."""

from __future__ import annotations

import numpy as np
import pytest

from app.privacy.anonymity.risk import class_size_table, prosecutor_risk


def test_the_class_size_table_gives_each_sizes_classes_records_and_risk():
    # classes of sizes 1, 2, 2, 3 and 3 (11 records)
    ids = np.array([0, 1, 1, 2, 2, 3, 3, 3, 4, 4, 4])
    table = class_size_table(ids)
    assert table["class_size"].tolist() == [1, 2, 3]
    assert table["classes"].tolist() == [1, 2, 2]
    assert table["records"].tolist() == [1, 4, 6]
    assert table["risk"].tolist() == pytest.approx([1.0, 0.5, 1 / 3])
    assert int(table["records"].sum()) == len(ids)


def test_a_table_with_no_records_has_no_risk():
    r = prosecutor_risk(np.array([], dtype=np.int64), threshold=4)
    assert r == {"records": 0, "classes": 0, "highest": 0.0, "average": 0.0, "threshold": 4,
                 "records_at_risk": 0.0, "sample_uniques": 0, "sample_uniques_share": 0.0,
                 "smallest_class": 0}
