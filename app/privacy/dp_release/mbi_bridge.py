"""The bridge to ``mbi`` (private-pgm 2.x, McKenna), which does mst's and aim's inference and
sampling: importing it and jax for a run (float64, XLA's optimization level, ``pgm``'s message
order), its compiled mirror descent, its version, and handing memory back after a run. It and
jax are imported inside the run (``load_mbi``), never when the registry imports a method module:
kept apart from the domains and the budget, which need neither.
"""

from __future__ import annotations

import os
import sys
import warnings

XLA_FLAGS = "--xla_backend_optimization_level=0"


def load_mbi():
    """Import jax and mbi for this run: float64 (mbi's estimates stall in float32 on large
    tables) and no persistent compilation cache (mbi compiles many small programs). Their
    advisory warnings are silenced. mbi's message order is replaced by ``pgm``'s, the same rule
    without a set's hash order (a seeded release is then the same in every process).

    When this process has not started jax yet (a job's child process), XLA's backend
    optimizations are turned off: a model's programs then compile in about half the time
    and run ~4× slower, which wins below a few thousand iterations (measured on Adult)."""
    if "jax" not in sys.modules and "xla_backend_optimization_level" not in os.environ.get("XLA_FLAGS", ""):
        os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + " " + XLA_FLAGS).strip()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import jax

        jax.config.update("jax_enable_x64", True)
        jax.config.update("jax_enable_compilation_cache", False)
        import mbi
        from mbi import estimation  # noqa: F401
    from app.privacy.dp_release.pgm import message_passing_order

    mbi.junction_tree.message_passing_order = message_passing_order  # read at each call (and trace)
    return mbi


def free_memory() -> None:
    """Hand back to the OS the pages glibc's allocator keeps after XLA's compilations and the
    sampler's temporary arrays (malloc_trim; nothing without glibc). jax's compiled programs stay
    cached: clearing them too took mst's peak at 4,950,000 rows from 1.75 to 1.43 GiB but made
    every later release in the process compile again — an experiment's repetitions, and the
    suite's mst/aim tests ran in 100 s instead of 55."""
    import ctypes

    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):
        pass


def mirror_descent(mbi):
    """mbi's MirrorDescent whose marginal oracle (HUGIN message passing) is compiled once:
    the estimator calls it outside its compiled loop too (start and end), where it would run
    op by op (seconds of tiny compilations)."""
    import jax

    return mbi.estimation.MirrorDescent(
        marginal_oracle=jax.jit(mbi.marginal_oracles.message_passing_hugin))


def mbi_version() -> str:
    from importlib.metadata import version

    return version("mbi")
