"""The bulk ARX reader (app/privacy/anonymity/arx_csv.py) against the line-by-line reading it
replaced (kept below as the reference): on generated files — numeric and categorical leaves,
quoted fields, BOM, blank lines, spaces around fields, ';' ',' and tab, ragged rows, empty and too
long fields, repeats with the same and other parents, '39.0' '007' '-0' spellings, other line
breaks — the same frame, or the same message naming the same line. Where the reference crashed
(a 500: csv's field size limit, int()'s 4,300-digit limit) the reader answers in words instead."""

from __future__ import annotations

import csv

import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

from app.privacy.anonymity.hierarchies import normalize_value, parse_arx_hierarchy
from app.privacy.registry import MethodInputError
from tests.support.properties import bounded


def _reference_fields(line: str, delimiter: str) -> list[str]:
    return [f.strip() for f in next(csv.reader([line], delimiter=delimiter, quotechar='"'))]


def reference_parse(text: str, max_cell_length: int = 65_536) -> pd.DataFrame:
    """The former parse_arx_hierarchy, one line at a time."""
    text = text[1:] if text.startswith("\ufeff") else text
    lines = text.splitlines()
    first = next((line for line in lines if line.strip()), "")
    delimiter = next((d for d in (";", ",", "\t") if len(_reference_fields(first, d)) >= 2), ";")
    separated = "" if delimiter == ";" else f" (fields separated by {delimiter!r})"
    rows, seen, width, first_line = [], {}, None, 0
    for line_no, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        fields = _reference_fields(line, delimiter)
        if width is None:
            width, first_line = len(fields), line_no
            if width < 2:
                raise MethodInputError(
                    f"hierarchy line {line_no}: a row needs at least two fields (value;…;*), found 1: "
                    "no ';' (ARX's separator), ',' or tab separates fields on it")
        elif len(fields) != width:
            raise MethodInputError(f"hierarchy line {line_no}: {len(fields)} fields, expected {width} "
                                   f"as on line {first_line}{separated}")
        if "" in fields:
            raise MethodInputError(f"hierarchy line {line_no}: field {fields.index('') + 1} is empty")
        long = [i for i, f in enumerate(fields) if len(f) > max_cell_length]
        if long:
            raise MethodInputError(f"hierarchy line {line_no}: field {long[0] + 1} is longer than "
                                   f"{max_cell_length} characters")
        key = (normalize_value(fields[0]), *fields[1:])
        if key in seen:
            raise MethodInputError(f"hierarchy line {line_no} repeats line {seen[key]}: every value "
                                   "must appear on exactly one row")
        seen[key] = line_no
        rows.append(fields)
    if not rows:
        raise MethodInputError("hierarchy is empty: expected one row per value, value;level1;…;*")
    return pd.DataFrame(rows, columns=[f"level_{i}" for i in range(width)], dtype=object)


def _outcome(parse, text: str, max_cell_length: int):
    try:
        frame = parse(text, max_cell_length)
    except MethodInputError as exc:
        return "error", str(exc)
    assert all(type(v) is str for v in frame.to_numpy().ravel())
    return "frame", list(frame.columns), [str(d) for d in frame.dtypes], frame.to_numpy().tolist()


LEAVES = ["7", "39", "39.0", "39.", "007", "-0", "-0.0", "00", "2.5", "Male", "x y", "é", "*", "", " ",
          "a\x00b", '"q;uote"', '"a""b"', 'st"ray', '"open', "LLLLLLLLLLLL"]
LABELS = ["0-9", "*", "G1", "G2", "", " ", "a b", "39", "\u3000x", '"g,1"', "LLLLLLLLLLLL"]
SPACES = st.sampled_from(["", "", " ", "\t", "\u00a0", "\u3000", "\x1f"])


