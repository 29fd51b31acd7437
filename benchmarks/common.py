"""Shared helpers of the benchmark modules: a row type and a timer.

Each ``benchmarks/bench_<family>.py`` exposes ``cases(quick: bool) -> list[Row]``; the runner
(``python -m benchmarks``) prints them in one table and writes docs/benchmarks.md.
A peer that is not installed is reported as such, never silently dropped.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass


@dataclass
class Row:
    workload: str
    veil: float | None  # the measured figure for Veil
    unit: str  # e.g. "M cells/s", "s", "ms"
    peer: str | None = None  # the peer's name (package and function)
    peer_value: float | None = None
    higher_is_better: bool = True
    target: str | None = None  # the target, as text
    notes: str = ""

    @property
    def ratio(self) -> float | None:
        if self.veil is None or self.peer_value in (None, 0):
            return None
        return self.veil / self.peer_value if self.higher_is_better else self.peer_value / self.veil


def best_time(fn: Callable[[], object], repeat: int = 3) -> float:
    """The fastest of ``repeat`` runs, in seconds (the least disturbed by other load)."""
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best
