"""DP release (spec 03 / issues 5 and 8): safe noise throughput, icahdp/dppro on Adult, the
synthesizers mst/aim/privbayes on Adult income, utility vs peers.

Targets: safe noise ≥ 10 M values/s on one core, next to numpy's (insecure) float Laplace,
diffprivlib's Laplace and OpenDP's float Laplace; icahdp strict on Adult (all numeric + one-hot
categorical) at ε = 1 ≤ 5 s; at ε = 1 on Adult income, aim ≤ 0.165 misclassification in ≤ 60 s
(or mst ≤ 0.19 in ≤ 20 s). Peers at the same ε where they install: PrivBayes
(DataSynthesizer), diffprivlib's PCA (as the basis of a strict-mode projection), and
smartnoise-synth's MST and AIM, which pin mbi 1.1 and run in the peers' interpreter
($VEIL_PEERS_PYTHON, else .venv-peers).

    python -m benchmarks.bench_dp --report [--repetitions N] [--tasks ...] [--methods ...]
        [--privbayes] [--pca] [--smartnoise sn_mst,sn_aim,...] [--train-rows N] [--test-rows N]
runs experiment_dp_release (with the chosen peers), writes docs/experiments/img/dp_*.png and
prints the tables (markdown) for docs/experiments/dp_release.md.

    python -m benchmarks.bench_dp --privbayes-rows [--merge]
runs only privbayes's rows (beside DataSynthesizer's PrivBayes, degree 1) and, with --merge,
writes them into docs/benchmarks.md after aim's.

    python -m benchmarks.bench_dp --add-remove-rows [--merge]
runs only mst's and aim's add/remove rows of the benchmark table (``python -m benchmarks`` runs
them beside the replace-one rows, with the peers) and, with --merge, writes them into
docs/benchmarks.md next to the replace-one rows, the smartnoise peers' figures read from there.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import math
import os
import re
import subprocess
import sys
import tempfile
import time
import types
from pathlib import Path

import numpy as np
import pandas as pd

from app.privacy.context import RunContext
from app.privacy.data import MethodInput
from app.privacy.dp_release.aim import AimParams, run_aim
from app.privacy.dp_release.dppro import DpproParams, run_dppro
from app.privacy.dp_release.encoding import Encoding, plan_column
from app.privacy.dp_release.icahdp import IcahdpParams, run_icahdp
from app.privacy.dp_release.mst import MstParams, run_mst
from app.privacy.experiments import datasets_dir
from app.privacy.experiments.dp_release import ExperimentDpReleaseParams, run_protocol
from app.privacy.experiments.dp_release_releasers import RELEASES, Releaser
from app.privacy.experiments.dp_release_tasks import ADULT_BOUNDS, declared_schema, load_task
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

    def release(data: MethodInput, eps: float, ctx: RunContext) -> pd.DataFrame:
        seed = int(ctx.rng.integers(2**31 - 1, 1)[0])
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


SMARTNOISE = """
import json, sys, time, types
import numpy as np, pandas as pd
src, out, spec = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
if spec["patched"]:
    # mbi 1.1's randomized rounding ranks the rows of each parent group in row order (a stable
    # argsort), so columns drawn from the same parents come out co-monotone; mbi 2.0 shuffles
    # within each group. Same fix here: break the sort's ties at random.
    import mbi.markov_random_field as mrf
    shim = types.ModuleType("numpy_shim")
    shim.__getattr__ = lambda name: getattr(np, name)
    def argsort(a, *args, kind=None, **kw):
        a = np.asarray(a)
        if kind == "stable" and a.ndim == 1:
            return np.lexsort((np.random.rand(len(a)), a))
        return np.argsort(a, *args, kind=kind, **kw)
    shim.argsort = argsort
    mrf.np = shim
from snsynth.transform import BinTransformer, LabelTransformer, TableTransformer
from snsynth.mst import MSTSynthesizer
from snsynth.aim import AIMSynthesizer
np.random.seed(spec["seed"])
data = pd.read_csv(src)
parts = []
for name in data.columns:
    if name in spec["bounds"]:
        lo, hi = spec["bounds"][name]
        parts.append(BinTransformer(bins=int(min(spec["bins"], hi - lo + 1)), lower=lo, upper=hi))
    else:
        data[name] = data[name].astype(str)
        parts.append(LabelTransformer(nullable=False))
