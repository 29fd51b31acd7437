"""``experiment_ppnb``: the evaluation of seed 000 (spec 01 §6), Figures 2 and 3.

- Figure 2: PPNB accuracy against p0 (ERRPH on the categorical attributes, TRR on the numeric
  ones with the paper's two settings), with naive Bayes on the raw training data as the
  reference; also the categorical-only model, whose accuracy shows what p0 does when the
  numeric attributes do not dominate.
- Figure 2 by training size: the same for smaller training sets. ERRPH's estimation error
  scales as 1/(p0·√n), so the effect of p0 appears when n·p0² is small — the paper's 50,000
  records hide most of it.
- Figure 3: every attribute binarized at one cut point; PPNB on a per-attribute ERRPH (k = 2,
  p0 = p) release against DTPD on a whole-record Warner (θ = p) release.

Datasets: the synthetic bank-card customers (50,000 train / 5,000 test, as the paper) and UCI
Adult (adult_train / adult_test). Every point is averaged over ``seeds``; the randomization of
seed s is a seeded SecureRandom (an experiment on public data: reproducible, not private).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any, Literal

import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from pydantic import Field, field_validator

from app.privacy.context import RunContext
from app.privacy.data import ColumnInfo, MethodInput
from app.privacy.experiments import dataset_file, distinct
from app.privacy.json_types import schema_bounds
from app.privacy.dtpd import DTPDClassifier
from app.privacy.naive_bayes import PPNBClassifier, release_randomization
from app.privacy.plotting import HIGHER_IS_BETTER, legend_below
from app.privacy.randomized_response import ErrphParams, flips_as_a_coin, keeps_no_cell, run_errph
from app.privacy.registry import MethodKind, MethodSpec, Params, MethodSource, register
from app.privacy.results import ReportResult, render_figure
from app.privacy.rng import SecureRandom
from app.privacy.rr_channels import MISSING, as_release_input
from app.privacy.synthetic import CATEGORICAL, LABEL, NUMERIC, generate_bank_customers
from app.privacy.transforming_rr import TrrParams, run_trr
from app.privacy.warner import WarnerParams, binarize, run_warner

PAPER_GRID = [0.1, 0.2, 0.3, 0.35, 0.4, 0.45, 0.49, 0.51, 0.55, 0.6, 0.65, 0.7, 0.8, 0.9]
TRR_SETTINGS = {"a~N(1,1), b~N(0,1)": (1.0, 1.0, 0.0, 1.0), "a~N(2,10), b~N(0,5)": (2.0, 10.0, 0.0, 5.0)}
ADULT_NUMERIC = ("age", "fnlwgt", "education-num", "capital-gain", "capital-loss", "hours-per-week")


class ExperimentPPNBParams(Params):
    datasets: list[Literal["synthetic", "adult"]] = Field(
        default_factory=lambda: ["synthetic", "adult"], min_length=1, max_length=2,
        description="synthetic bank-card customers and/or UCI Adult")
    p0_grid: list[float] = Field(
        default_factory=lambda: list(PAPER_GRID), min_length=1, max_length=30,
        description="p0 of ERRPH (Figure 2) and p of Figure 3; each in (0, 1], not 0.5",
        json_schema_extra=schema_bounds(exclusiveMinimum=0.0, maximum=1.0))
    seeds: list[Annotated[int, Field(ge=0, le=2**32 - 1)]] = Field(
        default_factory=lambda: [0, 1, 2], min_length=1, max_length=10,
        description="one run per seed; plots show mean ± standard deviation")
    max_train_rows: int = Field(50_000, ge=200, le=200_000,
                                description="cap on training records per dataset (a random subset)")
    max_test_rows: int = Field(20_000, ge=100, le=100_000, description="cap on test records per dataset")
    train_sizes: list[Annotated[int, Field(ge=50, le=200_000)]] = Field(
        default_factory=lambda: [500, 2000], max_length=5,
        description="smaller training sizes for the 'figure2_train_size' plot ([] to skip)")
    figure3: bool = Field(True, description="run the binarized PPNB-vs-DTPD comparison (Figure 3)")

    @field_validator("p0_grid")
    @classmethod
    def _grid(cls, v):
        if any(not 0.0 < p <= 1.0 or p == 0.5 for p in v):
            raise ValueError("every p0 must be in (0, 1] and not 0.5 (DTPD is undefined there)")
        # what the 32-bit thresholds realize decides, as the randomizers check it: a p0 near 0.5
        # passed here and failed the job 'internal' at Figure 3's Warner release
        for p in v:
            if flips_as_a_coin(p):
                raise ValueError(f"p0 = {p!r} is within 2^-33 of 0.5, where Warner's flip "
                                 "threshold is exactly 1/2 (not 0.5: DTPD is undefined there)")
            if keeps_no_cell(p):
                raise ValueError(f"p0 = {p!r} is within 2^-33 of 0: ERRPH would keep no cell "
                                 "(pure noise); use p0 ≥ 1.2e-10")
        return sorted(set(v))

    @field_validator("train_sizes")
    @classmethod
    def _sizes(cls, v):
        return sorted(set(v))

    _distinct = field_validator("datasets", "seeds")(classmethod(lambda cls, v: distinct(v)))


# ------------------------------------------------------------------------------ datasets
class Split:
    """A dataset's train/test split with its attribute kinds."""

    def __init__(self, name: str, train: pd.DataFrame, test: pd.DataFrame, numeric: list[str],
                 categorical: list[str], label: str) -> None:
        self.name, self.train, self.test = name, train, test
        self.numeric, self.categorical, self.label = numeric, categorical, label

    @property
    def features(self) -> list[str]:
        return self.numeric + self.categorical

    def columns(self, frame: pd.DataFrame) -> list[ColumnInfo]:
        cats = [ColumnInfo(c, "categorical", distinct=int(frame[c].nunique()),
                           missing=int(frame[c].isna().sum())) for c in self.categorical]
        return ([ColumnInfo(c, "numeric") for c in self.numeric] + cats
                + [ColumnInfo(self.label, "categorical", role="label")])


