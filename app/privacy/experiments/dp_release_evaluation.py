"""What experiment_dp_release measures on each release: the misclassification rate of an RBF SVM
trained on it, the total variation distance of its 1-way and 2-way marginals from the raw
records', and the summaries over the repetitions (mean, standard error). Separate from
dp_release.py because benchmarks (synth_fidelity, bench_dp) and the DP method tests measure
releases of their own with the same functions.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd
from sklearn.compose import ColumnTransformer
from sklearn.impute import SimpleImputer
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import OneHotEncoder, StandardScaler
from sklearn.svm import SVC

from app.privacy.data import ColumnInfo
from app.privacy.dp_release.marginal_domains import build_columns, marginal
from app.privacy.dp_release.marginals import SynthParams
from app.privacy.experiments.dp_release_tasks import TARGET

TVD_BINS = 32  # numeric columns are compared on the methods' 32 default bins over their declared bounds


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


def standard_error(values: pd.Series) -> float:
    """Of the mean over the repetitions; NaN for one repetition (no spread measured)."""
    return float(values.std(ddof=1) / math.sqrt(len(values))) if len(values) > 1 else float("nan")


def summary_table(runs: pd.DataFrame, column: str, statistic: str = "mean") -> pd.DataFrame:
    """One row per task and method, one column per ε: the mean over the repetitions, or
    (``statistic="se"``) its standard error."""
    grouped = runs.groupby(["task", "method", "epsilon"])[column]
    table = (grouped.mean() if statistic == "mean" else grouped.agg(standard_error)).unstack("epsilon")
    table.columns = [("no privacy" if math.isinf(c) else f"eps={c:g}") for c in table.columns]
    return table.reset_index()
