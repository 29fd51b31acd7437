"""experiment_dp_release: the evaluation of spec 03 (the paper's Figures 2-4).

For every task (dataset and binary target), repetition, method and ε: split the raw records
70/30 (train_raw / holdout_raw), release train_raw with the method, fit an RBF SVM on a
subsample of 70% of the release, and measure its misclassification rate

* on the other 30% of the release (the paper's evaluation: labels are released values too), and
* on holdout_raw (the stricter figure: train on the release, test on real records).

The release always covers all of train_raw (the privacy noise depends on n); only the SVM's
training and test sets are subsampled (``train_rows``, ``test_rows``) to keep a run short.
"""

from __future__ import annotations

import functools
import itertools
import math
import time
import typing
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Literal

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from pydantic import Field, field_validator  # noqa: E402
from sklearn.compose import ColumnTransformer  # noqa: E402
from sklearn.impute import SimpleImputer  # noqa: E402
from sklearn.pipeline import make_pipeline  # noqa: E402
from sklearn.preprocessing import OneHotEncoder, StandardScaler  # noqa: E402
from sklearn.svm import SVC  # noqa: E402

from app.privacy.context import RunContext  # noqa: E402
from app.privacy.data import ColumnInfo, MethodInput  # noqa: E402
import app.privacy.dp_release.aim  # noqa: E402,F401  (registers the compared methods)
import app.privacy.dp_release.dppro  # noqa: E402,F401
import app.privacy.dp_release.icahdp  # noqa: E402,F401
from app.privacy.dp_release.marginals import SynthParams, build_columns, marginal  # noqa: E402
import app.privacy.dp_release.mst  # noqa: E402,F401
import app.privacy.dp_release.privbayes  # noqa: E402,F401
from app.privacy.dp_release.privbayes import fitting_degree  # noqa: E402
from app.privacy.experiments import dataset_file, distinct  # noqa: E402
from app.privacy.plotting import (  # noqa: E402
    LOWER_IS_BETTER, legend_below, suptitle_within, tilt_crowded_tick_labels,
)
from app.privacy import registry  # noqa: E402
from app.privacy.registry import MethodKind, MethodInputError, MethodSpec, Params, MethodSource, register  # noqa: E402
from app.privacy.results import ReportResult, render_figure  # noqa: E402
from app.privacy.rng import SecureRandom  # noqa: E402

TARGET = "target"
TaskName = Literal["adult_degree", "adult_married", "coil_caravan", "coil_home", "bank_y",
                   "adult_income"]
MethodName = Literal["icahdp_strict", "icahdp_paper", "dppro", "mst", "aim", "mst_add_remove",
                     "aim_add_remove", "privbayes", "privbayes_add_remove", "noprivacy"]
ALL_TASKS: list[str] = ["adult_degree", "adult_married", "coil_caravan", "coil_home", "bank_y"]
TASK_ORDER: list[str] = [*ALL_TASKS, "adult_income"]
ALL_METHODS: list[str] = ["icahdp_strict", "icahdp_paper", "dppro", "noprivacy"]
LABELS = {"icahdp_strict": "ICAHDP strict", "icahdp_paper": "ICAHDP paper", "dppro": "DPPro",
          "mst": "MST (replace-one)", "aim": "AIM (replace-one)",
          "mst_add_remove": "MST (add/remove)", "aim_add_remove": "AIM (add/remove)",
          "privbayes": "PrivBayes (Veil, pure ε)", "privbayes_add_remove": "PrivBayes (Veil, pure ε, add/remove)",
          "noprivacy": "NoPrivacy"}
EPSILON_CEILING = 100.0  # the grid's largest ε, the methods' own ceiling
TVD_BINS = 32  # numeric columns are compared on the methods' 32 default bins over their declared bounds

# Declared bounds: from the datasets' documentation and plain domain knowledge, not the data.
ADULT_BOUNDS = {"age": (17, 90), "fnlwgt": (0, 1_500_000), "education-num": (1, 16),
                "capital-gain": (0, 99_999), "capital-loss": (0, 4_356), "hours-per-week": (1, 99)}
BANK_BOUNDS = {"age": (18, 95), "balance": (-10_000, 110_000), "day": (1, 31),
               "duration": (0, 5_000), "campaign": (1, 100), "pdays": (-1, 999), "previous": (0, 300)}
