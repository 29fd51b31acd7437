"""What a randomized-response release did to each column, read back from its published
metadata, and how to undo it on the statistics (spec 01 §1–§4).

Every categorical randomizer of this family is an *affine channel*: for the true distribution
π over the column's labels, the published distribution is λ = scale·π + offset (ERRPH:
scale p0, offset p_j; Warner: scale 2p-1, offset 1-p for both values). Chained steps compose
(scales multiply, offsets carry through), so one inversion π̂ = (λ̂ - offset)/scale undoes a
whole chain, and since each channel acts on zero-sum vectors as a plain scaling, the
covariance of π̂ is the multinomial covariance of λ̂ divided by scale².

TRR is a numeric channel y = a·x + b whose moments invert step by step (spec §3).

Used by the reconstructors (reconstruction of one step, through the later steps of a chain)
and by the PPNB/DTPD estimators (the whole chain of a release).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from app.privacy.arrays import project_to_simplex  # noqa: F401  (re-exported: rr's modules use it from here)
from app.privacy.data import MethodInput, SourceRelease
from app.privacy.registry import channel_builder, no_repeats

MISSING = "<missing>"  # the label of the missing category in published domains


def label_of(value: Any) -> str:
    """The label a published or raw value is known by in the metadata's domains."""
    if value is None or (isinstance(value, float) and math.isnan(value)) or value is pd.NA:
        return MISSING
    return str(value)


# --------------------------------------------------------------------------- categorical
@dataclass(frozen=True)
class CategoricalChannel:
    """λ = scale·π + offset over ``labels``; ``domain`` are the labels of the original values
    (a subset of ``labels`` once a later step widened the label space)."""

    labels: tuple[str, ...]
    scale: float
    offset: tuple[float, ...]
    domain: tuple[str, ...]
    preserve_missing: bool = False  # missing cells were left out of the randomization
    binarize: dict[str, Any] | None = None  # how a raw value becomes a label (warner cut points)
    steps: tuple[str, ...] = ()

    @staticmethod
    def identity(labels: list[str]) -> CategoricalChannel:
        return CategoricalChannel(tuple(labels), 1.0, (0.0,) * len(labels), tuple(labels))

    def then(self, later: CategoricalChannel) -> CategoricalChannel:
        """This channel followed by ``later`` (a later step on the published column). A label
        this channel can publish but ``later`` never saw joins ``later``'s space with
        probability 0 of being drawn, which is what happened to it."""
        if later.binarize is not None:
            raise ValueError("a later step binarized the column again")
        if later.preserve_missing and MISSING in self.labels:
            raise ValueError("a later step left missing cells out of its randomization")
        if self.preserve_missing and MISSING in later.labels:
            # This step drew its p_j only for the non-missing cells, so its offsets are shares
            # of those cells, while the later step randomizes every cell (missing ones as a
            # value): λ = scale·π + offset no longer holds over the whole column, and the
            # composed inversion would be biased by p_j·π_missing/p0 and drop the missing share.
            raise ValueError("a later step randomized the missing cells this step left out")
        labels = list(later.labels) + [lab for lab in self.labels if lab not in later.labels]
        pos = {lab: i for i, lab in enumerate(labels)}
        mine = np.zeros(len(labels))
        mine[[pos[lab] for lab in self.labels]] = self.offset
        theirs = np.zeros(len(labels))
        theirs[: len(later.labels)] = later.offset
        return CategoricalChannel(
            labels=tuple(labels), scale=self.scale * later.scale,
            offset=tuple((later.scale * mine + theirs).tolist()), domain=self.domain,
            preserve_missing=self.preserve_missing or later.preserve_missing,
            binarize=self.binarize, steps=self.steps + later.steps)

    def estimate(self, counts: np.ndarray) -> dict[str, Any]:
        """Unbiased π̂ over ``domain``, its standard errors, and the simplex-consistent π̃."""
        n = float(counts.sum())
        if n == 0:
            raise ValueError("no published values to reconstruct from")
        lam = counts / n
        offset = np.asarray(self.offset)
        full = (lam - offset) / self.scale
        se = np.sqrt(self.share_variance(lam) / n) / abs(self.scale)
        pick = [self.labels.index(lab) for lab in self.domain]
        pi_hat = full[pick]
        return {"n": int(n), "published_share": lam[pick], "estimate": pi_hat,
                "standard_error": se[pick], "consistent": project_to_simplex(pi_hat),
                "published_count": counts[pick]}

    def share_variance(self, lam: np.ndarray) -> np.ndarray:
        """λ(1 − λ) at the published shares moved into the range the channel can publish,
        offset_j + scale·[0, 1]: the noise alone publishes a value with probability offset_j,
        so a published share below it (a rare value that no cell happened to take) is a draw
        from a λ_j ≥ offset_j — at λ̂_j = 0 the plain plug-in gave a standard error of 0 and an
        interval of one point (acceptance check: 17 % of the rarest value's SEs were 0 at
        n = 100, p0 = 0.95, and its 95 % intervals covered 82 %)."""
        offset = np.asarray(self.offset)
        low, high = offset + min(self.scale, 0.0), offset + max(self.scale, 0.0)
        feasible = np.clip(lam, low, high)
        return feasible * (1.0 - feasible)


