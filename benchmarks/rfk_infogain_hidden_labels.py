"""How much of experiment_rfk's InfoGain Mondrian accuracy comes from its cuts having read the
labels of the records the forests are tested on (docs/experiments/rfk.md, "Accuracy vs E").

    .venv/bin/python -m benchmarks.rfk_infogain_hidden_labels [--splits 20] [--report-splits accuracy_splits.csv]

The experiment anonymizes the whole dataset with every label known, as a publisher would, then
tests forests on 30 % of a 5,000-record sample: InfoGain Mondrian's cuts have made those test
records' classes purer in their own labels. Here, per split of the experiment (its defaults:
k = 5, seed 0, the same sample, splits and 40-tree forests), the test records' labels are
replaced by draws from the label's marginal before anonymizing, the true labels put back, and
the same forest measured: the cuts can no longer use them. Printed per dataset: the accuracy as
the experiment measures it ("seen"), with the test labels hidden ("hidden"), their paired
difference, each as mean ± Nadeau–Bengio corrected standard error (* more than two from zero); with ``--report-splits`` (the
accuracy_splits table of an experiment_rfk report with the defaults), RFK − InfoGain with hidden
labels per E, paired split by split.
"""

from __future__ import annotations

import argparse

import numpy as np
import pandas as pd
from sklearn.model_selection import train_test_split

from app.privacy.anonymity.anonymize import Options, anonymize
from app.privacy.anonymity.models import Constraints
from app.privacy.anonymity.rfk import TEST_SHARE, encode_features, forest_accuracy, stratified_sample
from app.privacy.experiments import resampled_standard_error
from app.privacy.experiments.rfk_accuracy import TEST_TO_TRAIN, eval_seeds
from app.privacy.experiments.rfk_settings import ExperimentRfkParams, load


def _infogain_accuracies(name: str, params: ExperimentRfkParams) -> pd.DataFrame:
    frame, columns, hierarchies, label = load(name)
    infos = {c.name: c for c in columns}
    attributes = [c.name for c in columns if c.name != label]
    sample_index = stratified_sample(frame, label, params.sample_size, params.seed).index
    y = frame.loc[sample_index, label].astype(str).to_numpy()
    options, constraints = Options(metric="classification", label=label), Constraints(k=params.k)

    def accuracy(table: pd.DataFrame, seed: int) -> float:
        X = encode_features(table.loc[sample_index], attributes)  # features only: labels are y
        return forest_accuracy(X, y, seed, params.n_estimators)

    seen_release = anonymize(frame, infos, hierarchies, attributes, constraints, None, options).frame
    rows = []
    for i, seed in enumerate(eval_seeds(params)):
        # the split forest_accuracy makes: it depends on y and the seed only, not on X
        _, test = train_test_split(np.arange(len(y)), test_size=TEST_SHARE, stratify=y, random_state=seed)
        masked = frame.copy()
        draws = np.random.default_rng(1000 + i).choice(frame[label].to_numpy(), size=len(test))
        masked.loc[sample_index[test], label] = draws
        hidden = anonymize(masked, infos, hierarchies, attributes, constraints, None, options).frame
        rows.append({"dataset": name, "split": i + 1, "split_seed": seed, "seen": accuracy(seen_release, seed),
                     "hidden": accuracy(hidden, seed)})
        print(f"{name} split {i + 1}: seen {rows[-1]['seen']:.4f}, hidden {rows[-1]['hidden']:.4f}", flush=True)
    return pd.DataFrame(rows)


def _points(values) -> str:
    """Mean ± standard error in points, starred as the findings page bolds: more than two standard
    errors from zero."""
    values = np.asarray(values, dtype=float)
    mean, se = values.mean(), resampled_standard_error(values, TEST_TO_TRAIN)
    return f"{100 * mean:+.1f} ± {100 * se:.1f}{' *' if abs(mean) > 2 * se else ''} ({abs(mean) / se:.1f} SE)"


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.rfk_infogain_hidden_labels")
    parser.add_argument("--splits", type=int, default=20)
    parser.add_argument("--report-splits", help="accuracy_splits.csv of an experiment_rfk report (defaults)")
    args = parser.parse_args()
    params = ExperimentRfkParams(eval_repeats=args.splits)
    report = pd.read_csv(args.report_splits) if args.report_splits else None
    for name in params.datasets:
        table = _infogain_accuracies(name, params)
        print(f"{name}: seen {table.seen.mean():.3f}, hidden {table.hidden.mean():.3f}, "
              f"seen − hidden {_points(table.seen - table.hidden)} points")
        if report is None:
            continue
        main_run = report[(report.dataset == name) & (report.tier_run == 0)]
        for E, part in main_run.groupby("E"):
            part = part.set_index("split_seed").loc[table.split_seed]
            assert np.allclose(part.infogain_accuracy, table.seen), "the report is not this protocol's"
            print(f"  E = {E}: RFK − InfoGain hidden {_points(part.rfk_accuracy.to_numpy() - table.hidden)}, "
                  f"tiers only − InfoGain hidden {_points(part.rfk_tiers_only_accuracy.to_numpy() - table.hidden)}, "
                  f"InfoGain hidden − plain k {_points(table.hidden.to_numpy() - part.kanonymity_accuracy)}")


if __name__ == "__main__":
    main()
