"""dp_statistics beside diffprivlib's tools (mean, histogram, median, and a mean per group) on
10⁶ records at ε = 1: seconds per answer (the best of 3) and the mean absolute error over 30
repetitions, side by side.

    python -m benchmarks.bench_statistics [--quick] [--repetitions N]

diffprivlib draws float Laplace noise (numpy: open to Mironov's floating-point attack) and
takes its quantile's interval weights in floats; Veil's answers are exact values plus discrete
Laplace noise and an exactly sampled exponential mechanism (docs/methods/dp_statistics.md).
Both clamp into the same declared bounds. A grouped mean in diffprivlib is one mean per group,
each at ε on the group's rows (parallel composition, the group's size taken as public); Veil's
is one query at ε: noisy centred sums and noisy counts of every group (the sizes are not public).

Veil runs each query twice: under its default replace-one neighbours (n public) and under
``neighbouring: add_remove`` — the relation diffprivlib's ε is stated under, so those rows are
like for like (Veil's ledger debits the replace-one ε such a run also satisfies: 2ε for these
queries but the ungrouped mean, ε: statistics_params.replace_cases).
"""

from __future__ import annotations

import argparse
import math
import time
import warnings

import numpy as np
import pandas as pd

from app.privacy.context import RunContext
from app.privacy.data import ColumnInfo, MethodInput
from app.privacy.dp_release.statistics import run_statistics
from app.privacy.dp_release.statistics_params import DPStatisticsParams
from app.privacy.rng import SecureRandom
from benchmarks.common import Row

BOUNDS = (17.0, 90.0)
GROUPS = [f"g{i}" for i in range(10)]
SCHEMA = [ColumnInfo("age", "numeric", bounds=BOUNDS), ColumnInfo("group", "categorical", categories=tuple(GROUPS))]
EPSILON = 1.0


def table(n: int, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    group = rng.integers(0, len(GROUPS), n)
    age = np.clip(rng.normal(30 + 2.0 * group, 12), *BOUNDS)
    return pd.DataFrame({"age": age, "group": np.array(GROUPS)[group]})


QUERIES = {
    "mean": {"statistic": "mean", "column": "age"},
    "histogram (16 bins)": {"statistic": "histogram", "column": "age", "bins": 16},
    "median": {"statistic": "quantile", "column": "age", "quantiles": [0.5]},
    "10 grouped means": {"statistic": "mean", "column": "age", "by": ["group"]},
}


RELATIONS = {"replace_one": "", "add_remove": " (add/remove)"}


def veil(frame: pd.DataFrame, query: dict, neighbouring: str = "replace_one") -> np.ndarray:
    params = DPStatisticsParams.model_validate({"epsilon": EPSILON, "queries": [query],
                                                "neighbouring": neighbouring})
    out = run_statistics(MethodInput(SCHEMA, frame), params, RunContext(SecureRandom())).frame
    if query["statistic"] == "histogram":
        return out["value"].to_numpy()[:-1]  # the missing level: empty here
    if query.get("by"):
        return out.set_index("group")["value"].reindex([f"group={g}" for g in GROUPS]).to_numpy()
    return out["value"].to_numpy()


def diffprivlib_answer(frame: pd.DataFrame, name: str) -> np.ndarray:
    from benchmarks.bench_dp import diffprivlib

    diffprivlib()
    from diffprivlib import tools

    x = frame["age"].to_numpy()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if name == "mean":
            return np.array([tools.mean(x, epsilon=EPSILON, bounds=BOUNDS)])
        if name.startswith("histogram"):
            return tools.histogram(x, epsilon=EPSILON, bins=16, range=BOUNDS)[0].astype(float)
        if name == "median":
            return np.array([tools.median(x, epsilon=EPSILON, bounds=BOUNDS)])
        return np.array([tools.mean(x[frame["group"].to_numpy() == g], epsilon=EPSILON, bounds=BOUNDS)
                         for g in GROUPS])


def truth(frame: pd.DataFrame, name: str) -> np.ndarray:
    x = frame["age"].to_numpy()
    if name == "mean":
        return np.array([x.mean()])
    if name.startswith("histogram"):
        return np.histogram(x, bins=16, range=BOUNDS)[0].astype(float)
    if name == "median":
        return np.array([np.median(x)])
    return frame.groupby("group")["age"].mean().reindex(GROUPS).to_numpy()


def measure(answer, frame: pd.DataFrame, name: str, repetitions: int) -> tuple[float, float]:
    """(the best of 3 seconds, the mean over ``repetitions`` of the answer's absolute error —
    summed over the cells of a histogram, averaged over the groups of grouped means)."""
    exact = truth(frame, name)
    seconds, errors = math.inf, []
    for i in range(max(3, repetitions)):
        start = time.perf_counter()
        got = answer(frame, name)
        seconds = min(seconds, time.perf_counter() - start)
        err = np.abs(got - exact)
        errors.append(err.sum() if name.startswith("histogram") else err.mean())
    return seconds, float(np.mean(errors))


def rows(n: int, repetitions: int) -> list[tuple[str, float, float, float, float]]:
    """(query and relation, Veil s, Veil error, diffprivlib s, diffprivlib error) per query,
    each under replace-one and add/remove beside one diffprivlib measurement."""
    frame = table(n)
    out = []
    for name, query in QUERIES.items():
        try:
            p_s, p_err = measure(diffprivlib_answer, frame, name, repetitions)
        except ImportError:
            p_s = p_err = math.nan
        for relation, suffix in RELATIONS.items():
            v_s, v_err = measure(lambda f, _n, q=query, r=relation: veil(f, q, r), frame, name, repetitions)
            out.append((name + suffix, v_s, v_err, p_s, p_err))
    return out


def cases(quick: bool) -> list[Row]:
    n = 100_000 if quick else 1_000_000
    result, repetitions = [], 3 if quick else 30
    for name, v_s, v_err, p_s, p_err in rows(n, repetitions):
        peer = None if math.isnan(p_s) else p_s
        result.append(Row(workload=f"dp_statistics {name}, {n:,} records, ε = 1", veil=v_s, unit="s",
                          peer="diffprivlib.tools" if peer is not None else "diffprivlib (not installed)",
                          peer_value=peer, higher_is_better=False,
                          notes=f"mean abs. error over {repetitions} runs: Veil {v_err:.3g} vs diffprivlib "
                                f"{p_err:.3g}"))
    return result


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.bench_statistics")
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--repetitions", type=int, default=30)
    args = parser.parse_args()
    n = 100_000 if args.quick else 1_000_000
    print(f"{n:,} records, ε = {EPSILON}, error = mean absolute error over {args.repetitions} runs "
          "(a histogram's summed over its 16 cells)")
    print("| query | Veil s | Veil error | diffprivlib s | diffprivlib error |")
    print("|---|---|---|---|---|")
    for name, v_s, v_err, p_s, p_err in rows(n, args.repetitions):
        print(f"| {name} | {v_s:.3f} | {v_err:.4g} | {p_s:.3f} | {p_err:.4g} |")


if __name__ == "__main__":
    main()
