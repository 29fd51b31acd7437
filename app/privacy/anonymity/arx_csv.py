"""Reading an ARX hierarchy CSV into its rows, in bulk.

One row per leaf, ``value;level1;…;top``, every row as long as the first; cells stripped of
surrounding spaces, blank lines skipped. A line without a '"' splits exactly as csv.reader splits it
(no quoting in play), so those lines — nearly all — are split at once: one ``str.split`` of the
joined lines, reshaped to (rows, width); a line with a '"' is read by csv.reader, as it always was.
The checks run over every row at once too (C-level maps of ``str`` methods, numpy, pandas'
hashing); a refused file is named by its first offending line, and on that line by the first check
that fails in the order a line-by-line reading ran them: field count, an empty field, a too long
field, a repeat of an earlier row. (Read line by line, a 600,000-leaf numeric hierarchy took 5.4 s,
and it is read at upload, at every anonymity job start and at a safepub submission.)
"""

from __future__ import annotations

import csv
import operator
from collections.abc import Callable
from itertools import repeat

import numpy as np
import pandas as pd

from app.privacy.registry import MethodInputError

DELIMITERS = (";", ",", "\t")
QUOTE = '"'


def read_arx_rows(text: str, max_cell_length: int, leaf_keys: Callable[[np.ndarray], np.ndarray]) -> np.ndarray:
    """The rows of an ARX hierarchy as a (rows, width) object array of str. ``leaf_keys``: the key
    a leaf is matched on (normalize_values), so that '39' and '39.0' with the same generalizations
    are one row repeated. Raises MethodInputError naming the line of a ragged row, an empty or too
    long cell, a row that repeats an earlier one, or an empty file."""
    if text.startswith("\ufeff"):
        text = text[1:]
    lines = text.splitlines()
    # blank: line.strip() == '' (isspace is False for '', which few files hold)
    blank = np.fromiter(map(str.isspace, lines), dtype=bool, count=len(lines))
    if "" in lines:
        blank |= np.fromiter(map(operator.not_, lines), dtype=bool, count=len(lines))
    line_numbers = np.flatnonzero(~blank) + 1  # of each row
    if not len(line_numbers):
        raise MethodInputError("hierarchy is empty: expected one row per value, value;level1;…;*")
    body = lines if not blank.any() else np.array(lines, dtype=object)[~blank].tolist()
    reading = _Reading(body, line_numbers, max_cell_length)
    reading.split(quotes=QUOTE in text)
    return reading.checked(leaf_keys)


