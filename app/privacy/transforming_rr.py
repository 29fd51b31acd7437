"""TRR — transforming randomized response on numeric columns (spec 01 §3).

Two finite sets A = {a_1..a_m} and B = {b_1..b_m} are drawn from Gaussians; every numeric cell
x is published as y = a·x + b with a and b drawn uniformly from the sets, independently per
cell. The sets and their moments are published with the release, so the column's mean and
variance can be reconstructed (paper eqs. 2, 3). TRR gives no differential-privacy
guarantee: its only privacy figure is the paper's breach-interval width.

The mechanism and the moment estimators are in trr_mechanism.py, the disclosure warnings in
trr_disclosure.py; this module holds the parameters, the checks, the run, the reconstructor and
the registration.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np
import pandas as pd
from pydantic import Field, field_validator

from app.privacy.context import RunContext
from app.privacy.data import ColumnInfo, MethodInput, SourceRelease
from app.privacy.guarantees import guarantee, unchanged_columns
from app.privacy.registry import (
    MethodKind, MethodInputError, MethodSpec, Params, register, register_channel_builder, register_reconstructor,
)
from app.privacy.results import ReleaseResult
from app.privacy.rr_channels import NumericChannel, columns_to_reconstruct, unique_names, with_columns
from app.privacy.trr_disclosure import sets_determined, recovery_warnings, zeros_recognizable_in
from app.privacy.trr_mechanism import breach_widths, draw_sets, moments, reconstruct_moments, transform

# How far the transform may reach. The release and its reconstruction take moments of the
# published values up to the fourth power, summed over every cell: with |y| ≤ 1e75 the shifted
# values stay within 2e75, whose fourth powers summed over 10^7 cells (twice the service's row
# limit) stay below the float64 maximum (1.6e308 < 1.8e308). Hence |y| ≤ MAX_PUBLISHED, and the
# Gaussians' means within the same range (at x = 0 the published value is b itself).
MAX_PUBLISHED = 1e75
# The mean is reconstructed by dividing by Ā (x̄ = (ȳ − B̄)/Ā): below this it is not.
MIN_A_MEAN = 1e-9
# The sets' draws are bounded at their mean ± this many standard deviations when a column's
# reach is priced from its declared bounds before the run (a Gaussian passes 10 sd with
# probability 1.5e-23 per draw); the run checks the sets actually drawn.
_SD_REACH = 10.0
PAPER = ("Zhang & Tang, Privacy Preserving Naive Bayes Classification, Chinese Journal of "
         "Computers 30(8), 2007 (seed 000), §4 and Table 2")


# ----------------------------------------------------------------------------- the method
def _valid_mean(name: str, v: float | None) -> float | None:
    """A Gaussian's mean: finite, within ±MAX_PUBLISHED; a_mean also away from 0."""
    if v is None:
        return v
    if not math.isfinite(v) or abs(v) > MAX_PUBLISHED:
        raise ValueError(f"{name} must be a finite number within ±{MAX_PUBLISHED:.0e}: beyond it "
                         "the published values or their moments overflow")
    if name == "a_mean" and v == 0.0:
        raise ValueError("a_mean must not be 0: the mean could not be reconstructed")
    if name == "a_mean" and abs(v) < MIN_A_MEAN:
        raise ValueError(f"|a_mean| must be at least {MIN_A_MEAN:.0e}: the mean is reconstructed "
                         "by dividing by it")
    return v


class TrrOverride(Params):
    a_mean: float | None = Field(None, description="mean of the Gaussian the set A is drawn from")
    a_var: float | None = Field(None, ge=0.0, le=1e6, description="variance of A's Gaussian")
    b_mean: float | None = Field(None, description="mean of B's Gaussian")
    b_var: float | None = Field(None, ge=0.0, le=1e12, description="variance of B's Gaussian")

    @field_validator("a_mean", "b_mean")
    @classmethod
    def _means(cls, v, info):
        return _valid_mean(info.field_name, v)


