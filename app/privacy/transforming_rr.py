"""TRR — transforming randomized response on numeric columns (spec 01 §3).

Two finite sets A = {a_1..a_m} and B = {b_1..b_m} are drawn from Gaussians; every numeric cell
x is published as y = a·x + b with a and b drawn uniformly from the sets, independently per
cell. The sets and their moments are published with the release, so the column's mean and
variance can be reconstructed (paper eqs. 2, 3). TRR gives no differential-privacy
guarantee: its only privacy figure is the paper's breach-interval width.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np
import pandas as pd
from pydantic import Field, field_validator
from scipy.stats import norm

from app.privacy.context import RunContext
from app.privacy.data import ColumnInfo, MethodInput, SourceRelease
from app.privacy.guarantees import guarantee, unchanged_columns
from app.privacy.registry import (
    MethodKind, MethodInputError, MethodSpec, Params, register, register_channel_builder, register_reconstructor,
)
from app.privacy.results import ReleaseResult
from app.privacy.rng import SecureRandom
from app.privacy.rr_channels import NumericChannel, columns_to_reconstruct, unique_names, with_columns

_CHUNK = 1 << 16
BREACH_CONFIDENCES = (0.5, 0.9, 0.999)
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


# ----------------------------------------------------------------------------------- core
@dataclasses.dataclass(frozen=True)
class TrrSets:
    a: np.ndarray
    b: np.ndarray

    @property
    def moments(self) -> tuple[float, float, float, float]:
        """(Ā, S_A², B̄, S_B²) with the paper's population formulas (divisor m)."""
        return float(self.a.mean()), float(self.a.var()), float(self.b.mean()), float(self.b.var())


def draw_sets(m: int, a_mean: float, a_var: float, b_mean: float, b_var: float,
              rng: SecureRandom) -> TrrSets:
    return TrrSets(a=rng.normal(m, loc=a_mean, scale=math.sqrt(a_var)),
                   b=rng.normal(m, loc=b_mean, scale=math.sqrt(b_var)))


def _uniform_index(u: np.ndarray, m: int) -> np.ndarray:
    """floor(u·m / 2^32): uniform on [0, m) to within m/2^32."""
    return ((u.astype(np.uint64) * np.uint64(m)) >> np.uint64(32)).astype(np.intp)


def _index_pairs(count: int, m_a: int, m_b: int, rng: SecureRandom) -> tuple[np.ndarray, np.ndarray]:
    """Independent uniform indices into A and B. When both sizes are powers of two that fit
    together in 32 bits, one random word holds both (exactly uniform); else one word each."""
    bits_a, bits_b = m_a.bit_length() - 1, m_b.bit_length() - 1
    if m_a == 1 << bits_a and m_b == 1 << bits_b and bits_a + bits_b <= 32:
        u = rng.uint32(count)
        ia = u >> np.uint32(32 - bits_a) if bits_a else np.zeros(count, np.uint32)
        ib = (u >> np.uint32(32 - bits_a - bits_b)) & np.uint32(m_b - 1) if bits_b else np.zeros(count, np.uint32)
        return ia, ib
    u = rng.uint32(2 * count)
    return _uniform_index(u[:count], m_a), _uniform_index(u[count:], m_b)


def transform(x: np.ndarray, sets: TrrSets, rng: SecureRandom) -> np.ndarray:
    """y = a·x + b, a and b drawn uniformly and independently from the sets per cell.
    NaN (a missing cell) stays NaN. Works in cache-sized chunks."""
    x = np.asarray(x, dtype=np.float64)
    out = np.empty_like(x)
    for start in range(0, len(x), _CHUNK):
        stop = min(start + _CHUNK, len(x))
        ia, ib = _index_pairs(stop - start, len(sets.a), len(sets.b), rng)
        block = out[start:stop]
        np.multiply(sets.a.take(ia), x[start:stop], out=block)
        block += sets.b.take(ib)
    return out