synth = (MSTSynthesizer if spec["kind"] == "mst" else AIMSynthesizer)(epsilon=spec["epsilon"], delta=spec["delta"])
start = time.perf_counter()
synth.fit(data, transformer=TableTransformer(parts), preprocessor_eps=0.0)
sample = synth.sample(len(data))
seconds = time.perf_counter() - start
pd.DataFrame(sample, columns=list(data.columns)).to_csv(out, index=False)
print(json.dumps({"seconds": seconds}))
"""
SMARTNOISE_TIMEOUT = 1800


def peers_python(probe: str) -> str | None:
    """The interpreter of the peers that pin old dependencies (``$VEIL_PEERS_PYTHON``, else
    ``.venv-peers``) if ``probe`` imports there."""
    for python in filter(None, [os.environ.get("VEIL_PEERS_PYTHON"), str(ROOT / ".venv-peers" / "bin" / "python")]):
        if Path(python).exists() and subprocess.run([python, "-c", probe], capture_output=True).returncode == 0:
            return python
    return None


def smartnoise_releaser(kind: str, patched: bool, bins: int = 32) -> Releaser:
    """smartnoise-synth 1.0.8's MST or AIM (on mbi 1.1.0) in the peers' interpreter, numeric
    columns binned over the same declared bounds (``bins`` bins, one per integer when fewer),
    categories from the data (smartnoise's LabelTransformer), δ = 1e-9. ``patched`` fixes mbi
    1.1's co-monotone sampling (see SMARTNOISE). Its noise is numpy's float Gaussian and its
    neighbours add/remove one record."""
    python = peers_python("import snsynth.mst, snsynth.aim")
    if python is None:
        raise ImportError("smartnoise-synth is not installed in the peers' interpreter")
    last: dict[str, float] = {}

    def release(data: MethodInput, eps: float, ctx: RunContext) -> pd.DataFrame:
        spec = {"kind": kind, "patched": patched, "epsilon": eps, "delta": 1e-9, "bins": bins,
                "seed": int(ctx.rng.integers(2**31 - 1, 1)[0]),
                "bounds": {c.name: list(c.bounds) for c in data.columns if c.type == "numeric"}}
        with tempfile.TemporaryDirectory() as tmp:
            src, out = Path(tmp) / "in.csv", Path(tmp) / "out.csv"
            data.frame.to_csv(src, index=False)
            done = subprocess.run([python, "-c", SMARTNOISE, str(src), str(out), json.dumps(spec)],
                                  capture_output=True, text=True, timeout=SMARTNOISE_TIMEOUT)
            if done.returncode != 0:
                raise RuntimeError("smartnoise failed: " + done.stderr.strip().splitlines()[-1][:300])
            last["seconds"] = json.loads(done.stdout.strip().splitlines()[-1])["seconds"]
            frame = pd.read_csv(out)
        for c in data.columns:
            if c.type != "numeric":
                frame[c.name] = frame[c.name].astype(str)
        return frame

    release.last = last  # the peer's own fit + sample time of the latest call
    return release


def dpl_pca_releaser(k: int = 5, share: float = 0.3) -> Releaser:
    """diffprivlib's PCA (ε·share, centred with its own DP mean) gives the basis; icahdp strict
    projects onto it with the remaining ε (mean and projection), so the total is ε."""
    diffprivlib()
    from diffprivlib.models import PCA

    def release(data: MethodInput, eps: float, ctx: RunContext) -> pd.DataFrame:
        plans = [plan_column(c, None, None, data.frame, require_declared=True) for c in data.columns]
        enc = Encoding(plans)
        X = enc.encode(data.frame)
        pca = PCA(n_components=min(k, enc.width), epsilon=eps * share,
                  data_norm=math.sqrt(enc.max_l1_norm),
                  bounds=(np.zeros(enc.width), np.ones(enc.width)),
                  random_state=int(ctx.rng.integers(2**31 - 1, 1)[0]))
        pca.fit(X)
        params = IcahdpParams(epsilon=eps * (1 - share), basis=pca.components_.T.tolist())
        return run_icahdp(data, params, ctx).frame

    return release


SMARTNOISE_PEERS = {"sn_mst": ("smartnoise MST (mbi 1.1, sampling fixed)", "mst", True),
                    "sn_aim": ("smartnoise AIM (mbi 1.1, sampling fixed)", "aim", True),
                    "sn_mst_raw": ("smartnoise MST (mbi 1.1 as installed)", "mst", False),
                    "sn_aim_raw": ("smartnoise AIM (mbi 1.1 as installed)", "aim", False)}


def peer_releasers(privbayes: bool = True, pca: bool = True, smartnoise: tuple[str, ...] = (),
                   privbayes_degrees: tuple[int, ...] = (1,)) -> tuple[dict[str, Releaser], dict[str, str]]:
    """The peers that install here, and a note for each one that does not (DataSynthesizer's
    PrivBayes at each of ``privbayes_degrees``)."""
    peers, missing = {}, {}
    for key in smartnoise:
        label, kind, patched = SMARTNOISE_PEERS[key]
        try:
            peers[label] = smartnoise_releaser(kind, patched)
        except ImportError:
            missing[label] = "not installed"
    for degree in privbayes_degrees if privbayes else ():
        label = f"PrivBayes (DataSynthesizer, degree {degree})"
        try:
            peers[label] = privbayes_releaser(degree)
        except ImportError:
            missing[label] = "not installed"
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
        diffprivlib()  # installed? (the fit itself runs in a child process below)
    except ImportError:
        return Row(workload=workload, veil=veil, unit="s", peer="diffprivlib PCA.fit",
                   higher_is_better=False, notes="diffprivlib not installed")
    # diffprivlib's Bingham sampler is a rejection sampler: one fit took ≈ 230 s once and did
    # not end in 25 min in another run, so it runs in a child process with a time limit.
    import multiprocessing

    with multiprocessing.get_context("spawn").Pool(1) as pool:
        pending = pool.apply_async(_diffprivlib_pca_seconds)
        try:
            peer_seconds, note = pending.get(PCA_PEER_LIMIT_S), "one run"
        except multiprocessing.TimeoutError:
            peer_seconds, note = None, f"did not finish in {PCA_PEER_LIMIT_S} s (stopped)"
            pool.terminate()
        except Exception as exc:  # the peer broke: say so in the row, keep the other rows
            peer_seconds, note = None, f"failed: {type(exc).__name__}"
    return Row(workload=workload, veil=veil, unit="s", peer="diffprivlib PCA.fit (ε = 0.3)",
               peer_value=peer_seconds, higher_is_better=False,
               notes="Veil: the whole icahdp strict release at ε = 1 (DP mean, covariance, "
                     f"projection); diffprivlib: the PCA fit alone, {note}")


PCA_PEER_LIMIT_S = int(os.environ.get("VEIL_BENCH_PCA_LIMIT_S", "600"))


def _diffprivlib_pca_seconds() -> float:
    diffprivlib()  # a fresh interpreter: its sklearn shim again
    from diffprivlib.models import PCA

    data = adult_all(3000)
    enc = Encoding([plan_column(c, None, None, data.frame, require_declared=True) for c in data.columns])
    X = enc.encode(data.frame)
    start = time.perf_counter()
    PCA(n_components=5, epsilon=0.3, data_norm=math.sqrt(enc.max_l1_norm),
        bounds=(np.zeros(enc.width), np.ones(enc.width))).fit(X)
    return time.perf_counter() - start


def _utility_rows(quick: bool) -> list[Row]:
    """Misclassification at ε = 1 on Adult (degree), train on release / test on raw."""
    if quick:
        return []
    peers, missing = peer_releasers(pca=False)
    missing["diffprivlib PCA basis + projection"] = (
        "not run in this row: when tried (Nov 2026) one DP-PCA fit on the 22,792-record training "
        "part did not finish in 15 min; the DP PCA row above times it under a limit")
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


COLD = """
import json, sys, time
start = time.perf_counter()
from app.privacy.context import RunContext
import app.privacy.experiments.dp_release  # what the published figures had loaded before the timed run
from app.privacy.experiments.dp_release_tasks import load_task
from app.privacy.dp_release.{module} import {params} as P, run_{module} as run
data = load_task("adult_income").data
loaded = time.perf_counter()
run(data, P(epsilon=1.0, **json.loads(sys.argv[1])), RunContext())
print(json.dumps({{"seconds": time.perf_counter() - loaded, "with_import": time.perf_counter() - start}}))
"""


def cold_seconds(method: str, extra: dict | None = None) -> float:
    """One release in a fresh interpreter, as a job's child process runs it: jax is imported
    and every program compiled inside (the data loading is not counted). ``extra``: the
    method's other parameters (an add/remove variant's ``neighbouring``)."""
    module, params = {"mst": ("mst", "MstParams"), "aim": ("aim", "AimParams"),
                      "privbayes": ("privbayes", "PrivBayesParams")}[method]
    done = subprocess.run([sys.executable, "-c", COLD.format(module=module, params=params),
                           json.dumps(extra or {})],
                          capture_output=True, text=True, cwd=ROOT, check=True, timeout=900)
    return json.loads(done.stdout.strip().splitlines()[-1])["seconds"]


def _synthetic_rows(quick: bool) -> list[Row]:
    """mst and aim (issue 8) on Adult income at ε = 1: release time in a fresh process and the
    misclassification of an RBF SVM trained on 10,000 synthetic records, tested on adult_test
    (mean of 3 runs), next to smartnoise-synth's MST and AIM (mbi 1.1, sampling fixed)."""
    if quick:  # the pipeline on a small table: jax's compilation dominates
        task = load_task("adult_income")
        small = MethodInput(task.data.columns[:5], task.data.frame.iloc[:2000, :5])
        mst = best_time(lambda: run_mst(small, MstParams(epsilon=1.0, iterations=200), RunContext()), 1)
        aim = best_time(lambda: run_aim(small, AimParams(epsilon=1.0, iterations=200), RunContext()), 1)
        return [Row(workload="mst ε = 1, Adult 2,000 rows × 5 columns (quick; in-process)", veil=mst,
                    unit="s", higher_is_better=False, notes="quick mode: no peer"),
                Row(workload="aim ε = 1, Adult 2,000 rows × 5 columns (quick; in-process)", veil=aim,
                    unit="s", higher_is_better=False, notes="quick mode: no peer")]
    # each with its add/remove variant, the peer's relation (like-for-like), beside it
    return [row for method, (key, peer_reps, target) in SYNTHETIC.items()
            for row in synthetic_method_rows(method, key, 3, peer_reps, target, ADD_REMOVE_PAIRS[method])]