DEGREES = {"Bachelors", "Masters", "Prof-school", "Doctorate"}
# what each task's target is and what it leaves out: the report's protocol and each figure's title
TASK_DESCRIPTIONS = {
    "adult_degree": "Adult: has a college degree (education Bachelors or above); education columns dropped",
    "adult_married": "Adult: is married (marital-status Married-*); marital-status dropped, relationship kept",
    "coil_caravan": "CoIL 2000 (the paper's TIC): owns a caravan policy",
    "coil_home": ("CoIL 2000: home owners are the majority of the customer's postcode "
                  "(attr_31 MHKOOP ≥ 5, the paper's 'house'); attr_30/31 dropped"),
    "bank_y": "Bank marketing: subscribed (y)",
    "adult_income": ("Adult: income > 50K; release adult_train, test on adult_test (missing-value "
                     "records dropped)"),
}


def coil_bounds(name: str) -> tuple[int, int]:
    """The CoIL 2000 data dictionary's ranges: subtype L0 1-41, house count 1-10, household
    size and age class 1-6, main type L2 1-10, percentage classes 0-9, numbers of policies 0-12."""
    i = int(name.split("_")[1])
    return {1: (1, 41), 2: (1, 10), 3: (1, 6), 4: (1, 6), 5: (1, 10)}.get(i, (0, 9) if i <= 64 else (0, 12))


@dataclass
class Task:
    name: str
    data: MethodInput
    description: str
    holdout: pd.DataFrame | None = None  # a fixed test set (else a 70/30 split per repetition)


def declared_schema(frame: pd.DataFrame, bounds: dict[str, tuple[float, float]]) -> list[ColumnInfo]:
    """Numeric columns with declared bounds (integer); the others categorical, their domain
    taken from the data (declared for the experiment: it is the published census domain)."""
    cols = []
    for name in frame.columns:
        if name in bounds:
            cols.append(ColumnInfo(name, "numeric", bounds=bounds[name], integer=True))
        else:
            cats = tuple(sorted(frame[name].dropna().astype(str).unique()))
            cols.append(ColumnInfo(name, "categorical", categories=cats,
                                   role="label" if name == TARGET else "insensitive"))
    return cols


def _binary(mask: pd.Series) -> pd.Series:
    return np.where(mask, "yes", "no")


def _adult_income() -> Task:
    """The issue-8 protocol: release adult_train, test on adult_test (records with a missing
    value dropped in both: 30,162 / 15,060), target income > 50K."""
    def read(file: str) -> pd.DataFrame:
        f = pd.read_csv(dataset_file("adult", file), na_values="?", skipinitialspace=True).dropna().reset_index(drop=True)
        f[TARGET] = _binary(f.pop("income").str.rstrip(".") == ">50K")
        return f

    train, test = read("adult_train.csv"), read("adult_test.csv")
    return Task("adult_income", MethodInput(declared_schema(train, ADULT_BOUNDS), train),
                TASK_DESCRIPTIONS["adult_income"], holdout=test)


def load_task(name: str) -> Task:
    if name == "adult_income":
        return _adult_income()
    if name.startswith("adult"):
        f = pd.read_csv(dataset_file("adult", "adult_train.csv"), na_values="?", skipinitialspace=True)
        if name == "adult_degree":
            f[TARGET] = _binary(f["education"].isin(DEGREES))
            f = f.drop(columns=["education", "education-num"])
        else:
            f[TARGET] = _binary(f["marital-status"].fillna("").str.startswith("Married"))
            f = f.drop(columns=["marital-status"])
        return Task(name, MethodInput(declared_schema(f, ADULT_BOUNDS), f), TASK_DESCRIPTIONS[name])
    if name.startswith("coil"):
        f = pd.read_csv(dataset_file("coil2000", "coil2000.csv"))
        if name == "coil_caravan":
            f[TARGET] = _binary(f["caravan"] == 1)
            f = f.drop(columns=["caravan"])
        else:
            f[TARGET] = _binary(f["attr_31"] >= 5)
            f = f.drop(columns=["attr_30", "attr_31"])
        bounds = {c: coil_bounds(c) for c in f.columns if c.startswith("attr_")}
        return Task(name, MethodInput(declared_schema(f, bounds), f), TASK_DESCRIPTIONS[name])
    f = pd.read_csv(dataset_file("bank", "bank_full.csv"))
    f[TARGET] = f.pop("y")
    return Task(name, MethodInput(declared_schema(f, BANK_BOUNDS), f), TASK_DESCRIPTIONS[name])


