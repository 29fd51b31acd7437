"""ε of errph and warner is the level their 32-bit thresholds deliver, not the ideal formula's:
equal to it up to ~2^-32/min p, but ∞ when a tiny positive probability rounds to an empty
segment (the ideal formula then claimed a finite ε). The debit at acceptance covers it."""

import math

import numpy as np
import pandas as pd
import pytest

from app.privacy.context import RunContext
from app.privacy.data import ColumnInfo, MethodInput
from app.privacy.randomized_response import (
    ErrphParams, delivered_epsilon, epsilon_bound, local_epsilon, randomize_codes, realized_segments,
    run_errph,
)
from app.privacy.registry import MethodInputError, get
from app.privacy.rng import SecureRandom
from app.privacy.warner import WarnerParams, run_warner

WORDS = 2**32


class FixedWords(SecureRandom):
    """Hands out given uint32 words, to probe the exact boundaries of ``randomize_codes``."""

    def __init__(self, words):
        super().__init__(seed=0)
        self.words = np.asarray(words, dtype=np.uint32)

    def uint32(self, size):
        assert size == len(self.words)
        return self.words.copy()


def ctx(seed=1):
    return RunContext(SecureRandom(seed=seed))


@pytest.mark.parametrize("p0,p", [(0.3, np.full(7, 0.1)), (0.5, np.full(4, 0.125)),
                                  (0.4, np.array([0.3, 0.2, 0.1])), (0.2, np.array([0.05, 0.5, 0.25])),
                                  (0.5, np.array([0.125] * 4 + [0.0])), (0.5, np.array([0.0] + [0.125] * 4)),
                                  (0.5, np.array([0.25, 0.25, 0.0, 0.0]))])
def test_realized_segments_are_where_randomize_codes_switches(p0, p):
    """Feeding randomize_codes the words on both sides of every realized boundary: true value 0
    is kept below T0, and word d ≥ T0 publishes j exactly on segment j."""
    keep, counts = realized_segments(p0, p)
    assert keep + counts.sum() == WORDS
    starts = keep + np.concatenate([[0], np.cumsum(counts)[:-1]])
    probes = np.unique(np.concatenate([[0, keep - 1, WORDS - 1], starts, starts - 1, starts + counts - 1]))
    probes = probes[(probes >= 0) & (probes < WORDS)]
    out = randomize_codes(np.zeros(len(probes), dtype=np.int64), p0, p, FixedWords(probes))
    expected = np.where(probes < keep, 0, np.searchsorted(starts, probes, side="right") - 1)
    assert np.array_equal(out.astype(np.int64), expected)


def test_delivered_epsilon_is_the_realized_level_and_the_bound_covers_it():
    for p0, p in [(0.3, np.full(7, 0.1)), (0.4, np.array([0.3, 0.2, 0.1])),
                  (0.123, np.full(9973, 0.877 / 9973))]:
        keep, counts = realized_segments(p0, p)
        realized = float(np.max(np.log((keep + counts) / counts)))
        assert delivered_epsilon(p0, p) == realized
        assert delivered_epsilon(p0, p) == pytest.approx(local_epsilon(p0, p), rel=1e-5)
        assert epsilon_bound(p0, p) >= realized
    # k = 7, p0 = 0.3: the realized ε exceeds the ideal formula's (what was reported before)
    assert delivered_epsilon(0.3, np.full(7, 0.1)) > local_epsilon(0.3, np.full(7, 0.1))


def test_a_positive_probability_with_an_empty_segment_is_infinite_epsilon():
    """p_a = 1e-11 > 0 rounds to no word at all: value 'a' is then published only when it is
    the truth, which reveals it; the ideal formula said ε ≈ 24.6. Like p_j = 0, it needs
    allow_zero_probabilities (test_randomized_response.py)."""
    params = ErrphParams(p0=0.5, p={"c": {"a": 1e-11, "b": 0.5 - 1e-11}}, allow_zero_probabilities=True)
    cols = [ColumnInfo("c", "categorical", categories=("a", "b"))]
    frame = pd.DataFrame({"c": ["a", "b"] * 50})
    assert math.isfinite(local_epsilon(0.5, np.array([1e-11, 0.5 - 1e-11])))
    out = run_errph(MethodInput(columns=cols, frame=frame), params, ctx())
    assert out.metadata["errph"]["c"]["local_epsilon"] == math.inf
    assert out.guarantees["epsilon"] == math.inf
    assert get("errph").epsilon_cost(params, cols) == math.inf


@pytest.mark.parametrize("params,cols", [
    (ErrphParams(p0=0.3), [ColumnInfo("c", "categorical", categories=tuple("abcdefg"))]),
    (ErrphParams(p0=0.3), [ColumnInfo("c", "categorical", distinct=7)]),
    (ErrphParams(p0=0.4, p={"c": {"b": 0.1, "a": 0.3, "c": 0.2}}),
     [ColumnInfo("c", "categorical", categories=("a", "b", "c"))]),
    (ErrphParams(p0=0.4, p={"c": {"b": 0.1, "a": 0.3, "c": 0.2}}), [ColumnInfo("c", "categorical", distinct=3)]),
])
def test_the_debit_covers_the_delivered_epsilon(params, cols):
    """Exactly equal when the order of the p_j is known at pricing (uniform, a list, declared
    categories); an upper bound for a value→p map over an undeclared domain."""
    k = len(cols[0].categories or ()) or cols[0].distinct
    frame = pd.DataFrame({"c": list("abcdefg"[:k]) * 30})
    out = run_errph(MethodInput(columns=cols, frame=frame), params, ctx())
    reported = out.guarantees["epsilon"]
    meta = out.metadata["errph"]["c"]
    assert reported == delivered_epsilon(meta["p0"], np.asarray(meta["p"]))
    assert meta["local_epsilon_ideal"] == local_epsilon(meta["p0"], np.asarray(meta["p"]))
    debited = get("errph").epsilon_cost(params, cols)
    if cols[0].categories is not None or not isinstance((params.p or {}).get("c"), dict):
        assert debited == reported
    else:
        assert reported <= debited <= reported * (1 + 1e-6)