def _subset(frame: pd.DataFrame, cap: int, seed: int) -> pd.DataFrame:
    if len(frame) <= cap:
        return frame.reset_index(drop=True)
    order = np.random.default_rng(seed).permutation(len(frame))[:cap]
    return frame.iloc[np.sort(order)].reset_index(drop=True)


def load_split(name: str, max_train: int, max_test: int) -> Split:
    if name == "synthetic":
        # the paper's sizes: 50,000 train and 5,000 test from one population
        train = generate_bank_customers(min(50_000, max_train), seed=20070801)
        test = generate_bank_customers(min(5_000, max_test), seed=20070802)
        return Split(name, train, test, list(NUMERIC), list(CATEGORICAL), LABEL)
    read = lambda f: pd.read_csv(dataset_file("adult", f), na_values="?", skipinitialspace=True)  # noqa: E731
    train, test = read("adult_train.csv"), read("adult_test.csv")
    for frame in (train, test):  # adult.test writes the class with a trailing dot in some copies
        frame["income"] = frame["income"].astype(str).str.rstrip(".")
    categorical = [c for c in train.columns if c not in ADULT_NUMERIC and c != "income"]
    return Split(name, _subset(train, max_train, 1), _subset(test, max_test, 2),
                 list(ADULT_NUMERIC), categorical, "income")


# ---------------------------------------------------------------------------- pipelines
def _rng(*parts: int) -> SecureRandom:
    seed = 0
    for part in parts:
        seed = seed * 1_000_003 + int(part)
    return SecureRandom(seed=seed)