# --------------------------------------------------------------------------- evaluation
def svm_error(train: pd.DataFrame, tests: list[pd.DataFrame], columns: list[ColumnInfo],
              train_rows: int, rng: np.random.Generator) -> list[float]:
    """Fit an RBF SVM (C = 1, gamma = 'scale') on ≤ train_rows rows of ``train`` and return its
    misclassification rate on each frame of ``tests``."""
    if len(train) > train_rows:
        train = train.iloc[rng.choice(len(train), train_rows, replace=False)]
    present = [c for c in columns if c.name in train.columns and c.name != TARGET]  # paper mode drops some
    numeric = [c.name for c in present if c.type == "numeric"]
    categorical = [c for c in present if c.type != "numeric"]
    y = train[TARGET].astype(str).to_numpy()
    if len(np.unique(y)) < 2:  # a constant release: the SVM can only answer that constant
        return [float(np.mean(t[TARGET].astype(str).to_numpy() != y[0])) for t in tests]
    features = ColumnTransformer([
        ("num", make_pipeline(SimpleImputer(strategy="median"), StandardScaler()), numeric),
        ("cat", OneHotEncoder(categories=[list(c.categories) for c in categorical],
                              handle_unknown="ignore"), [c.name for c in categorical]),
    ])
    model = make_pipeline(features, SVC(kernel="rbf", C=1.0, gamma="scale"))

    def prepare(frame: pd.DataFrame) -> pd.DataFrame:
        out = frame[[c.name for c in present]].copy()
        for c in categorical:
            out[c.name] = out[c.name].astype(object).where(out[c.name].notna(), "<missing>").astype(str)
        return out

    model.fit(prepare(train), y)
    return [float(np.mean(model.predict(prepare(t)) != t[TARGET].astype(str).to_numpy()))
            for t in tests]


# a release of the data at ε; the context carries its randomness (ctx.rng), the experiment's
# cancel and memory limit, and its share of the experiment's progress
Releaser = Callable[[MethodInput, float, RunContext], pd.DataFrame]


# each compared release: the registered method and the parameters it runs with besides ε
RELEASES: dict[str, tuple[str, dict]] = {
    "icahdp_strict": ("icahdp", {"mode": "strict"}),
    "icahdp_paper": ("icahdp", {"mode": "paper"}),
    "dppro": ("dppro", {}),
    "mst": ("mst", {}),
    "aim": ("aim", {}),
    # ε stated under add/remove-one neighbours (the MST/AIM papers' and smartnoise's relation):
    # like-for-like with those peers; a job would be debited the replace-one ε' (``debits``)
    "mst_add_remove": ("mst", {"neighbouring": "add_remove"}),
    "aim_add_remove": ("aim", {"neighbouring": "add_remove"}),
    # pure ε-DP (δ = 0), replace-one; and under add/remove (DataSynthesizer's marginal noise)
    "privbayes": ("privbayes", {}),
    "privbayes_add_remove": ("privbayes", {"neighbouring": "add_remove"}),
}


def _privbayes_degree(columns: int) -> dict:
    default = registry.get("privbayes").params.model_fields["degree"].default
    return {"degree": fitting_degree(columns, default)}


# a release's params that depend on the task's width (a release's own `extra` wins): privbayes
# at the largest degree ≤ its default whose candidate parent sets are within its limit (degree 1
# on CoIL's 85–86 columns, where degree 2 is refused)
BY_WIDTH: dict[str, Callable[[int], dict]] = {"privbayes": _privbayes_degree,
                                              "privbayes_add_remove": _privbayes_degree}


def fitted(name: str, extra: dict, columns: int) -> dict:
    """Release ``name``'s params besides ε on a table of ``columns`` columns."""
    return {**BY_WIDTH[name](columns), **extra} if name in BY_WIDTH else extra


def builtin_releasers() -> dict[str, Releaser]:
    def releaser(name: str, method: str, extra: dict) -> Releaser:
        spec = registry.get(method)
        return lambda data, eps, ctx: spec.run(
            data, spec.params(epsilon=eps, **fitted(name, extra, len(data.columns))), ctx).frame
    return {name: releaser(name, method, extra) for name, (method, extra) in RELEASES.items()}


@functools.cache
def task_columns(name: str) -> tuple[ColumnInfo, ...]:
    return tuple(load_task(name).data.columns)


def _built_in_releases(params: ExperimentDpReleaseParams):
    """(task, release name, its method's spec, that spec's params besides ε) for every built-in
    release the params choose on every task."""
    for task in params.tasks:
        for name in params.methods:
            if name in RELEASES:
                method, extra = RELEASES[name]
                yield task, name, registry.get(method), fitted(name, extra, len(task_columns(task)))


