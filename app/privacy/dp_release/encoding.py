"""Columns ↔ a matrix in [0, 1]^p.

A numeric column is clipped to its bounds [lo, hi] and scaled to [0, 1]; a categorical column
becomes a one-hot block (a missing cell is an all-zero block). So one record is a vector x with
every coordinate in [0, 1], at most one 1 per block, and two records differ by at most
``l1_diameter`` = n_numeric + 2·n_categorical in L1 and √l1_diameter in L2 — the sensitivities
every mechanism of this package is calibrated to.

Decoding is post-processing: clip to [0, 1], map back to [lo, hi], snap to the column's output
grid (a power of two; 1 for integer columns) inside the bounds, and argmax for a one-hot block.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import pandas as pd

from app.privacy.data import ColumnInfo
from app.privacy.registry import MethodInputError

OUTPUT_GRID_STEPS = 4096  # a non-integer column's output grid: ≤ 1/4096 of its range
DECLARED = ("params", "schema", "type")
MAX_INTEGER_BOUND = 2.0**53  # integers beyond it are not exact in float64, where decoding runs
MIN_RANGE = 1e-300  # hi - lo: keeps (hi - lo)/4096, the finest output grid, a normal float


def _text_categorical(series: pd.Series) -> bool:
    """A categorical series whose categories are all text: how a stored table's text columns
    load (app/datasets/parsing.py). Its cells' astype(str) is then the category itself."""
    return isinstance(series.dtype, pd.CategoricalDtype) and series.cat.categories.inferred_type == "string"


def _categorical_codes(series: pd.Series, declared: pd.Index) -> np.ndarray:
    """``declared.get_indexer(series.astype(str))`` for a categorical series of text categories,
    each category looked up once and taken by the cells' codes — not five million cells
    converted to text one by one (20 s and ~450 MiB for Adult's nine text columns at 4,950,000
    rows). A missing cell (code -1) gets -1. (Categories of other types stay on the per-cell
    path: pandas turns an integer category 1 into '1.0' when the column has a missing cell.)"""
    lookup = declared.get_indexer(series.cat.categories).astype(np.int64)
    return np.append(lookup, -1)[series.cat.codes.to_numpy()]


