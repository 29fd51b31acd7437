"""experiment_rfk's accuracies: the forests' accuracy split by split (the same splits and
forest seeds for every table, so values pair across methods), and the by_E row's summary of
them — each series' mean, the paired differences RFK minus a baseline, and their Nadeau–Bengio
corrected standard errors. Separate from the run (which decides which tables are measured) and
from the figures (which draw the differences named here).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from app.privacy.anonymity.rfk import TEST_SHARE, encode_features, forest_accuracy
from app.privacy.experiments import resampled_standard_error
from app.privacy.experiments.rfk_settings import ExperimentRfkParams


# The accuracy series of the by_E table, each kept per split (infogain: InfoGain Mondrian, the
# label-aware k-anonymity of every attribute)
ACCURACY_SERIES = ("rfk_accuracy", "rfk_tiers_only_accuracy", "kanonymity_accuracy", "pak_accuracy",
                   "infogain_accuracy", "original_accuracy")
# The paired differences reported: (column prefix, RFK's series, the baseline's series)
DIFFERENCES = (("rfk_minus_kanonymity", "rfk_accuracy", "kanonymity_accuracy"),
               ("rfk_tiers_only_minus_kanonymity", "rfk_tiers_only_accuracy", "kanonymity_accuracy"),
               ("rfk_minus_pak", "rfk_accuracy", "pak_accuracy"),
               ("rfk_tiers_only_minus_pak", "rfk_tiers_only_accuracy", "pak_accuracy"),
               ("rfk_minus_infogain", "rfk_accuracy", "infogain_accuracy"),
               ("rfk_tiers_only_minus_infogain", "rfk_tiers_only_accuracy", "infogain_accuracy"))
# n_test/n_train of the forests' 70/30 splits, for the corrected standard error
TEST_TO_TRAIN = TEST_SHARE / (1 - TEST_SHARE)


def eval_seeds(params: ExperimentRfkParams) -> list[int]:
    """The accuracy splits' seeds (the same as rfk_pipeline's: the first splits of a larger
    eval_repeats are those of a smaller one)."""
    return [params.seed + 7 * (i + 1) for i in range(params.eval_repeats)]


def split_accuracies(frame: pd.DataFrame, attributes: list[str], label: str, seeds: list[int],
                     n_estimators: int) -> list[float]:
    """The forest's accuracy on each split (one per seed). Every table is the same sample's
    records and labels, so a seed makes the same split and forest seed for every method: the
    values are paired across methods."""
    X = encode_features(frame, attributes)
    y = frame[label].astype(str).to_numpy()
    return [forest_accuracy(X, y, s, n_estimators) for s in seeds]


def accuracy_summary(per_split: dict[str, list[float]]) -> dict[str, float]:
    """The by_E row's accuracies from their per-split values (``ACCURACY_SERIES`` → one value
    per split, the splits in the same order for every series): each series' mean and its
    standard error, and the paired differences ``DIFFERENCES`` (RFK minus a baseline, split by
    split) with theirs. Standard errors are Nadeau and Bengio's corrected ones
    (``resampled_standard_error``: the splits share their records), as experiment_rfka's; NaN
    with a single split."""
    out: dict[str, float] = {}
    for column in ACCURACY_SERIES:
        values = np.asarray(per_split[column], dtype=float)
        out[column] = float(values.mean())
        out[f"{column}_se"] = resampled_standard_error(values, TEST_TO_TRAIN)
    for prefix, method, baseline in DIFFERENCES:
        d = np.asarray(per_split[method], dtype=float) - np.asarray(per_split[baseline], dtype=float)
        out[prefix] = float(d.mean())
        out[f"{prefix}_se"] = resampled_standard_error(d, TEST_TO_TRAIN)
    return out