def _ppnb_release(split: Split, train: pd.DataFrame, p0: float, setting: tuple[float, ...] | None,
                  rng: SecureRandom) -> MethodInput:
    """ERRPH on the categorical attributes, then (optionally) TRR on the numeric ones."""
    ctx = RunContext(rng)
    data = MethodInput(columns=split.columns(train), frame=train)
    errph = ErrphParams(columns=split.categorical, p0=p0, allow_zero_probabilities=p0 >= 1.0)
    release = as_release_input(data, run_errph(data, errph, ctx), "errph", errph)
    if setting is None:
        return release
    a_mean, a_var, b_mean, b_var = setting
    trr = TrrParams(columns=split.numeric, a_mean=a_mean, a_var=a_var, b_mean=b_mean, b_var=b_var)
    return as_release_input(release, run_trr(release, trr, ctx), "trr", trr)


def _fit_score(release: MethodInput, features: list[str], split: Split) -> float:
    randomization = release_randomization(release.source)
    model = PPNBClassifier(randomization={f: randomization[f] for f in features if f in randomization})
    model.fit(release.frame[features], release.frame[split.label])
    return float(model.score(split.test[features], split.test[split.label]))


def _raw_score(train: pd.DataFrame, features: list[str], split: Split) -> float:
    model = PPNBClassifier().fit(train[features], train[split.label])
    return float(model.score(split.test[features], split.test[split.label]))


def figure2_rows(split: Split, params: ExperimentPPNBParams, ds: int,
                 tick: Callable[[str], None]) -> tuple[list[dict], list[dict]]:
    rows, refs = [], []
    sizes = [(len(split.train), None)] + [(n, n) for n in params.train_sizes if n < len(split.train)]
    for size, cap in sizes:
        for features, kind in ((split.features, "all"), (split.categorical, "categorical")):
            for seed in params.seeds:
                train = split.train if cap is None else _subset(split.train, cap, 100 + seed)
                refs.append({"dataset": split.name, "model": f"naive Bayes on raw data ({kind})",
                             "train_rows": size, "seed": seed, "accuracy": _raw_score(train, features, split)})
        for gi, p0 in enumerate(params.p0_grid):
            tick(f"{split.name}: Figure 2, n={size}, p0={p0}")
            for seed in params.seeds:
                train = split.train if cap is None else _subset(split.train, cap, 100 + seed)
                settings = TRR_SETTINGS.items() if cap is None else list(TRR_SETTINGS.items())[:1]
                for si, (setting_name, setting) in enumerate(settings):
                    release = _ppnb_release(split, train, p0, setting, _rng(seed, ds, gi, si, size))
                    rows.append({"dataset": split.name, "features": "all", "trr": setting_name,
                                 "train_rows": size, "p0": p0, "seed": seed,
                                 "accuracy": _fit_score(release, split.features, split)})
                    if si == 0:  # the categorical model does not see TRR: one release serves
                        rows.append({"dataset": split.name, "features": "categorical", "trr": "n/a",
                                     "train_rows": size, "p0": p0, "seed": seed,
                                     "accuracy": _fit_score(release, split.categorical, split)})
    return rows, refs


# ------------------------------------------------------------------------------ Figure 3
def _entropy_rows(counts: np.ndarray) -> np.ndarray:
    """Entropy (bits) of each row of class counts."""
    total = counts.sum(axis=-1, keepdims=True)
    p = np.divide(counts, total, out=np.zeros(counts.shape), where=total > 0)
    return -(p * np.log2(np.where(p > 0, p, 1.0))).sum(axis=-1)


def _split_gains(left: np.ndarray, total: np.ndarray) -> np.ndarray:
    """Information gain of each candidate split given its left-side class counts (rows)."""
    right = total[None, :] - left
    n = total.sum()
    w = left.sum(axis=1) / n
    return _entropy_rows(total) - w * _entropy_rows(left) - (1 - w) * _entropy_rows(right)