@dataclass
class ColumnPlan:
    name: str
    kind: Literal["numeric", "categorical"]
    lo: float = 0.0
    hi: float = 1.0
    integer: bool = False
    categories: tuple[Any, ...] = ()
    source: str = "params"  # where the bounds or categories came from
    info: ColumnInfo | None = None
    start: int = 0

    @property
    def width(self) -> int:
        return 1 if self.kind == "numeric" else len(self.categories)

    @property
    def declared(self) -> bool:
        return self.source in DECLARED

    @property
    def inferred(self) -> str | None:
        """The fact of this column the release relies on that was read from the data at upload,
        not declared (None if there is none): whether a numeric column is integer (its bins and
        output grid follow it), or a boolean type (its two-level domain)."""
        inferred = self.info.inferred if self.info is not None else ()
        if self.kind == "numeric" and "integer" in inferred:
            return f"{self.name} ({'integer' if self.integer else 'not integer'})"
        if self.source == "type" and "type" in inferred:
            return f"{self.name} (boolean)"
        return None

    @property
    def grid(self) -> float | None:
        """Step of the released values (numeric columns): 1 for integers, else the largest
        power of two ≤ (hi - lo) / 4096."""
        if self.kind != "numeric":
            return None
        if self.integer:
            return 1.0
        return 2.0 ** math.floor(math.log2((self.hi - self.lo) / OUTPUT_GRID_STEPS))

    @property
    def grid_bounds(self) -> tuple[float, float]:
        g = self.grid
        return g * math.ceil(self.lo / g), g * math.floor(self.hi / g)

    def category_codes(self, series: pd.Series) -> tuple[np.ndarray, np.ndarray]:
        """A categorical column's codes in its categories (-1 where missing) and its missing
        cells. A value outside categories the job declared is a missing cell, as
        outside_values_warnings says; outside the schema's, which the upload checked against the
        data, only a caller of the library can get, and it is an error."""
        missing = series.isna().to_numpy()
        declared = pd.Index([str(c) for c in self.categories])
        if _text_categorical(series):
            codes = _categorical_codes(series, declared)
        else:
            codes = declared.get_indexer(series.astype(str)).astype(np.int64)
        outside = (codes < 0) & ~missing
        if outside.any() and self.source != "params":
            raise MethodInputError(f"column {self.name!r} holds values outside its declared categories")
        missing = missing | outside
        codes[missing] = -1
        return codes, missing

    def encode(self, series: pd.Series, fill: float | None) -> np.ndarray:
        """n × width block in [0, 1]. ``fill``: scaled value for a missing numeric cell."""
        if self.kind == "numeric":
            values = pd.to_numeric(series, errors="coerce").to_numpy(dtype=np.float64)
            if np.isnan(values).any() and not series.isna().all():
                bad = np.isnan(values) & series.notna().to_numpy()
                if bad.any():
                    raise MethodInputError(f"column {self.name!r} holds non-numeric values")
            scaled = (np.clip(values, self.lo, self.hi) - self.lo) / (self.hi - self.lo)
            scaled[np.isnan(scaled)] = 0.5 if fill is None else fill
            return scaled[:, None]
        codes, _ = self.category_codes(series)  # a missing cell: an all-zero block
        block = np.zeros((len(series), self.width), dtype=np.float64)
        rows = np.flatnonzero(codes >= 0)
        block[rows, codes[rows]] = 1.0
        return block

    def decode(self, block: np.ndarray) -> pd.Series | pd.Categorical:
        if self.kind == "numeric":
            values = self.lo + np.clip(block[:, 0], 0.0, 1.0) * (self.hi - self.lo)
            g = self.grid
            lo_g, hi_g = self.grid_bounds
            values = np.clip(g * np.rint(values / g), lo_g, hi_g)
            return values.astype(np.int64) if self.integer else values
        codes = np.argmax(block, axis=1)
        return pd.Categorical.from_codes(codes, categories=list(self.categories))

    def describe(self) -> dict[str, Any]:
        out: dict[str, Any] = {"type": self.kind, "source": self.source}
        if self.kind == "numeric":
            out.update(bounds=[self.lo, self.hi], grid=self.grid, grid_bounds=list(self.grid_bounds),
                       integer=self.integer)
        else:
            out.update(categories=[_plain(c) for c in self.categories],
                       decoding="one-hot block, argmax")
        return out

    def output_info(self) -> ColumnInfo:
        base = self.info or ColumnInfo(name=self.name, type=self.kind)
        if self.kind == "numeric":
            return ColumnInfo(name=self.name, type="numeric", role=base.role,
                              bounds=(self.lo, self.hi), integer=self.integer,
                              inferred=tuple(f for f in base.inferred if f == "integer"))
        return ColumnInfo(name=self.name, type=base.type if base.type != "numeric" else "categorical",
                          role=base.role, categories=tuple(str(c) for c in self.categories))


def domain_warnings(plans: list[ColumnPlan]) -> list[str]:
    return inferred_warnings(plans) + outside_values_warnings(plans)


def outside_values_warnings(plans: list[ColumnPlan]) -> list[str]:
    """Categories given in a job's params are not checked against the data (the schema's are,
    at upload and PUT …/schema): a value outside them is released as a missing cell. Said
    whenever the job declares categories, whatever the data holds — saying it only when such a
    value occurs would disclose it, as failing the job did (leakage acceptance check)."""
    names = [p.name for p in plans if p.kind == "categorical" and p.source == "params"]
    if not names:
        return []
    return [f"values of {', '.join(repr(n) for n in names)} outside the categories this job declares "
            "are released as missing cells, like any missing value (a job that failed on them "
            "would disclose, outside ε, that such a value exists); declare the categories in the "
            "dataset's schema, which is checked against the data, to be told of such values at once"]


def inferred_warnings(plans: list[ColumnPlan]) -> list[str]:
    """The warning of a DP release that relies on schema facts read from the data (the guarantee
    treats the schema as public; these facts are not, until the owner declares them)."""
    facts = [f for p in plans if (f := p.inferred) is not None]
    if not facts:
        return []
    shows = " and ".join(what for what, present in (
        ("integer values", any(f.endswith("(integer)") for f in facts)),
        ("decimal values", any(f.endswith("(not integer)") for f in facts)),
        ("a two-level domain", any(f.endswith("(boolean)") for f in facts))) if present)
    return ["the schema facts " + ", ".join(facts) + " were inferred from the data at upload, not "
            f"declared, and the release shows them ({shows}): "
            "what they say about the data is disclosed, outside ε; declared in the dataset's schema "
            "('integer', 'type') before a release, they are public knowledge instead (a release "
            "keeps the facts its own source had)"]


