"""Parameters and steps shared by icahdp and dppro."""

from __future__ import annotations

from typing import Any

import pandas as pd
from pydantic import Field, field_validator

from app.privacy.context import RunContext
from app.privacy.data import ColumnInfo, MethodInput
from app.privacy.dp_release.encoding import (
    ColumnPlan, bounds_problem, categories_problem, released_columns,
)
from app.privacy.registry import MethodInputError, Params, no_repeats

MAX_EPSILON = 100.0
MAX_ENCODED_WIDTH = 1000  # one-hot width cap: the covariance is width², its eigensystem width³
NEIGHBOURING = ("neighbouring tables differ in the values of one record (replace one); the "
                "number of records n is public")
NEIGHBOURING_ADD_REMOVE = ("neighbouring tables differ by one record added or removed (add/remove "
                           "one); the number of records n is not public: the release's size is the "
                           "rows asked for, else an estimate from the noisy measurements")

Category = str | int | float | bool


class DeclaredDomainParams(Params):
    """ε and the declared domains every central-DP release on a table takes (the table
    releases and dp_statistics): bounds and categories given here override the schema's."""

    epsilon: float = Field(..., gt=0.0, le=MAX_EPSILON, description="privacy budget ε of the release")
    bounds: dict[str, tuple[float, float]] | None = Field(
        None, description="declared [lo, hi] per numeric column (overrides the dataset schema); "
        "values are clipped to them")
    categories: dict[str, list[Category]] | None = Field(
        None, description="declared domain per categorical column (overrides the dataset schema)")

    @field_validator("bounds")
    @classmethod
    def _ordered(cls, v):
        """Finite, ordered, a usable range (integer columns, known only from the schema, are
        held to ±2^53 in the check)."""
        for name, (lo, hi) in (v or {}).items():
            if (problem := bounds_problem(lo, hi, integer=False)) is not None:
                raise ValueError(f"bounds of {name!r}: {problem}")
        return v

    @field_validator("categories")
    @classmethod
    def _one_kind(cls, v):
        for name, values in (v or {}).items():
            if (problem := categories_problem(values)) is not None:
                raise ValueError(f"categories of {name!r}: {problem}")
        return v


class TableParams(DeclaredDomainParams):
    """Parameters every DP table release shares."""

    columns: list[str] | None = Field(
        None, description="columns to release; default every column that is not an identifier. "
        "Columns left out are not published at all")

    @field_validator("columns")
    @classmethod
    def _distinct(cls, v):
        return no_repeats(v, "columns")


def check_references(params: TableParams, columns: list[ColumnInfo]) -> list[ColumnInfo]:
    """The released columns; every column named in bounds/categories must be one of them."""
    chosen = released_columns(columns, params.columns)
    names = {c.name for c in chosen}
    types = {c.name: c.type for c in chosen}
    for name in params.bounds or {}:
        if name not in names:
            raise MethodInputError(f"bounds given for column {name!r}, which is not released")
        if types[name] != "numeric":
            raise MethodInputError(f"bounds given for column {name!r}, which is not numeric")
    for name in params.categories or {}:
        if name not in names:
            raise MethodInputError(f"categories given for column {name!r}, which is not released")
        if types[name] == "numeric":
            raise MethodInputError(f"categories given for column {name!r}, which is numeric")
    if not chosen:
        raise MethodInputError("no column to release")
    return chosen


def check_width(plans: list[ColumnPlan]) -> None:
    width = sum(p.width for p in plans)
    if width > MAX_ENCODED_WIDTH:
        raise MethodInputError(f"the one-hot encoding is {width} wide (limit {MAX_ENCODED_WIDTH}): "
                               "release fewer columns or columns with fewer categories")


def at_least_two_records(params, rows: int, columns=None) -> None:
    """The registry's check_rows: known at submission, so a one-record input is a 422 before
    any debit (on a budgeted dataset the 409 came first)."""
    if rows < 2:
        raise MethodInputError("the table needs at least 2 records")


def require_rows(data: MethodInput) -> pd.DataFrame:
    frame = data.frame
    if frame is None:
        raise MethodInputError("this method releases a table")
    if len(frame) < 2:
        raise MethodInputError("the table needs at least 2 records")
    return frame


def assemble(frame: pd.DataFrame, parts: dict[str, Any]) -> pd.DataFrame:
    """The released columns in the input's order."""
    order = [c for c in frame.columns if c in parts]
    return pd.DataFrame({c: parts[c] for c in order}, index=frame.index).reset_index(drop=True)


def rng_statements(ctx: RunContext) -> list[str]:
    if ctx.rng.is_private:
        return [f"noise drawn from {ctx.rng.name}; no seed is accepted"]
    return ["SEEDED RNG (reproducible test mode): the noise is predictable, the release is NOT private"]
