"""Column schema: inferred types and profile, and the owner's overrides (types, roles,
numeric bounds, declared categories)."""

from __future__ import annotations

import json
import sys
from typing import Any, Literal

import numpy as np
import pandas as pd
from pydantic import ConfigDict, Field, ValidationError, model_validator

from app.config import get_settings
from app.errors import Unprocessable
from app.privacy.data import ColumnInfo, declared_bounds_problem
from app.privacy.json_types import JsonTyped
from app.privacy.registry import no_repeats

ColumnType = Literal["numeric", "categorical", "boolean"]
ColumnRole = Literal["identifier", "quasi_identifier", "sensitive", "insensitive", "label"]
_TRUE = {"true", "1", "yes", "y", "t"}
_FALSE = {"false", "0", "no", "n", "f"}


class ColumnOverride(JsonTyped):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)
    type: ColumnType | None = None
    role: ColumnRole | None = None
    bounds: tuple[float, float] | None = Field(None, description="[lo, hi] of a numeric column: finite, "
                                               "lo < hi, and a width hi − lo that is a finite normal float "
                                               "(2.2e-308 to 1.8e308); null withdraws declared bounds")
    categories: list[str] | None = Field(None, min_length=1,
                                         description="the declared domain of a categorical column "
                                         "(null withdraws it)")
    integer: bool | None = None

    @model_validator(mode="after")
    def _check(self):
        if self.bounds is not None and (problem := declared_bounds_problem(*self.bounds)) is not None:
            raise ValueError(f"bounds {problem}")
        no_repeats(self.categories, "categories")
        return self


class SchemaUpdate(JsonTyped):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)
    columns: dict[str, ColumnOverride] = Field(..., description="column name → overrides")


BARE_OR_WRAPPED = ('{"column": {"type": …, "role": …, "bounds": […], "categories": […]}, …}, '
                   'bare or wrapped as {"columns": …} (a column named "columns" needs the wrapped form)')


def schema_json(raw: str | bytes, what: str) -> Any:
    """The JSON text of an overrides map, parsed; a 422 naming ``what`` when it is not JSON, or
    nests so deeply that the parser runs out of stack (a RecursionError: it was a 500)."""
    try:
        return json.loads(raw)
    except json.JSONDecodeError as exc:
        raise Unprocessable(f"{what} is not valid JSON (line {exc.lineno}, column {exc.colno})") from None
    except UnicodeDecodeError:
        raise Unprocessable(f"{what} is not valid JSON (not UTF-8 text)") from None
    except RecursionError:
        raise Unprocessable(f"{what} nests arrays or objects too deeply: an overrides map is "
                            f"{BARE_OR_WRAPPED}") from None
    except ValueError:  # the only other: an integer of more digits than Python converts (4,300)
        raise Unprocessable(f"{what} holds an integer of more than {sys.get_int_max_str_digits()} "
                            "digits") from None


def schema_update_from(data: Any, what: str) -> SchemaUpdate:
    """The overrides map, bare or wrapped in {"columns": …}: the upload's ``schema`` field and
    PUT …/schema take both. A 422 names ``what`` and locates errors in the caller's own form
    (a bare map's start at the column name)."""
    if not isinstance(data, dict):
        raise Unprocessable(f"{what} must be a JSON object: {BARE_OR_WRAPPED}")
    bare = "columns" not in data
    columns = data if bare else data.get("columns")
    limit = get_settings().max_columns
    if isinstance(columns, dict) and len(columns) > limit:  # before validating each of them
        raise Unprocessable(f"{what} names {len(columns)} columns; a dataset has at most {limit}")
    if isinstance(columns, dict):
        declared = sum(len(c["categories"]) for c in columns.values()
                       if isinstance(c, dict) and isinstance(c.get("categories"), list))
        check_declared_categories(declared, what)
    try:
        return SchemaUpdate.model_validate({"columns": data} if bare else data)
    except ValidationError as exc:
        # loc, msg and type only: pydantic's "input" would echo the caller's data back
        errors = [{"loc": list(e["loc"][1:] if bare else e["loc"]), "msg": e["msg"], "type": e["type"]}
                  for e in exc.errors()]
        where = ".".join(str(p) for p in errors[0]["loc"])
        raise Unprocessable(f"{what} is invalid: {where}: {errors[0]['msg']}", errors=errors) from None


def check_declared_categories(count: int, what: str) -> None:
    limit = get_settings().max_declared_categories
    if count > limit:
        raise Unprocessable(f"{what} declares {count} categories; a dataset has at most {limit} "
                            "in all its columns (VEIL_MAX_DECLARED_CATEGORIES)")


def infer_type(series: pd.Series) -> ColumnType:
    if pd.api.types.is_bool_dtype(series.dtype):
        return "boolean"
    if pd.api.types.is_numeric_dtype(series.dtype) and not isinstance(series.dtype, pd.CategoricalDtype):
        return "numeric"
    return "categorical"