# each synthesizer's smartnoise peer, the peer's runs (smartnoise's AIM takes minutes) and target
SYNTHETIC = {"mst": ("sn_mst", 3, "≤ 0.19 in ≤ 20 s"), "aim": ("sn_aim", 1, "≤ 0.165 in ≤ 60 s")}
# the experiment's releases of each: its replace-one default, its add/remove variant
ADD_REMOVE_PAIRS = {"mst": ("mst", "mst_add_remove"), "aim": ("aim", "aim_add_remove")}


def _synthetic_workloads(method: str, name: str, reps: int) -> tuple[str, str]:
    """The two rows' workloads of the experiment's release ``name`` of ``method`` (replace-one:
    the rows' names before the add/remove variants came, kept so their history reads on)."""
    tag = method if not RELEASES[name][1] else f"{method}, neighbouring add_remove,"
    return (f"{tag} ε = 1 on Adult income (30,162 rows), fresh process",
            f"{tag} ε = 1 on Adult income: SVM misclassification (train on 10,000 synthetic, "
            f"test on adult_test, {reps} runs)")


def synthetic_method_rows(method: str, key: str, reps: int, peer_reps: int, target: str,
                          names: tuple[str, ...] | None = None,
                          peer: tuple[float | None, float | None, str] | None = None) -> list[Row]:
    """Time (fresh process) and misclassification of one synthesizer's releases ``names`` (the
    experiment's: ``method`` and/or its add/remove variant; default ``method``) and its
    smartnoise peer, run once for all of them — or ``peer`` = (misclassification, seconds,
    note) measured before (``add_remove_rows``)."""
    names = names or (method,)
    label = SMARTNOISE_PEERS[key][0]
    params = ExperimentDpReleaseParams(tasks=["adult_income"], methods=list(names), epsilons=[1.0],
                                       repetitions=reps, train_rows=10_000, test_rows=20_000)
    report = run_protocol(params, RunContext())
    runs, debited = report.tables["runs"], report.tables["epsilon_debited"].set_index("method")
    if peer is None:
        peers, missing = peer_releasers(privbayes=False, pca=False, smartnoise=(key,))
        peer_error, peer_seconds, note = None, None, missing.get(label, "")
        if label in peers:
            peer_params = params.model_copy(update={"methods": ["noprivacy"], "repetitions": peer_reps})
            peer_runs = run_protocol(peer_params, RunContext(), extra=peers).tables["runs"]
            peer_error = float(peer_runs.loc[peer_runs["method"] == label, "error_raw_holdout"].mean())
            peer_seconds, note = peers[label].last["seconds"], f"peer: {peer_reps} run(s)"
    else:
        peer_error, peer_seconds, note = peer
    rows = []
    for name in names:
        part = runs[runs["method"] == name]
        extra = RELEASES[name][1]
        relation = ("ε under add/remove-one neighbours, the peer's (like-for-like); a job is debited "
                    f"the replace-one ε' = {debited.loc[name, 'epsilon_replace_one']:.4f}"
                    if extra else "Veil's ε replace-one (the peer's add/remove)")
        tvd = f"TVD 1-way {part['tvd_1way'].mean():.4f}, 2-way {part['tvd_2way'].mean():.4f}"
        timed, scored = _synthetic_workloads(method, name, reps)
        rows += [
            Row(workload=timed, veil=cold_seconds(method, extra), unit="s", peer=label, peer_value=peer_seconds,
                higher_is_better=False, target=target,
                notes=f"Veil: jax import and compilation included; peer: its fit + sample; {relation}"
                      if extra else "Veil: jax import and compilation included; peer: its fit + sample"),
            Row(workload=scored, veil=float(part["error_raw_holdout"].mean()), unit="error", peer=label,
                peer_value=peer_error, higher_is_better=False, target=target,
                notes=f"{tvd}; {note}; majority class {part['majority_error'].mean():.3f}"
                      + (f"; {relation}" if extra else "")),
        ]
    return rows


