"""The independent check's own arithmetic, on tables built so that each figure is known by
hand: a wrong class key, k, l, α or t would let a release that breaks its guarantee through
(mutation testing found these paths unchecked)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from app.privacy.anonymity.verify import VerificationError, equivalence_classes, verify_release


def test_a_wide_quasi_identifier_key_does_not_wrap_around_and_merge_classes():
    """Nine quasi-identifiers, eight of 256 values each: the first column's weight in the
    mixed-radix key is 256^8 = 2^64, so without re-factorizing before int64 overflows, rows
    that differ only in it get equal keys — 512 unique records would pass as 256 pairs, k = 2."""
    i = np.arange(512)
    frame = pd.DataFrame({"q0": i // 256, **{f"q{j}": i % 256 for j in range(1, 9)}})
    qis = [f"q{j}" for j in range(9)]
    ids = equivalence_classes(frame, qis)
    assert len(np.unique(ids)) == 512
    with pytest.raises(VerificationError, match="a class has 1 records, fewer than k = 2"):
        verify_release(frame, qis, k=2)
    assert verify_release(frame, qis, k=1).classes == 512


def _two_classes() -> pd.DataFrame:
    """Class 'b' of 6 records first, then class 'a' of 2: every figure is set by the small,
    late class (a check reading the largest class, or the first, passes what it must refuse)."""
    return pd.DataFrame({"q": ["b"] * 6 + ["a"] * 2,
                         "s": ["x", "y", "z", "x", "y", "w", "x", "x"],
                         "n": [20, 30, 30, 20, 30, 30, 10, 10]})


def test_k_l_and_alpha_are_the_worst_class_figures():
    frame = _two_classes()
    got = verify_release(frame, ["q"], k=2, sensitive="s", l=1, alpha=1.0)
    assert (got.k, got.classes, got.records, got.l, got.alpha) == (2, 2, 8, 1, 1.0)
    with pytest.raises(VerificationError, match="a class has 2 records, fewer than k = 3"):
        verify_release(frame, ["q"], k=3)
    with pytest.raises(VerificationError, match="a class has 1 distinct sensitive values, fewer than l = 2"):
        verify_release(frame, ["q"], k=2, sensitive="s", l=2)
    with pytest.raises(VerificationError, match="holds 1.0000 of a class, above alpha = 0.99"):
        verify_release(frame, ["q"], k=2, sensitive="s", alpha=0.99)
    # without the small class: 4 distinct values, the top value holds 2 of 6
    big = frame[frame.q == "b"]
    got = verify_release(big, ["q"], k=6, sensitive="s", l=4, alpha=1 / 3)
    assert (got.k, got.l, got.alpha) == (6, 4, pytest.approx(1 / 3))


def test_t_closeness_distance_by_hand_for_labels_and_for_ordered_numbers():
    frame = _two_classes()
    # labels: total variation. Table w 1/8, x 3/8, y 2/8, z 1/8; class a is all x:
    # ½(1/8 + 5/8 + 2/8 + 1/8) = 9/16; class b (1/6, 2/6, 2/6, 1/6) is at 5/48
    labels, dist = np.array(["w", "x", "y", "z"]), np.array([1, 3, 2, 1]) / 8
    got = verify_release(frame, ["q"], k=2, sensitive="s", t=9 / 16, table_values=labels, table_dist=dist)
    assert got.t == pytest.approx(9 / 16, abs=1e-12)
    with pytest.raises(VerificationError, match="at distance 0.5625 from the table, above t = 0.56"):
        verify_release(frame, ["q"], k=2, sensitive="s", t=0.56, table_values=labels, table_dist=dist)
    # ordered numbers: the EMD over 10 < 20 < 30, table (1/4, 1/4, 1/2). Class a (1, 0, 0):
    # cumulative differences 3/4, 1/2 -> 5/4 over m - 1 = 2 -> 5/8 (its total variation is 3/4)
    values, dist = np.array([10.0, 20.0, 30.0]), np.array([0.25, 0.25, 0.5])
    got = verify_release(frame, ["q"], k=2, sensitive="n", t=0.625, table_values=values,
                         table_dist=dist, ordered=True)
    assert got.t == pytest.approx(0.625, abs=1e-12)
    with pytest.raises(VerificationError, match="above t = 0.62"):
        verify_release(frame, ["q"], k=2, sensitive="n", t=0.62, table_values=values,
                       table_dist=dist, ordered=True)


def test_a_sensitive_value_outside_the_table_domain_is_refused():
    frame = _two_classes()
    with pytest.raises(VerificationError, match="outside the input table's domain"):
        verify_release(frame, ["q"], k=2, sensitive="s", t=1.0, table_values=np.array(["w", "x", "y"]),
                       table_dist=np.array([0.2, 0.4, 0.4]))


def test_an_empty_release_has_no_classes_and_no_smallest_class():
    got = verify_release(pd.DataFrame({"q": pd.Series([], dtype=object)}), ["q"], k=5)
    assert (got.k, got.classes, got.records) == (0, 0, 0)


def test_a_class_exactly_at_t_passes_despite_float_rounding():
    """Table (4, 7, 1)/12, a class (4, 1, 3)/8: the distance is 11/24 exactly, computed in
    float as 11/24 + 1 ulp. A release meeting t = 11/24 is not refused for that ulp."""
    frame = pd.DataFrame({"q": ["a"] * 8, "s": ["u"] * 4 + ["v"] + ["w"] * 3})
    got = verify_release(frame, ["q"], k=8, sensitive="s", t=11 / 24,
                         table_values=np.array(["u", "v", "w"]), table_dist=np.array([4, 7, 1]) / 12)
    assert got.t == pytest.approx(11 / 24, rel=1e-15) and got.t > 11 / 24  # the ulp is there


def test_an_ordered_domain_is_the_tables_even_where_the_release_lacks_a_value():
    """Table 10, 20, 30, 40 at 1/4 each; the release never holds 10 nor 40. Its class (20, 30)
    sits at cumulative differences -1/4, 0, 1/4 -> 1/2 over m - 1 = 3: 1/6. Coded against the
    release's own values (20, 30 as the first two) it would read as (10, 20): 1/3."""
    frame = pd.DataFrame({"q": ["a"] * 2, "n": [20.0, 30.0]})
    values, dist = np.array([10.0, 20.0, 30.0, 40.0]), np.full(4, 0.25)
    got = verify_release(frame, ["q"], k=2, sensitive="n", t=1 / 6, table_values=values,
                         table_dist=dist, ordered=True)
    assert got.t == pytest.approx(1 / 6, abs=1e-12)


def test_every_chunk_of_classes_is_measured(monkeypatch):
    """The distance is computed over chunks of classes; with one class per chunk the worst
    class, the last one, still decides (classes a-d hold two values each, at 1/2)."""
    from app.privacy.anonymity import verify

    frame = pd.DataFrame({"q": list("abcd") * 2 + ["e", "e"],
                          "s": ["x", "y", "z", "w", "y", "z", "w", "x", "x", "x"]})
    labels, dist = np.array(["w", "x", "y", "z"]), np.full(4, 0.25)
    whole = verify_release(frame, ["q"], k=2, sensitive="s", t=1.0, table_values=labels, table_dist=dist)
    monkeypatch.setattr(verify, "CHUNK_CELLS", 4)  # rows = 4 // m = 1 class per chunk
    chunked = verify_release(frame, ["q"], k=2, sensitive="s", t=1.0, table_values=labels, table_dist=dist)
    assert whole.t == chunked.t == pytest.approx(0.75)  # class e is all x: ½(¼ + ¾ + ¼ + ¼)
    with pytest.raises(VerificationError, match="above t = 0.7"):
        verify_release(frame, ["q"], k=2, sensitive="s", t=0.7, table_values=labels, table_dist=dist)
