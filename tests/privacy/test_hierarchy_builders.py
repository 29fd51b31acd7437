"""The hierarchy builders (app/privacy/anonymity/builders.py): the tables they make for known
inputs, that the upload's checks accept them (no finding, no interval-label warning), that
their ARX text reads back as the same table, and their refusals."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from app.privacy.anonymity.builders import (
    BuildError, DateBuild, GroupsBuild, IntervalsBuild, RedactionBuild, build_hierarchy, date_hierarchy,
    groups_hierarchy, intervals_hierarchy, redaction_hierarchy, to_arx_text,
)
from app.privacy.anonymity.hierarchies import hierarchy_findings, parse_arx_hierarchy
from app.privacy.anonymity.interval_labels import interval_label_warnings


def rows(frame: pd.DataFrame) -> list[str]:
    return [";".join(r) for r in frame.to_numpy().tolist()]


def accepted(frame: pd.DataFrame, values, numeric: bool = False) -> None:
    """What an upload of the frame's text would be checked for, and that the text reads back."""
    found = hierarchy_findings(frame, values, numeric)
    assert found.sentences() == []
    if numeric:
        assert interval_label_warnings(frame, found.data) == []
    assert parse_arx_hierarchy(to_arx_text(frame)).equals(frame)


def codes(*values: str) -> np.ndarray:
    return np.array(values, dtype=object)


def test_redaction_defaults_pad_on_the_left_with_zeros_and_mask_from_the_right():
    frame = redaction_hierarchy(codes("94110", "2139", "02139", "9"))
    assert rows(frame) == ["9;0000*;000**;00***;0****;*", "2139;0213*;021**;02***;0****;*",
                           "02139;0213*;021**;02***;0****;*", "94110;9411*;941**;94***;9****;*"]
    accepted(frame, ["94110", "2139", "02139", "9"])


def test_redaction_options():
    frame = redaction_hierarchy(codes("A01", "B2", "A01.9"), alignment="left", redaction="left_to_right",
                                padding="_", mask="#")
    assert rows(frame) == ["A01.9;#01.9;##1.9;###.9;####9;*", "A01;#01__;##1__;###__;####_;*",
                           "B2;#2___;##___;###__;####_;*"]  # sorted by the padded code
    # padded with spaces: the labels are stripped as the parser strips every cell
    spaced = redaction_hierarchy(codes("A01", "B2", 'x;"'), alignment="left", padding=" ")
    assert rows(spaced) == ["A01;A0*;A**;*", "B2;B2*;B**;*", 'x;";x;*;x**;*']
    accepted(spaced, ["A01", "B2", 'x;"'])


def test_redaction_of_a_numeric_column_needs_whole_numbers():
    frame = build_hierarchy(RedactionBuild(builder="redaction"), pd.Series([2139.0, 94110.0, None]), numeric=True)
    assert rows(frame)[0] == "2139;0213*;021**;02***;0****;*"
    accepted(frame, [2139, 94110], numeric=True)
    with pytest.raises(BuildError, match=r"1 value\(s\) of this numeric column are not whole numbers: '1.5'"):
        build_hierarchy(RedactionBuild(builder="redaction"), pd.Series([1.5, 2.0]), numeric=True)


def test_date_levels_and_styles():
    values = codes("2019-12-31", "2020-01-05", "2011-07-04")
    assert rows(date_hierarchy(values)) == ["2011-07-04;2011-07;2011;[2010, 2019];*",
                                            "2019-12-31;2019-12;2019;[2010, 2019];*",
                                            "2020-01-05;2020-01;2020;[2020, 2029];*"]
    assert rows(date_hierarchy(values, levels=["month", "decade"], decade="mask")) == [
        "2011-07-04;2011-07;201*;*", "2019-12-31;2019-12;201*;*", "2020-01-05;2020-01;202*;*"]
    timed = codes("2020-01-05T10:00", "2020-01-05 23:59:59.5+01:00", "1999-12-31T00:00Z")
    frame = date_hierarchy(timed)
    assert rows(frame)[0] == "1999-12-31T00:00Z;1999-12-31;1999-12;1999;[1990, 1999];*"
    accepted(frame, timed.tolist())


def test_dates_refused_naming_the_values_that_are_not_iso_dates():
    values = codes("2021-02-28", "2021-02-29", "2020-02-30", "2020-1-1", "05/01/2020", "2020-01-01T24:00", "x")
    with pytest.raises(BuildError) as caught:
        date_hierarchy(values)
    assert str(caught.value).startswith("6 value(s) of the column are not ISO dates")
    assert caught.value.items == ["05/01/2020", "2020-01-01T24:00", "2020-02-30", "2020-1-1", "2021-02-29", "x"]
    many = codes(*[f"day {i}" for i in range(25)])
    with pytest.raises(BuildError, match=r"'day 4' \(and 5 more\)$"):
        date_hierarchy(many)


def test_a_day_level_that_would_equal_a_date_of_the_data_is_refused():
    mixed = codes("2020-01-05", "2020-01-05T10:00", "2020-01-06T10:00")
    with pytest.raises(BuildError, match="'day' level's label would equal a date of the data: '2020-01-05'") as caught:
        date_hierarchy(mixed, levels=["day", "month"])
    assert caught.value.field == "levels"
    frame = date_hierarchy(mixed)  # by default: no day level then
    assert rows(frame)[1] == "2020-01-05T10:00;2020-01;2020;[2020, 2029];*"
    accepted(frame, mixed.tolist())
    apart = codes("2020-01-04", "2020-01-05T10:00")  # no date is the day of a date-time: a day level
    assert rows(date_hierarchy(apart)) == ["2020-01-04;2020-01-04;2020-01;2020;[2020, 2029];*",
                                           "2020-01-05T10:00;2020-01-05;2020-01;2020;[2020, 2029];*"]