class TrrParams(Params):
    columns: list[str] | None = Field(
        None, description="numeric columns to transform; default: every numeric column that is not "
        "the label or an identifier")
    a_mean: float = Field(1.0, description="mean of the Gaussian the set A is drawn from: "
                          "1e-9 ≤ |a_mean| ≤ 1e75 (Ā ≠ 0 to reconstruct the mean)")
    a_var: float = Field(1.0, ge=0.0, le=1e6, description="variance of A's Gaussian")
    b_mean: float = Field(0.0, description="mean of B's Gaussian, |b_mean| ≤ 1e75 (the paper "
                          "designs B̄ = 0)")
    b_var: float = Field(1.0, ge=0.0, le=1e12, description="variance of B's Gaussian")
    set_size: int = Field(256, ge=1, le=65_536,
                          description="m, the number of elements of each set")
    publish_sets: bool = Field(
        False, description="publish the sets A and B themselves, not only their moments (which "
        "are all that reconstruction and PPNB need): then a published y leaves at most |A|·|B| "
        "candidate originals, and values on a grid (whole numbers) are recovered almost all")
    per_column: dict[str, TrrOverride] = Field(
        default_factory=dict, description="per-column overrides of the Gaussians' parameters")

    _distinct = field_validator("columns")(classmethod(lambda cls, v: unique_names(v)))

    @field_validator("a_mean", "b_mean")
    @classmethod
    def _means(cls, v, info):
        return _valid_mean(info.field_name, v)


def _trr_columns(params: TrrParams, columns: list[ColumnInfo]) -> list[str]:
    by_name = {c.name: c for c in columns}
    if params.columns is None:
        chosen = [c.name for c in columns if c.type == "numeric" and c.role not in ("label", "identifier")]
    else:
        chosen = list(params.columns)
    for name in chosen:
        if name not in by_name:
            raise MethodInputError(f"unknown column {name!r}")
        if by_name[name].type != "numeric":
            raise MethodInputError(f"column {name!r} is {by_name[name].type}; trr transforms numeric "
                                   "columns only")
    for name in params.per_column:
        if name not in chosen:
            raise MethodInputError(f"parameters given for column {name!r}, which is not transformed")
    if not chosen:
        raise MethodInputError("no numeric column to transform")
    return chosen


def _too_far(name: str, blame_b: bool) -> MethodInputError:
    knobs = "|b_mean| or b_var" if blame_b else "|a_mean| or a_var"
    return MethodInputError(
        f"column {name!r}: y = a·x + b would reach beyond ±{MAX_PUBLISHED:.0e}, where the "
        f"published values or their moments overflow; lower {knobs}")


def _check_reach(name: str, x_max: float, a_max: float, b_max: float) -> None:
    """MethodInputError unless |a·x + b| ≤ |a|·|x| + |b| stays within MAX_PUBLISHED."""
    if MIN_A_MEAN * x_max > MAX_PUBLISHED:  # "lower |a_mean|" was advice no allowed a_mean could follow
        raise MethodInputError(f"column {name!r} holds values too large for trr: even |a_mean| = "
                               f"{MIN_A_MEAN:.0e} would publish beyond ±{MAX_PUBLISHED:.0e}; rescale the "
                               "column or leave it out of 'columns'")
    if a_max * x_max + b_max > MAX_PUBLISHED:
        raise _too_far(name, blame_b=b_max > MAX_PUBLISHED / 2)


def _largest_magnitude(x: np.ndarray) -> float:
    """max |x| over the non-missing cells (0 when every cell is missing), without copies:
    fmax/fmin skip NaN."""
    if len(x) == 0:
        return 0.0
    hi, lo = float(np.fmax.reduce(x)), float(np.fmin.reduce(x))
    return 0.0 if math.isnan(hi) else max(abs(hi), abs(lo))


def _gaussians(name: str, params: TrrParams) -> dict[str, float]:
    o = params.per_column.get(name)
    pick = lambda key: getattr(o, key) if o is not None and getattr(o, key) is not None else getattr(params, key)  # noqa: E731
    return {key: float(pick(key)) for key in ("a_mean", "a_var", "b_mean", "b_var")}