def test_warner_epsilon_is_the_realized_flip_probability():
    flips = round(0.1 * WORDS)  # the threshold of p = 0.9
    cols = [ColumnInfo("b", "boolean", distinct=2)]
    frame = pd.DataFrame({"b": [True, False] * 50})
    params = WarnerParams(p=0.9)
    out = run_warner(MethodInput(columns=cols, frame=frame), params, ctx())
    realized = math.log((WORDS - flips) / flips)
    assert realized != math.log(9.0)
    assert out.guarantees["epsilon"] == realized
    assert get("warner").epsilon_cost(params, cols) == realized


def test_warner_p_so_close_to_one_that_nothing_flips_is_infinite_epsilon():
    cols = [ColumnInfo("b", "boolean", distinct=2)]
    frame = pd.DataFrame({"b": [True, False] * 500})
    params = WarnerParams(p=1 - 1e-11, allow_zero_probabilities=True)  # refused without it
    out = run_warner(MethodInput(columns=cols, frame=frame), params, RunContext(SecureRandom()))
    assert np.array_equal(np.asarray(out.frame["b"]), frame["b"].to_numpy())  # published as is
    assert out.guarantees["epsilon"] == math.inf and out.guarantees["private"] is False
    assert get("warner").epsilon_cost(params, cols) == math.inf


def test_warner_says_when_a_columns_two_values_were_read_from_the_data():
    """As errph does: an undeclared two-valued column publishes the two values that occur."""
    frame = pd.DataFrame({"s": ["yes", "no"] * 20, "t": ["u", "v"] * 20, "b": [True, False] * 20})
    cols = [ColumnInfo("s", "categorical", distinct=2), ColumnInfo("t", "categorical", categories=("u", "v")),
            ColumnInfo("b", "boolean", distinct=2)]
    out = run_warner(MethodInput(columns=cols, frame=frame), WarnerParams(p=0.75), ctx())
    flagged = [w for w in out.guarantees["warnings"] if "domain read from the data" in w]
    assert len(flagged) == 1 and "'s'" in flagged[0]


def test_a_zero_probability_is_never_published_wherever_it_sits():
    """A trailing p_j = 0 kept one word (the threshold for probability 1 is capped at 2^32 - 1):
    it was published w.p. 2^-32 and priced ln(2^31 + 1) = 21.49, while the same zero first in
    the domain was priced ∞ (found by the regression check of issue 3)."""
    for p in ([0.125] * 4 + [0.0], [0.0] + [0.125] * 4):
        keep, counts = realized_segments(0.5, np.array(p))
        assert counts[p.index(0.0)] == 0 and keep + counts.sum() == WORDS
        assert delivered_epsilon(0.5, np.array(p)) == math.inf
    out = randomize_codes(np.zeros(3, dtype=np.int64), 0.5, np.array([0.125] * 4 + [0.0]),
                          FixedWords([WORDS - 1, WORDS - 2, 2**31]))
    assert out.tolist() == [3, 3, 0]  # the top word publishes the last value with p_j > 0
    columns = [ColumnInfo("race", "categorical", categories=("a", "b", "c", "d", "e"), distinct=5)]
    params = ErrphParams(p0=0.5, p={"race": [0.125] * 4 + [0.0]}, allow_zero_probabilities=True)
    assert get("errph").epsilon_cost(params, columns) == math.inf


@pytest.mark.parametrize("p", [0.5 + 1e-12, 0.5 - 1e-12, 0.5 + 2**-34])
def test_warner_p_so_close_to_half_that_every_cell_flips_at_one_half_is_refused(p):
    """p = 0.5 is refused as pure noise, but a p within 2^-33 of it realizes the same flip
    threshold 2^31: it was accepted at ε = 0 and its reconstruction divided by 2p - 1 ≈ 10^-12
    (estimates of ±5·10^9). mask refuses the same p (edges acceptance check)."""
    with pytest.raises(ValueError, match="pure noise"):
        WarnerParams(p=p)


@pytest.mark.parametrize("where", ["p0", "per_column"])
def test_errph_p0_that_realizes_no_kept_cell_is_refused(where):
    """A p0 below 2^-33 realizes the keep threshold T0 = 0: no cell is ever kept, the release is
    pure noise (ε 0), and reconstruct divided by p0 = 10^-12 (estimates of 7·10^9; a PPNB model
    trained on it refused every raw record as 'too far outside the range'). Refused at
    submission with the smallest p0 that keeps a cell (edges acceptance check)."""
    cols = [ColumnInfo("c", "categorical", distinct=3)]
    params = (ErrphParams(p0=1e-12) if where == "p0"
              else ErrphParams(per_column={"c": {"p0": 1e-12}}))
    with pytest.raises(MethodInputError, match=r"column 'c': p0 = 1e-12 .* pure noise.*p0 ≥ 1.2e-10"):
        get("errph").validate_against(params, cols, None)
    get("errph").validate_against(ErrphParams(p0=2**-32), cols, None)  # one word kept: fine
