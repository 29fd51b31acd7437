"""The affine channels of rr_channels.py on small cases worked out by hand: composition over
different label spaces, the missing-cell guards that must let ordinary chains through, the
identity channel PPNB uses for a column no step randomized, and a channel whose scale is
negative (Warner with p < 1/2).

Mutation testing of rr_channels.py: a composed channel that dropped the labels only the earlier
step published, or lost an earlier step's preserve_missing; guards that refused a chain whenever
the earlier step published a missing label, or the later one did, or whenever the later step
preserved missing cells; standard errors from the signed scale (negative for Warner p < 1/2);
the feasible range of a published share at a negative scale; an identity channel with an offset
or another scale; one published value refused as none; a missing cell read as a label the domain
lacks, a float-read integer category or a boolean spelling not found, an unknown value given a
code instead of -2, an unused category outside the domain refused; a numeric chain's mean gain
without steps; a protected column no builder reads dropped instead of kept Opaque, and every
column dropped from a chain — each passed the reconstruction tests, which chain steps over the
same labels with positive scales and read back what the methods published."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from app.privacy import rr_channels
from app.privacy.rr_channels import MISSING


def _apply(channel: rr_channels.CategoricalChannel, pi: dict[str, float]) -> dict[str, float]:
    """λ over channel.labels for a distribution over its domain."""
    vec = np.array([pi.get(lab, 0.0) for lab in channel.labels])
    return dict(zip(channel.labels, channel.scale * vec + np.asarray(channel.offset)))


def test_a_chain_over_a_smaller_later_label_space_is_the_two_steps_applied_in_turn():
    first = rr_channels.CategoricalChannel(("a", "b", "c"), 0.5, (0.2, 0.2, 0.1), ("a", "b", "c"), steps=("one",))
    # the later step never saw 'c' (it was published by the first step but not in the data the
    # later step profiled): it publishes 'c' only when the cell is 'c' and kept
    later = rr_channels.CategoricalChannel(("a", "b"), 0.8, (0.1, 0.1), ("a", "b"), steps=("two",))
    chain = first.then(later)
    assert chain.labels == ("a", "b", "c") and chain.domain == ("a", "b", "c")
    assert chain.scale == pytest.approx(0.4) and chain.steps == ("one", "two")
    pi = {"a": 0.5, "b": 0.3, "c": 0.2}
    mid = _apply(first, pi)
    by_hand = {"a": 0.8 * mid["a"] + 0.1, "b": 0.8 * mid["b"] + 0.1, "c": 0.8 * mid["c"]}
    assert _apply(chain, pi) == pytest.approx(by_hand)
    assert sum(by_hand.values()) == pytest.approx(1.0)


def test_missing_cell_guards_let_ordinary_chains_through():
    with_missing = rr_channels.CategoricalChannel(("a", MISSING), 0.5, (0.25, 0.25), ("a", MISSING))
    plain = rr_channels.CategoricalChannel(("a", "b"), 0.5, (0.25, 0.25), ("a", "b"))
    preserving = rr_channels.CategoricalChannel(("a", "b"), 0.5, (0.25, 0.25), ("a", "b"), preserve_missing=True)
    # an earlier step that randomized a missing label, then one that randomizes every cell
    assert with_missing.then(plain).labels == ("a", "b", MISSING)
    # an earlier step without a missing label, then one that left missing cells out
    kept = plain.then(preserving)
    assert kept.preserve_missing and kept.scale == 0.25
    # an earlier step that randomized every cell, then one that publishes a missing label
    assert plain.then(with_missing).labels == ("a", MISSING, "b")
    # an earlier step that left missing cells out keeps saying so after a later ordinary one
    assert preserving.then(plain).preserve_missing
    # the refusals the guards exist for
    with pytest.raises(ValueError, match="left missing cells out"):
        with_missing.then(preserving)
    with pytest.raises(ValueError, match="randomized the missing cells"):
        preserving.then(with_missing)


def test_the_identity_channel_publishes_the_shares_as_they_are():
    channel = rr_channels.CategoricalChannel.identity(["x", "y", "z"])
    assert channel.scale == 1.0 and channel.offset == (0.0, 0.0, 0.0)
    assert channel.labels == channel.domain == ("x", "y", "z")
    out = channel.estimate(np.array([6.0, 3.0, 1.0]))
    assert out["estimate"] == pytest.approx([0.6, 0.3, 0.1])
    assert out["standard_error"] == pytest.approx(np.sqrt(np.array([0.24, 0.21, 0.09]) / 10))


def test_a_negative_scale_gives_positive_standard_errors_within_its_feasible_range():
    """Warner p = 0.3: λ = -0.4·π + 0.7, so a published share lies in [0.3, 0.7]; a share of 0.1
    (no cell happened to show it often) is read as 0.3 for its variance."""
    channel = rr_channels.CategoricalChannel(("yes", "no"), -0.4, (0.7, 0.7), ("yes", "no"))
    assert channel.share_variance(np.array([0.1, 0.9])) == pytest.approx([0.21, 0.21])
    assert channel.share_variance(np.array([0.5, 0.5])) == pytest.approx([0.25, 0.25])
    out = channel.estimate(np.array([40.0, 60.0]))
    assert out["estimate"] == pytest.approx([0.75, 0.25])
    se = math.sqrt(0.4 * 0.6 / 100) / 0.4
    assert out["standard_error"] == pytest.approx([se, se])


def test_one_published_value_is_enough_to_estimate_from():
    channel = rr_channels.CategoricalChannel.identity(["x", "y"])
    assert channel.estimate(np.array([1.0, 0.0]))["estimate"] == pytest.approx([1.0, 0.0])
    with pytest.raises(ValueError, match="no published values"):
        channel.estimate(np.array([0.0, 0.0]))


def test_published_cells_are_read_back_as_their_labels():
    """A missing cell is a label only when the domain has one; an integer category read back as
    a float is found; the upload's boolean spellings name a boolean column's labels (and only
    a boolean column's); anything else is unknown (-2), which count_labels refuses."""
    assert rr_channels.label_codes(pd.Series(["a", None, "b"]), ("a", "b")).tolist() == [0, -1, 1]
    assert rr_channels.label_codes(pd.Series(["a", None]), ("a", MISSING)).tolist() == [0, 1]
    assert rr_channels.count_labels(pd.Series(["a", None, "b", "b"]), ("a", "b"), "c").tolist() == [1, 2]
    assert rr_channels.label_codes(pd.Series([2.0, 1.0]), ("1", "2")).tolist() == [1, 0]
    booleans = pd.Series(["yes", "0", "T", "maybe"])
    assert rr_channels.label_codes(booleans, ("True", "False")).tolist() == [0, 1, 0, -2]
    assert rr_channels.label_codes(pd.Series(["yes"]), ("yes_no", "False")).tolist() == [-2]
    with pytest.raises(ValueError, match="outside its published domain"):
        rr_channels.count_labels(pd.Series(["a", "zz"]), ("a", "b"), "c")


def test_an_unused_category_outside_the_domain_is_not_a_published_value():
    cells = pd.Series(pd.Categorical(["a", "a"], categories=["a", "zz"]))
    assert rr_channels.count_labels(cells, ("a", "b"), "c").tolist() == [2, 0]


def test_a_numeric_chain_inverts_newest_first_and_its_mean_gain_is_the_product_of_1_over_a():
    assert rr_channels.NumericChannel().mean_gain == 1.0
    chain = rr_channels.NumericChannel(((2.0, 0.0, 1.0, 0.0),)).then(
        rr_channels.NumericChannel(((4.0, 0.0, 0.0, 0.0),)))
    assert chain.mean_gain == pytest.approx(1 / 8)
    # x̄ = 3: y₁ = 2x + 1 → 7, y₂ = 4y₁ → 28; no spread in a or b: S_x² = S_y²/64
    assert chain.invert(28.0, 64.0) == pytest.approx((3.0, 1.0))


def test_a_protected_column_no_channel_reads_is_opaque_through_the_chain():
    """A step whose method registers no channel builder still protected its columns: they come
    back as Opaque (not inverted), and the chain of steps keeps them; a step is found by
    identity wherever it sits in the chain, the last one included."""
    step = {"method": "no_such_method", "guarantees": {"protected_columns": ["a"]}}
    other = {"method": "no_such_method", "guarantees": {"protected_columns": ["b"]}}
    channels = rr_channels.step_channels(step)
    assert list(channels) == ["a"] and isinstance(channels["a"], rr_channels.Opaque)
    chained = rr_channels.chain_channels([step, other])
    assert sorted(chained) == ["a", "b"] and chained["a"].method == "no_such_method"
    assert rr_channels.step_index((other, step), step) == 1
    assert rr_channels.step_index((step, other), step) == 0
