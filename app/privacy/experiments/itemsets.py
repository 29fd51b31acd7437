"""``experiment_itemsets``: PN/g against MASK at scale (spec 02 §5).

On mushroom, chess, retail (its most frequent items) and one-hot Adult, for several seeds:
* error vs p: MASK(p) against PN/g whose group keep probabilities average p (the paper's
  comparison), PN/g without its p = 1 group, and MASK at that variant's mean per-bit ε
  (equal protection of the protected rows); support errors on the truly frequent itemsets,
  precision and recall of the itemsets mined on the release, runtime;
* grouping: g ∈ {2, 100, n/5}, random vs consecutive rows, pooled vs stratified estimator;
* pruning: recall of Apriori on reconstructed supports against reconstructing every itemset
  (reconstructed supports are not anti-monotone).
Randomness is a seeded SecureRandom per run: the experiment's releases are reproducible and
not private, which is all an evaluation needs.
"""

from __future__ import annotations

import math
import time
from typing import Annotated, Any, Literal

import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from pydantic import Field, field_validator

from app.privacy.context import RunContext
from app.privacy.data import ColumnInfo, MethodInput, TransactionData
from app.privacy.experiments import dataset_file, distinct
from app.privacy.itemsets.encoding import one_hot, read_fimi
from app.privacy.itemsets.mining import Level, apriori
from app.privacy.itemsets.supports import all_combinations, exact_oracle, release_oracle
from app.privacy.itemsets.release import ItemParams, MaskParams, PngParams, prepare_items, run_mask, run_png
from app.privacy.json_types import schema_bounds
from app.privacy.plotting import HIGHER_IS_BETTER, LOWER_IS_BETTER, legend_below, log_axis, value_label
from app.privacy.registry import MethodKind, MethodSpec, Params, MethodSource, register
from app.privacy.results import ReportResult, render_figure
from app.privacy.rng import SecureRandom

DatasetName = Literal["mushroom", "chess", "retail", "adult"]
DEFAULT_MINSUP = {"mushroom": 0.3, "chess": 0.85, "retail": 0.01, "adult": 0.2}
ESTIMATORS = ("pooled", "stratified")


class ExperimentItemsetsParams(Params):
    datasets: list[DatasetName] = Field(["mushroom", "chess", "retail", "adult"], min_length=1)
    ps: list[float] = Field([0.6, 0.7, 0.8, 0.9], min_length=1, max_length=8,
                            description="mean keep probabilities compared (MASK p = PN/g mean p)",
                            json_schema_extra=schema_bounds(exclusiveMinimum=0.5, exclusiveMaximum=1.0))
    seeds: int = Field(3, ge=1, le=10, description="independent randomizations per setting")
    max_len: int = Field(4, ge=1, le=4, description="itemset sizes evaluated: 1..max_len")
    minsup: dict[str, float] | None = Field(
        None, description="minimum support per dataset (default mushroom 0.3, chess 0.85, "
        "retail 0.01, adult 0.2)")
    # bounded (no dataset here comes near 10^9 rows: a larger size is one group, i.e. a typo)
    group_sizes: list[Annotated[int, Field(ge=1, le=10**9)] | Literal["n/5"]] = Field(
        [2, 100, "n/5"], min_length=1, max_length=6)
    grouping_ps: list[float] = Field([0.8, 0.9], min_length=1, max_length=4,
                                     description="mean p of the PN/g designs in the grouping comparison",
                                     json_schema_extra=schema_bounds(exclusiveMinimum=0.5, exclusiveMaximum=1.0))
    group_size: int = Field(100, ge=1, le=10**9, description="PN/g group size in the error-vs-p comparison")
    retail_top_items: int = Field(100, ge=10, le=1000, description="retail: keep its N most frequent items")
    pruning_max_len: int = Field(3, ge=1, le=3, description="pruning study: every itemset up to this size")

    _distinct = field_validator("datasets", "group_sizes")(classmethod(lambda cls, v: distinct(v)))

    @field_validator("ps", "grouping_ps")
    @classmethod
    def _open_interval(cls, v):
        if any(not 0.5 < p < 1.0 for p in v):
            raise ValueError("each p must lie in (0.5, 1)")
        return distinct(v)