def _doc_rows(doc: Path) -> list[list[str]]:
    """docs/benchmarks.md's table rows, as their cells (family, workload, Veil, unit, peer,
    peer value, ratio, target, notes)."""
    return [[c.strip() for c in line.strip().strip("|").split("|")]
            for line in doc.read_text().splitlines()
            if line.startswith("| ") and not line.startswith("| family ")]


def peer_from_doc(doc: Path, method: str, reps: int = 3) -> tuple[float | None, float | None, str]:
    """The smartnoise peer's misclassification and seconds from ``method``'s replace-one rows
    in ``doc`` (the same protocol at ε = 1): the add/remove rows are merged beside them without
    running the peer again (smartnoise's AIM takes minutes a release)."""
    label = SMARTNOISE_PEERS[SYNTHETIC[method][0]][0]
    timed, scored = _synthetic_workloads(method, method, reps)
    found = {row[1]: row for row in _doc_rows(doc) if row[0] == "dp" and row[4] == label}

    def value(workload: str) -> float | None:
        cell = found.get(workload, [""] * 6)[5].replace(",", "")
        return float(cell) if cell not in ("", "—") else None

    runs = re.search(r"peer: (\d+) run\(s\)", found.get(scored, [""] * 9)[8])
    note = (f"peer: {runs.group(1) if runs else '?'} run(s), its figures from the replace-one rows' run "
            "(not re-run)")
    return value(scored), value(timed), note