def normalize(frame: pd.DataFrame) -> pd.DataFrame:
    """Text columns as categoricals, the storage form of categorical data."""
    out = frame.copy()
    for name in out.columns:
        if infer_type(out[name]) == "categorical" and not isinstance(out[name].dtype, pd.CategoricalDtype):
            out[name] = out[name].astype("category")
    return out


INFERABLE = ("type", "integer")  # schema facts read from the data unless the owner declares them


def _still_inferred(previous: dict[str, Any], type_: str) -> list[str]:
    """What stays inferred when a column is (re)profiled: a fact the owner declared stays
    declared (a type changed by an override is declared by it: apply_overrides says so). A
    column that was not numeric had no integer flag to declare: a numeric one reads it anew."""
    before = previous.get("inferred", list(INFERABLE)) if previous else list(INFERABLE)
    if previous and previous.get("type") != "numeric":
        before = [*before, "integer"]
    return [f for f in INFERABLE if f in before and (f != "integer" or type_ == "numeric")]


def profile_column(name: str, series: pd.Series, type_: str, previous: dict[str, Any] | None = None
                   ) -> dict[str, Any]:
    previous = previous or {}
    missing = int(series.isna().sum())
    if isinstance(series.dtype, pd.CategoricalDtype):
        counts = series.value_counts(sort=True)  # counts by code: no string per cell
        counts = counts[counts > 0]
        distinct = len(counts)
    else:
        counts, distinct = None, int(series.nunique(dropna=True))
    entry: dict[str, Any] = {
        "name": name, "type": type_, "role": previous.get("role", "insensitive"),
        "missing": missing, "distinct": distinct,
        # a declared domain belongs to its type: bounds to a numeric column, categories to a
        # categorical one (a type change drops the other type's)
        "bounds": previous.get("bounds") if type_ == "numeric" else None,
        "categories": previous.get("categories") if type_ == "categorical" else None,
        "integer": False, "inferred": _still_inferred(previous, type_),
    }
    values = series.dropna()
    if type_ == "numeric":
        arr = values.to_numpy(dtype=float)
        entry["integer"] = (bool(len(arr) and np.all(arr == np.round(arr))) if "integer" in entry["inferred"]
                            else bool(previous.get("integer")))
        # mean and std of arr / scale: sums of values near 1e308 (or squares of values past
        # 1e154) overflow; the scaled ones never do
        scale = float(np.abs(arr).max()) if len(arr) else 0.0
        scale = scale if 0 < scale < np.inf else 1.0
        unit = arr / scale
        entry["profile"] = {"min": float(arr.min()) if len(arr) else None,
                            "max": float(arr.max()) if len(arr) else None,
                            "mean": float(unit.mean()) * scale if len(arr) else None,
                            "std": float(unit.std(ddof=1)) * scale if len(arr) > 1 else None}
    else:
        top = (counts if counts is not None else values.astype(str).value_counts()).head(20)
        entry["profile"] = {"top": [{"value": str(k), "count": int(v)} for k, v in top.items()]}
    return entry


def infer_columns(frame: pd.DataFrame) -> list[dict[str, Any]]:
    return [profile_column(str(n), frame[n], infer_type(frame[n])) for n in frame.columns]


def first_row(mask: np.ndarray) -> int:
    """The 1-based row of the first True."""
    return int(np.argmax(mask)) + 1


_EXACT_LIMIT = 2.0 ** 53  # the integers a float64 holds exactly
_INTEGER_TEXT = r"^\s*[+-]?[0-9]+\s*$"


def _integer_texts(series: pd.Series) -> bool:
    """Every value of a text column is an integer literal ('34', not '34.0'); its distinct
    values are read, not every cell."""
    distinct = pd.Series(series.dropna().unique()).astype("string")
    return bool(len(distinct)) and bool(distinct.str.fullmatch(_INTEGER_TEXT).all())


def convert(series: pd.Series, name: str, to: str) -> pd.Series:
    """Re-code a column to another type; a value that does not fit names its row."""
    current = infer_type(series)
    if current == to:
        return series
    if to == "categorical":
        if current == "numeric":
            arr = series.to_numpy(dtype=float, na_value=np.nan)
            integral = np.all(np.isnan(arr) | (arr == np.round(arr)))
            text = pd.Series(np.where(np.isnan(arr), None,
                                      arr.astype(np.int64).astype(str) if integral else arr.astype(str)),
                             index=series.index)
            return text.astype("category")
        return series.astype("string").astype("category")
    if to == "numeric":
        numbers = pd.to_numeric(series.astype("string"), errors="coerce").astype("float64")
        bad = numbers.isna().to_numpy() & series.notna().to_numpy()
        if bad.any():
            raise Unprocessable(f"column {name!r}: row {first_row(bad)} is not a number")
        if _integer_texts(series) and np.all(np.abs(numbers.dropna().to_numpy()) <= _EXACT_LIMIT):
            # stored as an upload stores integers (int64, nullable with missing cells): as
            # float64 its CSV gave 34.0 back for the 34 written
            return numbers.astype("Int64" if numbers.isna().any() else "int64")
        return numbers
    out = pd.Series(pd.NA, index=series.index, dtype="boolean")
    if current == "numeric":  # 1 and 0; as float64 (a column with a missing cell) their text is '1.0'
        arr = series.to_numpy(dtype=float, na_value=np.nan)
        out[arr == 1] = True
        out[arr == 0] = False
    else:
        text = series.astype("string").str.strip().str.lower()
        out[text.isin(_TRUE).fillna(False).to_numpy()] = True
        out[text.isin(_FALSE).fillna(False).to_numpy()] = False
    bad = out.isna().to_numpy() & series.notna().to_numpy()
    if bad.any():
        raise Unprocessable(f"column {name!r}: row {first_row(bad)} is not a boolean "
                            "(true/false, yes/no, 1/0)")
    return out