def run_trr(data: MethodInput, params: TrrParams, ctx: RunContext) -> ReleaseResult:
    frame = data.frame
    if frame is None:
        raise MethodInputError("trr needs a table")
    chosen = _trr_columns(params, data.columns)
    new_columns: dict[str, np.ndarray] = {}
    out_columns = list(data.columns)
    per_column: dict[str, Any] = {}
    for i, name in enumerate(chosen):
        ctx.progress(i / len(chosen), f"transforming {name}")
        x = numeric_values(frame[name], name)
        if np.isinf(x).any():
            raise MethodInputError(f"column {name!r} holds infinite values")
        g = _gaussians(name, params)
        sets = draw_sets(params.set_size, g["a_mean"], g["a_var"], g["b_mean"], g["b_var"], ctx.rng)
        a_bar, a_var, b_bar, b_var = sets.moments
        if abs(a_bar) < MIN_A_MEAN:
            raise MethodInputError(f"column {name!r}: the drawn set A has mean ≈ 0, so the mean "
                                   "could not be reconstructed; choose a_mean further from 0")
        # the sets actually drawn and the column's largest magnitude bound every published value
        _check_reach(name, _largest_magnitude(x), float(np.abs(sets.a).max()),
                     float(np.abs(sets.b).max()))
        y = transform(x, sets, ctx.rng)
        if np.isinf(y).any():  # cannot happen after the reach check (NaN = a missing cell)
            raise _too_far(name, blame_b=False)
        new_columns[name] = y
        idx = next(j for j, c in enumerate(out_columns) if c.name == name)
        # decimals by the transform, not by the data: 'integer' is no longer a fact read from it
        out_columns[idx] = dataclasses.replace(out_columns[idx], bounds=None, integer=False, distinct=None,
                                               inferred=tuple(f for f in out_columns[idx].inferred
                                                              if f != "integer"))
        # the breach widths need only the reconstructed variance: no higher moments here
        published = moments(y, higher=False)
        mean, var = NumericChannel(((a_bar, a_var, b_bar, b_var),)).invert(published.mean, published.var) \
            if published.n > 1 else (math.nan, 0.0)
        per_column[name] = {
            "set_size": params.set_size, "gaussians": g,
            **({"a_set": sets.a.tolist(), "b_set": sets.b.tolist()} if params.publish_sets else {}),
            "determined_by_moments": sets_determined(sets),
            "zeros_recognizable": zeros_recognizable_in(x, y, b_bar, b_var),
            "a_mean": a_bar, "a_var": a_var, "b_mean": b_bar, "b_var": b_var,
            "missing_cells_left_out": len(y) - published.n,
            "reconstructed_mean": _finite(mean), "reconstructed_variance": max(float(var), 0.0),
            "variance_clipped": bool(var <= 0.0),
            "breach_width": breach_widths(var),
        }
    out = with_columns(frame, new_columns)
    unprotected = [c for c in frame.columns if c not in per_column]
    statements = [
        "TRR gives NO differential-privacy guarantee: y = a·x + b with a, b from published finite "
        "sets bounds no likelihood ratio; its only privacy figure is the breach-interval width",
        "breach_width[C] = 2·z_{(1+C)/2}·Ŝ_x, the width of the interval that holds the original "
        "value with confidence C under the reconstructed Gaussian (paper Table 2)",
        "the sets A and B (and their moments, population formulas) are published in the metadata"
        if params.publish_sets else
        "the moments of the sets A and B (population formulas) are published in the metadata, not "
        "the sets (publish_sets: false)",
    ]
    warnings: list[str] = []
    if any(c["missing_cells_left_out"] for c in per_column.values()):
        warnings.append("missing cells stay missing: whether a cell is missing is unprotected")
    clipped = [n for n, c in per_column.items() if c["variance_clipped"]]
    if clipped:
        warnings.append("reconstructed variance ≤ 0 (clipped to 0) for: " + ", ".join(clipped))
    warnings.extend(recovery_warnings(per_column, params.publish_sets))
    if unprotected:
        statements.append(unchanged_columns(unprotected, "transformed", data.source is not None))
    ctx.progress(1.0, "done")
    return ReleaseResult(
        frame=out,
        columns=out_columns,
        guarantees=guarantee(
            "none", rng=ctx.rng.name, private=False, epsilon=None, protected_columns=chosen,
            unprotected_columns=unprotected, statements=statements, warnings=warnings,
            columns={name: {"breach_width": c["breach_width"], "variance_clipped": c["variance_clipped"]}
                     for name, c in per_column.items()},
        ),
        metadata={"trr": {"columns": per_column}},
    )


