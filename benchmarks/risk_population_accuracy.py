"""The figures of docs/methods/risk.md's "Sample of a population" section: accuracy of the
population-uniqueness estimators and of the marketer estimate against the truth of synthetic
populations, and the cost at 10^6 records × 8 QIs.

    .venv/bin/python -m benchmarks.risk_population_accuracy [--samples 20]

Four populations of 400,000 people (the generator of tests/privacy/test_anonymity_population_risk.py:
a mixture of three products of Zipf-skewed categoricals; the tuples are the cardinalities), samples
without replacement at π = 0.01, 0.1, 0.5; the truth of a sample is the share of its records unique
in the population (and Σ f/F / n for the marketer). Errors are in shares of records.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from app.privacy.anonymity.risk import population_risk, prosecutor_risk
from app.privacy.anonymity.verify import equivalence_classes
from tests.privacy.test_anonymity_population_risk import N, _population

POPULATIONS = {"low": (60, 2, 5, 10), "mid": (70, 2, 5, 25, 8), "moderate": (60, 2, 5, 40, 16, 7),
               "high": (80, 2, 6, 60, 16, 7, 12)}
NAMES = ("zayatz", "pitman", "snb", "dankar")


def accuracy(samples: int) -> None:
    print("| population (uniques, K/N) | π | truth | Zayatz bias / max | Pitman bias / max | "
          "SNB bias / max | Dankar: chose, max | marketer: truth, bias / max |")
    print("|---|---|---|---|---|---|---|---|")
    for name, cards in POPULATIONS.items():
        pop = _population(cards)
        sizes = np.bincount(pop)
        rng = np.random.default_rng(5)
        label = f"{name} ({(sizes == 1).sum() / N:.4f}, {len(sizes) / N:.4f})"
        for pi in (0.01, 0.1, 0.5):
            truth, mtruth, est, mest, chose = [], [], [], [], {}
            for _ in range(samples):
                idx = rng.choice(N, int(round(pi * N)), replace=False)
                f = np.bincount(pop[idx], minlength=len(sizes))
                seen = f > 0
                truth.append((sizes[pop[idx]] == 1).mean())
                mtruth.append((f[seen] / sizes[seen]).sum() / len(idx))
                r = population_risk(np.unique(pop[idx], return_inverse=True)[1].ravel(), pi)
                est.append([np.nan if r["uniqueness"][k]["share"] is None else r["uniqueness"][k]["share"]
                            for k in NAMES])
                mest.append(r["marketer"]["estimated"])
                model = r["uniqueness"]["dankar"]["model"]
                chose[model] = chose.get(model, 0) + 1
            err = np.array(est) - np.array(truth)[:, None]
            merr = np.array(mest) - np.array(mtruth)

            def cell(i: int) -> str:
                column = err[:, i]
                if np.isnan(column).all():
                    return f"null ×{samples}"
                missing = int(np.isnan(column).sum())
                return (f"{np.nanmean(column):+.4f} / {np.nanmax(np.abs(column)):.4f}"
                        + (f" (null ×{missing})" if missing else ""))
            chosen = ", ".join(f"{k} ×{v}" for k, v in sorted(chose.items()))
            print(f"| {label} | {pi} | {np.mean(truth):.4f} | {cell(0)} | {cell(1)} | {cell(2)} | "
                  f"{chosen}, {np.nanmax(np.abs(err[:, 3])):.4f} | {np.mean(mtruth):.4f}, "
                  f"{merr.mean():+.4f} / {np.abs(merr).max():.4f} |")
            label = ""


def timing() -> None:
    from benchmarks.bench_anonymity import synthetic_raw

    raw = synthetic_raw(1_000_000)
    qis = list(raw.columns)

    def best(fn, repeat: int = 3):
        times, out = [], None
        for _ in range(repeat):
            started = time.perf_counter()
            out = fn()
            times.append(time.perf_counter() - started)
        return min(times), out

    t_group, ids = best(lambda: equivalence_classes(raw, qis))
    t_pros, figures = best(lambda: prosecutor_risk(ids, 5))
    print(f"\n10^6 records × 8 QIs: {figures['classes']:,} classes, {figures['sample_uniques']:,} "
          f"uniques; grouping {t_group:.3f} s, prosecutor figures {t_pros:.3f} s")
    for pi in (0.01, 0.1, 0.5):
        t, r = best(lambda: population_risk(ids, pi))
        print(f"  population part at π = {pi}: {t:.3f} s (Dankar chose {r['uniqueness']['dankar']['model']})")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=20)
    args = parser.parse_args()
    accuracy(args.samples)
    timing()