def _distinct_with_codes(series: pd.Series) -> tuple[list[Any], np.ndarray]:
    """The distinct non-missing values and each cell's index among them (-1 = missing)."""
    if isinstance(series.dtype, pd.CategoricalDtype):
        return list(series.cat.categories), series.cat.codes.to_numpy()
    codes, uniques = pd.factorize(series, use_na_sentinel=True)
    return list(uniques), codes


def _label_table(values: list[Any], labels: tuple[str, ...] | list[str]) -> np.ndarray:
    """Position in ``labels`` of each distinct value, then of the missing cell (last entry);
    -1 for a missing cell whose label is not in ``labels``, -2 for a value outside them."""
    pos = {lab: i for i, lab in enumerate(labels)}
    return np.array([_lookup(pos, v) for v in values] + [pos.get(MISSING, -1)], dtype=np.int64)


def label_codes(series: pd.Series, labels: tuple[str, ...] | list[str]) -> np.ndarray:
    """Index of each cell's label in ``labels`` (-1: missing and not a label, -2: unknown)."""
    values, codes = _distinct_with_codes(series)
    return _label_table(values, labels)[codes]  # code -1 (missing) takes the last entry


# The spellings an upload reads as booleans (app/datasets/schema.py): a raw record copied from
# the uploaded file ("true", "yes", 1) named no label of a boolean column, whose labels are
# "True" and "False", and was scored as unreadable (the #7 acceptance check).
BOOLEAN_SPELLINGS = {**dict.fromkeys(("true", "1", "yes", "y", "t"), "True"),
                     **dict.fromkeys(("false", "0", "no", "n", "f"), "False")}


def _lookup(pos: dict[str, int], value: Any) -> int:
    found = pos.get(label_of(value))
    if found is None and isinstance(value, (float, np.floating)) and float(value).is_integer():
        found = pos.get(str(int(value)))  # an integer category read back as a float
    if found is None and isinstance(value, (str, int, np.integer)) and "True" in pos and "False" in pos:
        found = pos.get(BOOLEAN_SPELLINGS.get(str(value).strip().lower(), ""))
    return -2 if found is None else found


def count_labels(series: pd.Series, labels: tuple[str, ...], column: str) -> np.ndarray:
    """How many cells carry each label (missing cells count only if missing is a label).
    Counts the distinct values first, so a 10^7-cell categorical column takes a few ms."""
    values, codes = _distinct_with_codes(series)
    per_value = np.bincount(codes.astype(np.intp) + 1, minlength=len(values) + 1)
    table = _label_table(values, labels)
    where = np.concatenate([table[-1:], table[:-1]])  # bincount put the missing cells first
    if ((where == -2) & (per_value > 0)).any():
        raise ValueError(f"column {column!r} of the release holds values outside its published domain")
    keep = where >= 0
    return np.bincount(where[keep], weights=per_value[keep], minlength=len(labels)).astype(float)


# ------------------------------------------------------------------------------- numeric
@dataclass(frozen=True)
class NumericChannel:
    """y = a·x + b per step, a and b drawn from published sets with these moments
    (population formulas, spec §3): (Ā, S_A², B̄, S_B²) per step, oldest first."""

    moments: tuple[tuple[float, float, float, float], ...] = ()
    steps: tuple[str, ...] = field(default=())

    def then(self, later: NumericChannel) -> NumericChannel:
        return NumericChannel(self.moments + later.moments, self.steps + later.steps)

    def invert(self, mean_y: float, var_y: float) -> tuple[float, float]:
        """Moments of x from those of y (paper eqs. 2, 3), undoing the newest step first:
        x̄ = (ȳ - B̄)/Ā,  S_x² = (S_y² - S_A²·x̄² - S_B²) / (Ā² + S_A²). May return S_x² ≤ 0."""
        mean, var = mean_y, var_y
        for a_mean, a_var, b_mean, b_var in reversed(self.moments):
            mean = (mean - b_mean) / a_mean
            var = (var - a_var * mean * mean - b_var) / (a_mean * a_mean + a_var)
        return mean, var

    @property
    def mean_gain(self) -> float:
        """∂x̂̄/∂ȳ: the product of 1/Ā over the steps (for the mean's standard error)."""
        return float(np.prod([1.0 / m[0] for m in self.moments])) if self.moments else 1.0