def _plain(v: Any) -> Any:
    return v.item() if isinstance(v, np.generic) else v


@dataclass
class Encoding:
    plans: list[ColumnPlan]
    width: int = field(init=False)

    def __post_init__(self) -> None:
        start = 0
        for plan in self.plans:
            plan.start = start
            start += plan.width
        self.width = start

    @property
    def n_numeric(self) -> int:
        return sum(p.kind == "numeric" for p in self.plans)

    @property
    def n_categorical(self) -> int:
        return sum(p.kind == "categorical" for p in self.plans)

    @property
    def l1_diameter(self) -> float:
        """max ‖x - x'‖₁ over two encoded records."""
        return float(self.n_numeric + 2 * self.n_categorical)

    @property
    def l2_diameter(self) -> float:
        """max ‖x - x'‖₂ over two encoded records."""
        return math.sqrt(self.l1_diameter)

    @property
    def max_l1_norm(self) -> float:
        """max ‖x‖₁ of an encoded record (every coordinate ≥ 0)."""
        return float(self.n_numeric + self.n_categorical)

    def names(self) -> list[str]:
        out: list[str] = []
        for p in self.plans:
            out += [p.name] if p.kind == "numeric" else [f"{p.name}={c}" for c in p.categories]
        return out

    def encode(self, frame: pd.DataFrame, fill: dict[str, float] | None = None) -> np.ndarray:
        fill = fill or {}
        blocks = [p.encode(frame[p.name], fill.get(p.name)) for p in self.plans]
        if not blocks:
            return np.zeros((len(frame), 0))
        return np.hstack(blocks)

    def decode(self, matrix: np.ndarray, index: pd.Index) -> pd.DataFrame:
        cols = {p.name: p.decode(matrix[:, p.start:p.start + p.width]) for p in self.plans}
        return pd.DataFrame(cols, index=index)


# ---------------------------------------------------------------------------- planning
def released_columns(columns: list[ColumnInfo], chosen: list[str] | None) -> list[ColumnInfo]:
    """The columns a release covers: ``chosen`` or every column that is not an identifier."""
    by_name = {c.name: c for c in columns}
    if chosen is None:
        return [c for c in columns if c.role != "identifier"]
    for name in chosen:
        if name not in by_name:
            raise MethodInputError(f"unknown column {name!r}")
        if by_name[name].role == "identifier":
            raise MethodInputError(f"column {name!r} is an identifier, which is never released; give it "
                                   "another role in the dataset schema to release it")
    return [by_name[n] for n in chosen]


# where a domain can be declared: a job on a release reads the release's own schema
SCHEMA_WHERE = ("the dataset schema when the job runs on the dataset (a release keeps"
                " the schema it was made with: declare them for a release in the parameters)")


def plan_column(info: ColumnInfo, bounds: dict[str, tuple[float, float]] | None,
                categories: dict[str, list[Any]] | None, frame: pd.DataFrame | None,
                *, require_declared: bool) -> ColumnPlan:
    """Bounds/categories from the params, else the schema, else (only when
    ``require_declared`` is False and a frame is given) read from the data."""
    name = info.name
    if info.type == "numeric":
        given = (bounds or {}).get(name)
        source = "params" if given is not None else "schema" if info.bounds is not None else None
        lohi = given if given is not None else info.bounds
        if lohi is None:
            if require_declared or frame is None:
                raise MethodInputError(
                    f"column {name!r} has no declared bounds: give them in the 'bounds' parameter "
                    f"or in {SCHEMA_WHERE} (bounds read from the data are not private)")
            values = pd.to_numeric(frame[name], errors="coerce")
            lohi = (float(values.min()), float(values.max())) if values.notna().any() else (0.0, 1.0)
            if lohi[1] <= lohi[0]:
                lohi = (lohi[0], lohi[0] + 1.0)
            source = "data"
        lo, hi = float(lohi[0]), float(lohi[1])
        if (problem := bounds_problem(lo, hi, integer=info.integer)) is not None:
            raise MethodInputError(f"column {name!r}: bounds {problem}")
        if info.integer and math.ceil(lo) > math.floor(hi):
            raise MethodInputError(f"column {name!r} is integer but its bounds hold no integer")
        return ColumnPlan(name, "numeric", lo, hi, info.integer, source=source, info=info)
    given_c = (categories or {}).get(name)
    if given_c is not None:
        cats, source = tuple(given_c), "params"
    elif info.categories is not None:
        cats, source = schema_categories(info), "schema"
    elif info.type == "boolean" and frame is not None and pd.api.types.is_bool_dtype(frame[name]):
        cats, source = (False, True), "type"
    elif require_declared or frame is None:
        raise MethodInputError(
            f"column {name!r} has no declared categories: give them in the 'categories' parameter "
            f"or in {SCHEMA_WHERE} (a domain read from the data is not private)")
    else:
        cats, source = _categories_in(frame[name]), "data"
        if not cats:
            raise MethodInputError(f"column {name!r} has no values to read its categories from: "
                                   "declare them in the 'categories' parameter")
    if (problem := categories_problem(cats)) is not None:
        raise MethodInputError(f"column {name!r}: categories {problem}")
    return ColumnPlan(name, "categorical", categories=cats, source=source, info=info)