@dataclasses.dataclass(frozen=True)
class Moments:
    """n, mean, sample variance (divisor n-1) and the 3rd and 4th central moments."""

    n: int
    mean: float
    var: float
    mu3: float = math.nan
    mu4: float = math.nan


def moments(y: np.ndarray, higher: bool = True) -> Moments:
    """Moments of the non-missing values from power sums of (y - shift) taken in cache-sized
    chunks (a few passes over L2-resident data instead of one pass per temporary array over
    memory). The shift — a mean of the first values — keeps the sums well conditioned."""
    y = np.asarray(y, dtype=np.float64)
    head = y[:1024][~np.isnan(y[:1024])]
    shift = float(head.mean()) if len(head) else 0.0
    n, sums = 0, np.zeros(4)
    for start in range(0, len(y), _CHUNK):
        d = y[start:start + _CHUNK] - shift
        nan = np.isnan(d)
        if nan.any():
            d = d[~nan]
        n += len(d)
        d2 = d * d
        sums += (d.sum(), d2.sum(), (d2 * d).sum() if higher else 0.0, (d2 * d2).sum() if higher else 0.0)
    if n == 0:
        return Moments(0, math.nan, math.nan)
    m1, m2, m3, m4 = (float(v) for v in sums / n)
    central2 = max(m2 - m1 * m1, 0.0)
    var = central2 * n / (n - 1) if n > 1 else 0.0
    if not higher:
        return Moments(n, shift + m1, var)
    mu3 = m3 - 3 * m1 * m2 + 2 * m1**3
    mu4 = m4 - 4 * m1 * m3 + 6 * m1 * m1 * m2 - 3 * m1**4
    return Moments(n, shift + m1, var, mu3, mu4)


def sample_moments(y: np.ndarray) -> tuple[int, float, float]:
    """n, ȳ and the sample variance S_y² (divisor n-1) of the non-missing values."""
    m = moments(y, higher=False)
    return m.n, m.mean, m.var


def reconstruct_moments(y: np.ndarray, channel: NumericChannel) -> dict[str, Any]:
    """x̂̄ and Ŝ_x² of the original column from its published values (paper eqs. 2, 3), with
    standard errors by the delta method on (ȳ, S_y²). The variance estimate can come out ≤ 0
    (the S_A²·x̄² term dominates when x̄² ≫ Var(x)): then it is clipped to 0 and flagged."""
    m = moments(y)
    if m.n < 2:
        raise ValueError("fewer than 2 published values")
    mean, var = (float(v) for v in channel.invert(m.mean, m.var))
    cov = np.array([[m.var, m.mu3], [m.mu3, max(m.mu4 - m.var * m.var, 0.0)]]) / m.n
    grad = _gradient(channel, m.mean, m.var)
    se_var = float(np.sqrt(max(grad[1] @ cov @ grad[1], 0.0)))
    farthest = float(np.nanmax(np.abs(y - m.mean)))
    fourth = m.mu4 * m.n
    return {
        "n": m.n, "published_mean": m.mean, "published_variance": m.var,
        "mean": mean, "mean_standard_error": float(np.sqrt(m.var / m.n) * abs(channel.mean_gain)),
        "variance_raw": var, "variance": max(var, 0.0), "variance_clipped": bool(var <= 0.0),
        "variance_standard_error": se_var,
        "extreme_share_of_fourth_moment": farthest**4 / fourth if fourth > 0 else 0.0,
    }


def _gradient(channel: NumericChannel, mean_y: float, var_y: float) -> np.ndarray:
    """∂(x̄, S_x²)/∂(ȳ, S_y²) by central differences (invert is a low-degree polynomial)."""
    rows = np.zeros((2, 2))
    for j, (dm, dv) in enumerate(((1.0, 0.0), (0.0, 1.0))):
        h = 1e-6 * max(abs(mean_y) if j == 0 else abs(var_y), 1.0)
        hi = channel.invert(mean_y + h * dm, var_y + h * dv)
        lo = channel.invert(mean_y - h * dm, var_y - h * dv)
        rows[:, j] = (np.asarray(hi) - np.asarray(lo)) / (2 * h)
    return rows