# ------------------------------------------------------------------------------ designs
def paper_design(mean_p: float) -> list[float]:
    """Five equally spaced group probabilities averaging mean_p; from 1.0 down (with a
    p = 1 group, as in the paper's example) when that stays ≥ 0.5, else from 0.5 up."""
    if 2 * mean_p - 1 >= 0.5:
        hi, lo = 1.0, 2 * mean_p - 1
    else:
        hi, lo = 2 * mean_p - 0.5, 0.5
    return [round(float(x), 6) for x in np.linspace(hi, lo, 5)]


def epsilon_bit(p: float) -> float:
    return math.inf if p >= 1 else abs(math.log(p / (1 - p)))


def equal_epsilon_p(ps: list[float]) -> float:
    """The MASK p whose per-bit ε equals the mean per-bit ε of equally sized groups."""
    eps = float(np.mean([epsilon_bit(p) for p in ps]))
    return 1.0 / (1.0 + math.exp(-eps))


# ------------------------------------------------------------------------------- data
def load_dataset(name: str, retail_top_items: int) -> tuple[TransactionData, str]:
    if name == "adult":
        frame = pd.read_csv(dataset_file("adult", "adult_train.csv"), na_values=["?"], skipinitialspace=True)
        columns = [ColumnInfo(c, "numeric" if frame[c].dtype.kind in "if" else "categorical")
                   for c in frame.columns]
        chosen = [c.name for c in columns if c.type == "categorical"]
        return one_hot(frame, columns, chosen, 5).transactions, "one-hot of " + ", ".join(chosen)
    td = read_fimi(dataset_file("itemsets", f"{name}.dat"))
    if name == "retail":
        restricted = prepare_items(MethodInput(columns=[], transactions=td), ItemParams(top_items=retail_top_items))
        return restricted.transactions, f"the {retail_top_items} most frequent of {td.n_items} items"
    return td, "FIMI file as is"


class Truth:
    def __init__(self, td: TransactionData, minsup: float, max_len: int):
        self.levels = apriori(exact_oracle(td), minsup, max_len)
        self.sets = {tuple(r) for lv in self.levels for r in lv.itemsets.tolist()}

    def count(self) -> int:
        return len(self.sets)


def _found(levels: list[Level]) -> set[tuple[int, ...]]:
    return {tuple(r) for lv in levels for r in lv.itemsets.tolist()}


def evaluate(release, truth: Truth, minsup: float, max_len: int, estimator: str) -> dict[str, Any]:
    """Support errors on the truly frequent itemsets, precision/recall of the mined ones."""
    oracle = release_oracle(release.transactions, release.metadata, estimator)
    abs_err, rel_err, ses = [], [], []
    for lv in truth.levels:
        if len(lv.itemsets):
            est, se, _, _ = oracle.supports(lv.itemsets)
            abs_err.append(np.abs(est - lv.support))
            rel_err.append(np.abs(est - lv.support) / lv.support)
            ses.append(se)
    start = time.perf_counter()
    found = _found(apriori(oracle, minsup, max_len, max_candidates=2_000_000))
    mining = time.perf_counter() - start
    hits = len(found & truth.sets)
    return {"mae": float(np.concatenate(abs_err).mean()), "mre": float(np.concatenate(rel_err).mean()),
            "mean_se": float(np.concatenate(ses).mean()),
            "precision": hits / len(found) if found else float("nan"),
            "recall": hits / truth.count() if truth.count() else float("nan"),
            "found": len(found), "mining_s": mining}


def _release(td: TransactionData, method: str, params: dict[str, Any], seed: int):
    data = MethodInput(columns=[], transactions=td)
    ctx = RunContext(rng=SecureRandom(seed=seed))
    start = time.perf_counter()
    result = (run_mask(data, MaskParams(**params), ctx) if method == "mask"
              else run_png(data, PngParams(**params, allow_zero_probabilities=max(params["ps"]) >= 1), ctx))
    return result, time.perf_counter() - start


def _describe(result) -> dict[str, Any]:
    privacy = result.metadata["itemsets"]["privacy"]
    protected = [s for s in privacy["strata"] if s["protected"]]
    rows = sum(s["rows"] for s in protected)
    return {"mean_keep_p": privacy["mean_keep_probability"],
            "share_unprotected": privacy["share_unprotected_rows"],
            "mean_eps_bit_protected": (sum(s["epsilon_bit"] * s["rows"] for s in protected) / rows
                                       if rows else float("nan"))}