def schema_categories(info: ColumnInfo) -> tuple[Any, ...]:
    """A column's categories as its schema lists them; a schema's categories are text, so a
    boolean column's ("False", "True", as a release lists its boolean columns) stand for its truth
    values. Read as text, a job on a release turned the column into the strings "True"/"False"."""
    cats = tuple(info.categories or ())
    if info.type == "boolean" and cats and set(cats) <= {"False", "True"}:
        return tuple(c == "True" for c in cats)
    return cats


def _categories_in(series: pd.Series) -> tuple[Any, ...]:
    """The distinct values of a column (paper mode's domain read from the data), as text when
    they are of mixed kinds (values are matched to categories by their text)."""
    values = pd.unique(series.dropna()).tolist()
    if len({_kind(v) for v in values}) > 1:
        values = list({str(v) for v in values})
    return tuple(sorted(values, key=str))


def bounds_problem(lo: float, hi: float, *, integer: bool) -> str | None:
    """Why [lo, hi] cannot be a numeric column's bounds, or None. Finite, ordered, a range
    that is finite and ≥ MIN_RANGE (the output grid and the marginals' bins divide it), and for
    an integer column within ±2^53 (decoded values are float64 integers cast to int64)."""
    if not (math.isfinite(lo) and math.isfinite(hi)):
        return "must be finite numbers"
    if not lo < hi:
        return "need lo < hi"
    if not math.isfinite(hi - lo) or hi - lo < MIN_RANGE:
        return f"need a range hi - lo that is finite (below 1.8e308) and at least {MIN_RANGE:g}"
    if integer and max(abs(lo), abs(hi)) > MAX_INTEGER_BOUND:
        return (f"must lie within ±2^53 = ±{MAX_INTEGER_BOUND:.0f} for an integer column (its "
                "values are decoded through float64)")
    return None


def _kind(value: Any) -> str:
    if isinstance(value, (bool, np.bool_)):
        return "booleans"
    if isinstance(value, (int, np.integer)):
        return "integers"
    if isinstance(value, (float, np.floating)):
        return "decimals"
    if isinstance(value, str):
        return "text"
    return type(value).__name__


def categories_problem(categories: list[Any] | tuple[Any, ...]) -> str | None:
    """Why a declared domain cannot be used, or None. Values are matched to categories by their
    text and the released column holds the categories themselves, so they must be of one kind
    (all text, all integers, all decimals or all booleans — 1, 1.0 and true are equal to
    pandas but differ as text) and distinct both as values and as text."""
    if len(categories) < 1:
        return "must not be empty"
    kinds = sorted({_kind(c) for c in categories})
    if not set(kinds) <= {"booleans", "integers", "decimals", "text"}:
        return "must be text, numbers or booleans"
    if len(kinds) > 1:
        return (f"mix {', '.join(kinds[:-1])} and {kinds[-1]}: declare them all of one kind "
                "(for example all as text, which is how values are matched to them)")
    if kinds == ["decimals"] and not all(math.isfinite(c) for c in categories):
        return "must be finite numbers"
    if len(set(categories)) != len(categories) or len({str(c) for c in categories}) != len(categories):
        return "must be distinct"
    return None