def breach_widths(variance: float) -> dict[str, float]:
    """BreachWidth(C) = 2·z_{(1+C)/2}·Ŝ_x (paper Table 2) for C = 0.5, 0.9, 0.999."""
    sd = math.sqrt(max(variance, 0.0))
    return {str(c): float(2.0 * norm.ppf((1.0 + c) / 2.0) * sd) for c in BREACH_CONFIDENCES}


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
            "determined_by_moments": _determined(sets),
            "zeros_recognizable": _zeros_recognizable(x, y, b_bar, b_var),
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
    warnings.extend(_recovery_warnings(per_column, params.publish_sets))
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


def _determined(sets: TrrSets) -> bool:
    """Whether the published moments give the sets away: two distinct values or fewer per set
    (mean ± standard deviation), or a set of one repeated value."""
    return len(np.unique(sets.a)) <= 2 and len(np.unique(sets.b)) <= 2


ZERO_SHARE = 0.05        # cells holding 0, of the non-missing ones, for the zero warning
ZERO_POSTERIOR = 0.9     # share of the values in B's band that come from a 0


def _zeros_recognizable(x: np.ndarray, y: np.ndarray, b_bar: float, b_var: float) -> bool:
    """Whether cells holding 0 stand out in the release: y = a·0 + b = b, so they fall within B's
    band (mean ± 4 standard deviations), and when they make up most of the values there (the
    column's other values lie far from 0, e.g. Adult's capital-gain: 91.7% zeros, others ≥ 114)
    a published value in the band says the original is 0."""
    present = ~np.isnan(x)
    zero = present & (x == 0)
    if not zero.any() or zero.sum() < ZERO_SHARE * present.sum():
        return False
    band = present & (np.abs(y - b_bar) <= 4.0 * math.sqrt(b_var) + 1e-9 * max(1.0, abs(b_bar)))
    return bool(band.any() and (zero & band).sum() >= ZERO_POSTERIOR * band.sum())


def _recovery_warnings(per_column: dict[str, Any], published: bool) -> list[str]:
    """What the metadata gives away beyond the breach widths. With the sets published, a y
    leaves at most |A|·|B| candidates (y - b)/a, and a wrong pair almost never lands on the grid
    the true values lie on (an attack on Adult's age, education-num and hours-per-week recovered
    99.6% of the cells). Sets of one or two distinct values follow from their moments alone, so
    the same holds for them unpublished; with one value each, every value is recovered."""
    out = []
    if published and per_column:
        out.append("the sets A and B are published in full (publish_sets), so a published y leaves at "
                   "most |A|·|B| candidate originals (y - b)/a: where the original values lie on a "
                   "known grid (whole numbers, a fixed number of decimals) the true value is almost "
                   "always the only candidate on it and is recovered exactly; the breach widths do "
                   "not account for this")
    zeros = [n for n, c in per_column.items() if c.get("zeros_recognizable")]
    if zeros:
        out.append("a cell holding 0 is published as y = b, a draw from B alone; the published values "
                   "within B's mean ± 4 standard deviations come mostly from such cells for: "
                   + ", ".join(zeros) + " (at least 5% of their cells hold 0), so a published value "
                   "there discloses that the original is 0; the breach widths, computed from the "
                   "column's variance, do not account for this")
    determined = [n for n, c in per_column.items() if c["determined_by_moments"]]
    if determined:
        out.append("A and B hold at most two distinct values each for " + ", ".join(determined)
                   + ", so their published moments give the sets away (one value each: every "
                   "original is (y - b)/a) and grid values are recovered exactly, whatever the "
                   "breach widths say; use a larger set_size and nonzero variances")
    return out


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
