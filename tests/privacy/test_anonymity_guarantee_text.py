"""The kanonymity guarantee's statements in words: a figure stated as a bound is rounded the
safe way (an upper bound up, a lower bound down), a strict bound's figure is printed below the
bound it is checked against, and that bound is printed as given; several sensitive columns'
distances are named column by column; a refusal does not print a figure as reaching l."""

from __future__ import annotations

import math
import re

import pandas as pd
import pytest

from app.privacy.anonymity.anonymize import Options, anonymize
from app.privacy.anonymity.kanonymity_guarantee import guarantees_of
from app.privacy.anonymity.models import Constraints
from app.privacy.data import ColumnInfo
from app.privacy.registry import MethodInputError

INFOS = {"g": ColumnInfo("g", "categorical", "quasi_identifier"),
         "s": ColumnInfo("s", "categorical", "sensitive"), "u": ColumnInfo("u", "numeric", "sensitive")}


def statements(frame: pd.DataFrame, con: Constraints, sensitive="s") -> list[str]:
    result = anonymize(frame, INFOS, {}, ["g"], con, sensitive, Options())
    return guarantees_of(result, con, ["g"], list(frame.columns), private=True)["statements"]


def one(found: list[str], start: str) -> str:
    hits = [s for s in found if s.startswith(start)]
    assert len(hits) == 1, found
    return hits[0]


def test_an_upper_bound_is_rounded_up():
    """A class holding each of three values once: α = 1/3, which '0.3333' understates."""
    frame = pd.DataFrame({"g": ["x"] * 3, "s": ["a", "b", "c"]})
    text = one(statements(frame, Constraints(k=2, alpha=0.34)), "(α,k)-anonymity")
    assert "exceeds a share 0.3334 of its class" in text, text


def test_a_relative_gain_bound_is_rounded_up():
    """Class x holds a at 2/3 where the table has it at 2/7: a gain of 4/3, not '1.3333'."""
    frame = pd.DataFrame({"g": ["x"] * 3 + ["y"] * 4, "s": ["a", "a", "b", "b", "b", "b", "b"]})
    result = anonymize(frame, INFOS, {}, ["g"], Constraints(k=3, beta=2.0, beta_likeness="basic"), "s", Options())
    assert result.achieved.beta == pytest.approx(4 / 3)
    text = one(guarantees_of(result, Constraints(k=3, beta=2.0, beta_likeness="basic"), ["g"], ["g", "s"],
                             private=True)["statements"], "basic β-likeness")
    assert "relative gain above 1.3334 (β requested: 2)" in text, text


def test_a_lower_bound_is_rounded_down():
    """Counts 3, 2, 1 in one class: e^H = 2.749459…, whose entropy is not at least ln 2.7495."""
    frame = pd.DataFrame({"g": ["x"] * 6, "s": ["a", "a", "a", "b", "b", "c"]})
    text = one(statements(frame, Constraints(k=2, l=2, l_diversity="entropy")), "entropy l-diversity")
    assert "at least ln 2.7494 (l requested: 2)" in text, text


def test_a_strict_bound_is_printed_as_given():
    """r1 / r2 = 2 exactly is below c = 2.0000001 (the model holds); shown as c = 2 it reads
    '≤ 2 (below c = 2)'."""
    frame = pd.DataFrame({"g": ["x"] * 3, "s": ["a", "a", "b"]})
    text = one(statements(frame, Constraints(k=2, l=2, l_diversity="recursive", c=2.0000001)),
               "recursive (c,l)-diversity")
    assert "≤ 2 (below c = 2.0000001)" in text, text