def choose_cut_points(split: Split) -> dict[str, float | list[str]]:
    """One cut per attribute, chosen on the raw training data (the data owner's preprocessing
    before randomizing): for a numeric attribute the quantile threshold with the largest
    information gain about the class; for a categorical one the best prefix of its values
    ordered by P(class | value), over every class."""
    train = split.train
    classes, y = np.unique(train[split.label].astype(str).to_numpy(), return_inverse=True)
    onehot = np.eye(len(classes))[y]
    total = onehot.sum(axis=0)
    cuts: dict[str, float | list[str]] = {}
    for name in split.numeric:
        x = train[name].to_numpy(dtype=float)
        candidates = np.unique(np.quantile(x[~np.isnan(x)], np.linspace(0.05, 0.95, 19)))
        candidates = np.array([c for c in candidates if 0 < (x > c).mean() < 1] or [np.nanmedian(x)])
        left = (x[None, :] > candidates[:, None]).astype(float) @ onehot
        cuts[name] = float(candidates[int(np.argmax(_split_gains(left, total)))])
    for name in split.categorical:
        values, codes = np.unique(train[name].fillna(MISSING).astype(str).to_numpy(), return_inverse=True)
        counts = np.zeros((len(values), len(classes)))
        np.add.at(counts, (codes, y), 1.0)
        share = counts / counts.sum(axis=1, keepdims=True)
        best, best_gain = [str(values[0])], -1.0
        for c in range(len(classes)):
            order = np.argsort(-share[:, c], kind="stable")
            gains = _split_gains(np.cumsum(counts[order], axis=0)[:-1], total)
            if len(gains) and gains.max() > best_gain:
                best_gain = float(gains.max())
                best = [str(v) for v in values[order[: int(np.argmax(gains)) + 1]]]
        cuts[name] = best
    return cuts


def binarized(split: Split, frame: pd.DataFrame, cuts: dict[str, Any]) -> pd.DataFrame:
    out = {}
    for name in split.features:
        series = frame[name].fillna(MISSING) if name in split.categorical else frame[name]
        out[name] = binarize(series, cuts[name]).fillna(False).astype(bool)
    out[split.label] = frame[split.label]
    return pd.DataFrame(out)


def figure3_rows(split: Split, params: ExperimentPPNBParams, ds: int,
                 tick: Callable[[str], None]) -> tuple[list[dict], list[dict], dict]:
    cuts = choose_cut_points(split)
    full, test = binarized(split, split.train, cuts), binarized(split, split.test, cuts)
    features = split.features
    columns = [ColumnInfo(f, "boolean", distinct=2) for f in features] + [
        ColumnInfo(split.label, "categorical", role="label")]
    score = lambda model: float(model.score(test[features], test[split.label]))  # noqa: E731
    refs = [{"dataset": split.name, "model": "naive Bayes on raw binarized data", "train_rows": len(full),
             "seed": 0, "accuracy": score(PPNBClassifier().fit(full[features], full[split.label]))},
            {"dataset": split.name, "model": "ID3 on raw binarized data", "train_rows": len(full),
             "seed": 0, "accuracy": score(DTPDClassifier().fit(full[features], full[split.label]))}]
    rows = []
    sizes = [(len(full), None)] + [(n, n) for n in params.train_sizes if n < len(full)]
    for size, cap in sizes:
        for gi, p in enumerate(params.p0_grid):
            tick(f"{split.name}: Figure 3, n={size}, p={p}")
            for seed in params.seeds:
                train = full if cap is None else _subset(full, cap, 100 + seed)
                data = MethodInput(columns=columns, frame=train)
                ctx = RunContext(_rng(seed, ds, gi, 7, size))
                errph = ErrphParams(columns=features, p0=p, allow_zero_probabilities=p >= 1.0)
                release = as_release_input(data, run_errph(data, errph, ctx), "errph", errph)
                common = {"dataset": split.name, "train_rows": size, "p": p, "seed": seed}
                rows.append({**common, "method": "PPNB (ERRPH, k=2)",
                             "accuracy": _fit_score_binary(release, features, split, test)})
                warner = WarnerParams(columns=features, p=p, whole_record=True, allow_zero_probabilities=True)
                flipped = as_release_input(data, run_warner(data, warner, ctx), "warner", warner)
                model = DTPDClassifier(randomization=flipped.source.metadata["warner"])
                model.fit(flipped.frame[features], flipped.frame[split.label])
                rows.append({**common, "method": "DTPD (whole-record Warner)", "accuracy": score(model)})
    return rows, refs, cuts


