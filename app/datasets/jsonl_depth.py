"""How deeply does a JSON Lines file nest objects and arrays?

pyarrow's JSON reader parses nesting recursively and infers a type for every level: a 12 KB
line of 3,000 nested objects took 23 s of the API's CPU, and 20,000 nested arrays (100 KB)
overflowed the stack and killed the API process (a segmentation fault, not an exception).
Veil takes scalar values only, so nesting is refused anyway: this scan refuses it before the
reader sees it, vectorized, a chunk at a time, with its state carried across chunks.

JSON's rules it replays: a `"` not preceded by an odd run of backslashes opens or closes a
string; `{ [` and `} ]` outside strings open and close a level; every line (`\\n`, where
pyarrow splits the file) starts at depth 0 outside any string. A line the scan misreads is
one the reader refuses anyway (invalid JSON stops its parse at the first error).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

_CHUNK = 4 * 1024 * 1024
_BACKSLASH, _QUOTE, _NEWLINE = ord("\\"), ord('"'), ord("\n")
_OPENERS = np.zeros(256, dtype=bool)
_OPENERS[[ord("{"), ord("[")]] = True
_CLOSERS = np.zeros(256, dtype=bool)
_CLOSERS[[ord("}"), ord("]")]] = True
_MARKED = _OPENERS | _CLOSERS
_MARKED[[_BACKSLASH, _QUOTE, _NEWLINE]] = True


def first_row_deeper_than(path: Path, limit: int) -> int | None:
    """The 1-based row of the first line nesting more than ``limit`` levels (the line's own
    object is level 1), or None."""
    state = {"backslashes": 0, "in_string": 0, "depth": 0, "rows": 0, "openers": 0}
    with open(path, "rb") as f:
        while chunk := f.read(_CHUNK):
            row = _chunk(np.frombuffer(chunk, dtype=np.uint8), state, limit)
            if row is not None:
                return row
    return None


def _chunk(buf: np.ndarray, state: dict, limit: int) -> int | None:
    """A line with at most ``limit`` opening brackets (in strings or not) cannot nest deeper:
    when every line of the chunk is such, only its unfinished last line is scanned (for the
    state the next chunk starts from); else the whole chunk is."""
    newlines = np.flatnonzero(buf == _NEWLINE)
    openers = np.bincount(np.searchsorted(newlines, np.flatnonzero(_OPENERS[buf])),
                          minlength=newlines.size + 1)
    openers[0] += state["openers"]  # the line the previous chunk left unfinished
    if openers.max() > limit:
        row = _scan(buf, state, limit)
    elif newlines.size:
        tail = {"backslashes": 0, "in_string": 0, "depth": 0, "rows": 0}
        _scan(buf[newlines[-1] + 1:], tail, limit)
        state.update(backslashes=tail["backslashes"], in_string=tail["in_string"], depth=tail["depth"],
                     rows=state["rows"] + newlines.size)
        row = None
    else:
        row = _scan(buf, state, limit)
    state["openers"] = int(openers[-1])
    return row


def _scan(buf: np.ndarray, state: dict, limit: int) -> int | None:
    at = np.flatnonzero(_MARKED[buf])  # only backslashes, quotes, brackets and newlines matter
    if at.size == 0:
        state["backslashes"] = 0
        return None
    ch = buf[at]
    quote = ch == _QUOTE
    slash = ch == _BACKSLASH
    if state["backslashes"] or slash.any():  # else no quote is escaped (the usual case, and fast)
        quote &= _escaped_by(at, slash, state["backslashes"]) % 2 == 0
    newline = ch == _NEWLINE
    line = np.cumsum(newline, dtype=np.int32)  # lines started in this chunk before each byte (and at it)
    # Quotes since the line's start (the first line's go on from the previous chunk): odd
    # before a byte = inside a string. Nothing is structural inside a string.
    quotes = np.cumsum(quote, dtype=np.int32) + state["in_string"]
    at_line_start = np.concatenate(([0], quotes[newline]))[line]
    inside = (quotes - quote - at_line_start) % 2 == 1
    step = _OPENERS[ch].astype(np.int32) - _CLOSERS[ch]
    step[inside] = 0
    level = np.cumsum(step, dtype=np.int32) + state["depth"]
    depth = level - np.concatenate(([0], level[newline]))[line]
    deep = np.flatnonzero(depth > limit)
    if deep.size:
        return state["rows"] + int(line[deep[0]]) + 1
    state["in_string"] = int(quotes[-1] - at_line_start[-1]) % 2
    state["depth"] = int(depth[-1])
    state["backslashes"] = int(_run_at_end(at, slash, state["backslashes"], buf.size))
    state["rows"] += int(line[-1])
    return None


def _escaped_by(at: np.ndarray, slash: np.ndarray, carried: int) -> np.ndarray:
    """For each marked byte, the length of the run of backslashes just before it."""
    run = _runs(at, slash, carried)
    before = np.zeros(at.size, dtype=np.int64)
    before[0] = carried if at[0] == 0 else 0
    before[1:] = np.where(at[1:] == at[:-1] + 1, run[:-1], 0)
    return before


def _runs(at: np.ndarray, slash: np.ndarray, carried: int) -> np.ndarray:
    """Length of the run of backslashes ending at each marked byte (0 for other bytes); a run
    at the chunk's start goes on from the previous chunk's ``carried`` ones."""
    idx = np.arange(at.size)
    continues = np.empty(at.size, dtype=bool)
    continues[0] = carried > 0 and at[0] == 0
    continues[1:] = slash[:-1] & (at[1:] == at[:-1] + 1)
    run_start = np.maximum.accumulate(np.where(slash & ~continues, idx, -1))
    return np.where(slash, np.where(run_start >= 0, idx - run_start + 1, idx + 1 + carried), 0)


def _run_at_end(at: np.ndarray, slash: np.ndarray, carried: int, size: int) -> int:
    """The backslashes that end the chunk (their run may go on in the next one)."""
    if at[-1] != size - 1 or not slash[-1]:
        return 0
    return int(_runs(at, slash, carried)[-1])