def test_intervals_from_a_lower_end_with_bottom_and_top_coding():
    x = np.array([3.0, 17, 18, 22, 39, 80, 90])
    frame = intervals_hierarchy(x, [5, 10, 20], lower=15, upper=80)
    assert rows(frame) == ["3;<15;<15;<15;*", "17;15-19;15-24;15-34;*", "18;15-19;15-24;15-34;*",
                           "22;20-24;15-24;15-34;*", "39;35-39;35-44;35-54;*", "80;>=80;>=80;>=80;*",
                           "90;>=80;>=80;>=80;*"]
    accepted(frame, x.tolist(), numeric=True)
    # default start: the smallest value; decimal cells are half-open and summed in decimal
    y = np.array([0.1, 0.25, 0.3, 0.6, 0.99])
    frame = intervals_hierarchy(y, [0.1, 0.2])
    assert rows(frame) == ["0.1;[0.1, 0.2);[0.1, 0.3);*", "0.25;[0.2, 0.3);[0.1, 0.3);*",
                           "0.3;[0.3, 0.4);[0.3, 0.5);*", "0.6;[0.6, 0.7);[0.5, 0.7);*", "0.99;[0.9, 1);[0.9, 1.1);*"]
    accepted(frame, y.tolist(), numeric=True)


def test_intervals_default_start_is_the_declared_lower_bound():
    frame = build_hierarchy(IntervalsBuild(builder="intervals", widths=[10]), pd.Series([12, 25]), numeric=True,
                            lower_bound=0)
    assert rows(frame) == ["12;10-19;*", "25;20-29;*"]


def test_intervals_narrower_than_float64_can_hold_are_refused():
    with pytest.raises(BuildError, match="narrower than two steps of float64") as caught:
        intervals_hierarchy(np.array([2.0**60, 2.0**60 + 4096]), [1])
    assert caught.value.field == "widths"


def test_interval_widths_must_nest():
    from pydantic import ValidationError

    with pytest.raises(ValidationError, match="no larger multiple of 5"):
        IntervalsBuild(builder="intervals", widths=[5, 12])
    assert IntervalsBuild(builder="intervals", widths=[0.1, 0.3, 0.9]).widths == [0.1, 0.3, 0.9]


def test_groups_follow_the_listing_and_unlisted_values_are_refused_or_put_under_the_top():
    levels = [{"Technical": ["Tech-support", "Craft-repair"], "Office": ["Sales"]}, {"Working": ["Office", "Technical"]}]
    values = codes("Sales", "Craft-repair", "Tech-support", "Armed-Forces")
    with pytest.raises(BuildError, match=r"1 value\(s\) of the column are in no group of level 1: 'Armed-Forces'"):
        groups_hierarchy(values, levels)
    frame = groups_hierarchy(values, levels, unlisted="top")
    assert rows(frame) == ["Craft-repair;Technical;Working;*", "Tech-support;Technical;Working;*",
                           "Sales;Office;Working;*", "Armed-Forces;*;*;*"]
    accepted(frame, values.tolist())
    with pytest.raises(BuildError, match=r"1 group\(s\) of level 1 are in no group of level 2: 'Office'"):
        groups_hierarchy(values[:3], [levels[0], {"Working": ["Technical"]}])


def test_groups_of_a_numeric_column_match_its_values_as_numbers():
    spec = GroupsBuild(builder="groups", levels=[{"low": ["1", "2.0"], "high": ["03"]}])
    frame = build_hierarchy(spec, pd.Series([1.0, 2.0, 3.0]), numeric=True)
    assert rows(frame) == ["1;low;*", "2;low;*", "3;high;*"]
    accepted(frame, [1, 2, 3], numeric=True)


def test_a_builder_of_the_other_type_is_refused_naming_the_field():
    with pytest.raises(BuildError, match="this column is categorical") as caught:
        build_hierarchy(IntervalsBuild(builder="intervals", widths=[5]), pd.Series(["a"]), numeric=False)
    assert caught.value.field == "builder"
    with pytest.raises(BuildError, match="this column is\nnumeric|this column is numeric"):
        build_hierarchy(DateBuild(builder="date"), pd.Series([1.0]), numeric=True)


def test_builders_are_vectorized_over_many_values():
    """10^5 distinct codes and dates in well under a second each (a Python loop per value took
    several); the figures at 10^6 are in docs/hierarchies.md."""
    import time

    zips = pd.Series(np.char.zfill(np.arange(100_000).astype(str), 5).astype(object))
    days = pd.Series(pd.date_range("1800-01-01", periods=100_000, freq="D").strftime("%Y-%m-%d").to_numpy(dtype=object))
    for spec, values in ((RedactionBuild(builder="redaction"), zips), (DateBuild(builder="date"), days)):
        start = time.perf_counter()
        frame = build_hierarchy(spec, values, numeric=False)
        to_arx_text(frame)
        assert time.perf_counter() - start < 3.0 and len(frame) == 100_000