# ------------------------------------------------------------------------------- parts
def error_vs_p(name, td, truth, params: ExperimentItemsetsParams, minsup, ctx, progress) -> list[dict]:
    rows = []
    for p in params.ps:
        design = paper_design(p)
        protected = [q for q in design if q < 1.0]
        schemes = [("MASK", "mask", {"p": p}, ("pooled",)),
                   ("PN/g", "png", {"ps": design, "group_size": params.group_size}, ESTIMATORS)]
        if len(protected) < len(design):
            schemes.append(("PN/g without p=1", "png", {"ps": protected, "group_size": params.group_size},
                            ESTIMATORS))
        # equal protection at every mean p: a design without a p = 1 group spends its mean ε
        # unevenly too (0.7's {0.9 … 0.5}: mean ε_bit 0.97 against MASK 0.7's 0.85)
        schemes.append(("MASK at equal ε", "mask", {"p": round(equal_epsilon_p(protected), 6)}, ("pooled",)))
        for scheme, method, setting, estimators in schemes:
            for seed in range(params.seeds):
                result, release_s = _release(td, method, setting, seed)
                for estimator in estimators:
                    rows.append({"dataset": name, "p": p, "scheme": scheme, "estimator": estimator,
                                 "setting": _setting_text(setting), "seed": seed, "release_s": release_s,
                                 **_describe(result), **evaluate(result, truth, minsup, params.max_len, estimator)})
        progress()
    return rows


def grouping(name, td, truth, params: ExperimentItemsetsParams, minsup, progress) -> list[dict]:
    rows = []
    for mean_p in params.grouping_ps:
        design = paper_design(mean_p)
        for g in params.group_sizes:
            size = math.ceil(td.n_transactions / 5) if g == "n/5" else int(g)
            for shuffle in (False, True):
                for seed in range(params.seeds):
                    result, _ = _release(td, "png", {"ps": design, "group_size": size, "shuffle": shuffle}, seed)
                    for estimator in ESTIMATORS:
                        rows.append({"dataset": name, "p": mean_p, "group_size": str(g), "assignment":
                                     "random" if shuffle else "consecutive", "estimator": estimator,
                                     "seed": seed, **evaluate(result, truth, minsup, params.max_len, estimator)})
        progress()
    return rows


def pruning(name, td, params: ExperimentItemsetsParams, minsup, progress) -> list[dict]:
    """Apriori on reconstructed supports against reconstructing every itemset up to a size."""
    k_max = params.pruning_max_len
    truth = Truth(td, minsup, k_max)
    every = [all_combinations(td.n_items, k) for k in range(1, k_max + 1)]
    rows = []
    for p in params.ps:
        for seed in range(params.seeds):
            result, _ = _release(td, "mask", {"p": p}, seed)
            oracle = release_oracle(result.transactions, result.metadata)
            brute = set()
            for sets in every:
                support = oracle.supports(sets)[0]
                brute |= {tuple(r) for r in sets[support >= minsup].tolist()}
            mined = _found(apriori(oracle, minsup, k_max, max_candidates=2_000_000))
            rows.append({"dataset": name, "p": p, "seed": seed,
                         "recall_apriori": len(mined & truth.sets) / max(truth.count(), 1),
                         "recall_no_pruning": len(brute & truth.sets) / max(truth.count(), 1),
                         "precision_apriori": len(mined & truth.sets) / max(len(mined), 1),
                         "precision_no_pruning": len(brute & truth.sets) / max(len(brute), 1),
                         "lost_by_pruning": len((brute - mined) & truth.sets)})
        progress()
    return rows


def amplification(params: ExperimentItemsetsParams) -> pd.DataFrame:
    """Why equal mean p is not equal information. Every P_k(p) is diagonal in the same
    (Hadamard) basis with eigenvalues (2p-1)^j, j = 0..k, so the pooled mixture has
    eigenvalues E_t[(2p_t-1)^j]; reconstructing a k-itemset divides by up to the j = k one.
    By Jensen, E[(2p_t-1)^k] ≥ (2·E[p_t]-1)^k: spread-out p_t (and p_t = 1 most of all,
    eigenvalue 1) condition the inversion better than one p at the same mean."""
    rows = []
    for p in params.ps:
        design = paper_design(p)
        schemes = {"MASK": [p], "PN/g": design}
        protected = [q for q in design if q < 1.0]
        if len(protected) < len(design):
            schemes["PN/g without p=1"] = protected
        schemes["MASK at equal ε"] = [equal_epsilon_p(protected)]
        for scheme, ps in schemes.items():
            lam = {k: float(np.mean([(2 * q - 1) ** k for q in ps])) for k in range(1, 5)}
            rows.append({"p": p, "scheme": scheme, "ps": ps,
                         **{f"1/E[(2p-1)^{k}]": 1.0 / lam[k] for k in lam}})
    return pd.DataFrame(rows)