def apply_overrides(frame: pd.DataFrame, columns: list[dict[str, Any]],
                    update: SchemaUpdate) -> tuple[pd.DataFrame, list[dict[str, Any]], bool]:
    """Apply the owner's overrides. Returns the (possibly re-coded) frame, the new column
    entries, and whether the data changed."""
    by_name = {c["name"]: c for c in columns}
    unknown = [n for n in update.columns if n not in by_name]
    if unknown:
        raise Unprocessable(f"unknown column {unknown[0]!r}")
    changed = False
    out = []
    for entry in columns:
        name = entry["name"]
        o = update.columns.get(name)
        if o is None:
            out.append(entry)
            continue
        new = dict(entry)
        if o.type is not None and o.type != entry["type"]:
            frame[name] = convert(frame[name], name, o.type)
            new = profile_column(name, frame[name], o.type, entry)
            changed = True
        for field in ("role", "bounds", "categories", "integer"):
            value = getattr(o, field)
            if value is not None:
                new[field] = list(value) if field == "bounds" else value
            elif field in ("bounds", "categories") and field in o.model_fields_set:
                new[field] = None  # an explicit null withdraws the declared domain
        declared = {f for f in ("type", "integer") if getattr(o, f) is not None}
        if o.bounds is not None or o.categories is not None:
            declared.add("type")  # bounds assert a numeric column, categories a categorical one
        new["inferred"] = [f for f in inferred_facts(new) if f not in declared]
        if new.get("bounds") is not None and new["type"] != "numeric":
            raise Unprocessable(f"column {name!r} is {new['type']}: bounds apply to numeric columns "
                                'only (declare "type": "numeric" with them)')
        if o.integer and new["type"] != "numeric":
            raise Unprocessable(f"column {name!r}: integer applies to numeric columns only")
        if new.get("categories") is not None:
            if new["type"] != "categorical":
                raise Unprocessable(f"column {name!r} is {new['type']}: categories apply to categorical "
                                    'columns only (declare "type": "categorical" with them)')
            present = frame[name].dropna().astype(str)
            outside = ~present.isin(new["categories"]).to_numpy()
            if outside.any():
                row = int(np.flatnonzero(frame[name].notna().to_numpy())[np.argmax(outside)]) + 1
                raise Unprocessable(f"column {name!r}: row {row} holds a value outside the declared "
                                    "categories")
        out.append(new)
    check_declared_categories(sum(len(c.get("categories") or ()) for c in out), "the schema")
    labels = [c["name"] for c in out if c.get("role") == "label"]
    if len(labels) > 1:
        raise Unprocessable(f"only one column may have the role label; got {labels}")
    return frame, out, changed


def public_columns(columns: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The schema without the profile (profiles are for owners only); the inferred facts as the
    methods read them (an entry stored before they were tracked has none stored)."""
    return [{**{k: v for k, v in c.items() if k != "profile"}, "inferred": inferred_facts(c)}
            for c in columns]


def inferred_facts(entry: dict[str, Any]) -> list[str]:
    """The facts of a schema entry read from the data, not declared. An entry stored before
    they were tracked counts every inferable one as inferred (the safe reading), except a type
    that declared bounds or categories assert."""
    facts = entry.get("inferred")
    if facts is None:
        facts = [f for f in INFERABLE if f != "integer" or entry["type"] == "numeric"]
    if entry.get("bounds") or entry.get("categories"):
        facts = [f for f in facts if f != "type"]
    return list(facts)


def column_infos(columns: list[dict[str, Any]]) -> list[ColumnInfo]:
    return [ColumnInfo(name=c["name"], type=c["type"], role=c.get("role", "insensitive"),
                       bounds=tuple(c["bounds"]) if c.get("bounds") else None,
                       categories=tuple(c["categories"]) if c.get("categories") else None,
                       integer=bool(c.get("integer")), inferred=tuple(inferred_facts(c)),
                       distinct=c.get("distinct"), missing=int(c.get("missing") or 0))
            for c in columns]


def transaction_columns(n_items: int, n_transactions: int) -> list[dict[str, Any]]:
    return [{"name": "items", "type": "categorical", "role": "insensitive", "missing": 0,
             "distinct": n_items, "bounds": None, "categories": None, "integer": False, "inferred": []}]