def check_declared(columns: list[ColumnInfo], bounds: dict | None, categories: dict | None) -> None:
    """A MethodInputError naming every column without declared bounds/categories at once (one
    round trip to fix them all), then the first declared domain that is invalid. Booleans
    are excepted: their domain is known when the data is boolean-typed."""
    undeclared: dict[str, list[str]] = {"bounds": [], "categories": []}
    for info in columns:
        if info.type == "numeric":
            if (bounds or {}).get(info.name) is None and info.bounds is None:
                undeclared["bounds"].append(info.name)
        elif info.type != "boolean" and (categories or {}).get(info.name) is None and info.categories is None:
            undeclared["categories"].append(info.name)
    if undeclared["bounds"] or undeclared["categories"]:
        lacking = "; ".join(f"{what} for {', '.join(map(repr, names))}" for what, names in undeclared.items() if names)
        raise MethodInputError(
            f"{sum(map(len, undeclared.values()))} column(s) have no declared domain — {lacking}: give "
            f"them in the 'bounds' / 'categories' parameters or in {SCHEMA_WHERE} (a domain read "
            "from the data is not private)")
    for info in columns:
        declared_plan(info, bounds, categories)


def declared_plan(info: ColumnInfo, bounds: dict | None, categories: dict | None) -> ColumnPlan:
    """A column's plan from its declared domain alone (params, then schema), without the data:
    what a job's checks and its strict-mode encodings see. A boolean column without declared
    categories has its two levels (its data is boolean-typed: the upload made it so)."""
    if info.type == "boolean" and info.categories is None and (categories or {}).get(info.name) is None:
        return ColumnPlan(info.name, "categorical", categories=(False, True), source="type", info=info)
    return plan_column(info, bounds, categories, None, require_declared=True)


def check_given(columns: list[ColumnInfo], bounds: dict | None, categories: dict | None) -> None:
    """Validate the bounds and categories that are declared (params or schema), leaving the
    columns without any (paper mode reads those from the data)."""
    for info in columns:
        given = ((bounds or {}).get(info.name) is not None or info.bounds is not None
                 if info.type == "numeric" else
                 (categories or {}).get(info.name) is not None or info.categories is not None)
        if given:
            plan_column(info, bounds, categories, None, require_declared=True)


# ------------------------------------------------------------------------ calibration
def calibrate(matrix: np.ndarray, enc: Encoding, mean: np.ndarray, iterations: int = 60) -> np.ndarray:
    """Post-processing that gives a noise-dominated release the category frequencies of an
    estimate: per one-hot block, the argmax of the block plus per-category offsets chosen so
    that category c is released about as often as ``mean[block]`` (the estimated frequencies)
    says — exactly for two categories (the top records by score difference), by iterative
    proportional fitting otherwise. Plain argmax of a noise-dominated block releases every
    category about equally often; the offsets keep the order of the records' scores, hence the
    associations the projection carried. Numeric columns are left alone (a DP variance estimate
    was tried and is too noisy in high dimension to rescale them)."""
    out = matrix.copy()
    rows = np.arange(len(out))
    for plan in enc.plans:
        if plan.kind == "numeric":
            continue
        cols = slice(plan.start, plan.start + plan.width)
        block = np.ascontiguousarray(out[:, cols])
        want = np.clip(mean[cols], 0.0, None)
        want = want / want.sum() if want.sum() > 0 else np.full(plan.width, 1.0 / plan.width)
        want = want * len(block)
        if plan.width == 2:
            chosen = _top(block[:, 1] - block[:, 0], int(round(want[1])))
        else:
            chosen = _fitted_argmax(block, want, iterations)
        out[:, cols] = 0.0
        out[rows, plan.start + chosen] = 1.0
    return out


def _top(score: np.ndarray, count: int) -> np.ndarray:
    """1 for the ``count`` highest scores, else 0."""
    chosen = np.zeros(len(score), dtype=np.int64)
    if count > 0:
        chosen[np.argpartition(score, len(score) - min(count, len(score)))[-count:]] = 1
    return chosen


def _fitted_argmax(block: np.ndarray, want: np.ndarray, iterations: int) -> np.ndarray:
    """argmax(block + b) with offsets b fitted until every count is within 0.2% of ``want``."""
    offsets = np.zeros(block.shape[1])
    step = 0.3 * (block.std() or 1.0)
    tolerance = max(1.0, 0.002 * len(block))
    for _ in range(iterations):
        counts = np.bincount(np.argmax(block + offsets, axis=1), minlength=block.shape[1])
        if np.all(np.abs(counts - want) <= tolerance):
            break
        offsets += step * (np.log(want + 0.5) - np.log(counts + 0.5))
    return np.argmax(block + offsets, axis=1)