def numeric_values(series: pd.Series, name: str) -> np.ndarray:
    """The column as float64 with NaN for missing cells (no copy when it already is)."""
    if series.dtype == np.float64:
        return series.to_numpy()
    try:
        return pd.to_numeric(series, errors="raise").to_numpy(dtype=np.float64, na_value=np.nan)
    except (ValueError, TypeError):
        raise MethodInputError(f"column {name!r} holds non-numeric values") from None


def _finite(x: float) -> float | None:
    return None if x is None or not math.isfinite(x) else float(x)


# The delta-method SE of the variance rests on the published values' fourth central moment; when
# one value holds more than this share of it, the SE moves with that one value's randomization
# (the acceptance check found 30 % coverage of a 95 % interval on Bank's `previous`). Measured
# over 150 releases of 5,000 values (a ~ N(1, 1)): one value of 275 among Poisson(0.5) ones is
# flagged in 96 % of them (coverage 69 %); Poisson(0.5) alone 1 %, normal 0 %; lognormal(0, 1.2)
# 38 %, whose coverage is 92 % overall (the delta method is rough on heavy tails)
EXTREME_SHARE = 0.5


def reconstruct_numeric(data: MethodInput, step: dict[str, Any], params: Any, ctx: RunContext) -> dict[str, Any]:
    """Per numeric column of ``step``: reconstructed mean and variance (with standard errors and
    a flag when the variance was clipped), inverted through later TRR steps on the column."""
    if data.frame is None or data.source is None:
        raise MethodInputError("reconstruct needs a table release")
    found, notes = columns_to_reconstruct(data, step, getattr(params, "columns", None), NumericChannel)
    out: dict[str, Any] = {}
    for name, channel in found:
        y = numeric_values(data.frame[name], name)
        try:
            rec = reconstruct_moments(y, channel)
        except ValueError:
            notes.append(f"column {name!r}: fewer than 2 published values; not reconstructed")
            continue
        out[name] = {"kind": "numeric", **{k: _finite(v) if isinstance(v, float) else v
                                           for k, v in rec.items()},
                     "breach_width": breach_widths(rec["variance"]), "through_steps": list(channel.steps)}
        if rec["variance_clipped"]:
            notes.append(f"column {name!r}: the variance estimate came out ≤ 0 (x̄² large next to "
                         "Var(x)); reported as 0 and flagged")
        if rec["extreme_share_of_fourth_moment"] > EXTREME_SHARE:
            notes.append(f"column {name!r}: one published value holds "
                         f"{rec['extreme_share_of_fourth_moment']:.0%} of the fourth central moment, "
                         "which the variance's standard error is estimated from: that standard error "
                         "(and a variance interval built on it) may be far off for this column")
    return {"columns": out, "notes": notes,
            "standard_errors": "delta method on (ȳ, S_y²) with their large-sample covariance; they "
                               "cover sampling and randomization"}


def _check_trr(params: TrrParams, columns: list[ColumnInfo], source: SourceRelease | None) -> None:
    by_name = {c.name: c for c in columns}
    for name in _trr_columns(params, columns):
        bounds = by_name[name].bounds
        if bounds is None:
            continue  # the run checks the column's own values
        g = _gaussians(name, params)
        _check_reach(name, max(abs(bounds[0]), abs(bounds[1])),
                     abs(g["a_mean"]) + _SD_REACH * math.sqrt(g["a_var"]),
                     abs(g["b_mean"]) + _SD_REACH * math.sqrt(g["b_var"]))


register(MethodSpec(
    name="trr",
    family="randomized_response",
    kind=MethodKind.release,
    summary="Transforming randomized response: each numeric cell x is published as a·x + b, with a "
            "and b drawn from two published finite sets of Gaussian draws.",
    params=TrrParams,
    guarantee="none: no differential privacy; breach-interval widths at C = 0.5, 0.9, 0.999",
    paper=PAPER,
    run=run_trr,
    check=_check_trr,
    docs="docs/methods/trr.md",
))


def trr_channels(metadata: dict[str, Any]) -> dict[str, NumericChannel]:
    """y = a·x + b per column, with the moments of the sets a and b were drawn from."""
    return {name: NumericChannel(((float(c["a_mean"]), float(c["a_var"]), float(c["b_mean"]), float(c["b_var"])),),
                                 ("trr",))
            for name, c in metadata.get("trr", {}).get("columns", {}).items()}


register_reconstructor("trr", reconstruct_numeric)
register_channel_builder("trr", trr_channels)