def check_epsilons(params: ExperimentDpReleaseParams, columns, source) -> None:
    """Each release must be feasible at the grid's smallest ε on each task (feasibility only
    grows with ε): a too-small ε otherwise failed the job at its first release, after the
    releases before it had run. The methods' own submission checks decide."""
    smallest = min(params.epsilons)
    for task, name, spec, extra in _built_in_releases(params):
        columns = list(task_columns(task))
        try:
            spec.check(spec.params(epsilon=smallest, **extra), columns, None)
        except MethodInputError as e:
            try:  # refused at the largest ε a grid may hold too: not the grid's doing
                spec.check(spec.params(epsilon=EPSILON_CEILING, **extra), columns, None)
            except MethodInputError:
                raise MethodInputError(f"methods: {name} cannot run on task {task!r}: {e}") from None
            raise MethodInputError(f"epsilons: {name} on task {task!r} at ε = {smallest:g}: "
                                   f"{e}") from None


def debits(params: ExperimentDpReleaseParams) -> pd.DataFrame:
    """Per task, built-in release and ε of the grid: the relation its ε is stated under and the
    ε a job of it would be debited — Veil's budget counts replace-one ε, so an add/remove
    variant's is its plan's replace-one ε' (the method's own pricing, no data read); the
    experiment's releases run on the public datasets and debit nothing."""
    rows = [{"task": task, "method": name, "epsilon": eps,
             "neighbouring": extra.get("neighbouring", "replace_one"),
             "epsilon_replace_one": spec.epsilon_cost(spec.params(epsilon=eps, **extra), list(task_columns(task)))}
            for task, name, spec, extra in _built_in_releases(params) for eps in params.epsilons]
    return pd.DataFrame(rows, columns=["task", "method", "epsilon", "neighbouring", "epsilon_replace_one"])


def add_remove_note(debited: pd.DataFrame, labels: dict[str, str]) -> str | None:
    """What the x axis means for the add/remove variants in ``debited`` (``debits``' rows of
    one task), or None when none ran."""
    parts = debited[debited["neighbouring"] == "add_remove"]
    if parts.empty:
        return None
    ratios = []
    for method, part in parts.groupby("method", sort=False):
        r = part["epsilon_replace_one"] / part["epsilon"]
        span = f"{r.min():.2f}" if f"{r.min():.2f}" == f"{r.max():.2f}" else f"{r.min():.2f}–{r.max():.2f}"
        ratios.append(f"{span}·ε for {labels.get(method, method)}")
    return ("ε of the (add/remove) series is stated under add/remove-one neighbours (the papers' "
            "and smartnoise's); a job of theirs would be debited the replace-one ε': " + ", ".join(ratios)
            + "; the other Veil series are replace-one")


def marginal_tvd(raw: pd.DataFrame, release: pd.DataFrame, columns: list[ColumnInfo]) -> tuple[float, float]:
    """Mean total variation distance between the raw data's and the release's 1-way and 2-way
    marginals over the columns both hold: categories as declared, numeric columns on the 32
    bins mst and aim use by default over the declared bounds (an integer column with more
    integers than bins: its lower bound alone, then runs of consecutive integers), a missing (or
    undeclared) value its own level."""
    shared = [c for c in columns if c.name in release.columns]
    plans = build_columns(SynthParams(epsilon=1.0, bins=TVD_BINS, columns=[c.name for c in shared]), shared)

    def levels(frame: pd.DataFrame) -> dict[str, np.ndarray]:
        out = {}
        for plan in plans:
            series = frame[plan.name]
            if plan.plan.kind == "categorical":
                labels = [str(c) for c in plan.plan.categories]
                codes = pd.Index(labels).get_indexer(series.astype(object).astype(str))
                out[plan.name] = np.where((codes < 0) | series.isna().to_numpy(), plan.missing_level, codes)
            else:
                out[plan.name] = plan.codes(pd.to_numeric(series, errors="coerce"))
        return out

    a, b = levels(raw), levels(release)

    def tvd(clique: tuple[str, ...]) -> float:
        shape = tuple(p.size for p in plans if p.name in clique)
        return 0.5 * float(np.abs(marginal(a, clique, shape) / len(raw)
                                  - marginal(b, clique, shape) / len(release)).sum())

    names = [p.name for p in plans]
    one = [tvd((x,)) for x in names]
    two = [tvd(pair) for pair in itertools.combinations(names, 2)]
    return float(np.mean(one)), float(np.mean(two)) if two else float("nan")


