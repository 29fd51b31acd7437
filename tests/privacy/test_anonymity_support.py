"""Shared fixtures and independent recomputations for the anonymity tests (no tests here):
they read the released strings and the raw ARX hierarchy tables only, never the library's
trees or bookkeeping."""

from __future__ import annotations

import itertools
import re
from functools import lru_cache
from pathlib import Path

import numpy as np
import pandas as pd

from app.privacy.data import ColumnInfo
from app.privacy.experiments import datasets_dir

ADULT_QIS = ["age", "education", "marital-status", "occupation", "race", "sex", "workclass",
             "native-country"]
ADULT_NUMERIC = ("age", "fnlwgt", "education-num", "capital-gain", "capital-loss", "hours-per-week")


@lru_cache(maxsize=1)
def adult_complete() -> pd.DataFrame:
    path = datasets_dir() / "adult" / "adult_train.csv"
    return pd.read_csv(path, na_values="?", skipinitialspace=True).dropna().reset_index(drop=True)


def adult_hierarchy_text(column: str) -> str:
    return (Path(datasets_dir()) / "adult" / "hierarchies" / f"{column}.csv").read_text()


def adult_columns(frame: pd.DataFrame, qis=ADULT_QIS, sensitive: str | None = None) -> list[ColumnInfo]:
    def role(c):
        if c in qis:
            return "quasi_identifier"
        if c == sensitive:
            return "sensitive"
        return "label" if c == "income" else "insensitive"
    return [ColumnInfo(c, "numeric" if c in ADULT_NUMERIC else "categorical", role(c))
            for c in frame.columns]


def class_sizes(released: pd.DataFrame, qis: list[str]) -> pd.Series:
    return released.groupby(qis, dropna=False, observed=True).size()


def least_over_nodes(frame: pd.DataFrame, hierarchies: dict, qis: list[str], k: int, suppression: float,
                     loss) -> float:
    """A brute force over every node of the lattice: each QI generalized with its raw ARX table,
    the classes below k suppressed, and the least ``loss(released records, suppressed count)``
    among the nodes within the suppression limit."""
    limit = int(np.floor(suppression * len(frame) + 1e-9))
    best = np.inf
    for levels in itertools.product(*[range(hierarchies[q].shape[1]) for q in qis]):
        gen = frame.assign(**{q: frame[q].astype(str).map(dict(zip(hierarchies[q].iloc[:, 0].astype(str),
                                                                    hierarchies[q].iloc[:, lv])))
                              for q, lv in zip(qis, levels)})
        suppressed = gen.groupby(qis)[qis[0]].transform("size").to_numpy() < k
        if suppressed.sum() <= limit:
            best = min(best, loss(gen[~suppressed], int(suppressed.sum())))
    return best


def leaves_under(hierarchy: pd.DataFrame, present: set[str]) -> dict[str, set[str]]:
    """Every node label of an ARX table → the set of present leaves below it."""
    out: dict[str, set[str]] = {}
    leaves = hierarchy.iloc[:, 0].astype(str)
    for j in range(hierarchy.shape[1]):
        for node, leaf in zip(hierarchy.iloc[:, j].astype(str), leaves):
            if leaf in present:
                out.setdefault(node, set()).add(leaf)
    out.setdefault("*", set(present))
    return out


_INTERVAL = re.compile(r"^\[(.+), (.+)\]$")


def numeric_ncp(labels: pd.Series, lo: float, hi: float) -> np.ndarray:
    def one(text: str) -> float:
        m = _INTERVAL.match(text)
        return (float(m.group(2)) - float(m.group(1))) / (hi - lo) if m else 0.0
    uniques = {t: one(t) for t in labels.unique()}
    return labels.map(uniques).to_numpy(dtype=float)


def categorical_ncp(labels: pd.Series, hierarchy: pd.DataFrame, present: set[str]) -> np.ndarray:
    under = leaves_under(hierarchy, present)
    total = len(present) - 1

    def one(text: str) -> float:
        if text.startswith("{") and text.endswith("}"):
            leaves = set().union(*(under[part] for part in text[1:-1].split("|")))
        else:
            leaves = under[text]
        return (len(leaves) - 1) / total
    uniques = {t: one(t) for t in labels.unique()}
    return labels.map(uniques).to_numpy(dtype=float)


def ordered_emd(class_values: np.ndarray, table_values: np.ndarray) -> float:
    """EMD with ordered distance |i-j|/(m-1) over the table's sorted distinct values: the
    1-Wasserstein distance between the value ranks, by scipy."""
    from scipy.stats import wasserstein_distance

    domain = np.unique(table_values)
    rank = lambda v: np.searchsorted(domain, v)  # noqa: E731
    return float(wasserstein_distance(rank(class_values), rank(table_values)) / (len(domain) - 1))
