"""ARX's risk-based privacy models as thresholds on the whole release, prosecutor model (the
attacker knows the person is in the table): the average re-identification risk, optionally with
a highest risk and the share of records allowed above it (ARX's ``AverageReidentificationRisk``,
its relaxed variant), and the share of sample uniques (``SampleUniqueness``).

A record's risk is 1 / (its class's size), so over a release of N records in C classes the
average risk is C / N, a record is "at risk" in a class smaller than s = ⌈1 / highest⌉, and a
sample unique is alone in its class. Unlike k, these are facts of the whole table, not of each
class: the lattice meets them (as ARX does) by suppressing the smallest classes first, the
fewest that make every threshold hold within the suppression limit.

Decisions (docs/methods/kanonymity.md, *Risk thresholds*):
- the figures are over the records released: Veil removes suppressed records, where ARX keeps
  them starred and counts them as one more class;
- s is exact (the smallest size whose risk 1/s is at most ``highest``), where ARX rounds
  ``highest`` to a size and warns that the effective threshold may exceed it by up to 1 %;
- a threshold holds at the bound within 10⁻¹² (as α, t and β);
- an empty release meets every threshold (it puts no one at risk; the suppression limit decides
  whether it may happen)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from app.privacy.anonymity.wording import as_given, rounded

TOLERANCE = 1e-12
# the largest s: no table holds 2^53 records, so a highest_risk whose size is beyond it (1 /
# highest up to infinity, for a subnormal one) puts every record at risk exactly as its own size does
MAX_SIZE = 2**53


@dataclass(frozen=True)
class RiskThresholds:
    average: float | None = None  # classes / records of the release
    highest: float | None = None  # a record whose risk 1/size exceeds this is at risk …
    records_at_risk: float | None = None  # … and at most this share of the records may be
    sample_uniques: float | None = None  # share of the records alone in their class

    @property
    def smallest_size(self) -> int | None:
        """The smallest class size whose records are not at risk: 1/s ≤ highest."""
        if self.highest is None:
            return None
        if self.highest * MAX_SIZE <= 1.0:  # exact (a power of two): 1 / highest ≥ 2^53, or overflows
            return MAX_SIZE
        s = math.ceil(1.0 / self.highest)
        return s - 1 if s > 1 and 1.0 / (s - 1) <= self.highest else s  # 1/highest a float a hair above s − 1

    def vacuous(self) -> bool:
        """Whether every release meets these thresholds: classes per record and each share are
        at most 1, and a risk 1 / size at most 1 (highest_risk 1: no record is at risk)."""
        return ((self.average is None or self.average + TOLERANCE >= 1.0)
                and (self.highest is None or self.smallest_size == 1 or self.records_at_risk + TOLERANCE >= 1.0)
                and (self.sample_uniques is None or self.sample_uniques + TOLERANCE >= 1.0))

    def figures(self, sizes: np.ndarray) -> dict[str, float]:
        """The release's figures from its class sizes (released records only)."""
        sizes = np.asarray(sizes, dtype=np.int64)
        sizes = sizes[sizes > 0]
        n = int(sizes.sum())
        out = {"average_risk": len(sizes) / n if n else 0.0}
        if self.highest is not None:
            out["records_at_risk"] = float(sizes[sizes < self.smallest_size].sum()) / n if n else 0.0
            out["largest_record_risk"] = 1.0 / float(sizes.min()) if n else 0.0
        if self.sample_uniques is not None:
            out["sample_uniques"] = float((sizes == 1).sum()) / n if n else 0.0
        return out

    def failures(self, figures: dict[str, float]) -> list[str]:
        """Each threshold the figures exceed, in words."""
        out = []
        for name, limit, words in (("average_risk", self.average, "average re-identification risk"),
                                   ("records_at_risk", self.records_at_risk,
                                    f"share of records in classes smaller than {self.smallest_size}"),
                                   ("sample_uniques", self.sample_uniques, "share of sample uniques")):
            if limit is not None and figures[name] > limit + TOLERANCE:
                out.append(f"{words} {figures[name]:.6g} is above {limit:g}")
        return out

    def impossible(self, records: int) -> str | None:
        """Why no release but the empty one meets the thresholds on a table of ``records``
        records, or None. The whole table as one class is the least any non-empty release can
        show (a release of N ≤ records records in C ≥ 1 classes has average risk C / N ≥ 1 /
        records; if every class is smaller than s all its records are at risk)."""
        failures = self.failures(self.figures(np.array([records])))
        if not failures:
            return None
        return (f"with {records} records no release but the empty one meets the risk thresholds: even the "
                f"whole table as one class fails ({'; '.join(failures)}); raise the threshold")

    def to_suppress(self, sizes: np.ndarray) -> np.ndarray:
        """Per class (sizes > 0 are the kept ones): whether to suppress it — the fewest smallest
        classes after whose removal every threshold holds (all of them if nothing less does).
        Each removal of the smallest kept class lowers every figure (a class no larger than the
        mean), so the first prefix that holds is the least suppression of this greedy order."""
        sizes = np.asarray(sizes, dtype=np.int64)
        kept = np.flatnonzero(sizes > 0)
        order = kept[np.argsort(sizes[kept], kind="stable")]
        s = sizes[order].astype(np.float64)
        # figures after removing the j smallest classes, j = 0 … len(order), all at once
        left = s.sum() - np.concatenate([[0.0], np.cumsum(s)])
        classes = len(order) - np.arange(len(order) + 1)
        safe = np.maximum(left, 1.0)
        ok = np.ones(len(order) + 1, dtype=bool)
        if self.average is not None:
            ok &= np.where(left > 0, classes / safe, 0.0) <= self.average + TOLERANCE
        for limit, counted in ((self.records_at_risk, s < (self.smallest_size or 0)), (self.sample_uniques, s == 1)):
            if limit is not None:
                remaining = (s * counted).sum() - np.concatenate([[0.0], np.cumsum(s * counted)])
                ok &= np.where(left > 0, remaining / safe, 0.0) <= limit + TOLERANCE
        drop = np.zeros(len(sizes), dtype=bool)
        drop[order[:int(np.argmax(ok))]] = True  # ok[-1] (nothing left) always holds
        return drop

    def describe(self) -> str:
        parts = []
        if self.average is not None:
            parts.append(f"average_risk={self.average:g}")
        if self.highest is not None:
            parts.append(f"highest_risk={self.highest:g} with records_at_risk={self.records_at_risk:g}")
        if self.sample_uniques is not None:
            parts.append(f"sample_uniques={self.sample_uniques:g}")
        return ", ".join(parts)

    def requested(self) -> dict[str, float]:
        return {key: value for key, value in (("average_risk", self.average), ("highest_risk", self.highest),
                                              ("records_at_risk", self.records_at_risk),
                                              ("sample_uniques", self.sample_uniques)) if value is not None}


def risk_statement(found: dict) -> str:
    """The guarantee's words for the thresholds met (``found``: the release's metadata entry),
    each figure rounded up (an upper bound)."""
    asked, got = found["requested"], found["achieved"]
    parts = []
    if "average_risk" in asked:
        parts.append(f"the average re-identification risk (classes per released record) is at most "
                     f"{rounded(got['average_risk'], down=False)} (asked: at most {as_given(asked['average_risk'])})")
    if "records_at_risk" in asked:
        parts.append(f"at most {rounded(got['records_at_risk'], down=False)} of the released records are in "
                     f"classes smaller than {found['smallest_size_not_at_risk']} (risk above "
                     f"{as_given(asked['highest_risk'])}; asked: at most {as_given(asked['records_at_risk'])})")
    if "sample_uniques" in asked:
        parts.append(f"at most {rounded(got['sample_uniques'], down=False)} of the released records are alone "
                     f"in their class (asked: at most {as_given(asked['sample_uniques'])})")
    return ("verified on the released table (prosecutor model, ARX's risk-based models; suppressed records "
            "are removed and not counted): " + "; ".join(parts))
