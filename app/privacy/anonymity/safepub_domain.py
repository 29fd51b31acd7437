"""safepub's public domain of each quasi-identifier, and the record-local filter that keeps the
records inside it (docs/methods/safepub.md, "The guarantee").

A quasi-identifier's domain is public — never read from the data:
* numeric: a number within the declared bounds, and one of the uploaded hierarchy's leaves when
  the column has one (without one, automatic intervals over the bounds cover every such number);
* categorical (or boolean): a leaf of the uploaded hierarchy, else one of the declared categories;
  a missing cell is in the domain too (the '<missing>' leaf under the top, counted in the costs).

A record with a value outside its column's domain is dropped before the search and the sampling.
Whether a record is dropped depends on that record alone: the filtered tables of two add/remove
neighbours are equal or neighbours, so (ε, δ) holds for the table as given. Failing the job
instead (as before) published one bit — "some record lies outside" — outside any (ε, δ); how
many records are dropped is not published either (a count is not DP).
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from app.privacy.anonymity.hierarchies import (
    MISSING_LEAF, NUMBER_ANCHORED, flat_hierarchy, full_match, leaf_keys, normalize_values, with_missing_leaf,
)
from app.privacy.data import ColumnInfo
from app.privacy.registry import MethodInputError


def refuse_without_domain(info: ColumnInfo, has_hierarchy: bool) -> None:
    """A quasi-identifier whose domain the schema and the hierarchies do not give: refused at
    submission (and, should a hierarchy be deleted since, when the job starts — a fact of the
    schema, not of the records)."""
    if info.type == "numeric" and info.bounds is None:
        raise MethodInputError(
            f"quasi_identifiers: numeric column {info.name!r} has no declared bounds: safepub's costs and "
            "automatic intervals must not be read from the data (declare bounds in the schema)")
    if info.type == "numeric" and not math.isfinite(float(info.bounds[1]) - float(info.bounds[0])):
        # a cell's cost is its interval's width over the bounds' width: inf/inf made the root's
        # cost NaN, cast to −2⁶³ — far outside [0, 1], which the sensitivity assumes; without a
        # hierarchy the automatic intervals could not be built and the job failed when it started
        raise MethodInputError(
            f"quasi_identifiers: numeric column {info.name!r} has declared bounds [{info.bounds[0]:g}, "
            f"{info.bounds[1]:g}] wider than a float64 holds (hi − lo beyond 1.8e308): safepub's costs (an "
            "interval's width over the bounds' width) and automatic intervals need it finite; declare "
            "narrower bounds (or rescale the column)")
    if info.type != "numeric" and not has_hierarchy and not info.categories:
        # a boolean column declares no categories (the schema refuses them): its hierarchy is the way
        remedy = "upload a hierarchy" + ("" if info.type == "boolean" else " or declare the categories")
        raise MethodInputError(
            f"quasi_identifiers: {info.name!r} has neither an uploaded hierarchy nor declared categories: "
            f"safepub's domain must be public ({remedy})")


def public_hierarchies(infos: dict[str, ColumnInfo], qis: list[str],
                       uploaded: dict[str, pd.DataFrame]) -> dict[str, pd.DataFrame]:
    """Each quasi-identifier's hierarchy as given (uploaded, else its declared categories under
    '*'; a numeric column without one gets automatic intervals later, none here)."""
    out = {}
    for q in qis:
        refuse_without_domain(infos[q], q in uploaded)
        if q in uploaded:
            out[q] = uploaded[q]
        elif infos[q].type != "numeric":
            out[q] = flat_hierarchy(infos[q].categories)
    return out


def leaves_within_bounds(info: ColumnInfo, hierarchy: pd.DataFrame) -> np.ndarray:
    """A numeric column's hierarchy leaves within its declared bounds, or a MethodInputError naming
    the column, the bounds and what the leaves span: with none, no value can be in the domain,
    every record is dropped and nothing could ever be released — a fact of the hierarchy and the
    schema alone, refused at submission (and when the job starts, should either change since)."""
    lo, hi = map(float, info.bounds)
    leaves = np.sort(_number_leaves(hierarchy))
    inside = leaves[(leaves >= lo) & (leaves <= hi)]
    if not len(inside):
        span = (f"its {len(leaves):,} numeric leaves span [{leaves[0]:g}, {leaves[-1]:g}]" if len(leaves)
                else "none of its leaves is a number")
        raise MethodInputError(
            f"quasi_identifiers: the hierarchy of {info.name!r} has no leaf within the column's declared bounds "
            f"[{lo:g}, {hi:g}] ({span}): no value of it can be in safepub's domain, every record would be "
            "dropped and nothing released; declare bounds that cover its leaves, upload a hierarchy whose "
            "leaves lie within them, or leave the column out of quasi_identifiers")
    return inside


def _number_leaves(hierarchy: pd.DataFrame) -> np.ndarray:
    """The numbers of a numeric column's distinct leaf keys (leaf_key), unsorted: without writing
    each key (0.8 s for 600,000 leaves) — a finite key is its number's writing, one per number (0
    and -0 are one key, '0'); an infinite number ('1e999') keeps its text, one per spelling."""
    keys = normalize_values(hierarchy.to_numpy(dtype=object)[:, 0])
    text = keys[keys != None].astype(object)  # noqa: E711 (elementwise)
    text = text[full_match(NUMBER_ANCHORED, text)]
    x = text.astype(float)  # float() of each text
    finite = np.isfinite(x)
    return np.concatenate([np.unique(x[finite] + 0.0), pd.unique(text[~finite]).astype(float)])


def _distinct_leaves(hierarchy: pd.DataFrame, numeric: bool) -> np.ndarray:
    """The hierarchy's distinct leaf keys (leaf_key), an object array of str."""
    leaves = leaf_keys(hierarchy.to_numpy(dtype=object)[:, 0], numeric)
    text = leaves[leaves != None].astype(object)  # noqa: E711 (elementwise)
    if numeric:  # a leaf that is no number matches no value of a numeric column (as build_tree)
        text = text[full_match(NUMBER_ANCHORED, text)]
    return pd.unique(text)