# ----------------------------------------------------------------------------- the chain
class Opaque:
    """A later step changed the column in a way no channel here inverts."""

    def __init__(self, method: str) -> None:
        self.method = method


Channel = CategoricalChannel | NumericChannel | Opaque


def step_channels(step: dict[str, Any]) -> dict[str, Channel]:
    """The channel a published step applied to each column it protected (each randomizer's
    module registers how to read its metadata: registry.register_channel_builder)."""
    method = step.get("method")
    build = channel_builder(str(method))
    out: dict[str, Channel] = dict(build(step.get("metadata") or {})) if build is not None else {}
    for name in (step.get("guarantees") or {}).get("protected_columns", []) or []:
        out.setdefault(name, Opaque(str(method)))
    return out


def compose(channels: list[Channel]) -> Channel | None:
    """One channel for a column's successive steps (None when there are none)."""
    result: Channel | None = None
    for ch in channels:
        if isinstance(ch, Opaque):
            return ch
        if result is None:
            result = ch
        elif type(result) is not type(ch):
            return Opaque("mixed categorical and numeric randomization")
        else:
            try:
                result = result.then(ch)  # type: ignore[arg-type]
            except ValueError:
                return Opaque(ch.steps[0] if ch.steps else "a later step")
    return result


def chain_channels(steps: list[dict[str, Any]] | tuple[dict[str, Any], ...]) -> dict[str, Channel]:
    """Per column, the composition of every step of a release's chain that touched it."""
    per_column: dict[str, list[Channel]] = {}
    for step in steps:
        for name, ch in step_channels(step).items():
            per_column.setdefault(name, []).append(ch)
    return {name: c for name, chs in per_column.items() if (c := compose(chs)) is not None}


def step_index(steps: tuple[dict[str, Any], ...], step: dict[str, Any]) -> int:
    for i in range(len(steps) - 1, -1, -1):
        if steps[i] is step or steps[i] == step:
            return i
    raise ValueError("step is not part of the release's chain")


def columns_to_reconstruct(data: MethodInput, step: dict[str, Any], wanted: list[str] | None,
                           kind: type) -> tuple[list[tuple[str, Any]], list[str]]:
    """For the reconstructor of ``step``: each of its columns of channel type ``kind`` (among
    ``wanted``) with the channel composed through every later step of the chain, and notes on
    the columns that cannot be reconstructed from the final release."""
    steps = data.source.steps() if data.source is not None else (step,)
    later = [step_channels(s) for s in steps[step_index(steps, step) + 1:]]
    found: list[tuple[str, Any]] = []
    notes: list[str] = []
    for name, first in step_channels(step).items():
        if not isinstance(first, kind) or (wanted is not None and name not in wanted):
            continue
        channel = compose([first, *[chs[name] for chs in later if name in chs]])
        if isinstance(channel, Opaque):
            notes.append(f"column {name!r}: changed again by a later step ({channel.method}) in a way "
                         "that cannot be inverted; not reconstructed")
        elif data.frame is None or name not in data.frame.columns:
            notes.append(f"column {name!r} is not in the release; not reconstructed")
        else:
            found.append((name, channel))
    return found, notes


def unique_names(names: list[str] | None) -> list[str] | None:
    """Pydantic validator body: a list of column names must not repeat."""
    return no_repeats(names, "column names")


def with_columns(frame: pd.DataFrame, new: dict[str, Any]) -> pd.DataFrame:
    """``frame`` with some columns replaced, without copying any column (assigning into a
    copy of the frame would copy each new column once more)."""
    return pd.DataFrame({c: new[c] if c in new else frame[c] for c in frame.columns},
                        index=frame.index, copy=False)


def as_release_input(previous: MethodInput, result: Any, method: str, params: Any,
                     release_id: str | None = None) -> MethodInput:
    """The input a method sees when it runs on ``result`` (a ReleaseResult of ``method`` run
    on ``previous``): the release's frame and schema, with the chain extended by this step.
    The service builds the same from stored releases; experiments and tests chain in memory."""
    chain = previous.source.steps() if previous.source is not None else ()
    dumped = params.model_dump(mode="json") if hasattr(params, "model_dump") else dict(params)
    source = SourceRelease(release_id=release_id or f"{method}-{len(chain)}", method=method,
                           params=dumped, guarantees=result.guarantees, metadata=result.metadata,
                           chain=tuple(chain))
    return MethodInput(columns=list(result.columns or previous.columns), frame=result.frame,
                       source=source)