class _Reading:
    """The rows of one file while it is split and checked (its non-blank lines, their numbers)."""

    def __init__(self, body: list[str], line_numbers: np.ndarray, max_cell_length: int):
        self.body, self.line_numbers, self.max_cell_length = body, line_numbers, max_cell_length
        self.unreadable: dict[int, csv.Error] = {}  # row -> csv.reader's error on its quoted line
        self.delimiter = self._delimiter()
        self.separated = "" if self.delimiter == ";" else f" (fields separated by {self.delimiter!r})"

    def _delimiter(self) -> str:
        """ARX writes ';'. A file whose first row has none outside quotes but a ',' or a tab (a
        spreadsheet's or pandas' CSV) is read with that one; a ';' file is read as before."""
        try:
            return next((d for d in DELIMITERS if len(_fields(self.body[0], d)) >= 2), ";")
        except csv.Error as exc:
            raise self._unreadable(0, exc) from None

    def _unreadable(self, row: int, exc: csv.Error) -> MethodInputError:
        # csv.reader's own words ('field larger than field limit (131072)'): before, a 500
        return MethodInputError(f"hierarchy line {self.line_numbers[row]}: {exc}")

    def split(self, quotes: bool) -> None:
        """Count each row's fields and split the rows that have as many as the first. ``quotes``:
        whether any line has a '"' (most files have none)."""
        body, d = self.body, self.delimiter
        n = len(body)
        counts = np.fromiter(map(str.count, body, repeat(d)), dtype=np.int64, count=n) + 1
        quoted = (np.fromiter(map(str.__contains__, body, repeat(QUOTE)), dtype=bool, count=n) if quotes
                  else np.zeros(n, dtype=bool))
        quoted_fields: dict[int, list[str]] = {}
        for row in np.flatnonzero(quoted).tolist():  # csv.reader, line by line: quoted lines are few
            try:
                quoted_fields[row] = _fields(body[row], d)
                counts[row] = len(quoted_fields[row])
            except csv.Error as exc:
                self.unreadable[row] = exc
                counts[row] = -1
        if 0 in self.unreadable:  # (never: _delimiter has read the first line with this delimiter)
            raise self._unreadable(0, self.unreadable[0])
        self.width = int(counts[0])
        if self.width < 2:
            raise MethodInputError(
                f"hierarchy line {self.line_numbers[0]}: a row needs at least two fields (value;…;*), found 1: "
                "no ';' (ARX's separator), ',' or tab separates fields on it")
        self.counts = counts
        self.rows = np.flatnonzero(counts == self.width)  # the rows split into cells
        cells = np.empty((len(self.rows), self.width), dtype=object)
        plain = ~quoted[self.rows]
        plain_lines = (body if plain.all() and len(self.rows) == n
                       else np.array(body, dtype=object)[self.rows[plain]].tolist())
        self.any_empty = False
        if plain_lines:
            stripped = np.empty(len(plain_lines) * self.width, dtype=object)
            stripped[:] = words = list(map(str.strip, d.join(plain_lines).split(d)))
            self.any_empty = "" in words
            cells[plain] = stripped.reshape(len(plain_lines), self.width)
        for at in np.flatnonzero(~plain).tolist():
            cells[at] = quoted_fields[int(self.rows[at])]
            self.any_empty |= "" in quoted_fields[int(self.rows[at])]
        self.cells = cells

    def checked(self, leaf_keys: Callable[[np.ndarray], np.ndarray]) -> np.ndarray:
        """The cells, or the error of the first offending row."""
        cells = self.cells
        ragged = np.flatnonzero(self.counts != self.width)
        # a row past the first ragged one is not reached by the line-by-line order: check up to it
        stop = int(ragged[0]) if len(ragged) else len(self.body)
        upto = int(np.searchsorted(self.rows, stop))
        head = cells[:upto]
        empty = (head == "").any(axis=1) if self.any_empty else np.zeros(upto, dtype=bool)
        long = np.zeros(upto, dtype=bool)
        if len(self.body) and max(map(len, self.body[:stop]), default=0) > self.max_cell_length:
            lengths = np.fromiter(map(len, head.ravel()), dtype=np.int64, count=head.size).reshape(head.shape)
            long = (lengths > self.max_cell_length).any(axis=1)
        first_seen = _first_of_each_row(head, leaf_keys)
        repeat_row = first_seen != np.arange(upto)
        bad = np.flatnonzero(empty | long | repeat_row)
        if not len(bad) and not len(ragged):
            return cells
        row = int(self.rows[bad[0]]) if len(bad) else stop
        line_no = self.line_numbers[row]
        if self.counts[row] != self.width:
            if row in self.unreadable:
                raise self._unreadable(row, self.unreadable[row])
            raise MethodInputError(f"hierarchy line {line_no}: {self.counts[row]} fields, expected {self.width} "
                                   f"as on line {self.line_numbers[0]}{self.separated}")
        at = int(bad[0])
        fields = cells[at].tolist()
        if empty[at]:
            raise MethodInputError(f"hierarchy line {line_no}: field {fields.index('') + 1} is empty")
        if long[at]:
            first_long = next(i for i, f in enumerate(fields) if len(f) > self.max_cell_length)
            raise MethodInputError(f"hierarchy line {line_no}: field {first_long + 1} is longer than "
                                   f"{self.max_cell_length} characters")
        # One row per value: a value listed again with the same generalizations is refused here
        # (by line, naming no value); listed again with others, hierarchy_problems names its two
        # parents.
        raise MethodInputError(f"hierarchy line {line_no} repeats line {self.line_numbers[self.rows[first_seen[at]]]}: "
                               "every value must appear on exactly one row")


def _first_of_each_row(cells: np.ndarray, leaf_keys: Callable[[np.ndarray], np.ndarray]) -> np.ndarray:
    """For each row, the first row with the same key (its leaf's key, then its other cells as
    written): itself unless it repeats one. Each column factorized, the codes combined pairwise
    (re-factorized, so they stay below the row count and never overflow)."""
    n, width = cells.shape
    keys = leaf_keys(cells[:, 0])
    if len(set(keys.tolist())) == n:  # one row per leaf, as a valid file has: no row repeats
        return np.arange(n)
    code, _ = pd.factorize(keys, use_na_sentinel=False)
    code = code.astype(np.int64)
    for j in range(1, width):
        column, names = pd.factorize(cells[:, j], use_na_sentinel=False)
        code, _ = pd.factorize(code * len(names) + column, use_na_sentinel=False)
    # factorize numbers keys in order of first appearance: a key's first row is where the code
    # exceeds every code before it, and the k-th such row is key k's
    is_first = code > np.maximum.accumulate(np.r_[-1, code[:-1]])
    return np.flatnonzero(is_first)[code]


def _fields(line: str, delimiter: str) -> list[str]:
    return [f.strip() for f in next(csv.reader([line], delimiter=delimiter, quotechar=QUOTE))]