def _fit_score_binary(release: MethodInput, features: list[str], split: Split, test: pd.DataFrame) -> float:
    randomization = release_randomization(release.source)
    model = PPNBClassifier(randomization={f: randomization[f] for f in features})
    model.fit(release.frame[features], release.frame[split.label])
    return float(model.score(test[features], test[split.label]))


# --------------------------------------------------------------------------------- report
def _summary(rows: list[dict], keys: list[str]) -> pd.DataFrame:
    frame = pd.DataFrame(rows)
    if frame.empty:
        return frame
    grouped = frame.groupby(keys, sort=False)["accuracy"]
    out = grouped.agg(["mean", "std", "min", "max", "count"]).reset_index()
    out["std"] = out["std"].fillna(0.0)
    return out.rename(columns={"count": "seeds"})


def _band(ax, x, mean, std, label, marker="o", **style) -> None:
    # the marker (and the caller's line style) tell the series apart without colour: grayscale
    # prints and colour-blind readers saw the two TRR settings, PPNB and DTPD as one grey line
    ax.plot(x, mean, marker=marker, markersize=4, label=label, **style)
    ax.fill_between(x, mean - std, mean + std, alpha=0.18, color=ax.lines[-1].get_color())


BANDS = "bands: mean ± 1 sd over the seeds"
ACCURACY = f"accuracy on the test set ({HIGHER_IS_BETTER})"


def _bands_title(table: pd.DataFrame, more: str = "") -> str | None:
    """The legend's title: the bands' meaning only where they have a width — one seed draws none,
    and a title about them misleads (expe acceptance check)."""
    parts = ([BANDS] if (table["std"].fillna(0) > 0).any() else []) + ([more] if more else [])
    return "; ".join(parts) or None
#: (marker, line style) of the smaller training sizes of figure2_train_size, smallest first (not
#: dotted: that is the raw-data reference); the full size is solid with circles in every panel
_SIZE_STYLES = [("v", "--"), ("s", "-."), ("D", (0, (5, 1, 1, 1, 1, 1))), ("^", (0, (3, 1))), ("P", (0, (1, 1)))]


def plot_figure2(fig2: pd.DataFrame, refs: pd.DataFrame, full_sizes: dict[str, int]) -> Figure:
    datasets = list(dict.fromkeys(fig2["dataset"]))
    fig = Figure(figsize=(5.2 * len(datasets), 4.0))
    markers = iter("os")  # one per TRR setting
    trr_marker: dict[str, str] = {}
    for i, ds in enumerate(datasets):
        ax = fig.add_subplot(1, len(datasets), i + 1)
        d = fig2[(fig2.dataset == ds) & (fig2.train_rows == full_sizes[ds])]
        for (features, trr), g in d.groupby(["features", "trr"], sort=False):
            if features == "all":
                marker = trr_marker.setdefault(trr, next(markers, "D"))
                _band(ax, g.p0, g["mean"], g["std"], f"PPNB, TRR {trr}", marker=marker, linestyle="-")
            else:
                _band(ax, g.p0, g["mean"], g["std"], "PPNB, categorical attributes only", marker="^",
                      linestyle="--")
        r = refs[(refs.dataset == ds) & (refs.train_rows == full_sizes[ds])]
        for model, style in (("naive Bayes on raw data (all)", ":"), ("naive Bayes on raw data (categorical)", "-.")):
            acc = r[r.model == model]["mean"]
            if len(acc):
                ax.axhline(float(acc.iloc[0]), color="black", linestyle=style, linewidth=1,
                           label=model.replace("naive Bayes", "NB"))
        ax.set(title=f"PPNB accuracy against p0 — {ds} ({full_sizes[ds]:,} training records)",
               xlabel="p0 (ERRPH)", ylabel=ACCURACY)
        ax.title.set_fontsize(10)
        ax.grid(alpha=0.3)
    legend_below(fig, title=_bands_title(fig2))
    return fig