def add_remove_rows(doc: Path, merge: bool) -> list[Row]:
    """mst's and aim's add/remove rows alone (their peers' figures read from ``doc``); with
    ``merge``, written into ``doc`` beside the replace-one rows they pair with (a row of the same
    workload and peer replaced)."""
    from benchmarks.__main__ import table

    rows = []
    for method, (key, _, target) in SYNTHETIC.items():
        rows += synthetic_method_rows(method, key, 3, 0, target, (ADD_REMOVE_PAIRS[method][1],),
                                      peer=peer_from_doc(doc, method))
    if merge:
        lines = doc.read_text().splitlines()
        stamp = f" (merged {time.strftime('%Y-%m-%d %H:%M')})"
        for row in rows:
            row.notes += stamp
            new = table([("dp", row)]).splitlines()[2]
            key = [c.strip() for c in new.strip().strip("|").split("|")]
            cells = [[c.strip() for c in line.strip().strip("|").split("|")] if line.startswith("| ") else None
                     for line in lines]
            same = [i for i, c in enumerate(cells) if c and c[:2] == key[:2] and c[4] == key[4]]
            if same:
                lines[same[0]] = new
                continue
            method = row.workload.split(",")[0]
            pair = row.workload.replace(f"{method}, neighbouring add_remove,", method)
            after = [i for i, c in enumerate(cells) if c and c[0] == "dp" and c[1] == pair]
            at = after[-1] + 1 if after else max(i for i, c in enumerate(cells) if c and c[0] == "dp") + 1
            lines.insert(at, new)
        doc.write_text("\n".join(lines) + "\n")
    return rows