def _setting_text(setting: dict[str, Any]) -> str:
    return ", ".join(f"{k}={v}" for k, v in setting.items())


# ------------------------------------------------------------------------------- report
def _mean_table(rows: list[dict], keys: list[str], values: list[str]) -> pd.DataFrame:
    frame = pd.DataFrame(rows)
    agg = frame.groupby(keys, sort=False)[values].agg(["mean", "std"])
    agg.columns = [f"{v}_{s}" if s == "std" else v for v, s in agg.columns]
    return agg.reset_index()


#: marker and line style per series of the *_vs_p plots: told apart without colour (in grayscale
#: the three dotted series, all with circles, were one grey line); other labels get the fallback
_SERIES_STYLE = {"MASK": ("o", "-"), "PN/g (pooled)": ("s", "--"), "PN/g (stratified)": ("^", "-."),
                 "PN/g without p=1 (pooled)": ("D", ":"), "PN/g without p=1 (stratified)": ("v", ":"),
                 "MASK at equal ε": ("X", ":")}
ERROR_BARS = "error bars: ± 1 sd over the seeds"


def _spread(table: pd.DataFrame, column: str) -> bool:
    """The table has a spread worth drawing for ``column`` (one seed gives none: std null)."""
    return f"{column}_std" in table and table[f"{column}_std"].fillna(0).gt(0).any()


