"""experiment_dp_release's tasks: each dataset and binary target (Adult, CoIL 2000, Bank), its
declared bounds and schema, and how it is loaded from the shared datasets. Separate from
dp_release.py (the protocol and its report) because the benchmarks and the DP method tests load
these tasks without running the experiment.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np
import pandas as pd

from app.privacy.data import ColumnInfo, MethodInput
from app.privacy.experiments import dataset_file

TARGET = "target"

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


@functools.cache
def task_columns(name: str) -> tuple[ColumnInfo, ...]:
    return tuple(load_task(name).data.columns)
