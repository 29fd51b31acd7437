"""What a TRR release gives away beyond its breach widths, as warnings: sets whose published
moments determine them, cells holding 0 recognizable in B's band, and the sets published in
full (publish_sets). Separate from the run, which records the per-column facts these read.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from app.privacy.trr_mechanism import TrrSets


def sets_determined(sets: TrrSets) -> bool:
    """Whether the published moments give the sets away: two distinct values or fewer per set
    (mean ± standard deviation), or a set of one repeated value."""
    return len(np.unique(sets.a)) <= 2 and len(np.unique(sets.b)) <= 2


ZERO_SHARE = 0.05        # cells holding 0, of the non-missing ones, for the zero warning
ZERO_POSTERIOR = 0.9     # share of the values in B's band that come from a 0


def zeros_recognizable_in(x: np.ndarray, y: np.ndarray, b_bar: float, b_var: float) -> bool:
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


def recovery_warnings(per_column: dict[str, Any], published: bool) -> list[str]:
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