def test_a_delta_just_above_the_achieved_figure_is_printed_above_it():
    """δ = the achieved figure + 1e-12: at 6 digits δ read below the figure printed beside it."""
    frame = pd.DataFrame({"g": ["x"] * 3 + ["y"] * 5, "s": ["a", "b", "b", "a", "b", "b", "b", "b"]})
    probe = anonymize(frame, INFOS, {}, ["g"], Constraints(k=3, delta_disclosure=5.0), "s", Options())
    achieved = probe.achieved.delta_disclosure
    assert achieved == pytest.approx(math.log(4 / 3))  # class x: a at 1/3 against 1/4 in the table
    delta = achieved + 1e-12
    assert float(f"{delta:g}") < achieved  # the 6-digit reading of δ is below the figure
    text = one(statements(frame, Constraints(k=3, delta_disclosure=delta)), "δ-disclosure privacy")
    shown_figure, shown_delta = re.search(r"≤ ([0-9.]+) \(below δ = ([0-9.]+)\)", text).groups()
    assert float(shown_delta) == delta, text
    assert achieved <= float(shown_figure) < delta, text


def test_several_columns_name_each_distance():
    frame = pd.DataFrame({"g": ["x"] * 4 + ["y"] * 4, "s": ["a", "b"] * 4, "u": [1.0, 2.0] * 4})
    text = one(statements(frame, Constraints(k=2, t=0.5), ["s", "u"]), "t-closeness")
    assert "{" not in text and "'" not in text, text
    assert "s: EMD with equal distance" in text and "u: EMD with ordered distance" in text, text


def test_a_figure_at_its_bound_is_not_pushed_above_it_by_rounding_noise():
    """Class x holds a at 1/5 where the table has it at 1/35: a gain of 6, computed as
    6.000000000000001 in floating point — at β = 6 it is 'above 6.0000', not '6.0001'."""
    frame = pd.DataFrame({"g": ["x"] * 5 + ["y"] * 30, "s": ["a"] + ["b"] * 34})
    con = Constraints(k=5, beta=6.0, beta_likeness="basic")
    result = anonymize(frame, INFOS, {}, ["g"], con, "s", Options())
    assert result.achieved.beta > 6.0 and result.achieved.beta == pytest.approx(6.0)
    text = one(guarantees_of(result, con, ["g"], ["g", "s"], private=True)["statements"], "basic β-likeness")
    assert "relative gain above 6.0000 (β requested: 6)" in text, text


def test_an_impossible_entropy_l_is_not_printed_as_reaching_l():
    """1,000 and 999 records of two values: e^H = 1.99999975, which read '2.000' at 3 decimals
    beside 'entropy l = 2 is impossible'."""
    frame = pd.DataFrame({"g": ["x"] * 1999, "s": ["a"] * 1000 + ["b"] * 999})
    with pytest.raises(MethodInputError) as refused:
        anonymize(frame, INFOS, {}, ["g"], Constraints(k=2, l=2, l_diversity="entropy"), "s", Options())
    message = str(refused.value)
    shown = float(re.search(r"as diverse as ([0-9.]+) equally frequent values", message).group(1))
    assert shown < 2 and shown == pytest.approx(1.99999975, abs=1e-8), message


def test_several_columns_say_each_holds_by_itself():
    """Each class holds (flu, low) twice and (hiv, high) twice: 2 distinct values in each column,
    so the release passes — yet whoever knows a person's income reads the diagnosis. The
    statement says the models hold column by column, not over the columns' combinations."""
    frame = pd.DataFrame({"g": ["x"] * 4 + ["y"] * 4, "s": ["flu", "flu", "hiv", "hiv"] * 2,
                          "i": ["low", "low", "high", "high"] * 2})
    infos = {**INFOS, "i": ColumnInfo("i", "categorical", "sensitive")}
    con = Constraints(k=2, l=2)
    result = anonymize(frame, infos, {}, ["g"], con, ["s", "i"], Options())
    assert result.achieved.l == 2 and result.metrics["classes"] == 2
    text = one(guarantees_of(result, con, ["g"], ["g", "s", "i"], private=True)["statements"],
               "the models above hold on each sensitive column: s, i")
    assert "each column by itself" in text and "knows a person's value in one of them" in text, text