@st.composite
def arx_texts(draw):
    delimiter = draw(st.sampled_from([";", ";", ",", "\t"]))
    width = draw(st.integers(1, 4))
    if draw(st.booleans()):  # numeric, nearly valid: the bulk path end to end
        start = draw(st.integers(-20, 20))
        rows = [[draw(st.sampled_from([str(i), str(i), f"{i}.0", f"{i:03d}"])), str(i // 10 * 10), "*"][:max(width, 2)]
                for i in range(start, start + draw(st.integers(0, 12)))]
    else:
        rows = [[draw(st.sampled_from(LEAVES))] + draw(st.lists(st.sampled_from(LABELS), min_size=width - 1,
                                                                max_size=width - 1 + draw(st.sampled_from([0, 0, 0, 1]))))
                for _ in range(draw(st.integers(0, 8)))]
    if rows and draw(st.booleans()):  # a row again, maybe with its leaf respelled or another parent
        row = list(draw(st.sampled_from(rows)))
        row[0] = draw(st.sampled_from([row[0], row[0] + ".0", "0" + row[0]]))
        if len(row) > 2 and draw(st.booleans()):
            row[1] = "other"
        rows.insert(draw(st.integers(0, len(rows))), row)
    lines = [delimiter.join(draw(SPACES) + cell + draw(SPACES) for cell in row) for row in rows]
    for _ in range(draw(st.integers(0, 2))):
        lines.insert(draw(st.integers(0, len(lines))), draw(st.sampled_from(["", " ", "\t", "\u3000"])))
    end = draw(st.sampled_from(["\n", "\r\n", "\r", "\u2028", "\x1e"]))
    text = "".join(line + end for line in lines)
    return draw(st.sampled_from(["", "", "\ufeff"])) + text, draw(st.sampled_from([65_536, 5, 11]))


@given(arx_texts())
@bounded(400)
def test_the_bulk_reading_gives_the_frame_or_the_message_of_the_line_by_line_one(case):
    text, max_cell_length = case
    assert _outcome(parse_arx_hierarchy, text, max_cell_length) == _outcome(reference_parse, text, max_cell_length)


@pytest.mark.parametrize("text, message", [
    # the first offending line is named, whatever check fails on a later one
    ("a;x;*\nb;x;*\na;x;*\nc;;*\nd;*\n", "line 3 repeats line 1"),
    ("a;x;*\nb;;*\na;x;*\nd;*\n", "line 2: field 2 is empty"),
    ("a;x;*\nb;*\nc;;*\na;x;*\n", "line 2: 2 fields, expected 3 as on line 1"),
    ("a;x;*\nb;x;*\n\n39;30;*\n39.0;30;*\n", "line 5 repeats line 4"),  # blank lines count
    # on one line: field count, then empty, then too long, then a repeat
    ("a;x;*\nabcdefghijkl;;*\n", "line 2: field 2 is empty"),
    ("39;x;*\n39.0000000000;x;*\n", "line 2: field 1 is longer than 11 characters"),  # and a repeat of 39
    # quoted lines are read by csv.reader: a quoted ';' is in the cell, a quoted '' is empty
    ('"a;b";x;*\n"a;b" ;x;*\n', "line 2 repeats line 1"),
    ('a;x;*\n"";x;*\n', "line 2: field 1 is empty"),
    ('a;x;*\n"b;x;*\n', "line 2: 1 fields, expected 3 as on line 1"),
])
def test_the_first_offending_line_and_check_are_named(text, message):
    with pytest.raises(MethodInputError, match=message):
        parse_arx_hierarchy(text, 11)
    with pytest.raises(MethodInputError, match=message):
        reference_parse(text, 11)


def test_what_crashed_the_line_by_line_reading_is_answered_in_words():
    """csv.reader refuses a field past 131,072 characters (csv.Error, a 500 at upload) and int()
    a leaf of more than 4,300 digits (ValueError): now too long a field is named as any other, an
    unreadable quoted line by its number, and a long number leaf is kept as written."""
    huge = "x" * 131_073
    with pytest.raises(csv.Error):
        reference_parse(f"a;*\n{huge};*\n")
    with pytest.raises(MethodInputError, match=r"^hierarchy line 2: field 1 is longer than 65536 characters$"):
        parse_arx_hierarchy(f"a;*\n{huge};*\n")
    with pytest.raises(MethodInputError, match=r"^hierarchy line 2: field larger than field limit \(131072\)$"):
        parse_arx_hierarchy(f'a;*\n"{huge}";*\n')
    digits = "9" * 4_301
    with pytest.raises(ValueError, match="4300 digits"):
        reference_parse(f"{digits}.0;*\n")
    assert parse_arx_hierarchy(f"{digits}.0;*\n{digits};x\n").to_numpy().tolist() == [[f"{digits}.0", "*"],
                                                                                     [digits, "x"]]
    with pytest.raises(MethodInputError, match="line 2 repeats line 1"):
        parse_arx_hierarchy(f"{digits}.0;*\n{digits};*\n")


@pytest.mark.parametrize("text", ["a;*\n\ud800;*\n", "\ud800;*\n\ud800.0;*\n", "a\udfff;x;*\nb;x;*\n"])
def test_a_lone_surrogate_reads_as_the_line_by_line_reading_read_it(text):
    """A str may hold a lone surrogate (a library caller's, or JSON's '\\ud800'); UTF-8, which
    the leaf keys' Arrow regex needs, cannot: the bulk reading raised UnicodeEncodeError (a 500)
    where the line-by-line one read the rows."""
    assert _outcome(parse_arx_hierarchy, text, 65_536) == _outcome(reference_parse, text, 65_536)