class ExperimentDpReleaseParams(Params):
    tasks: list[TaskName] = Field(default_factory=lambda: list(ALL_TASKS), min_length=1,
                                  description="dataset/target pairs to evaluate; adult_income (opt-in) "
                                  "releases adult_train and tests on adult_test")
    methods: list[MethodName] = Field(default_factory=lambda: list(ALL_METHODS), min_length=1,
                                      description="releases to compare; mst and aim (marginal-based "
                                      "synthetic tables, ~10 s per release on Adult) are opt-in, and "
                                      "so are mst_add_remove and aim_add_remove (the same with ε under "
                                      "add/remove-one neighbours, the papers' and smartnoise's relation; "
                                      "the report gives the replace-one ε' a job of theirs is debited) and "
                                      "privbayes (pure ε-DP, under a second a release on Adult; degree 1 on "
                                      "CoIL, whose 86 columns at degree 2 exceed its candidate limit) and "
                                      "privbayes_add_remove (the same under add/remove)")
    # each ε in the methods' own range (0, 100]: otherwise the first release failed the job as
    # an internal error instead of a 422
    epsilons: list[Annotated[float, Field(gt=0, le=EPSILON_CEILING)]] = Field(
        default_factory=lambda: [0.1, 0.2, 0.5, 1.0, 2.0, 5.0], min_length=1, max_length=12,
        description="ε grid; each in (0, 100]")
    repetitions: int = Field(1, ge=1, le=20, description="repetitions (the paper's protocol: 10)")
    train_rows: int = Field(2000, ge=100, le=50_000, description="SVM training subsample "
                            "(of the 70% training part of the release)")
    test_rows: int = Field(2000, ge=100, le=50_000, description="test subsample of each test set")
    seed: int | None = Field(None, description="seed of the releases' noise (reproducible runs; "
                             "default: the CSPRNG) and of the splits")

    _distinct = field_validator("tasks", "methods", "epsilons")(classmethod(lambda cls, v: distinct(v)))


def run_protocol(params: ExperimentDpReleaseParams, ctx: RunContext,
                 extra: dict[str, Releaser] | None = None) -> ReportResult:
    """The protocol; ``extra`` adds releasers (e.g. peers from other packages, used by
    benchmarks/) keyed by a display name."""
    releasers = {k: v for k, v in builtin_releasers().items() if k in params.methods}
    releasers.update(extra or {})
    labels = {**LABELS, **{k: k for k in extra or {}}}
    rows, timings = [], {}
    steps = len(params.tasks) * params.repetitions
    done = 0
    for task_name in params.tasks:
        task = load_task(task_name)
        frame = task.data.frame
        for rep in range(params.repetitions):
            ctx.progress(done / steps, f"{task_name} repetition {rep + 1}")
            done += 1
            split_rng = np.random.default_rng([params.seed or 0, rep, TASK_ORDER.index(task_name)])
            order = split_rng.permutation(len(frame))
            cut = int(0.7 * len(frame))
            train_raw = frame.iloc[order[:cut]].reset_index(drop=True)
            holdout = frame.iloc[order[cut:]].reset_index(drop=True)
            if task.holdout is not None:  # a fixed test set: the release covers all records
                train_raw, holdout = frame, task.holdout
            if len(holdout) > params.test_rows:
                holdout = holdout.iloc[:params.test_rows]
            data = MethodInput(task.data.columns, train_raw)
            majority = float(np.mean(holdout[TARGET] != train_raw[TARGET].mode()[0]))
            runs: list[tuple[str, float, pd.DataFrame, float]] = []
            if "noprivacy" in params.methods:
                runs.append(("noprivacy", math.inf, train_raw, 0.0))
            # the repetition's share of the progress, split evenly between its releases and
            # their evaluation (an AIM release on Adult takes seconds to a minute: the inner
            # runs report their own progress and stop on cancel)
            share, shares = (done - 1) / steps, len(releasers) * len(params.epsilons) + 1
            for i, (name, eps) in enumerate(itertools.product(releasers, params.epsilons)):
                rng = ctx.rng if params.seed is None else SecureRandom(
                    seed=zlib.crc32(f"{params.seed}:{task_name}:{rep}:{name}:{eps}".encode()))
                inner = ctx.within(rng, share + i / shares / steps, share + (i + 1) / shares / steps,
                                   stage=f"{task_name} repetition {rep + 1}, {labels[name]} at ε = {eps:g}")
                start = time.perf_counter()
                release = releasers[name](data, eps, inner)
                seconds = time.perf_counter() - start
                timings.setdefault(name, []).append(seconds)
                runs.append((name, eps, release, seconds))
                ctx.check_cancelled()
            for name, eps, release, seconds in runs:
                order_r = split_rng.permutation(len(release))
                cut_r = int(0.7 * len(release))
                r_train = release.iloc[order_r[:cut_r]]
                r_test = release.iloc[order_r[cut_r:cut_r + params.test_rows]]
                err_release, err_raw = svm_error(r_train, [r_test, holdout], task.data.columns,
                                                 params.train_rows, split_rng)
                tvd1, tvd2 = marginal_tvd(train_raw, release, task.data.columns)
                rows.append({"task": task_name, "method": name, "epsilon": eps, "repetition": rep,
                             "error_release_split": err_release, "error_raw_holdout": err_raw,
                             "majority_error": majority, "tvd_1way": tvd1, "tvd_2way": tvd2,
                             "release_seconds": seconds})
    runs_table = pd.DataFrame(rows)
    report = _report(runs_table, params, labels, timings)
    ctx.progress(1.0, "done")
    return report


