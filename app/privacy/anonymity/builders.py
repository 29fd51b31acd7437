"""Hierarchy builders: a column's generalization hierarchy made from a short specification
instead of written by hand (ARX's hierarchy builders), as the ARX-shaped frame an upload parses
into (``level_0`` the value … the last level ``*``).

- ``redaction``: codes (ZIP codes, phone prefixes, ICD codes) padded to one length, then one
  more character masked per level (ARX's RedactionBasedHierarchyBuilder);
- ``date``: ISO dates or date-times written as text → day → month → year → decade → ``*``;
- ``intervals``: a numeric column's cells of the owner's widths per level, from a lower end,
  labelled as the automatic hierarchies are (with bottom and top coding: ``<a``, ``>=b``);
- ``groups``: the owner's groups per level (a categorical column's, or a numeric one's).

Every builder works on the column's distinct values at once (Arrow's string kernels, numpy):
no Python loop per value. The result is checked against the data by the service as an upload
is (hierarchies.hierarchy_findings), and written in ARX's CSV format by ``to_arx_text``.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Annotated, Literal, Union

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from app.privacy.anonymity.automatic_intervals import number_text
from app.privacy.anonymity.hierarchies import (
    MAX_NAMED, ROOT, IntervalLevels, format_numbers, leaf_keys, normalize_values,
)
from app.privacy.anonymity.hierarchy_findings import named_list
from app.privacy.json_types import json_typed
from app.privacy.registry import MethodInputError

MAX_LEVELS = 32  # levels a builder may ask for (a redaction's are its codes' length)
MAX_ITEMS = 1000  # values a 422's errors list names one by one
MAX_CODE_LENGTH = 64  # a redaction code's length after padding: one level per character


class BuildError(MethodInputError):
    """A specification that cannot be built on this column: ``field`` names the body's field at
    fault (None: the column's values), ``items`` every value or name at fault."""

    def __init__(self, message: str, field: str | None = None, items: list[str] | None = None,
                 kind: str = "hierarchy_build", each: str = "") -> None:
        super().__init__(message)
        self.field, self.items, self.kind, self.each = field, items or [], kind, each

    def issues(self, loc: list[str]) -> list[dict[str, object]]:
        """One item per value or name at fault (``each`` says what of it; the message alone when
        none is), as a 422's ``errors``."""
        if not self.items or not self.each:
            return [{"loc": loc, "msg": str(self), "type": self.kind}]
        return [{"loc": loc, "msg": f"{item!r} {self.each}", "type": self.kind} for item in self.items[:MAX_ITEMS]] + (
            [{"loc": loc, "msg": f"(and {len(self.items) - MAX_ITEMS} more)", "type": "hierarchy_truncated"}]
            if len(self.items) > MAX_ITEMS else [])


# ------------------------------------------------------------------------------ specifications
class _Spec(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)


class RedactionBuild(_Spec):
    """ARX's RedactionBasedHierarchyBuilder: values padded to the longest one's length, then
    level j masks j characters; the last level is ``*``. Defaults suit ZIP codes read as
    numbers (02139 read as 2139 is padded back to 02139)."""
    builder: Literal["redaction"]
    alignment: Literal["right", "left"] = Field(
        "right", description="where a shorter value sits before padding: 'right' pads on the left "
        "(2139 → 02139, as ZIP codes that lost a leading zero), 'left' pads on the right "
        "(ICD codes: A01 → A01  with padding ' ')")
    redaction: Literal["right_to_left", "left_to_right"] = Field(
        "right_to_left", description="which characters are masked first: 'right_to_left' "
        "(02139 → 0213* → 021** …, a ZIP code's or a phone number's prefix kept) or "
        "'left_to_right' (*2139 → **139 …)")
    padding: str = Field("0", description="the character a shorter value is padded with "
                         "(one character; ';', '\"' and control characters excluded)")
    mask: str = Field("*", description="the character that replaces a masked one")

    _json_types = json_typed("alignment", "redaction", "padding", "mask")

    @field_validator("padding", "mask")
    @classmethod
    def _one_character(cls, value: str) -> str:
        if len(value) != 1:
            raise ValueError(f"one character, not {len(value)}")
        if ord(value) < 0x20 or value in (";", '"', "\x7f"):
            raise ValueError("a printable character other than ';' and '\"'")
        return value


DateLevel = Literal["day", "month", "year", "decade"]


class DateBuild(_Spec):
    """ISO dates (YYYY-MM-DD) or date-times (YYYY-MM-DDTHH:MM[:SS[.f]][Z|±HH:MM], 'T' or a
    space) of a categorical column: value → day → month (YYYY-MM) → year → decade → ``*``."""
    builder: Literal["date"]
    levels: list[DateLevel] | None = Field(
        None, min_length=1, max_length=4, description="the levels above the value, in this order: "
        "'day', 'month', 'year', 'decade'; default all of them, 'day' only when a value has a time "
        "(for a date it is the value itself)")
    decade: Literal["interval", "mask"] = Field(
        "interval", description="how a decade is written: 'interval' ([2010, 2019]) or 'mask' (201*)")

    _json_types = json_typed("levels", "decade")

    @field_validator("levels")
    @classmethod
    def _ordered(cls, levels: list[str] | None) -> list[str] | None:
        order = ["day", "month", "year", "decade"]
        if levels is not None and [order.index(lv) for lv in levels] != sorted({order.index(lv) for lv in levels}):
            raise ValueError("each level once, finest first: a subsequence of day, month, year, decade")
        return levels


class IntervalsBuild(_Spec):
    """Cells of a numeric column: level j groups values into cells ``widths[j-1]`` wide from
    ``lower``; each width a multiple of the one below, so that every cell lies in one cell of
    the next level. Values below ``lower`` are bottom-coded ``<lower`` at every level, values at
    or above ``upper`` (when given) top-coded ``>=upper``."""
    builder: Literal["intervals"]
    widths: list[float] = Field(..., min_length=1, max_length=MAX_LEVELS,
                                description="the cells' width per level, finest first, e.g. [5, 10, 20]")
    lower: float | None = Field(None, description="where the cells start; default the column's declared "
                                "lower bound, else its smallest value (rounded down for a whole-number "
                                "column)")
    upper: float | None = Field(None, description="values at or above this are top-coded '>=upper' "
                                "at every level; default none (cells reach the largest value)")

    _json_types = json_typed("widths", "lower", "upper")

    @field_validator("widths")
    @classmethod
    def _nested(cls, widths: list[float]) -> list[float]:
        if any(w <= 0 for w in widths):
            raise ValueError("every width must be above 0")
        for i in range(1, len(widths)):
            below, above = Decimal(repr(float(widths[i - 1]))), Decimal(repr(float(widths[i])))
            if above <= below or above % below != 0:
                raise ValueError(f"width {number_text(widths[i])} (item {i}) is no larger multiple of "
                                 f"{number_text(widths[i - 1])}: a cell would lie across two cells of the next level")
        return widths

    @model_validator(mode="after")
    def _upper_above_lower(self):
        if self.upper is not None and self.lower is not None and self.upper <= self.lower:
            raise ValueError(f"upper ({number_text(self.upper)}) must be above lower ({number_text(self.lower)})")
        return self


GroupName = Annotated[str, Field(min_length=1, max_length=1000)]


class GroupsBuild(_Spec):
    """The owner's groups: ``levels[0]`` maps each group to the values it holds, ``levels[1]``
    each group of the next level to groups of ``levels[0]``, and so on; ``*`` above the last."""
    builder: Literal["groups"]
    levels: list[dict[GroupName, list[GroupName]]] = Field(
        ..., min_length=1, max_length=MAX_LEVELS, description="per level, group name → its members "
        "(level 1: the column's values; above: the groups of the level below), e.g. "
        "[{\"Technical\": [\"Tech-support\", \"Craft-repair\"], …}, {\"Blue collar\": [\"Technical\", …]}]")
    unlisted: Literal["refuse", "top"] = Field(
        "refuse", description="a value (or a group) no group of the next level lists: 'refuse' names "
        "them (default: a forgotten or misspelt value is caught, not released as '*'); 'top' puts "
        "it directly under '*' from that level up")

    _json_types = json_typed("levels", "unlisted")

    @field_validator("levels")
    @classmethod
    def _well_formed(cls, levels: list[dict[str, list[str]]]) -> list[dict[str, list[str]]]:
        for i, groups in enumerate(levels):
            if not groups:
                raise ValueError(f"level {i + 1} has no group")
            for name, members in groups.items():
                if name.strip() == ROOT:
                    raise ValueError(f"level {i + 1}: '*' is the top's name, not a group's")
                if not name.strip():
                    raise ValueError(f"level {i + 1}: a group needs a name")
                if any(ord(c) < 0x20 or c == "\x7f" for c in name):  # a line break, a tab, a NUL (no text column holds it)
                    raise ValueError(f"level {i + 1}: group {name!r} holds a control character")
                if not members:
                    raise ValueError(f"level {i + 1}: group {name!r} has no members")
        return levels


HierarchyBuild = Annotated[Union[RedactionBuild, DateBuild, IntervalsBuild, GroupsBuild],
                           Field(discriminator="builder")]


# ------------------------------------------------------------------------------------ building
def build_hierarchy(spec: RedactionBuild | DateBuild | IntervalsBuild | GroupsBuild, values: pd.Series, *,
                    numeric: bool, lower_bound: float | None = None) -> pd.DataFrame:
    """The ARX-shaped hierarchy ``spec`` makes for the column ``values`` (missing cells left
    out: a categorical column's get the leaf '<missing>' when a job builds its tree).
    ``numeric``: the column's type; ``lower_bound``: its declared lower bound (intervals'
    default start). Raises BuildError naming the field or the values at fault."""
    kind = "numeric" if numeric else "categorical"
    if isinstance(spec, IntervalsBuild):
        if not numeric:
            raise BuildError("the intervals builder makes cells of numbers, and this column is categorical: "
                             "declare it numeric (PUT …/schema) or use the groups builder", "builder")
        x = _distinct_numbers(values)
        return intervals_hierarchy(x, spec.widths, spec.lower if spec.lower is not None else lower_bound,
                                   spec.upper)
    if isinstance(spec, DateBuild) and numeric:
        raise BuildError("the date builder reads dates written as text (YYYY-MM-DD), and this column is "
                         "numeric: declare it categorical (PUT …/schema)", "builder")
    if isinstance(spec, RedactionBuild) and numeric:
        x = _distinct_numbers(values)
        fractional = x[np.floor(x) != x]
        if len(fractional):
            raise BuildError(f"the redaction builder masks the characters of codes, and {len(fractional)} value(s) "
                             f"of this numeric column are not whole numbers: {named_list(format_numbers(fractional).tolist())}",
                             None, format_numbers(fractional).tolist(), each="is not a whole number")
        keys = format_numbers(x)
    else:
        keys = _distinct_keys(values, numeric)
    if not len(keys):
        raise BuildError(f"the column has no value to build a hierarchy of ({kind}, every cell missing)")
    if isinstance(spec, RedactionBuild):
        return redaction_hierarchy(keys, alignment=spec.alignment, redaction=spec.redaction,
                                   padding=spec.padding, mask=spec.mask)
    if isinstance(spec, DateBuild):
        return date_hierarchy(keys, levels=spec.levels, decade=spec.decade)
    return groups_hierarchy(keys, spec.levels, unlisted=spec.unlisted, numeric=numeric)


def _distinct_numbers(values: pd.Series) -> np.ndarray:
    x = pd.to_numeric(pd.Series(pd.unique(values.dropna())), errors="coerce").to_numpy(dtype=float)
    return np.unique(x[np.isfinite(x)])


def _distinct_keys(values: pd.Series, numeric: bool) -> np.ndarray:
    """The distinct data values as the hierarchy's leaves match them (normalize_value: '39.0' is
    '39'; in a numeric column leaf_key), in order of first appearance."""
    # as a numpy object array: pandas' Arrow-backed text iterated value by value (0.7 s per 10^6)
    distinct = np.asarray(values.dropna().unique(), dtype=object)
    keys = leaf_keys(distinct, numeric) if numeric else normalize_values(distinct)
    keys = keys[keys != None]  # noqa: E711 (elementwise)
    return np.asarray(pd.unique(keys), dtype=object) if len(keys) else keys


def _frame(columns: list[np.ndarray], strip: bool = False) -> pd.DataFrame:
    """The levels as a frame. ``strip``: labels stripped of surrounding spaces, as
    parse_arx_hierarchy strips every cell (a code padded with ' ' has them), so that the stored
    text reads back as this frame."""
    if strip:
        columns = [columns[0]] + [pc.utf8_trim_whitespace(_strings(c)).to_numpy(zero_copy_only=False)
                                  for c in columns[1:]]
    return pd.DataFrame({f"level_{i}": np.asarray(c, dtype=object) for i, c in enumerate(columns)}, dtype=object)


def _strings(values: np.ndarray) -> pa.Array:
    return pa.array(np.asarray(values, dtype=object), pa.string())


def redaction_hierarchy(codes: np.ndarray, *, alignment: str = "right", redaction: str = "right_to_left",
                        padding: str = "0", mask: str = "*") -> pd.DataFrame:
    """``codes`` (distinct, as text) padded to the longest one's length L on the left
    (``alignment`` 'right') or the right, then level j (1 … L−1) masks j characters from the
    right (``redaction`` 'right_to_left') or the left; level L is '*'. Rows sorted by the padded
    code, so codes sharing a prefix are neighbours."""
    text = _strings(codes)
    length = int(pc.max(pc.utf8_length(text)).as_py() or 0)
    if length > MAX_CODE_LENGTH:
        long = np.asarray(codes, dtype=object)[pc.greater(pc.utf8_length(text), MAX_CODE_LENGTH).to_numpy(
            zero_copy_only=False)]
        raise BuildError(f"the redaction builder makes one level per character, and {len(long)} value(s) are longer "
                         f"than {MAX_CODE_LENGTH} characters: {named_list(sorted(long.tolist()))}", None,
                         sorted(long.tolist()), each=f"is longer than {MAX_CODE_LENGTH} characters")
    padded = (pc.utf8_lpad if alignment == "right" else pc.utf8_rpad)(text, length, padding)
    wide = np.asarray(padded.to_numpy(zero_copy_only=False), dtype=f"<U{length}")
    order = np.argsort(wide, kind="stable")
    wide = wide[order]
    # one row of code points per value (every padded code has exactly L of them): masking is
    # setting columns, and the rows read back as strings of the same width
    points = wide.view(np.uint32).reshape(len(wide), length)
    columns = [np.asarray(codes, dtype=object)[order]]
    for level in range(1, length):
        masked = points.copy()
        if redaction == "right_to_left":
            masked[:, length - level:] = ord(mask)
        else:
            masked[:, :level] = ord(mask)
        columns.append(masked.view(f"<U{length}").ravel().astype(object))
    columns.append(np.full(len(wide), ROOT, dtype=object))
    return _frame(columns, strip=padding.isspace() or mask.isspace())


_DATE_TIME = (r"^[0-9]{4}-[0-9]{2}-[0-9]{2}"
              r"(?:[T ](?:[01][0-9]|2[0-3]):[0-5][0-9](?::[0-5][0-9](?:\.[0-9]{1,9})?)?"
              r"(?:Z|[+-](?:[01][0-9]|2[0-3]):?[0-5][0-9])?)?$")
DATE_LEVELS = ("day", "month", "year", "decade")


def date_hierarchy(values: np.ndarray, *, levels: list[str] | None = None, decade: str = "interval") -> pd.DataFrame:
    """Dates or date-times written as ISO text (``values`` distinct) → day (YYYY-MM-DD) → month
    (YYYY-MM) → year → decade ('[2010, 2019]', or '201*' with ``decade`` 'mask') → '*', the
    levels of ``levels`` only (default all, 'day' only when a value has a time). A value that
    is no such date (its shape, or a day its month lacks: 2021-02-29) is refused, named."""
    text = _strings(values)
    day = pc.utf8_slice_codeunits(text, 0, 10)
    parsed = pc.strptime(day, format="%Y-%m-%d", unit="s", error_is_null=True)
    # strptime rolls 2021-02-29 over to 03-01: a date is one that writes back as itself
    ok = pc.and_kleene(pc.match_substring_regex(text, _DATE_TIME),
                       pc.equal(pc.strftime(parsed, format="%Y-%m-%d"), day))
    ok = pc.fill_null(ok, False).to_numpy(zero_copy_only=False)
    if not ok.all():
        bad = sorted(np.asarray(values, dtype=object)[~ok].tolist())
        raise BuildError(f"{len(bad)} value(s) of the column are not ISO dates (YYYY-MM-DD, optionally with a time "
                         f"HH:MM[:SS], e.g. 2020-01-05 or 2020-01-05T10:30): {named_list(bad)}", None, bad,
                         "hierarchy_not_a_date", "is not an ISO date (YYYY-MM-DD[THH:MM[:SS]])")
    timed = pc.greater(pc.utf8_length(text), 10).to_numpy(zero_copy_only=False)
    values = np.asarray(values, dtype=object)
    order = np.argsort(values.astype(str), kind="stable")
    days = day.to_numpy(zero_copy_only=False)
    # a day's label equal to a date of the data: a released '2020-01-05' could be that date or
    # the day of a date-time (the upload's check refuses such a label)
    clash = sorted(set(days[timed].tolist()) & set(values[~timed].tolist())) if timed.any() else []
    if levels is None:
        levels = [lv for lv in DATE_LEVELS if lv != "day" or (timed.any() and not clash)]
    if "day" in levels:
        if clash:
            raise BuildError(f"the column holds dates and date-times of the same day, so the 'day' level's label "
                             f"would equal a date of the data: {named_list(clash)}; leave 'day' out of levels (the "
                             "date-times then go to their month) or write every value with a time", "levels", clash,
                             each="is a date of the data and the day of a date-time")
    year = pc.utf8_slice_codeunits(text, 0, 4)
    tens = pc.utf8_slice_codeunits(text, 0, 3)
    made = {"day": day, "month": pc.utf8_slice_codeunits(text, 0, 7), "year": year,
            "decade": (pc.binary_join_element_wise("[", tens, "0, ", tens, "9]", "") if decade == "interval"
                       else pc.binary_join_element_wise(tens, "*", ""))}
    columns = [values[order]] + [made[lv].to_numpy(zero_copy_only=False)[order] for lv in levels]
    columns.append(np.full(len(values), ROOT, dtype=object))
    return _frame(columns)


def intervals_hierarchy(x: np.ndarray, widths: list[float], lower: float | None = None,
                        upper: float | None = None) -> pd.DataFrame:
    """The distinct numbers ``x`` in cells of ``widths[j-1]`` at level j from ``lower`` (default
    the smallest, rounded down when every value is whole), labelled as the automatic
    hierarchies are: 'a-b' (both ends in) when the values, ``lower`` and the widths are whole,
    else '[a, b)'. Below ``lower``: '<lower' at every level; at or above ``upper``: '>=upper'."""
    x = np.asarray(x, dtype=float)
    whole = bool(np.all(np.floor(x) == x))
    if lower is None:
        lower = float(np.floor(x.min())) if whole else float(x.min())
    if upper is not None and upper <= lower:
        raise BuildError(f"upper ({number_text(upper)}) must be above lower ({number_text(lower)})", "upper")
    magnitude = float(max(abs(lower), np.abs(x).max(), abs(upper) if upper is not None else 0.0))
    integer = (whole and float(lower).is_integer() and all(float(w).is_integer() for w in widths)
               and magnitude < 2.0**52)
    top = float(x.max()) if upper is None else min(float(x.max()), upper)
    if (top - lower) / widths[0] > 2.0**52:
        raise BuildError(f"cells of width {number_text(widths[0])} from {number_text(lower)} are too narrow for values up to "
                         f"{number_text(top)}", "widths")
    if widths[0] < 2.0 * float(np.spacing(magnitude)):  # its ends would round to one number: [a, a)
        raise BuildError(f"cells of width {number_text(widths[0])} are narrower than two steps of float64 at the values' "
                         f"magnitude ({number_text(magnitude)}), so a cell's ends would round to one number", "widths")
    spec = IntervalLevels(lo=float(lower), widths=tuple(float(w) for w in widths), integer=integer)
    below = x < lower
    above = x >= upper if upper is not None else np.zeros(len(x), dtype=bool)
    inside = ~below & ~above
    columns = [format_numbers(x)]
    for level in range(1, len(widths) + 1):
        labels = np.empty(len(x), dtype=object)
        labels[below] = f"<{number_text(lower)}"
        labels[above] = f">={number_text(upper)}" if upper is not None else None
        cells, inverse = np.unique(spec.cells(level, x[inside]), return_inverse=True)
        labels[inside] = spec.labels(level, cells)[inverse]
        columns.append(labels)
    columns.append(np.full(len(x), ROOT, dtype=object))
    return _frame(columns)


def groups_hierarchy(keys: np.ndarray, levels: list[dict[str, list[str]]], *, unlisted: str = "refuse",
                     numeric: bool = False) -> pd.DataFrame:
    """The owner's groups over the distinct values ``keys`` (as leaves match them): level 1 puts
    each value in the group that lists it, level j + 1 each group of level j in the group that
    lists it, '*' above the last. A value (or group) listed by no group of the next level is
    refused, named (``unlisted`` 'refuse'), or put under '*' from there up ('top'). Rows follow
    the groups' order as listed, so Mondrian's neighbouring children are the owner's."""
    current = np.asarray(keys, dtype=object)
    columns = [current]
    ranks = []
    previous: set[str] | None = None
    for i, groups in enumerate(levels):
        field = f"levels.{i}"
        names = [name.strip() for name in groups]
        sizes = [len(members) for members in groups.values()]
        members = np.array([m for ms in groups.values() for m in ms], dtype=object)
        owners = np.repeat(np.array(names, dtype=object), sizes)
        if i == 0:
            members = leaf_keys(members, numeric) if numeric else normalize_values(members)
        else:
            members = np.array([m.strip() for m in members], dtype=object)
            unknown = sorted(set(members.tolist()) - previous)
            if unknown:
                raise BuildError(f"level {i + 1} lists {len(unknown)} name(s) that are no group of level {i}: "
                                 f"{named_list(unknown)}", field, unknown, each=f"is no group of level {i}")
        listing = pd.DataFrame({"member": members, "group": owners}).drop_duplicates()
        twice = listing["member"].duplicated(keep=False).to_numpy()
        if twice.any():
            pairs = listing[twice].groupby("member", sort=True)["group"].agg(lambda g: ", ".join(map(repr, g)))
            named = [f"{m!r} ({g})" for m, g in pairs.items()]
            raise BuildError(f"level {i + 1} lists {len(named)} {'value' if i == 0 else 'group'}(s) in two groups: "
                             + ", ".join(named[:MAX_NAMED]) + (f" (and {len(named) - MAX_NAMED} more)"
                                                               if len(named) > MAX_NAMED else ""),
                             field, [str(m) for m in pairs.index], each=f"is listed by two groups of level {i + 1}")
        mapping = pd.Series(listing["group"].to_numpy(), index=pd.Index(listing["member"].to_numpy(), dtype=object))
        at = mapping.index.get_indexer(current)
        missing = (at < 0) & (current != ROOT)
        if missing.any():
            left = sorted(set(current[missing].tolist()))
            if unlisted == "refuse":
                what = "value(s) of the column are" if i == 0 else f"group(s) of level {i} are"
                raise BuildError(f"{len(left)} {what} in no group of level {i + 1}: {named_list(left)}; list them, or "
                                 "send \"unlisted\": \"top\" to put them directly under '*'", field, left,
                                 "hierarchy_missing_value" if i == 0 else "hierarchy_build", f"is in no group of level {i + 1}")
        label = np.where(at >= 0, mapping.to_numpy()[np.maximum(at, 0)], ROOT).astype(object)
        rank = pd.Index(names, dtype=object).get_indexer(label)
        ranks.append(np.where(rank < 0, len(names), rank))
        columns.append(label)
        current = label
        previous = set(names)
    columns.append(np.full(len(current), ROOT, dtype=object))
    order = np.lexsort([np.asarray(columns[0], dtype=str)] + ranks)  # the last key sorts first: the top level
    return _frame([np.asarray(c, dtype=object)[order] for c in columns])


# ------------------------------------------------------------------------------------- writing
_QUOTED = r'[;"]|^\s|\s$'


def to_arx_text(hierarchy: pd.DataFrame) -> str:
    """The hierarchy in ARX's CSV format (``value;level1;…;*``, one row per line), a cell holding
    a ';' or a '"' quoted, so that parse_arx_hierarchy reads back the same frame. A cell that
    the format cannot hold (empty, or holding a line break) is refused, named."""
    cells = []
    for name in hierarchy.columns:
        column = _strings(hierarchy[name].to_numpy(dtype=object))
        bad = pc.or_(pc.equal(pc.utf8_length(column), 0), pc.match_substring_regex(column, r"[\r\n]"))
        bad = pc.fill_null(bad, True).to_numpy(zero_copy_only=False)
        if bad.any():
            named = sorted({repr(v) for v in hierarchy[name].to_numpy(dtype=object)[bad].tolist()})
            raise BuildError(f"{len(named)} value(s) cannot be written in ARX's format (empty, or holding a line "
                             f"break): {', '.join(named[:MAX_NAMED])}", None, named, each="is empty or holds a line break")
        quote = pc.match_substring_regex(column, _QUOTED)
        quoted = pc.binary_join_element_wise('"', pc.replace_substring(column, '"', '""'), '"', "")
        cells.append(pc.if_else(quote, quoted, column))
    lines = pc.binary_join_element_wise(*cells, ";") if len(cells) > 1 else cells[0]
    return "\n".join(lines.to_pylist()) + "\n"
