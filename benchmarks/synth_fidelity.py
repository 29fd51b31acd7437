"""Marginal fidelity of mst/aim on Adult income (issue 8's targets), outside the full experiment.

For each variant, ε and seed: release adult_train (30,162 records) with run_mst/run_aim, then
measure what experiment_dp_release measures for the task adult_income — the RBF SVM's
misclassification on adult_test (trained on 10,000 records of 70% of the release, the doc's
protocol, ``svm_error``), the mean 1-way and 2-way TVD against adult_train (``marginal_tvd``:
numeric columns on the methods' default 32 bins over the declared bounds) — and the release's seconds.

    python -m benchmarks.synth_fidelity [--eps 0.5,1,2] [--seeds 3] [--first-seed 0] [--no-svm]
        [--columns] [--deciles] [--csv FILE] [--one-way-floor]
        [--variant NAME=METHOD:{json params}] ...

Without --variant: the defaults of mst and aim. --columns prints each column's 1-way TVD.
"""

from __future__ import annotations

import argparse
import itertools
import json
import time
import zlib

import numpy as np
import pandas as pd

from app.privacy.context import RunContext
from app.privacy.dp_release.aim import AimParams, run_aim
from app.privacy.dp_release.mst import MstParams, run_mst
from app.privacy.experiments.dp_release_evaluation import marginal_tvd, svm_error
from app.privacy.experiments.dp_release_tasks import load_task
from app.privacy.rng import SecureRandom

RUNNERS = {"mst": (MstParams, run_mst), "aim": (AimParams, run_aim)}
TRAIN_ROWS, TEST_ROWS = 10_000, 20_000


def column_tvd(raw: pd.DataFrame, release: pd.DataFrame, columns) -> dict[str, float]:
    """Each column's 1-way TVD (the same binning as ``marginal_tvd``)."""
    return {c.name: marginal_tvd(raw[[c.name]], release[[c.name]], [c])[0] for c in columns}


def measure(variants: dict[str, tuple[str, dict]], epsilons: list[float], seeds: range, svm: bool,
            per_column: bool, deciles: bool = False) -> pd.DataFrame:
    task = load_task("adult_income")
    data = task.data
    holdout = task.holdout.iloc[:TEST_ROWS]
    rows = []
    for name, (method, extra) in variants.items():
        params_type, run = RUNNERS[method]
        for eps in epsilons:
            for seed in seeds:
                rng = SecureRandom(seed=zlib.crc32(f"fidelity:{seed}:{method}:{eps}".encode()))
                start = time.perf_counter()
                result = run(data, params_type(epsilon=eps, **extra), RunContext(rng))
                seconds = time.perf_counter() - start
                release = result.frame
                tvd1, tvd2 = marginal_tvd(data.frame, release, data.columns)
                row = {"variant": name, "epsilon": eps, "seed": seed, "tvd_1way": tvd1,
                       "tvd_2way": tvd2, "seconds": seconds}
                if deciles:
                    row["deciles_1way"], row["deciles_2way"] = decile_tvd(data.frame, release, data.columns)
                meta = result.metadata[method]
                row["rho_spent/rho"] = meta["rho_spent"] / meta["rho"]
                if svm:
                    split = np.random.default_rng([seed, 5])
                    order = split.permutation(len(release))
                    train = release.iloc[order[:int(0.7 * len(release))]]
                    row["error"] = svm_error(train, [holdout], data.columns, TRAIN_ROWS, split)[0]
                if per_column:
                    row.update({f"c:{k}": v for k, v in column_tvd(data.frame, release, data.columns).items()})
                rows.append(row)
                print(json.dumps({k: (round(v, 4) if isinstance(v, float) else v) for k, v in row.items()
                                  if not k.startswith("c:")}), flush=True)
    return pd.DataFrame(rows)


def decile_tvd(raw: pd.DataFrame, release: pd.DataFrame, columns) -> tuple[float, float]:
    """Mean 1-way and 2-way TVD at the resolution a user comparing distributions sees, not the
    methods' bins: a numeric column on the real data's deciles with its minimum alone (a spike
    such as capital-gain = 0 counts as the spike it is), a categorical one on its values."""
    def levels(frame: pd.DataFrame) -> dict[str, pd.Series]:
        out = {}
        for c in columns:
            if c.type == "numeric":
                q = np.unique(np.quantile(raw[c.name].dropna(), np.linspace(0, 1, 11)))
                edges = np.unique(np.concatenate([[q[0], q[0] + 1e-9], q[1:]]))
                out[c.name] = pd.cut(frame[c.name], edges, include_lowest=True).astype(str)
            else:
                out[c.name] = frame[c.name].astype(str)
        return out

    a, b = levels(raw), levels(release)

    def tvd(x: pd.Series, y: pd.Series) -> float:
        return 0.5 * x.value_counts(normalize=True).sub(y.value_counts(normalize=True), fill_value=0).abs().sum()

    names = list(a)
    one = [tvd(a[n], b[n]) for n in names]
    two = [tvd(a[x] + "|" + a[y], b[x] + "|" + b[y]) for x, y in itertools.combinations(names, 2)]
    return float(np.mean(one)), float(np.mean(two))