def _standard_error(values: pd.Series) -> float:
    """Of the mean over the repetitions; NaN for one repetition (no spread measured)."""
    return float(values.std(ddof=1) / math.sqrt(len(values))) if len(values) > 1 else float("nan")


def _summary(runs: pd.DataFrame, column: str, statistic: str = "mean") -> pd.DataFrame:
    """One row per task and method, one column per ε: the mean over the repetitions, or
    (``statistic="se"``) its standard error."""
    grouped = runs.groupby(["task", "method", "epsilon"])[column]
    table = (grouped.mean() if statistic == "mean" else grouped.agg(_standard_error)).unstack("epsilon")
    table.columns = [("no privacy" if math.isinf(c) else f"eps={c:g}") for c in table.columns]
    return table.reset_index()


# One style per method, the same in every task's figure and told apart without colour (markers
# and lines); NoPrivacy and the majority class are the unmarked black dashed / grey dotted lines.
_STYLES = {"icahdp_strict": dict(color="C2", marker="o", linestyle="-"),
           "icahdp_paper": dict(color="C1", marker="^", linestyle="-."),
           "dppro": dict(color="C0", marker="s", linestyle="--"),
           "mst": dict(color="C5", marker="D", linestyle=":"),
           "aim": dict(color="C4", marker="v", linestyle="-"),
           # add/remove variants: their replace-one method's colour and marker, hollow, other line
           "mst_add_remove": dict(color="C5", marker="D", linestyle="--", markerfacecolor="none"),
           "aim_add_remove": dict(color="C4", marker="v", linestyle="--", markerfacecolor="none"),
           "privbayes": dict(color="C9", marker="p", linestyle="-"),
           "privbayes_add_remove": dict(color="C9", marker="p", linestyle="--", markerfacecolor="none")}
# peers injected by the benchmarks (run_protocol's ``extra``), in the order they come
_PEER_STYLES = [dict(color=f"C{i}", marker=m, linestyle=ls) for i, m, ls in
                [(3, "P", "--"), (6, "X", "-."), (7, "*", ":"), (8, "h", "--"), (9, "<", "-.")]]
PANELS = {"error_release_split": "70/30 split of the release (the paper's evaluation)",
          "error_raw_holdout": "train on the release, test on raw records"}


def plot_points(runs: pd.DataFrame, task: str) -> pd.DataFrame:
    """What a task's figure draws: per panel (``column``), method and ε the mean over the
    repetitions, its standard error and the number of repetitions; the majority-class error
    is the row of method ``majority``."""
    sub = runs[runs["task"] == task]
    rows = []
    for column in PANELS:
        for (method, eps), values in sub.groupby(["method", "epsilon"])[column]:
            rows.append({"column": column, "method": method, "epsilon": eps, "mean": float(values.mean()),
                         "se": _standard_error(values), "n": len(values)})
        rows.append({"column": column, "method": "majority", "epsilon": math.inf,
                     "mean": float(sub["majority_error"].mean()), "se": float("nan"), "n": len(sub)})
    return pd.DataFrame(rows)


def task_title(task: str) -> str:
    """The data a task's figure is about, in words (its description up to the first ';')."""
    return TASK_DESCRIPTIONS.get(task, task).split(";")[0]


def _plot(runs: pd.DataFrame, task: str, labels: dict[str, str], debited: pd.DataFrame | None = None):
    note = None if debited is None else add_remove_note(debited[debited["task"] == task], labels)
    return plot_task(plot_points(runs, task), task_title(task), labels,
                     peers=[m for m in dict.fromkeys(runs["method"]) if m not in _STYLES and m != "noprivacy"],
                     legend_note=note)