PRIVBAYES_PEER = "PrivBayes (DataSynthesizer, degree 1)"
PRIVBAYES_WORKLOADS = {
    "time": "privbayes ε = 1 (pure, δ = 0) on Adult income (30,162 rows), fresh process",
    "privbayes": "privbayes ε = 1 on Adult income: SVM misclassification (train on 10,000 synthetic, test on "
                 "adult_test, 3 runs)",
    "privbayes_add_remove": "privbayes, neighbouring add_remove, ε = 1 on Adult income: SVM misclassification "
                            "(train on 10,000 synthetic, test on adult_test, 3 runs)"}


def privbayes_peer_from_doc(doc: Path) -> tuple[float | None, float | None, str]:
    """DataSynthesizer's misclassification and seconds from the replace-one privbayes rows of
    ``doc``, when it does not install here (the same protocol at ε = 1)."""
    found = {row[1]: row for row in _doc_rows(doc) if row[0] == "dp" and row[4] == PRIVBAYES_PEER}

    def value(workload: str) -> float | None:
        cell = found.get(workload, [""] * 6)[5].replace(",", "")
        return float(cell) if cell not in ("", "—") else None

    return (value(PRIVBAYES_WORKLOADS["privbayes"]), value(PRIVBAYES_WORKLOADS["time"]),
            "peer: 3 runs, its figures from an earlier run (DataSynthesizer does not install here; not re-run)")


def privbayes_rows(quick: bool, doc: Path | None = None) -> list[Row]:
    """Veil's privbayes (pure ε-DP) at ε = 1 on Adult income beside DataSynthesizer's PrivBayes
    (degree 1; its degree 2 takes many times as long): one release's seconds in a fresh process
    (the peer's: its describe + generate in-process) and the SVM misclassification of issue 8's
    protocol (3 runs each), under replace-one and under add/remove — DataSynthesizer's Laplace
    noise on each marginal is calibrated to sensitivity 1, add/remove's (though it treats n as
    public). Without DataSynthesizer the peer's figures come from ``doc``'s rows."""
    if quick:
        return []
    names = ["privbayes", "privbayes_add_remove"]
    params = ExperimentDpReleaseParams(tasks=["adult_income"], methods=names, epsilons=[1.0],
                                       repetitions=3, train_rows=10_000, test_rows=20_000)
    report = run_protocol(params, RunContext())
    runs, debited = report.tables["runs"], report.tables["epsilon_debited"].set_index("method")
    peers, missing = peer_releasers(pca=False)
    peer_error = peer_seconds = None
    note = missing.get(PRIVBAYES_PEER, "peer: 3 runs")
    if PRIVBAYES_PEER in peers:
        peer_runs = run_protocol(params.model_copy(update={"methods": ["noprivacy"]}), RunContext(),
                                 extra=peers).tables["runs"]
        mine = peer_runs[peer_runs["method"] == PRIVBAYES_PEER]
        peer_error, peer_seconds = float(mine["error_raw_holdout"].mean()), float(mine["release_seconds"].mean())
    elif doc is not None:
        peer_error, peer_seconds, note = privbayes_peer_from_doc(doc)
    rows = [Row(workload=PRIVBAYES_WORKLOADS["time"], veil=cold_seconds("privbayes"), unit="s", peer=PRIVBAYES_PEER,
                peer_value=peer_seconds, higher_is_better=False,
                notes="Veil: one release in a new interpreter; peer: its describe + generate in-process, "
                      "mean of its 3 runs")]
    for name in names:
        part = runs[runs["method"] == name]
        relation = ("; ε under add/remove-one neighbours, as DataSynthesizer's marginal noise (like-for-like); "
                    f"a job is debited the replace-one ε' = {debited.loc[name, 'epsilon_replace_one']:.4f}"
                    if name != "privbayes" else "")
        rows.append(Row(workload=PRIVBAYES_WORKLOADS[name], veil=float(part["error_raw_holdout"].mean()),
                        unit="error", peer=PRIVBAYES_PEER, peer_value=peer_error, higher_is_better=False,
                        notes=f"TVD 1-way {part['tvd_1way'].mean():.4f}, 2-way {part['tvd_2way'].mean():.4f}; "
                              f"{note}; majority class {part['majority_error'].mean():.3f}{relation}"))
    return rows


