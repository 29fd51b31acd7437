"""DP release (spec 03 / issue 5): safe noise throughput, icahdp/dppro on Adult, utility vs peers.

Targets: safe noise ≥ 10 M values/s on one core, next to numpy's (insecure) float Laplace,
diffprivlib's Laplace and OpenDP's float Laplace; icahdp strict on Adult (all numeric + one-hot
categorical) at ε = 1 ≤ 5 s. Peers at the same ε where they install: PrivBayes
(DataSynthesizer) and diffprivlib's PCA (as the basis of a strict-mode projection).

    python -m benchmarks.bench_dp --report [--repetitions N] [--tasks ...] [--privbayes] [--pca]
runs experiment_dp_release (with the chosen peers), writes docs/experiments/img/dp_*.png and
prints the tables (markdown) for docs/experiments/dp_release.md.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import math
import sys
import tempfile
import time
import types
from pathlib import Path

import numpy as np
import pandas as pd

from app.privacy.context import RunContext
from app.privacy.data import MethodInput
from app.privacy.dp_release.dppro import DpproParams, run_dppro
from app.privacy.dp_release.encoding import Encoding, plan_column
from app.privacy.dp_release.icahdp import IcahdpParams, run_icahdp
from app.privacy.experiments import datasets_dir
from app.privacy.experiments.dp_release import (
    ADULT_BOUNDS, ExperimentDpReleaseParams, Releaser, declared_schema, run_protocol,
)
from app.privacy.noise import discrete_gaussian, laplace_mechanism
from app.privacy.rng import SecureRandom
from benchmarks.common import Row, best_time

ROOT = Path(__file__).resolve().parents[1]
NOISE_TARGET = "≥ 10 M/s"
SAFE = "safe noise: discrete Laplace mechanism on a 2^-k grid, CSPRNG, one core"


# ------------------------------------------------------------------------------ peers
def diffprivlib():
    """diffprivlib 0.6 imports sklearn.tree._tree names that scikit-learn 1.9 removed, from its
    forest module only; a stub for that module lets the rest (mechanisms, PCA) import."""
    if "diffprivlib" not in sys.modules:
        stub = types.ModuleType("diffprivlib.models.forest")
        stub.RandomForestClassifier = stub.DecisionTreeClassifier = None
        sys.modules.setdefault("diffprivlib.models.forest", stub)
    import diffprivlib  # noqa: F401  (ImportError propagates: not installed)
    return diffprivlib


def privbayes_releaser(degree: int = 1) -> Releaser:
    """DataSynthesizer's correlated attribute mode (PrivBayes) at ε with a degree-k network.
    Degree 1 (a tree): degree 2 takes ~200 s on 3,000 Adult records here, ~20× degree 1."""
    from DataSynthesizer.DataDescriber import DataDescriber
    from DataSynthesizer.DataGenerator import DataGenerator

    def release(data: MethodInput, eps: float, rng: SecureRandom) -> pd.DataFrame:
        seed = int(rng.integers(2**31 - 1, 1)[0])
        categorical = {c.name: c.type != "numeric" for c in data.columns}
        with tempfile.TemporaryDirectory() as tmp:
            src, desc = Path(tmp) / "in.csv", Path(tmp) / "description.json"
            data.frame.to_csv(src, index=False)
            describer = DataDescriber(category_threshold=0)
            with contextlib.redirect_stdout(io.StringIO()):  # it prints its network
                describer.describe_dataset_in_correlated_attribute_mode(
                    dataset_file=str(src), epsilon=eps, k=degree,
                    attribute_to_is_categorical=categorical, attribute_to_is_candidate_key={}, seed=seed)
                describer.save_dataset_description_to_file(str(desc))
                generator = DataGenerator()
                generator.generate_dataset_in_correlated_attribute_mode(len(data.frame), str(desc), seed=seed)
            out = generator.synthetic_dataset
        for c in data.columns:  # DataSynthesizer writes categories back as strings/objects
            if c.type == "numeric":
                out[c.name] = pd.to_numeric(out[c.name], errors="coerce")
        return out

    return release


def dpl_pca_releaser(k: int = 5, share: float = 0.3) -> Releaser:
    """diffprivlib's PCA (ε·share, centred with its own DP mean) gives the basis; icahdp strict
    projects onto it with the remaining ε (mean and projection), so the total is ε."""
    diffprivlib()
    from diffprivlib.models import PCA

    def release(data: MethodInput, eps: float, rng: SecureRandom) -> pd.DataFrame:
        plans = [plan_column(c, None, None, data.frame, require_declared=True) for c in data.columns]
        enc = Encoding(plans)
        X = enc.encode(data.frame)
        pca = PCA(n_components=min(k, enc.width), epsilon=eps * share,
                  data_norm=math.sqrt(enc.max_l1_norm),
                  bounds=(np.zeros(enc.width), np.ones(enc.width)),
                  random_state=int(rng.integers(2**31 - 1, 1)[0]))
        pca.fit(X)
        params = IcahdpParams(epsilon=eps * (1 - share), basis=pca.components_.T.tolist())
        return run_icahdp(data, params, RunContext(rng)).frame

    return release


def peer_releasers(privbayes: bool = True, pca: bool = True) -> tuple[dict[str, Releaser], dict[str, str]]:
    """The peers that install here, and a note for each one that does not."""
    peers, missing = {}, {}
    if privbayes:
        try:
            peers["PrivBayes (DataSynthesizer, degree 1)"] = privbayes_releaser()
        except ImportError:
            missing["PrivBayes (DataSynthesizer, degree 1)"] = "not installed"
    if pca:
        try:
            diffprivlib()
            peers["diffprivlib PCA basis + projection"] = dpl_pca_releaser()
        except ImportError:
            missing["diffprivlib PCA basis + projection"] = "not installed"
    return peers, missing


# ------------------------------------------------------------------------------ noise
def _noise_rows(quick: bool) -> list[Row]:
    n = 1_000_000 if quick else 10_000_000
    values = np.zeros(n)
    rng = SecureRandom()
    seconds = best_time(lambda: laplace_mechanism(values, 1.0, 1, 1.0, rng), repeat=3)
    veil = n / seconds / 1e6
    _, rec = laplace_mechanism(values[:10], 1.0, 1, 1.0, rng)
    note = (f"grid 2^{rec.grid_exponent}, t = {rec.scale_steps:.3g} steps, delivered ε "
            f"{rec.epsilon_delivered:.12g} (slack {rec.sampler_slack:.1e})")

    def row(peer: str, value: float | None, extra: str) -> Row:
        return Row(workload=SAFE, veil=veil, unit="M values/s", peer=peer, peer_value=value,
                   target=NOISE_TARGET, notes=f"{note}; {extra}")

    gen = np.random.default_rng()
    numpy_rate = n / best_time(lambda: values + gen.laplace(0.0, 1.0, n), repeat=3) / 1e6
    rows = [row("numpy Generator.laplace (float, attackable)", numpy_rate, "numpy: textbook float noise")]
    m = 20_000 if quick else 100_000
    try:
        diffprivlib()
        from diffprivlib.mechanisms import Laplace

        mech = Laplace(epsilon=1.0, sensitivity=1.0)
        small = values[:m].tolist()
        rate = m / best_time(lambda: [mech.randomise(v) for v in small], repeat=2) / 1e6
        rows.append(row("diffprivlib Laplace.randomise (per value)", rate, f"diffprivlib on {m:,} values"))
    except ImportError:
        rows.append(row("diffprivlib Laplace.randomise", None, "diffprivlib not installed"))
    try:
        import opendp.prelude as dp

        dp.enable_features("contrib")
        meas = dp.m.make_laplace(dp.vector_domain(dp.atom_domain(T=float, nan=False)),
                                 dp.l1_distance(T=float), scale=1.0)
        small = values[:m].tolist()
        rate = m / best_time(lambda: meas(small), repeat=2) / 1e6
        rows.append(row("OpenDP make_laplace (float vector)", rate, f"OpenDP on {m:,} values"))
    except ImportError:
        rows.append(row("OpenDP make_laplace", None, "opendp not installed"))
    g_rate = n / best_time(lambda: discrete_gaussian(2.0**20, n, rng), repeat=2) / 1e6
    rows.append(Row(workload="safe noise: discrete Gaussian (σ = 2^20 steps), CSPRNG, one core",
                    veil=g_rate, unit="M values/s", notes="CKS Alg. 3 by rejection from the discrete Laplace"))
    return rows


# ------------------------------------------------------------------------ releases
def adult_all(rows: int | None = None) -> MethodInput:
    frame = pd.read_csv(datasets_dir() / "adult" / "adult_train.csv", na_values="?",
                        skipinitialspace=True, nrows=rows)
    return MethodInput(declared_schema(frame, ADULT_BOUNDS), frame)


def _release_rows(quick: bool) -> list[Row]:
    data = adult_all(3000 if quick else None)
    n, width = len(data.frame), Encoding([plan_column(c, None, None, data.frame, require_declared=True)
                                          for c in data.columns]).width
    label = f"Adult ({n:,} rows, 6 numeric + 9 categorical = {width} one-hot columns)"
    strict = best_time(lambda: run_icahdp(data, IcahdpParams(epsilon=1.0), RunContext()), repeat=3)
    paper = best_time(lambda: run_icahdp(data, IcahdpParams(epsilon=1.0, mode="paper"), RunContext()), 2)
    dppro = best_time(lambda: run_dppro(data, DpproParams(epsilon=1.0), RunContext()), repeat=3)
    peer, peer_value, note = "PrivBayes (DataSynthesizer, degree 1)", None, "skipped in quick mode"
    if not quick:
        try:
            release = privbayes_releaser()
            start = time.perf_counter()
            release(data, 1.0, SecureRandom())
            peer_value = time.perf_counter() - start
            note = "PrivBayes: one run, same rows, ε = 1"
        except ImportError:
            note = "DataSynthesizer not installed"
    rows = [_pca_row()] if not quick else []
    return rows + [
        Row(workload=f"icahdp strict ε = 1 on {label}", veil=strict, unit="s", peer=peer,
            peer_value=peer_value, higher_is_better=False, target="≤ 5 s" if not quick else None,
            notes=note),
        Row(workload=f"icahdp paper ε = 1 (5 candidate k) on {label}", veil=paper, unit="s",
            higher_is_better=False),
        Row(workload=f"dppro ε = 1, δ = 1e-6, k = 10 on {label}", veil=dppro, unit="s",
            higher_is_better=False),
    ]


def _pca_row() -> Row:
    """DP PCA on 3,000 Adult records: icahdp strict's whole release vs diffprivlib's PCA fit alone
    (its eigenvector sampler is slow; on the full training part one fit took > 15 min)."""
    data = adult_all(3000)
    veil = best_time(lambda: run_icahdp(data, IcahdpParams(epsilon=1.0, k=5), RunContext()), repeat=3)
    workload = "DP PCA, k = 5, Adult 3,000 records × 104 encoded columns"
    try:
        diffprivlib()
        from diffprivlib.models import PCA
    except ImportError:
        return Row(workload=workload, veil=veil, unit="s", peer="diffprivlib PCA.fit",
                   higher_is_better=False, notes="diffprivlib not installed")
    enc = Encoding([plan_column(c, None, None, data.frame, require_declared=True) for c in data.columns])
    X = enc.encode(data.frame)
    start = time.perf_counter()
    PCA(n_components=5, epsilon=0.3, data_norm=math.sqrt(enc.max_l1_norm),
        bounds=(np.zeros(enc.width), np.ones(enc.width))).fit(X)
    return Row(workload=workload, veil=veil, unit="s", peer="diffprivlib PCA.fit (ε = 0.3)",
               peer_value=time.perf_counter() - start, higher_is_better=False,
               notes="Veil: the whole icahdp strict release at ε = 1 (DP mean, covariance, "
                     "projection); diffprivlib: the PCA fit alone, one run")


def _utility_rows(quick: bool) -> list[Row]:
    """Misclassification at ε = 1 on Adult (degree), train on release / test on raw."""
    if quick:
        return []
    peers, missing = peer_releasers(pca=False)
    missing["diffprivlib PCA basis + projection"] = (
        "installed, but one DP-PCA fit on the 22,792-record training part did not finish in 15 min")
    params = ExperimentDpReleaseParams(tasks=["adult_degree"], epsilons=[1.0], repetitions=3)
    report = run_protocol(params, RunContext(), extra=peers)
    runs = report.tables["runs"]
    mean = runs.groupby("method")["error_raw_holdout"].mean()
    workload = "misclassification, Adult degree, ε = 1, SVM trained on release, tested on raw (3 reps)"
    rows = [Row(workload=workload, veil=float(mean["icahdp_strict"]), unit="error",
                peer=name, peer_value=float(mean[key]), higher_is_better=False,
                notes=f"majority class {runs['majority_error'].mean():.3f}; NoPrivacy "
                      f"{mean['noprivacy']:.3f}; ICAHDP paper {mean['icahdp_paper']:.3f}")
            for key, name in [("dppro", "DPPro (Veil)"), *[(p, p) for p in peers]]]
    rows += [Row(workload=workload, veil=None, unit="error", peer=name, notes=note)
             for name, note in missing.items()]
    return rows


def cases(quick: bool) -> list[Row]:
    return _noise_rows(quick) + _release_rows(quick) + _utility_rows(quick)


# --------------------------------------------------------------------------- report
def _markdown(frame: pd.DataFrame) -> str:
    cells = frame.astype(object).where(frame.notna(), "—").astype(str)
    lines = ["| " + " | ".join(map(str, frame.columns)) + " |", "|" + "---|" * len(frame.columns)]
    return "\n".join(lines + ["| " + " | ".join(row) + " |" for row in cells.to_numpy()])


def write_report(repetitions: int, tasks: list[str] | None, epsilons: list[float] | None,
                 privbayes: bool, pca: bool, images: bool) -> None:
    peers, missing = peer_releasers(privbayes, pca)
    params = ExperimentDpReleaseParams(repetitions=repetitions, train_rows=3000, test_rows=3000,
                                       **({"tasks": tasks} if tasks else {}),
                                       **({"epsilons": epsilons} if epsilons else {}))
    start = time.perf_counter()
    report = run_protocol(params, RunContext(on_progress=lambda f, s: print(
        f"{time.perf_counter() - start:7.0f}s {f:.2f} {s}", flush=True)), extra=peers)
    img = ROOT / "docs" / "experiments" / "img"
    img.mkdir(parents=True, exist_ok=True)
    for name, plot in report.plots.items() if images else ():
        (img / f"dp_{name}.png").write_bytes(plot.png)
    lines = [f"{repetitions} repetition(s), {time.perf_counter() - start:.0f} s; peers: "
             f"{', '.join(peers) or 'none'}; missing: {missing or 'none'}.", ""]
    for key in ("summary_raw_holdout", "summary_release_split"):
        lines += [f"### {key}", "", _markdown(report.tables[key].round(3)), ""]
    runs = report.tables["runs"]
    se = (runs.groupby(["task", "method", "epsilon"])["error_raw_holdout"]
          .agg(lambda x: x.std(ddof=1) / math.sqrt(len(x)) if len(x) > 1 else float("nan"))
          .unstack("epsilon"))
    se.columns = [("no privacy" if math.isinf(c) else f"eps={c:g}") for c in se.columns]
    lines += ["### standard error of the raw-holdout means", "", _markdown(se.round(3).reset_index()), ""]
    lines += ["### majority-class error", "",
              _markdown(pd.Series(report.data["majority_error"]).round(3).rename("error").reset_index()),
              "", "### mean release time (s)", "",
              _markdown(pd.Series(report.data["release_seconds"]).round(2).rename("s").reset_index()), ""]
    print("\n".join(lines))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(prog="python -m benchmarks.bench_dp")
    parser.add_argument("--report", action="store_true")
    parser.add_argument("--repetitions", type=int, default=10)
    parser.add_argument("--tasks", default="", help="comma-separated; default all")
    parser.add_argument("--epsilons", default="", help="comma-separated; default the spec's grid")
    parser.add_argument("--privbayes", action="store_true", help="include PrivBayes (slow)")
    parser.add_argument("--pca", action="store_true", help="include diffprivlib's PCA (slow)")
    parser.add_argument("--no-images", action="store_true")
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    if args.report:
        write_report(args.repetitions, [t for t in args.tasks.split(",") if t],
                     [float(e) for e in args.epsilons.split(",") if e], args.privbayes, args.pca,
                     not args.no_images)
    else:
        for r in cases(args.quick):
            print(r)