def plot_task(points: pd.DataFrame, title: str, labels: dict[str, str], peers: list[str] = (),
              epsilon_note: str | None = None, legend_note: str | None = None,
              detail: tuple[float, float] | None = None):
    """A task's panels from ``plot_points``' frame, one per ``column`` it holds (the docs re-draw
    theirs from a page's tables: a 70/30 panel without standard errors, NaN, draws no bar, and
    the legend says which panel has them; adult_income's page kept the right panel only).
    Error bars: ± 1 standard error of the mean over the repetitions, where more than one ran; the
    methods' points are then set a little apart along ε so the bars do not hide each other.
    ``epsilon_note`` joins the x label (the δ of each method, say); ``legend_note`` the legend's
    title (``add_remove_note``: what ε means for the add/remove variants). ``detail`` (low, high)
    adds a panel beside the last one showing it again between those rates only, where lines
    that crowd together at full scale come apart (the series above it are then named)."""
    columns = [c for c in PANELS if c in set(points["column"])]
    limits: list[tuple[float, float] | None] = [None] * len(columns)
    if detail is not None:
        columns, limits = [*columns, columns[-1]], [*limits, detail]
    fig, axes = plt.subplots(1, len(columns), figsize=(10, 3.8) if len(columns) > 1 else (6.4, 4.2),
                             sharey=detail is None, squeeze=False)
    axes = list(axes[0])
    methods = [m for m in dict.fromkeys(points["method"]) if m not in ("noprivacy", "majority")]
    styles = {**_STYLES, **dict(zip(peers, itertools.cycle(_PEER_STYLES)))}
    compared = points[points["method"].isin(methods)]
    with_bars = [c for c in columns if compared[compared["column"] == c]["se"].fillna(0).gt(0).any()]
    eps = sorted(e for e in points["epsilon"].unique() if not math.isinf(e))
    for ax, column, limit in zip(axes, columns, limits):
        part = points[points["column"] == column]
        for i, method in enumerate(methods):
            line = part[part["method"] == method].sort_values("epsilon")
            shift = 10 ** ((i - (len(methods) - 1) / 2) * 0.012) if with_bars else 1.0
            ax.errorbar(line["epsilon"] * shift, line["mean"], yerr=line["se"] if column in with_bars else None,
                        capsize=3, label=labels.get(method, method), **styles.get(method, _PEER_STYLES[0]))
        noprivacy = part[part["method"] == "noprivacy"]["mean"]
        if len(noprivacy):
            ax.axhline(float(noprivacy.iloc[0]), color="k", linestyle="--", linewidth=1.2, zorder=2.1,
                       label=labels["noprivacy"])
        # wide and underneath: where the majority class scores as NoPrivacy (CoIL caravan, 0.06)
        # the thin black dashes run through it and both lines stay visible
        ax.axhline(float(part[part["method"] == "majority"]["mean"].iloc[0]), color="0.6", linestyle=":",
                   linewidth=3.5, zorder=1.9, label="majority class")
        ax.set_xscale("log")
        ax.minorticks_off()  # only the grid's ε are labelled
        ax.set_xticks(eps, [f"{e:g}" for e in eps])
        ax.set_xlabel("ε (log scale" + (f"; {epsilon_note})" if epsilon_note else ")"))
        ax.set_title(PANELS[column], fontsize=10)
        if limit is not None:
            ax.set_ylim(*limit)
            above = [labels.get(m, m) for m in methods
                     if (part[part["method"] == m]["mean"] > limit[1]).all()]
            ax.set_title(f"detail: {limit[0]:g}–{limit[1]:g}" + (f" ({', '.join(above)} above it)" if above else ""),
                         fontsize=9, wrap=True)
    axes[0].set_ylabel(f"misclassification rate ({LOWER_IS_BETTER})")
    # one panel is narrow: the data on a line of their own
    suptitle_within(fig, f"SVM misclassification rate of each release vs ε{' — ' if len(columns) > 1 else chr(10)}{title}")
    tilt_crowded_tick_labels(fig, axes)
    n = int(compared["n"].max()) if methods else 1
    legend = f"mean of {n} repetitions" if n > 1 else "one repetition"
    if with_bars:
        legend += "; error bars: ± 1 standard error of the mean"
        if len(with_bars) < len(columns):
            legend += " (" + " and ".join(("left", "right")[columns.index(c)] for c in with_bars) + " panel only)"
    if legend_note:
        legend += f". {legend_note}"
    legend_below(fig, axes, fontsize=8, title=legend)
    return fig


def _guarantees(methods) -> dict[str, str]:
    """What each built-in release promises at the ε of its row (its registered guarantee, mode
    and default δ); the runs themselves are evaluations, their releases are discarded."""
    out = {}
    for name in methods:
        if name not in RELEASES:
            continue
        method, extra = RELEASES[name]
        spec = registry.get(method)
        delta = spec.params.model_fields.get("delta")
        out[name] = "; ".join([f"{method} {extra}" if extra else method, spec.guarantee]
                              + ([f"δ = {delta.default:g}"] if delta is not None else []))
    return out