def one_way_floor(epsilons: list[float], draws: int = 20) -> pd.DataFrame:
    """The mean 1-way TVD a release would have if ALL of ρ went to the 1-way marginals (no pair
    measured): every column's true counts plus Gaussian noise σ_c = 1/√ρ_c (replace-one, as the
    methods charge), fitted by least squares on {μ ≥ 0, Σμ = n} (``one_way_fit``, what the model
    does with 1-ways alone), against the truth. A simulation (numpy noise), not a release."""
    from app.privacy.dp_release.marginal_domains import build_columns, encode_frame, marginal
    from app.privacy.dp_release.marginals import SynthParams, one_way_rhos
    from app.privacy.dp_release.mst import one_way_fit
    from app.privacy.dp_release.zcdp import rho_for

    data = load_task("adult_income").data
    columns = build_columns(SynthParams(epsilon=1.0), data.columns)
    codes, n = encode_frame(columns, data.frame), len(data.frame)
    truth = [marginal(codes, (c.name,), (c.size,)) for c in columns]
    rng = np.random.default_rng(0)
    rows = []
    for eps in epsilons:
        rho = rho_for(eps, 1e-9, 2 * len(columns))[0]
        for weights in ("uniform", "levels"):
            tvd = [0.5 * np.abs(one_way_fit(t + rng.normal(0, 1 / np.sqrt(r), t.size), np.arange(t.size), n) * n
                                - t).sum() / n
                   for _ in range(draws) for t, r in zip(truth, one_way_rhos(columns, rho, weights))]
            rows.append({"epsilon": eps, "weights": weights, "rho": rho, "tvd_1way": float(np.mean(tvd))})
    return pd.DataFrame(rows)


def summary(frame: pd.DataFrame) -> pd.DataFrame:
    figures = [c for c in ("error", "tvd_1way", "tvd_2way", "deciles_1way", "deciles_2way", "seconds")
               if c in frame]
    grouped = frame.groupby(["variant", "epsilon"])[figures]
    mean, se = grouped.mean(), (grouped.std(ddof=1) / np.sqrt(grouped.count())).fillna(0.0)
    return mean.round(4).astype(str) + " ± " + se.round(4).astype(str)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--eps", default="0.5,1,2")
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--first-seed", type=int, default=0, help="seeds first-seed .. first-seed+seeds-1")
    parser.add_argument("--no-svm", action="store_true")
    parser.add_argument("--one-way-floor", action="store_true",
                        help="only print the 1-way TVD with all of ρ on the 1-way marginals")
    parser.add_argument("--columns", action="store_true")
    parser.add_argument("--deciles", action="store_true",
                        help="also the TVDs on the real data's deciles (decile_tvd)")
    parser.add_argument("--csv", help="also write every run to this CSV file")
    parser.add_argument("--variant", action="append", default=[],
                        help='NAME=METHOD:{"param": value}, e.g. aim_t=aim:{"rounds": 120}')
    args = parser.parse_args()
    if args.one_way_floor:
        print(one_way_floor([float(e) for e in args.eps.split(",")]).round(4).to_string())
        return
    variants = {}
    for spec in args.variant:
        name, rest = spec.split("=", 1)
        method, _, params = rest.partition(":")
        variants[name] = (method, json.loads(params or "{}"))
    variants = variants or {"mst": ("mst", {}), "aim": ("aim", {})}
    seeds = range(args.first_seed, args.first_seed + args.seeds)
    frame = measure(variants, [float(e) for e in args.eps.split(",")], seeds, not args.no_svm,
                    args.columns, args.deciles)
    if args.csv:
        frame.to_csv(args.csv, index=False)
    print(summary(frame).to_string())
    if args.columns:
        cols = [c for c in frame if c.startswith("c:")]
        print(frame.groupby(["variant", "epsilon"])[cols].mean().T.round(4).to_string())


if __name__ == "__main__":
    main()