def _panels(n: int, height: float) -> tuple[Figure, list]:
    """At most two panels a row: four in a row made a figure 17 in wide, whose 7-pt legend and
    tick labels shrank to unreadable on a page. Unused cells are hidden."""
    cols = min(2, n)
    rows = -(-n // cols)
    fig = Figure(figsize=(4.8 * cols, height * rows))
    axes = list(fig.subplots(rows, cols, squeeze=False).ravel())
    for ax in axes[n:]:
        ax.set_visible(False)
    return fig, axes[:n]


def _ylabel_first_column(axes: list, label: str) -> None:
    for i, ax in enumerate(axes):
        if i % 2 == 0:
            ax.set_ylabel(label)


def _plot_vs_p(table: pd.DataFrame, metric: str, ylabel: str, datasets: list[str], titles: dict[str, str],
               log: bool = False, title: str | None = None) -> Figure:
    """``ylabel`` names the metric; the axis adds which way is better (an error down, precision
    and recall up) and, on a log axis, that it is one."""
    fig, axes = _panels(len(datasets), 3.4)
    for ax, name in zip(axes, datasets):
        part = table[table["dataset"] == name]
        for (scheme, estimator), line in part.groupby(["scheme", "estimator"], sort=False):
            label = scheme if scheme.startswith("MASK") else f"{scheme} ({estimator})"
            marker, style = _SERIES_STYLE.get(label, ("P", (0, (5, 1, 1, 1))))
            ax.errorbar(line["p"], line[metric], yerr=line.get(f"{metric}_std"), marker=marker,
                        markersize=5, linestyle=style, capsize=2, label=label)
        ax.set_title(titles.get(name, name), fontsize=10)
        ax.set_xlabel("mean keep probability p")
        ax.grid(alpha=0.3)
        if log:
            log_axis(ax)
    better = LOWER_IS_BETTER if metric in ("mae", "mre", "mean_se") else HIGHER_IS_BETTER
    _ylabel_first_column(axes, value_label(ylabel, *(["log scale"] if log else []), better))
    fig.suptitle(title or f"{ylabel[:1].upper()}{ylabel[1:]} vs mean keep probability")
    legend_below(fig, axes, title=ERROR_BARS if _spread(table, metric) else None)  # one seed draws no bars
    return fig


def _plot_grouping(table: pd.DataFrame, datasets: list[str], mean_p: float) -> Figure:
    """Bars from zero on a linear axis in every panel: a bar's length is what a reader compares,
    and above a log axis' floor it is not the value's (mushroom at 0.9: a pooled 0.004 and a
    stratified 0.007 over a 0.0035 floor stood one to five). A tenfold bar (sorted mushroom's
    consecutive fifths, pooled) leaves the others a tenth of its height: readable, and true."""
    fig, axes = _panels(len(datasets), 3.4)
    spread = _spread(table, "mae")
    for ax, name in zip(axes, datasets):
        part = table[table["dataset"] == name].reset_index(drop=True)
        cells = part.drop_duplicates(["group_size", "assignment"])[["group_size", "assignment"]]
        labels = [f"g={r.group_size}\n{r.assignment[:6]}" for r in cells.itertuples()]
        x = np.arange(len(labels))
        for j, estimator in enumerate(ESTIMATORS):
            rows = cells.merge(part[part["estimator"] == estimator], how="left")  # the ticks' order
            # hatched as well as coloured: the two estimators stay apart in grayscale
            ax.bar(x + (j - 0.5) * 0.4, rows["mae"], width=0.4, label=estimator, hatch="" if j == 0 else "//",
                   edgecolor="white" if j == 0 else "black", linewidth=0.5,
                   yerr=rows["mae_std"] if spread else None, capsize=2,
                   error_kw=dict(elinewidth=0.8, ecolor="0.2"))
        ax.set_xticks(x, labels, fontsize=8)
        ax.set_ylim(bottom=0)
        ax.set_title(f"{name}: PN/g with p_t = {', '.join(f'{q:g}' for q in paper_design(mean_p))}",
                     fontsize=9)
        ax.set_xlabel("group size g, assignment of rows to groups", fontsize=8)
        ax.grid(axis="y", alpha=0.3)
    _ylabel_first_column(axes, value_label("mean absolute support error", LOWER_IS_BETTER))
    fig.suptitle(f"Support error of PN/g's estimators by grouping (mean keep probability {mean_p:g})")
    legend_below(fig, axes, title="estimator; bars: mean over the seeds"
                 + ("; error bars: ± 1 sd over the seeds" if spread else ""))
    return fig


def _plot_pruning(table: pd.DataFrame, datasets: list[str], titles: dict[str, str]) -> Figure:
    fig, axes = _panels(len(datasets), 3.2)
    spread = _spread(table, "recall_apriori") or _spread(table, "recall_no_pruning")
    for ax, name in zip(axes, datasets):
        part = table[table["dataset"] == name]
        for column, marker, style, label in (("recall_no_pruning", "o", "-", "every itemset reconstructed"),
                                             ("recall_apriori", "s", "--", "Apriori (pruned)")):
            ax.errorbar(part["p"], part[column], yerr=part.get(f"{column}_std") if spread else None,
                        marker=marker, linestyle=style, capsize=2, label=label)
        ax.set_title(titles.get(name, name), fontsize=10)
        ax.set_xlabel("MASK keep probability p")
        ax.set_ylim(0, 1.05)
        ax.grid(alpha=0.3)
    _ylabel_first_column(axes, value_label("recall of the frequent itemsets", HIGHER_IS_BETTER))
    fig.suptitle("Recall of the frequent itemsets with and without Apriori's pruning vs p")
    legend_below(fig, axes, title="MASK releases, mean over the seeds"
                 + ("; error bars: ± 1 sd over the seeds" if spread else ""))
    return fig


def run_experiment_itemsets(data: MethodInput, params: ExperimentItemsetsParams, ctx: RunContext) -> ReportResult:
    minsup_of = {**DEFAULT_MINSUP, **(params.minsup or {})}
    steps_total = len(params.datasets) * (2 * len(params.ps) + len(params.grouping_ps))
    done = [0]

    def progress(stage: str = "running"):
        done[0] += 1
        ctx.progress(done[0] / steps_total, stage)

    described, vs_p, groups, prunes = [], [], [], []
    for name in params.datasets:
        ctx.progress(done[0] / steps_total, f"loading {name}")
        td, note = load_dataset(name, params.retail_top_items)
        minsup = minsup_of[name]
        start = time.perf_counter()
        truth = Truth(td, minsup, params.max_len)
        described.append({"dataset": name, "transactions": td.n_transactions, "items": td.n_items,
                          "items_per_transaction": len(td.indices) / td.n_transactions, "minsup": minsup,
                          "true_frequent_itemsets": truth.count(),
                          "by_size": [len(lv.itemsets) for lv in truth.levels],
                          "raw_mining_s": time.perf_counter() - start, "note": note})
        vs_p += error_vs_p(name, td, truth, params, minsup, ctx, lambda: progress(f"{name}: error vs p"))  # noqa: B023 (run before the loop moves on)
        groups += grouping(name, td, truth, params, minsup, lambda: progress(f"{name}: grouping"))  # noqa: B023 (run before the loop moves on)
        prunes += pruning(name, td, params, minsup, lambda: progress(f"{name}: pruning"))  # noqa: B023 (run before the loop moves on)
    metrics = ["mae", "mre", "mean_se", "precision", "recall", "release_s", "mining_s"]
    vs_p_table = _mean_table(vs_p, ["dataset", "p", "scheme", "estimator", "setting", "mean_keep_p",
                                    "share_unprotected", "mean_eps_bit_protected"], metrics)
    group_table = _mean_table(groups, ["dataset", "p", "group_size", "assignment", "estimator"],
                              ["mae", "mre", "mean_se", "precision", "recall"])
    prune_table = _mean_table(prunes, ["dataset", "p"], ["recall_apriori", "recall_no_pruning",
                                                         "precision_apriori", "precision_no_pruning",
                                                         "lost_by_pruning"])
    names = list(params.datasets)
    titles = {n: f"{n} (minsup {minsup_of[n]:g}, itemsets of size ≤ {params.max_len})" for n in names}
    prune_titles = {n: f"{n} (minsup {minsup_of[n]:g}, size ≤ {params.pruning_max_len})" for n in names}
    plots = {
        "itemsets_error_vs_p": render_figure(
            _plot_vs_p(vs_p_table, "mae", "mean absolute support error", names, titles, log=True,
                       title="Mean absolute support error of the frequent itemsets vs mean keep "
                             "probability")),
        "itemsets_recall_vs_p": render_figure(
            _plot_vs_p(vs_p_table, "recall", "recall of frequent itemsets", names, titles)),
        "itemsets_precision_vs_p": render_figure(
            _plot_vs_p(vs_p_table, "precision", "precision of frequent itemsets", names, titles)),
        **{grouping_plot_name(p): render_figure(
            _plot_grouping(group_table[group_table["p"] == p], names, p)) for p in params.grouping_ps},
        "itemsets_pruning": render_figure(_plot_pruning(prune_table, names, prune_titles)),
    }
    ctx.progress(1.0, "done")
    tables = {"datasets": pd.DataFrame(described), "error_vs_p": vs_p_table, "grouping": group_table,
              "pruning": prune_table, "amplification": amplification(params)}
    return ReportResult(
        kind="experiment_itemsets",
        data={"parameters": params.model_dump(), "seeds": params.seeds,
              "designs": {str(p): {"png": paper_design(p), "png_without_p1": [q for q in paper_design(p) if q < 1],
                                   "mask_equal_epsilon_p": equal_epsilon_p([q for q in paper_design(p) if q < 1])}
                          for p in params.ps},
              "tables": {k: _json_records(v) for k, v in tables.items()}},
        tables=tables,
        plots=plots,
    )


def grouping_plot_name(mean_p: float) -> str:
    """'itemsets_grouping_p80' for 0.8, 'itemsets_grouping_p801' for 0.801: the decimals of p, at
    least two. Whole percents were the name (int(round(100 p))), so 0.801 and 0.804 made one
    plot, the second overwriting the first."""
    return f"itemsets_grouping_p{repr(float(mean_p)).split('.')[1].ljust(2, '0')}"


def _json_records(frame: pd.DataFrame) -> list[dict[str, Any]]:
    out = []
    for row in frame.to_dict(orient="records"):
        out.append({k: (None if isinstance(v, float) and not math.isfinite(v) else
                        float(v) if isinstance(v, np.floating) else int(v) if isinstance(v, np.integer) else v)
                    for k, v in row.items()})
    return out


register(MethodSpec(
    name="experiment_itemsets",
    family="itemsets",
    kind=MethodKind.experiment,
    summary="PN/g vs MASK at equal mean keep probability and at equal protection: support errors, "
            "precision/recall of frequent itemsets, grouping and pruning effects, runtime.",
    params=ExperimentItemsetsParams,
    guarantee="an evaluation on public datasets; its releases use a seeded generator and are not private",
    paper="seed 001 (Guo & Tong, PN/g) evaluated at scale as in spec 02 §5",
    run=run_experiment_itemsets,
    sources=frozenset({MethodSource.none}),
    produces_randomness=False,
    docs="docs/methods/experiment_itemsets.md",
    slow_params=('seeds', 'max_len', 'retail_top_items'),
))