def _report(runs: pd.DataFrame, params: ExperimentDpReleaseParams, labels: dict[str, str],
            timings: dict[str, list[float]]) -> ReportResult:
    plots = {}
    debited = debits(params)
    for task in params.tasks:
        fig = _plot(runs, task, labels, debited)
        plots[task] = render_figure(fig)
        plt.close(fig)
    release_split = _summary(runs, "error_release_split")
    raw_holdout = _summary(runs, "error_raw_holdout")
    release_split_se = _summary(runs, "error_release_split", "se")
    raw_holdout_se = _summary(runs, "error_raw_holdout", "se")
    tvd = runs.groupby(["task", "method", "epsilon"])[["tvd_1way", "tvd_2way", "release_seconds"]].mean()
    tvd = tvd.reset_index()
    data = {
        "protocol": {
            "tasks": {t: load_task(t).description for t in params.tasks},
            "epsilons": params.epsilons, "repetitions": params.repetitions,
            "svm": "sklearn SVC(kernel='rbf', C=1, gamma='scale'); numeric standardized, "
                   "categorical one-hot over the declared domain",
            "split": "raw 70/30 → the release covers the 70%; the release is split 70/30 again",
            "train_rows": params.train_rows, "test_rows": params.test_rows,
            # a reader must tell a reproducible run from one whose noise cannot be drawn again
            "seed": params.seed,
            "noise": ("seeded (test mode, reproducible, not private)" if params.seed is not None
                      else "CSPRNG (not reproducible)") + f"; splits seeded by {params.seed or 0}",
            "subsampling": f"SVM trained on ≤ {params.train_rows} rows and tested on ≤ "
                           f"{params.test_rows} rows of each test set (the release itself covers "
                           "all training records)",
            "methods": {k: labels.get(k, k) for k in runs["method"].unique()},
            "methods_not_run": [m for m in typing.get_args(MethodName) if m not in params.methods],
            # a reader of the report alone must not take the missing peers for an omission
            "peers": "not run by the service: smartnoise-synth's MST and AIM and DataSynthesizer's "
                     "PrivBayes run beside these methods in `python -m benchmarks.bench_dp --report` "
                     "(figures in docs/experiments/dp_release.md)",
            "guarantees": _guarantees(runs["method"].unique()),
            # the (add/remove) variants' ε is not what Veil's budget counts: say what it would debit
            "neighbouring": {name: RELEASES[name][1].get("neighbouring", "replace_one")
                             for name in runs["method"].unique() if name in RELEASES},
            "epsilon_debited": "table epsilon_debited: the ε a job of each release would be "
                               "debited (replace-one; an add/remove variant's replace-one ε' of its "
                               "plan at its δ). These releases ran on public data and debited nothing",
        },
        "runs": runs.to_dict(orient="records"),  # NoPrivacy's ε: "Infinity", as the tables give it
        "summary_release_split": release_split.to_dict(orient="records"),
        "summary_raw_holdout": raw_holdout.to_dict(orient="records"),
        "majority_error": runs.groupby("task")["majority_error"].mean().to_dict(),
        "release_seconds": {k: float(np.mean(v)) for k, v in timings.items()},
        "marginals": {"tvd": f"mean TVD of 1-way and 2-way marginals, release vs the released raw "
                             f"records; numeric columns on mst's and aim's default {TVD_BINS} bins over the declared "
                             "bounds (an integer column's lower bound alone, then runs of consecutive integers)",
                      "summary": tvd.to_dict(orient="records")},
    }
    return ReportResult(kind="experiment_dp_release", data=data,
                        tables={"summary_release_split": release_split,
                                "summary_raw_holdout": raw_holdout,
                                "se_release_split": release_split_se, "se_raw_holdout": raw_holdout_se,
                                "summary_marginals": tvd,
                                "epsilon_debited": debited,
                                "runs": runs},
                        plots=plots)


def run_experiment(data: MethodInput, params: ExperimentDpReleaseParams, ctx: RunContext) -> ReportResult:
    return run_protocol(params, ctx)


register(MethodSpec(
    name="experiment_dp_release",
    family="dp_release",
    kind=MethodKind.experiment,
    summary="Misclassification rate of an RBF SVM trained on ICAHDP (strict, paper), DPPro, MST, "
            "AIM and raw releases of Adult, CoIL 2000 and Bank across ε, in the paper's "
            "70/30-of-release evaluation and train-on-release/test-on-raw, with the releases' "
            "1-way/2-way marginal TVD.",
    params=ExperimentDpReleaseParams,
    guarantee="an evaluation report: publishes error rates on the shared public datasets only",
    paper="Chu et al. (ICAHDP), seed 002, Figures 2-4",
    run=run_experiment,
    sources=frozenset({MethodSource.none}),
    produces_randomness=False,
    check=check_epsilons,
    docs="docs/methods/experiment_dp_release.md",
    slow_params=('repetitions', 'train_rows', 'test_rows'),
))