def plot_train_sizes(fig2: pd.DataFrame, refs: pd.DataFrame) -> Figure:
    datasets = list(dict.fromkeys(fig2["dataset"]))
    fig = Figure(figsize=(5.2 * len(datasets), 4.0))
    for i, ds in enumerate(datasets):
        ax = fig.add_subplot(1, len(datasets), i + 1)
        d = fig2[(fig2.dataset == ds) & (fig2.features == "categorical")]
        sizes = sorted(set(d.train_rows))
        for size, g in d.groupby("train_rows"):
            full = size == sizes[-1]
            marker, style = ("o", "-") if full else _SIZE_STYLES[sizes.index(size) % len(_SIZE_STYLES)]
            label = "all training records" if full else f"n = {size:,}"
            _band(ax, g.p0, g["mean"], g["std"], label, marker=marker, linestyle=style)
            r = refs[(refs.dataset == ds) & (refs.train_rows == size)
                     & (refs.model == "naive Bayes on raw data (categorical)")]
            if len(r):
                ax.axhline(float(r["mean"].iloc[0]), color=ax.lines[-1].get_color(), linestyle=":", linewidth=1)
        ax.set(title=f"PPNB (categorical attributes) by training size — {ds} (all: {sizes[-1]:,})",
               xlabel="p0 (ERRPH)", ylabel=ACCURACY)
        ax.title.set_fontsize(10)
        ax.grid(alpha=0.3)
    legend_below(fig, title=_bands_title(fig2, "thin dotted lines: NB on the raw data of the same size"))
    return fig


def plot_figure3(fig3: pd.DataFrame, refs: pd.DataFrame, full_sizes: dict[str, int]) -> Figure:
    datasets = list(dict.fromkeys(fig3["dataset"]))
    fig = Figure(figsize=(5.2 * len(datasets), 4.0))
    styles = {"PPNB (ERRPH, k=2)": ("tab:blue", "o"), "DTPD (whole-record Warner)": ("tab:red", "s")}
    for i, ds in enumerate(datasets):
        ax = fig.add_subplot(1, len(datasets), i + 1)
        d = fig3[fig3.dataset == ds]
        smallest = int(d.train_rows.min())
        for (method, size), g in d.groupby(["method", "train_rows"], sort=False):
            if size not in (full_sizes[ds], smallest):
                continue
            full = size == full_sizes[ds]
            color, marker = styles.get(method, (None, "D"))
            _band(ax, g.p, g["mean"], g["std"], f"{method}, {'all training records' if full else f'n = {size:,}'}",
                  marker=marker, color=color, linestyle="-" if full else "--")
        for model, style in (("naive Bayes on raw binarized data", ":"), ("ID3 on raw binarized data", "-.")):
            acc = refs[(refs.dataset == ds) & (refs.model == model)]["mean"]
            if len(acc):
                ax.axhline(float(acc.iloc[0]), color="black", linestyle=style, linewidth=1, label=model)
        ax.set(title=f"PPNB against DTPD, binarized — {ds} ({full_sizes[ds]:,} training records)",
               xlabel="p (ERRPH p0 = DTPD θ)", ylabel=ACCURACY)
        ax.title.set_fontsize(10)
        ax.grid(alpha=0.3)
    legend_below(fig, title=_bands_title(fig3), handlelength=4)  # long enough to show the dashes
    return fig


