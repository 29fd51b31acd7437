"""Diagnostic methods for the worker tests (loaded with VEIL_PLUGINS=tests.support.diagnostics):
a method that sleeps (cancel, time limit, kill mid-job), one that allocates (memory limit),
one whose process dies (crash), one that prints, one that calls sys.exit, one whose guarantees lack the common keys, two that publish the hierarchies they were given (a method
registered with uses_hierarchies gets them; the others do not) and say they used those of
their `used` parameter (all when not passed), and one priced in ε that
allocates and sleeps, drawing randomness first or not, and may die (refunds after a limit or a
crash)."""

from __future__ import annotations

import os
import sys
import time

import numpy as np
from pydantic import Field

from app.privacy.guarantees import guarantee
from app.privacy.registry import MethodKind, MethodSpec, Params, register
from app.privacy.results import ReleaseResult


class SleepParams(Params):
    seconds: float = Field(1.0, ge=0, le=600)
    # the test ends the sleep by creating this file (seconds then only bound it): a fixed sleep
    # is a window the test's next steps must fit in, which a loaded machine can overrun
    until_file: str | None = None


def run_sleep(data, params: SleepParams, ctx) -> ReleaseResult:
    deadline = time.monotonic() + params.seconds
    while time.monotonic() < deadline and not (params.until_file and os.path.exists(params.until_file)):
        ctx.progress(1 - (deadline - time.monotonic()) / max(params.seconds, 1e-9), "sleeping")
        time.sleep(0.05)
    return ReleaseResult(frame=data.frame.copy(),
                         guarantees=guarantee("none", rng=ctx.rng.name, private=False,
                                              statements=["diagnostic: the input, unchanged"]))


class AllocParams(Params):
    megabytes: int = Field(100, ge=1, le=100_000)


def run_alloc(data, params: AllocParams, ctx) -> ReleaseResult:
    block = np.ones(params.megabytes * 1024 * 1024 // 8)  # touched, so it is resident
    time.sleep(5)
    raise RuntimeError(f"allocated {block.nbytes} bytes and was not stopped")


class CrashParams(Params):
    exit_code: int = Field(3, ge=1, le=120)


def run_crash(data, params: CrashParams, ctx):
    os._exit(params.exit_code)


class DpHogParams(Params):
    epsilon: float = Field(1.0, gt=0, le=100)
    megabytes: int = Field(0, ge=0, le=100_000)
    seconds: float = Field(0.0, ge=0, le=600)
    draw_first: bool = False
    once_marker: str | None = None  # with draw_first: draw only while this file does not exist yet
    crash: bool = False  # the process dies (after the draw, the allocation and the sleep)


def run_dp_hog(data, params: DpHogParams, ctx) -> ReleaseResult:
    if params.draw_first and not (params.once_marker and os.path.exists(params.once_marker)):
        if params.once_marker:  # the first attempt draws, the later ones do not
            open(params.once_marker, "w").close()
        ctx.rng.bytes(16)
    block = np.ones(params.megabytes * 1024 * 1024 // 8)  # touched, so it is resident
    run_sleep(data, SleepParams(seconds=params.seconds + (5 if params.megabytes else 0)), ctx)
    if params.crash:
        os._exit(3)
    raise RuntimeError(f"allocated {block.nbytes} bytes, slept {params.seconds} s and was not stopped")


class HierarchiesParams(Params):
    used: list[str] | None = None  # what the method says it generalized with (None: not said)


def run_hierarchies(data, params: HierarchiesParams, ctx) -> ReleaseResult:
    return ReleaseResult(frame=data.frame.copy(), metadata={"hierarchies": sorted(data.hierarchies)},
                         hierarchies_used=params.used,
                         guarantees=guarantee("none", rng=ctx.rng.name, private=False,
                                              statements=["diagnostic: the input, unchanged"]))


def run_print(data, params: Params, ctx) -> ReleaseResult:
    """A plugin author's debugging print, of a data value too."""
    print(f"diag-print stdout: first cell {data.frame.iloc[0, 0]!r}")
    print("diag-print stderr", file=sys.stderr, flush=True)
    return ReleaseResult(frame=data.frame.copy(),
                         guarantees=guarantee("none", rng=ctx.rng.name, private=False,
                                              statements=["diagnostic: the input, unchanged"]))


def run_exit(data, params: Params, ctx):
    sys.exit(0)


def run_bare_guarantees(data, params: Params, ctx) -> ReleaseResult:
    """A plugin that builds its own guarantees dict without the common keys."""
    return ReleaseResult(frame=data.frame.copy(), guarantees={"notion": "none", "note": "mine"})


for name, params, run, hierarchies in (
        ("diag_bare_guarantees", Params, run_bare_guarantees, False),
        ("diag_print", Params, run_print, False), ("diag_exit", Params, run_exit, False),
        ("diag_sleep", SleepParams, run_sleep, False), ("diag_alloc", AllocParams, run_alloc, False),
        ("diag_crash", CrashParams, run_crash, False), ("diag_hierarchies", HierarchiesParams, run_hierarchies, True),
        ("diag_no_hierarchies", HierarchiesParams, run_hierarchies, False)):
    register(MethodSpec(name=name, family="diagnostics", kind=MethodKind.release,
                        summary=f"test-suite diagnostic ({name})", params=params, guarantee="none",
                        paper="none", run=run, produces_randomness=False, uses_hierarchies=hierarchies,
                        slow_params=("seconds",) if params is SleepParams else ()))
register(MethodSpec(name="diag_dp_hog", family="diagnostics", kind=MethodKind.release,
                    summary="test-suite diagnostic (diag_dp_hog)", params=DpHogParams, guarantee="none",
                    paper="none", run=run_dp_hog, epsilon=lambda params, columns: params.epsilon))
