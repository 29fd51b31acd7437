"""PPNB against a naive Bayes fitted directly on an errph release (Adult's categorical columns).

The question a user asks: is PPNB needed, or does naive Bayes on the randomized records do as
well? For each p0 and seed: errph on adult_train's 8 categorical attributes (missing as a
category), then PPNB trained on the release (the randomization inverted) and a plain naive
Bayes (PPNBClassifier without randomization, i.e. CategoricalNB with α = 1) trained on the
randomized values as if they were data; both predict the raw adult_test records. Prints the
mean accuracy and log-loss over the seeds, and raw naive Bayes for reference.

    python -m benchmarks.ppnb_vs_naive [--p0 0.1,0.3,0.5,0.7] [--seeds 3]
"""

from __future__ import annotations

import argparse

import numpy as np
import pandas as pd
from sklearn.metrics import log_loss

from app.privacy.context import RunContext
from app.privacy.data import ColumnInfo, MethodInput
from app.privacy.experiments import datasets_dir
from app.privacy.naive_bayes import PPNBClassifier, PPNBParams, run_ppnb_train
from app.privacy.randomized_response import ErrphParams, run_errph
from app.privacy.rng import SecureRandom
from app.privacy.rr_channels import as_release_input

LABEL = "income"


def adult() -> tuple[MethodInput, pd.DataFrame, list[str]]:
    folder = datasets_dir() / "adult"
    read = lambda f: pd.read_csv(folder / f, na_values="?", skipinitialspace=True)  # noqa: E731
    train, test = read("adult_train.csv"), read("adult_test.csv")
    features = [c for c in train.columns if not pd.api.types.is_numeric_dtype(train[c]) and c != LABEL]
    train = train[[*features, LABEL]]
    columns = [ColumnInfo(c, "categorical", role="label") if c == LABEL else
               ColumnInfo(c, "categorical", distinct=int(train[c].nunique()), missing=int(train[c].isna().sum()))
               for c in train.columns]
    return MethodInput(columns=columns, frame=train), test, features


def scores(model, test: pd.DataFrame, features: list[str]) -> tuple[float, float]:
    x, y = test[features], test[LABEL]
    return model.score(x, y), log_loss(y, model.predict_proba(x), labels=model.classes_)


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.ppnb_vs_naive")
    parser.add_argument("--p0", default="0.1,0.3,0.5,0.7")
    parser.add_argument("--seeds", type=int, default=3)
    args = parser.parse_args()
    data, test, features = adult()
    raw = scores(PPNBClassifier().fit(data.frame[features], data.frame[LABEL]), test, features)
    rows = [{"p0": "raw data", "ppnb_accuracy": raw[0], "ppnb_log_loss": raw[1]}]
    for p0 in (float(p) for p in args.p0.split(",")):
        ppnb, naive = [], []
        for seed in range(args.seeds):
            params = ErrphParams(p0=p0, columns=features)
            release = as_release_input(data, run_errph(data, params, RunContext(SecureRandom(seed=seed))),
                                       "errph", params)
            model = run_ppnb_train(release, PPNBParams(label=LABEL), RunContext(SecureRandom(seed=0))).model
            ppnb.append(scores(model, test, features))
            # the randomized values as data; '<missing>' back to missing, as the raw fit sees it
            randomized = release.frame[features].astype(object).replace("<missing>", None)
            naive.append(scores(PPNBClassifier().fit(randomized, release.frame[LABEL]), test, features))
        (pa, pl), (na, nl) = np.mean(ppnb, axis=0), np.mean(naive, axis=0)
        rows.append({"p0": p0, "ppnb_accuracy": pa, "ppnb_log_loss": pl,
                     "naive_accuracy": na, "naive_log_loss": nl})
    print(pd.DataFrame(rows).round(4).to_string(index=False))


if __name__ == "__main__":
    main()