def _findings(fig2: pd.DataFrame, fig3: pd.DataFrame, full_sizes: dict[str, int]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for ds, size in full_sizes.items():
        f: dict[str, Any] = {}
        d = fig2[(fig2.dataset == ds) & (fig2.train_rows == size)]
        for (features, trr), g in d.groupby(["features", "trr"], sort=False):
            g = g.sort_values("p0")
            f[f"figure2 {features} {trr}: accuracy at lowest / highest p0"] = [
                round(float(g["mean"].iloc[0]), 4), round(float(g["mean"].iloc[-1]), 4)]
        if not fig3.empty:
            d3 = fig3[(fig3.dataset == ds) & (fig3.train_rows == size)].pivot(
                index="p", columns="method", values="mean")
            if d3.shape[1] == 2:
                ppnb, dtpd = d3.filter(like="PPNB").iloc[:, 0], d3.filter(like="DTPD").iloc[:, 0]
                f["figure3: p where PPNB beats DTPD"] = [float(p) for p in d3.index[ppnb > dtpd]]
        out[ds] = f
    return out


def run_experiment_ppnb(data: MethodInput, params: ExperimentPPNBParams, ctx: RunContext) -> ReportResult:
    splits = [load_split(name, params.max_train_rows, params.max_test_rows) for name in params.datasets]
    n_grid = len(params.p0_grid)
    total = sum(n_grid * (1 + len([n for n in params.train_sizes if n < len(s.train)])) * (1 + params.figure3)
                for s in splits)
    done = [0]

    def tick(stage: str) -> None:
        ctx.progress(done[0] / max(total, 1), stage)
        done[0] += 1

    rows2, rows3, refs, cuts = [], [], [], {}
    for ds, split in enumerate(splits):
        r2, rf = figure2_rows(split, params, ds, tick)
        rows2 += r2
        refs += rf
        if params.figure3:
            r3, rf3, cuts[split.name] = figure3_rows(split, params, ds, tick)
            rows3 += r3
            refs += rf3
    fig2 = _summary(rows2, ["dataset", "features", "trr", "train_rows", "p0"])
    fig3 = _summary(rows3, ["dataset", "method", "train_rows", "p"])
    ref = _summary(refs, ["dataset", "model", "train_rows"])
    full_sizes = {s.name: len(s.train) for s in splits}
    plots = {"figure2": render_figure(plot_figure2(fig2, ref, full_sizes))}
    if params.train_sizes:
        plots["figure2_train_size"] = render_figure(plot_train_sizes(fig2, ref))
    tables = {"figure2": fig2, "references": ref}
    if params.figure3:
        plots["figure3"] = render_figure(plot_figure3(fig3, ref, full_sizes))
        tables["figure3"] = fig3
    ctx.progress(1.0, "done")
    return ReportResult(
        kind="experiment_ppnb",
        data={
            "params": params.model_dump(mode="json"),
            "datasets": {s.name: {"train_rows": len(s.train), "test_rows": len(s.test),
                                  "numeric": s.numeric, "categorical": s.categorical, "label": s.label}
                         for s in splits},
            "trr_settings": {k: dict(zip(("a_mean", "a_var", "b_mean", "b_var"), v))
                             for k, v in TRR_SETTINGS.items()},
            "cut_points": cuts,
            "findings": _findings(fig2, fig3, full_sizes),
            "randomness": "seeded SecureRandom per (seed, dataset, grid point): reproducible, not private",
            "spread": "plots show mean ± one standard deviation over seeds; tables also give min and max",
        },
        tables=tables,
        plots=plots,
    )


register(MethodSpec(
    name="experiment_ppnb",
    family="randomized_response",
    kind=MethodKind.experiment,
    summary="Reproduce seed 000's Figures 2 and 3: PPNB accuracy against p0 for both TRR settings, "
            "and PPNB against DTPD on binarized data, on synthetic bank-card customers and Adult.",
    params=ExperimentPPNBParams,
    guarantee="an experiment on public data: its randomness is seeded and not private",
    paper="Zhang & Tang, Privacy Preserving Naive Bayes Classification, Chinese Journal of "
          "Computers 30(8), 2007 (seed 000), §7",
    run=run_experiment_ppnb,
    sources=frozenset({MethodSource.none}),
    produces_randomness=False,
    docs="docs/methods/experiment_ppnb.md",
    slow_params=('max_train_rows', 'max_test_rows'),
))