def merge_privbayes_rows(doc: Path, rows: list[Row]) -> None:
    """Write ``rows`` into ``doc``'s table: a row of the same workload and peer replaced, else
    inserted after the last aim row on Adult income."""
    from benchmarks.__main__ import table

    lines = doc.read_text().splitlines()
    stamp = f" (merged {time.strftime('%Y-%m-%d %H:%M')})"
    for row in rows:
        row.notes += stamp
        new = table([("dp", row)]).splitlines()[2]
        cells = [[c.strip() for c in line.strip().strip("|").split("|")] if line.startswith("| ") else None
                 for line in lines]
        same = [i for i, c in enumerate(cells) if c and c[0] == "dp" and c[1] == row.workload and c[4] == row.peer]
        if same:
            lines[same[0]] = new
            continue
        after = [i for i, c in enumerate(cells) if c and c[0] == "dp"
                 and (c[1].startswith("aim") and "Adult income" in c[1] or c[1].startswith("privbayes"))]
        lines.insert(after[-1] + 1, new)
    doc.write_text("\n".join(lines) + "\n")


def _aim_many_columns_rows(quick: bool) -> list[Row]:
    """AIM on CoIL 2000's 86 declared columns: the round's model-size filter per candidate,
    next to mbi's own, and (full mode) a whole release."""
    from mbi import Domain, junction_tree

    from app.privacy.dp_release.marginal_domains import build_columns
    from app.privacy.dp_release.pgm import CliqueGraph, maximal_subset

    data = load_task("coil_caravan").data
    sizes = {c.name: c.size for c in build_columns(AimParams(epsilon=1.0), data.columns)}
    names = list(sizes)
    rng = np.random.default_rng(0)
    measured = [(a,) for a in names] + [tuple(rng.choice(names, 2, replace=False)) for _ in range(22)]
    candidates = [(a, b) for i, a in enumerate(names) for b in names[i + 1:]]
    ours = best_time(lambda: [CliqueGraph(sizes, measured).cells(r) for r in candidates], 1) / len(candidates)
    domain = Domain(names, list(sizes.values()))
    theirs = best_time(lambda: [junction_tree.hypothetical_model_size(domain, maximal_subset(measured + [r]))
                                for r in candidates[:: len(candidates) // 10]], 1) / 11
    rows = [Row(workload="aim's model-size filter: the junction tree with one more candidate, CoIL 2000's "
                         f"86 columns (1-ways and 22 pairs measured; {len(candidates):,} candidates a round)",
                veil=ours * 1e3, unit="ms per candidate", peer="mbi 2.0 junction_tree.hypothetical_model_size",
                peer_value=theirs * 1e3, higher_is_better=False,
                notes="the same sizes (tests/privacy/test_dp_release_synthetic.py)")]
    if not quick:
        seconds = best_time(lambda: run_aim(data, AimParams(epsilon=1.0), RunContext()), 1)
        rows.append(Row(workload="aim ε = 1 on CoIL 2000, all 86 columns (5,822 rows; in-process)", veil=seconds,
                        unit="s", higher_is_better=False,
                        notes="with mbi's size check a round took ~4 min: the job failed at its 900 s limit"))
    return rows


def cases(quick: bool) -> list[Row]:
    return (_noise_rows(quick) + _release_rows(quick) + _utility_rows(quick) + _synthetic_rows(quick)
            + privbayes_rows(quick) + _aim_many_columns_rows(quick))


# --------------------------------------------------------------------------- report
def _markdown(frame: pd.DataFrame) -> str:
    cells = frame.astype(object).where(frame.notna(), "—").astype(str)
    lines = ["| " + " | ".join(map(str, frame.columns)) + " |", "|" + "---|" * len(frame.columns)]
    return "\n".join(lines + ["| " + " | ".join(row) + " |" for row in cells.to_numpy()])


def write_report(repetitions: int, tasks: list[str] | None, epsilons: list[float] | None,
                 privbayes: bool, pca: bool, images: bool, methods: list[str] | None = None,
                 smartnoise: tuple[str, ...] = (), train_rows: int = 3000, test_rows: int = 3000,
                 save: str | None = None, privbayes_degrees: tuple[int, ...] = (1,)) -> None:
    peers, missing = peer_releasers(privbayes, pca, smartnoise, privbayes_degrees)
    params = ExperimentDpReleaseParams(repetitions=repetitions, train_rows=train_rows, test_rows=test_rows,
                                       **({"tasks": tasks} if tasks else {}),
                                       **({"epsilons": epsilons} if epsilons else {}),
                                       **({"methods": methods} if methods else {}))
    start = time.perf_counter()
    report = run_protocol(params, RunContext(on_progress=lambda f, s: print(
        f"{time.perf_counter() - start:7.0f}s {f:.2f} {s}", flush=True)), extra=peers)
    img = ROOT / "docs" / "experiments" / "img"
    img.mkdir(parents=True, exist_ok=True)
    for name, plot in report.plots.items() if images else ():
        (img / f"dp_{name}.png").write_bytes(plot.png)
    runs = report.tables["runs"]
    if save:
        runs.to_csv(save, index=False)
    lines = [f"{repetitions} repetition(s), {time.perf_counter() - start:.0f} s; peers: "
             f"{', '.join(peers) or 'none'}; missing: {missing or 'none'}.", ""]
    for key in ("summary_raw_holdout", "summary_release_split"):
        lines += [f"### {key}", "", _markdown(report.tables[key].round(3)), ""]
    se = (runs.groupby(["task", "method", "epsilon"])["error_raw_holdout"]
          .agg(lambda x: x.std(ddof=1) / math.sqrt(len(x)) if len(x) > 1 else float("nan"))
          .unstack("epsilon"))
    se.columns = [("no privacy" if math.isinf(c) else f"eps={c:g}") for c in se.columns]
    lines += ["### standard error of the raw-holdout means", "", _markdown(se.round(3).reset_index()), ""]
    lines += ["### marginals (mean TVD) and release time", "",
              _markdown(report.tables["summary_marginals"].round(4)), ""]
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
    parser.add_argument("--privbayes", action="store_true", help="include DataSynthesizer's PrivBayes (slow)")
    parser.add_argument("--privbayes-degrees", default="1", help="comma-separated degrees of "
                        "DataSynthesizer's network (default 1; 2 takes ~20× as long)")
    parser.add_argument("--pca", action="store_true", help="include diffprivlib's PCA (slow)")
    parser.add_argument("--smartnoise", default="", help="comma-separated peers of smartnoise-synth: "
                        + ", ".join(SMARTNOISE_PEERS) + " (slow: AIM takes minutes a release)")
    parser.add_argument("--methods", default="", help="comma-separated Veil methods; default the "
                        "experiment's (mst and aim are opt-in)")
    parser.add_argument("--train-rows", type=int, default=3000)
    parser.add_argument("--test-rows", type=int, default=3000)
    parser.add_argument("--save", default="", help="write the runs table to this CSV")
    parser.add_argument("--no-images", action="store_true")
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--add-remove-rows", action="store_true",
                        help="only mst's and aim's add/remove rows of the benchmark table (their "
                        "smartnoise peers' figures read from docs/benchmarks.md, not re-run)")
    parser.add_argument("--merge", action="store_true", help="with --add-remove-rows: write them into "
                        "docs/benchmarks.md beside the replace-one rows; with --privbayes-rows, after aim's")
    parser.add_argument("--privbayes-rows", action="store_true",
                        help="only privbayes's rows of the benchmark table (with DataSynthesizer's PrivBayes)")
    args = parser.parse_args()
    if args.privbayes_rows:
        found = privbayes_rows(False, ROOT / "docs" / "benchmarks.md")
        for r in found:
            print(r)
        if args.merge:
            merge_privbayes_rows(ROOT / "docs" / "benchmarks.md", found)
    elif args.add_remove_rows:
        for r in add_remove_rows(ROOT / "docs" / "benchmarks.md", args.merge):
            print(r)
    elif args.report:
        write_report(args.repetitions, [t for t in args.tasks.split(",") if t],
                     [float(e) for e in args.epsilons.split(",") if e], args.privbayes, args.pca,
                     not args.no_images, [m for m in args.methods.split(",") if m] or None,
                     tuple(k for k in args.smartnoise.split(",") if k), args.train_rows,
                     args.test_rows, args.save or None,
                     tuple(int(k) for k in args.privbayes_degrees.split(",") if k))
    else:
        for r in cases(args.quick):
            print(r)
