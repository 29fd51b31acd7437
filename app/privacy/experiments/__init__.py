"""Experiments: one module per paper's evaluation protocol, each registered as a method of
kind ``experiment`` that returns a report with tables and plots (dp_release's parts it shares
with the benchmarks are the dp_release_*.py modules beside it; rfk's settings, accuracies and
figures are the rfk_*.py modules).

Experiments read the shared real datasets; ``dataset_file()`` finds each file.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from app.privacy.registry import MethodInputError


def datasets_dir() -> Path:
    """$VEIL_DATASETS_DIR, else the ``shared/datasets`` folder beside or above the repository."""
    env = os.environ.get("VEIL_DATASETS_DIR")
    if env:
        return Path(env)
    here = Path(__file__).resolve()
    for parent in here.parents:
        for candidate in (parent / "shared" / "datasets", parent.parent / "shared" / "datasets"):
            if candidate.is_dir():
                return candidate
    raise FileNotFoundError("shared datasets not found: set VEIL_DATASETS_DIR")


def dataset_file(*parts: str) -> Path:
    """A file of the shared public datasets (``dataset_file("adult", "adult_train.csv")``), or a
    MethodInputError naming it: the Docker image has no shared datasets, and a missing one failed
    the experiment as `internal` "FileNotFoundError at …". The message names the file relative to
    the folder, never the server's own paths."""
    try:
        path = datasets_dir().joinpath(*parts)
    except FileNotFoundError:
        path = None
    if path is None or not path.is_file():
        raise MethodInputError(
            f"the shared public dataset file {'/'.join(parts)} is not available to this service: "
            "set VEIL_DATASETS_DIR to the folder of the shared datasets (the Docker image has none; "
            "mount them into the worker)")
    return path


def distinct(values: list | None) -> list | None:
    """Pydantic validator body for an experiment's grid: each value once, in the order given. A
    repeated dataset, ε or seed ran again as the same grid point (duplicated table rows, a
    'spread over seeds' of one seed, a plot whose line ran back to its start)."""
    return None if values is None else list(dict.fromkeys(values))


def resampled_standard_error(values, test_to_train: float) -> float:
    """The standard error of the mean of J accuracies (or paired differences of accuracies)
    measured on J resampled train/test splits of one sample, by Nadeau and Bengio's correction
    (2003): s · √(1/J + n_test/n_train). The splits share their records, so the J values are
    correlated and the plain s/√J is too small (5 × 5-fold CV: n_test/n_train = 1/4, 2.7× too
    small; 70/30 splits: 3/7). NaN for fewer than two values (no spread to estimate)."""
    v = np.asarray(values, dtype=float)
    if len(v) < 2:
        return float("nan")
    return float(np.std(v, ddof=1) * np.sqrt(1 / len(v) + test_to_train))