def _in_leaves(series: pd.Series, leaves: np.ndarray) -> np.ndarray:
    """Whether each cell's text (normalize_value, as build_tree matches it) is a leaf; per
    distinct value, not per cell."""
    codes, uniques = pd.factorize(series, use_na_sentinel=True)
    known = np.append(pd.Index(normalize_values(uniques), dtype=object).isin(leaves), False)
    return known[codes]  # code -1 (a missing cell) reads the trailing False


def in_domain(frame: pd.DataFrame, infos: dict[str, ColumnInfo], qis: list[str],
              hierarchies: dict[str, pd.DataFrame]) -> np.ndarray:
    """Per record: every quasi-identifier's value lies in its public domain (module doc)."""
    keep = np.ones(len(frame), dtype=bool)
    for q in qis:
        series = frame[q]
        if infos[q].type == "numeric":
            lo, hi = map(float, infos[q].bounds)
            values = pd.to_numeric(series, errors="coerce").to_numpy(dtype=float)
            with np.errstate(invalid="ignore"):
                ok = (values >= lo) & (values <= hi)  # NaN (missing, not a number) is outside
            if q in hierarchies:
                ok &= _in_leaves(series, _distinct_leaves(hierarchies[q], numeric=True))
        else:
            leaves = _distinct_leaves(hierarchies[q], numeric=False)
            ok = series.isna().to_numpy() | _in_leaves(series, leaves)
        keep &= ok
    return keep


def with_missing_cells(frame: pd.DataFrame, infos: dict[str, ColumnInfo], qis: list[str],
                       hierarchies: dict[str, pd.DataFrame]) -> tuple[pd.DataFrame, dict[str, pd.DataFrame]]:
    """The in-domain records' quasi-identifiers with a categorical column's missing cells written
    '<missing>', and the hierarchies with that leaf (where the hierarchy does not list it itself):
    the same tree build_tree makes for missing cells, whether the table has any or not."""
    out, trees = frame[qis].copy(), dict(hierarchies)
    for q in qis:
        if infos[q].type != "numeric":
            table = with_missing_leaf(hierarchies[q].astype(str).to_numpy(dtype=object))
            trees[q] = pd.DataFrame(table, columns=[f"level_{i}" for i in range(table.shape[1])], dtype=object)
            column = out[q]
            if not isinstance(column.dtype, pd.StringDtype):  # a bool or category column: text needs object
                column = column.astype(object)  # (a string column stays one: no Python object per cell)
            out[q] = column.where(column.notna(), MISSING_LEAF)
    return out, trees


def anchor_record(infos: dict[str, ColumnInfo], qis: list[str], hierarchies: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """One record of the domain (public values), on which the trees are built when no record of
    the table is in the domain; it is never scored, sampled or released: the search then sees an
    empty table, as the mechanism's definition asks."""
    row = {}
    for q in qis:
        if infos[q].type != "numeric":
            row[q] = MISSING_LEAF
            continue
        lo, hi = map(float, infos[q].bounds)
        if q not in hierarchies:
            row[q] = lo
            continue
        row[q] = float(leaves_within_bounds(infos[q], hierarchies[q]).min())
    return pd.DataFrame({q: pd.Series([row[q]], dtype=float if infos[q].type == "numeric" else object)
                         for q in qis})
