"""The lattice's classification metric (Iyengar's; ARX's with the label outside the
quasi-identifiers) against the NCP, entropy and discernibility optima, on Adult with its ARX hierarchies, 8 QIs,
k = 5, label income. Per metric: the anonymize call's time (the search, then ~0.1 s generalizing,
verifying and computing the metrics; metadata.lattice.search_seconds is the search's alone); the
release's NCP; the classification loss
(records a majority-label classifier of the release gets wrong, suppressed ones counted wrong);
and the held-out accuracy of that classifier: adult_test's records generalized to the same levels,
each predicted the most frequent label of its class in the release (a class the release does not
hold: the release's most frequent label). No Python peer implements the metric (ARX, in Java, is
not run here); the notes give the majority-class rate and the raw table's lookup for reference."""

from __future__ import annotations

import time

import pandas as pd

from app.privacy.anonymity.anonymize import Options, anonymize
from app.privacy.anonymity.models import Constraints
from app.privacy.experiments import datasets_dir
from benchmarks.bench_anonymity import QIS, adult
from benchmarks.common import Row

METRICS = ("ncp", "entropy", "discernibility", "classification")


def adult_test_frame() -> pd.DataFrame:
    frame = pd.read_csv(datasets_dir() / "adult" / "adult_test.csv", na_values="?", skipinitialspace=True)
    frame = frame.dropna().reset_index(drop=True)
    return frame.assign(income=frame["income"].str.rstrip("."))


def _keys(frame: pd.DataFrame, hierarchies: dict, levels: dict) -> pd.Series:
    """Each record's class: its quasi-identifiers at the node's levels of the ARX tables."""
    parts = [frame[q].astype(str).map(dict(zip(hierarchies[q].iloc[:, 0].astype(str),
                                               hierarchies[q].iloc[:, levels[q]].astype(str)))).fillna("?")
             for q in QIS]
    return pd.Series(["|".join(t) for t in zip(*parts)], index=frame.index)


def held_out_accuracy(train: pd.DataFrame, test: pd.DataFrame, hierarchies: dict, levels: dict) -> float:
    """Accuracy on ``test`` of the release's majority label per class (``train``: the records kept)."""
    keys = _keys(train, hierarchies, levels)
    majority = train.groupby(keys)["income"].agg(lambda s: s.value_counts().index[0])
    fallback = train["income"].value_counts().index[0]
    predicted = _keys(test, hierarchies, levels).map(majority).fillna(fallback)
    return float((predicted.to_numpy() == test["income"].to_numpy()).mean())


def lattice_release(frame, infos, hierarchies, test, k: int, suppression: float, metric: str):
    """The lattice's release at k and the suppression limit under ``metric`` (label income), its
    seconds, and its held-out accuracy on ``test``."""
    started = time.perf_counter()
    r = anonymize(frame, infos, hierarchies, QIS, Constraints(k=k), None,
                  Options(algorithm="lattice", suppression=suppression, metric=metric, label="income"))
    seconds = time.perf_counter() - started
    return r, seconds, held_out_accuracy(frame.loc[r.frame.index], test, hierarchies, r.metadata["lattice"]["levels"])


def cases(quick: bool) -> list[Row]:
    frame, hierarchies, infos = adult(5000 if quick else None)
    test = adult_test_frame()
    label = "Adult 5,000 sample" if quick else "Adult 30,162"
    majority_rate = float((test["income"] == frame["income"].value_counts().index[0]).mean())
    raw = held_out_accuracy(frame, test, hierarchies, dict.fromkeys(QIS, 0))
    rows = []
    for suppression in ((0.04,) if quick else (0.0, 0.04)):
        for metric in METRICS:
            r, seconds, accuracy = lattice_release(frame, infos, hierarchies, test, 5, suppression, metric)
            lat = r.metadata["lattice"]
            found = r.metrics["classification"]
            rows.append(Row(
                workload=f"Lattice, {label}, 8 QIs, k = 5, {suppression:.0%} suppression, metric {metric}: "
                         "held-out accuracy of the release's majority label per class (adult_test)",
                veil=accuracy, unit="accuracy",
                notes=f"{seconds:.2f} s; optimal={lat['optimal']}, {lat['nodes_evaluated']} of {lat['lattice_size']} "
                      f"nodes checked; levels {tuple(lat['levels'].values())}; NCP {r.metrics['ncp']:.3f}; "
                      f"classification loss {found['loss']:.4f} ({found['records_off_majority']} off the majority, "
                      f"{found['suppressed']} suppressed); discernibility {r.metrics['discernibility']:.4g}; "
                      f"{r.metrics['classes']} classes; majority class "
                      f"{majority_rate:.3f}, raw quasi-identifiers' lookup {raw:.3f}; no Python peer"))
    return rows
