"""Is a quoted CSV field left open at the end of the file?

pyarrow's reader ends such a field at the end of the file without an error, so one stray `"`
at the start of a field silently turned every row after it into the text of one cell (an
upload of 5 rows stored as 1). This replays pyarrow's quoting rules over the runs of
consecutive quote characters, vectorized, a chunk at a time:

- a quote opens a quoted field only at the start of a field (after the delimiter, a line end
  or at the start of the file); elsewhere outside quotes it is a literal character;
- inside a quoted field `""` is an escaped quote and a single `"` closes the field.

So a run of L quotes acts on the state (inside quotes or not) as: L even → no change; L odd
at the start of a field → toggle; L odd elsewhere → outside (it either closes the field or is
literal). The state at the end of the file is that of the last odd run at a field start after
the last odd run elsewhere, toggled once per such run.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

_QUOTE = ord('"')
_CHUNK = 4 * 1024 * 1024


def unclosed_quote_offset(path: Path, delimiter: str) -> int | None:
    """Byte offset of the quote that opens a field still open at the end, or None."""
    starts_field = np.zeros(256, dtype=bool)
    starts_field[[ord(delimiter), ord("\n"), ord("\r")]] = True
    inside, opened = False, None
    previous = ord("\n")  # the start of the file is the start of a field
    carried = 0  # quotes at the end of the previous chunk: their run may go on
    with open(path, "rb") as f:
        offset = 0
        if f.read(3) != b"\xef\xbb\xbf":  # pyarrow skips a UTF-8 byte-order mark
            f.seek(0)
        else:
            offset = 3
        while chunk := f.read(_CHUNK):
            if not carried and chunk.find(b'"') < 0:
                previous, offset = chunk[-1], offset + len(chunk)
                continue
            data = np.frombuffer(b'"' * carried + chunk, dtype=np.uint8)
            base = offset - carried
            offset += len(chunk)
            at = np.flatnonzero(data == _QUOTE)
            first = np.ones(len(at), dtype=bool)  # the first quote of a run
            np.not_equal(at[1:], at[:-1] + 1, out=first[1:])
            last = np.ones(len(at), dtype=bool)
            last[:-1] = first[1:]
            run_start, run_end = at[first], at[last] + 1
            if len(run_start) and run_end[-1] == len(data):  # may continue in the next chunk
                carried = int(run_end[-1] - run_start[-1])
                run_start, run_end = run_start[:-1], run_end[:-1]
            else:
                carried = 0
            before = np.take(data, run_start - 1)  # index -1 (a run at 0) reads the wrong byte:
            if len(run_start) and run_start[0] == 0:
                before[0] = previous  # the byte before is the previous chunk's last
            odd = (run_end - run_start) % 2 == 1
            toggles = odd & starts_field[before]
            resets = odd & ~starts_field[before]
            if resets.any():
                last_reset = np.flatnonzero(resets)[-1]
                inside = bool(toggles[last_reset + 1:].sum() % 2)
            else:
                inside = inside ^ bool(toggles.sum() % 2)
            odd_at = np.flatnonzero(odd)
            if len(odd_at):
                opened = base + int(run_start[odd_at[-1]])
            previous = data[len(data) - carried - 1] if len(data) > carried else previous
    if carried:  # the file ends with a run of quotes
        odd = carried % 2 == 1
        if odd and starts_field[previous]:
            inside, opened = not inside, offset - carried
        elif odd:
            inside = False
    return opened if inside else None


def line_of(path: Path, offset: int) -> int:
    """1-based line number of a byte offset."""
    with open(path, "rb") as f:
        lines, done = 1, 0
        while done < offset and (chunk := f.read(min(_CHUNK, offset - done))):
            lines += chunk.count(b"\n")
            done += len(chunk)
    return lines
