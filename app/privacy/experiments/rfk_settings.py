"""experiment_rfk's settings: the paper's datasets (numeric columns, hierarchies, labels and
their majority shares), its tiers and its claimed accuracy leads, the params model, and loading
a dataset. Separate so that the run, the accuracy summary and the figures all read them
without importing one another.
"""

from __future__ import annotations

from typing import Literal

import pandas as pd
from pydantic import Field, field_validator, model_validator

from app.privacy.anonymity.hierarchies import parse_arx_hierarchy
from app.privacy.data import ColumnInfo
from app.privacy.experiments import dataset_file, distinct
from app.privacy.registry import Params

SEED_003 = ("Zhai, Chen, Zhang, Pei & Ma, RFK-anonymity privacy protection based on random forest "
            "(seed 003)")
DatasetName = Literal["adult", "bank"]
ADULT_NUMERIC = ("age", "fnlwgt", "education-num", "capital-gain", "capital-loss", "hours-per-week")
BANK_NUMERIC = ("age", "balance", "day", "duration", "campaign", "pdays", "previous")
ADULT_HIERARCHIES = ("education", "marital-status", "native-country", "occupation", "race", "sex",
                     "workclass")
PAPER_TIERS = {
    "adult": {"capital-gain": 1, "age": 2, "capital-loss": 2, "workclass": 3, "occupation": 3,
              "hours-per-week": 3, "education-num": 3, "marital-status": 4, "relationship": 4,
              "native-country": 4, "fnlwgt": 4, "race": 4, "sex": 5, "education": 5},
    "bank": {"poutcome": 1, "duration": 2, "day": 2, "contact": 2, "default": 3, "marital": 3,
             "age": 3, "balance": 4, "job": 4, "campaign": 4, "pdays": 4, "month": 4,
             "housing": 4, "previous": 4, "loan": 4, "education": 5},
}
# The label of each dataset: its most common value's count and the records (the (p,α,k) baseline
# needs alpha at least that share; tests check these against the files).
LABEL_MAJORITY = {"adult": ("income", 24720, 32561), "bank": ("y", 39922, 45211)}
# The paper's claims (Fig. 1 and 3), in accuracy points: RFK minus the baseline at E.
PAPER_CLAIMS = {
    "adult": {"vs_kanonymity": {3: 0.5, 4: 1.6}, "vs_pak": {4: 0.4, 5: 1.9}},
    "bank": {"vs_kanonymity": {3: 0.4, 4: 0.9}},
}


class ExperimentRfkParams(Params):
    datasets: list[DatasetName] = Field(["adult", "bank"], min_length=1, max_length=2,
                                        description="the paper's datasets to run")
    k: int = Field(5, ge=3, le=1000, description="k of every anonymization (paper: K > 2)")
    # both labels are binary: a larger p failed the job after the whole RFK pipeline
    p: int = Field(2, ge=2, le=2, description="(p,α,k) baseline: distinct labels per class (both "
                   "datasets' labels are binary, so 2 is the only value)")
    alpha: float = Field(0.9, gt=0.0, le=1.0, description="(p,α,k) baseline: largest share of a "
                         "label in a class")
    repeats: int = Field(4, ge=1, le=50, description="splits per sensitivity estimate (paper: 20)")
    n_estimators: int = Field(40, ge=5, le=500, description="trees per forest (paper: scikit-learn's 100)")
    stability_runs: int = Field(2, ge=0, le=10, description="reruns of the tiers for stability; "
                                "each rerun's tiers also get their own RFK tables, measured like the "
                                "main run's")
    sample_size: int = Field(5000, ge=500, le=50_000, description="stratified sample the forests "
                             "train and test on; the anonymizations cover the whole dataset")
    eval_repeats: int = Field(20, ge=1, le=50, description="train/test splits each accuracy is "
                              "averaged over; its standard error (and that of the paired differences "
                              "to the baselines) needs at least 2")
    seed: int = Field(0, ge=0, description="seeds samples, splits and forests")

    _distinct = field_validator("datasets")(classmethod(lambda cls, v: distinct(v)))

    @model_validator(mode="after")
    def _alpha_feasible(self):
        # no class can hold a label at a lower share than the whole table does: the (p,α,k)
        # baseline then failed the job after the whole RFK pipeline had run
        for name in self.datasets:
            label, count, total = LABEL_MAJORITY[name]
            if count / total > self.alpha + 1e-12:
                raise ValueError(f"alpha = {self.alpha:g} is impossible on {name}: its most common "
                                 f"{label} holds {count:,} of {total:,} records "
                                 f"({count / total:.4f}), and no class can hold it at a lower share; "
                                 f"alpha must be ≥ {count / total:.4f}")
        return self


def load(name: str) -> tuple[pd.DataFrame, list[ColumnInfo], dict[str, pd.DataFrame], str]:
    if name == "adult":
        frame = pd.read_csv(dataset_file("adult", "adult_train.csv"), na_values="?", skipinitialspace=True)
        numeric, label = ADULT_NUMERIC, "income"
        hierarchies = {c: parse_arx_hierarchy(dataset_file("adult", "hierarchies", f"{c}.csv").read_text())
                       for c in ADULT_HIERARCHIES}
    else:
        frame = pd.read_csv(dataset_file("bank", "bank_full.csv"))
        numeric, label, hierarchies = BANK_NUMERIC, "y", {}
    columns = [ColumnInfo(c, "numeric" if c in numeric else "categorical",
                          role="label" if c == label else "quasi_identifier") for c in frame.columns]
    return frame, columns, hierarchies, label
