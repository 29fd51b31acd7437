"""RFK-anonymity (seed 003, spec 04 §2): random-forest sensitivity tiers, then k-anonymity of
the most sensitive tiers.

1. Sensitivity of attribute j: accuracy of a random forest predicting the label from all
   attributes minus its accuracy without j, averaged over repeated stratified 70/30 splits.
2. Tiers: optimal 1-D k-means (dynamic programming, deterministic; the paper's Lloyd
   iterations reach a local optimum of the same objective) with 5 clusters, ordered by
   centroid, descending: tier 1 is the most sensitive.
3. Table E: the attributes of tiers 1..E k-anonymized together (Mondrian), the others unchanged.

The forests' randomness is analysis randomness (which attributes rank first), not privacy
randomness: it comes from numpy Generators seeded by the ``seed`` parameter. The protection is
the deterministic k-anonymization, verified like every anonymity release.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pandas as pd
from sklearn.ensemble import RandomForestClassifier
from sklearn.metrics import adjusted_rand_score
from sklearn.model_selection import train_test_split

from app.privacy.registry import MethodInputError

TEST_SHARE = 0.3  # the forests' stratified 70/30 splits
_INTERVAL = re.compile(r"^\[\s*(-?[\d.eE+-]+)\s*,\s*(-?[\d.eE+-]+)\s*\]$")


# --------------------------------------------------------------------------- features
def _label_values(labels: pd.Series) -> np.ndarray:
    """Numbers for released labels: a value is itself, an interval '[a, b]' its midpoint;
    NaN where a label is neither (the column is then coded as categories)."""
    labels = _text(labels)
    uniques = pd.unique(labels)
    out = np.full(len(uniques), np.nan)
    for i, text in enumerate(uniques):
        match = _INTERVAL.match(text)
        try:
            out[i] = (float(match.group(1)) + float(match.group(2))) / 2 if match else float(text)
        except ValueError:
            pass
    return pd.Series(out, index=uniques).reindex(labels).to_numpy()


_FLOAT32_MAX = float(np.finfo(np.float32).max)


def _text(series: pd.Series) -> pd.Series:
    return series.astype(object).where(series.notna(), "<missing>").astype(str)


def encode_features(frame: pd.DataFrame, columns: list[str]) -> np.ndarray:
    """Forest inputs: numeric columns as numbers, generalized numeric columns by their interval
    midpoints, categorical (and hierarchy-generalized) columns as sorted category codes."""
    encoded = np.empty((len(frame), len(columns)))
    for i, name in enumerate(columns):
        series = frame[name]
        if pd.api.types.is_numeric_dtype(series):
            encoded[:, i] = series.to_numpy(dtype=float)
            continue
        numbers = _label_values(series)
        if not np.isnan(numbers).any():
            encoded[:, i] = numbers
        else:
            encoded[:, i] = pd.factorize(_text(series), sort=True)[0]
    # scikit-learn's forests read X as float32: a legal value beyond its range (1e300) became
    # inf there and failed the job. A tree splits on order only; clipping keeps the order of
    # every value within float32 and merges only those beyond it.
    return np.clip(np.nan_to_num(encoded, nan=-1.0), -_FLOAT32_MAX, _FLOAT32_MAX)


def forest_accuracy(X: np.ndarray, y: np.ndarray, seed: int, n_estimators: int) -> float:
    """Accuracy on a stratified 30% test split of a forest trained on the other 70%
    (``require_forest_split`` tells beforehand whether y allows that split)."""
    X_tr, X_te, y_tr, y_te = train_test_split(X, y, test_size=TEST_SHARE, stratify=y,
                                              random_state=seed)
    forest = RandomForestClassifier(n_estimators=n_estimators, random_state=seed, n_jobs=1)
    return float(forest.fit(X_tr, y_tr).score(X_te, y_te))


def mean_accuracy(frame: pd.DataFrame, attributes: list[str], label: str, seeds: list[int],
                  n_estimators: int) -> float:
    X = encode_features(frame, attributes)
    y = frame[label].astype(str).to_numpy()
    return float(np.mean([forest_accuracy(X, y, s, n_estimators) for s in seeds]))


# ------------------------------------------------------------------------------ sensitivity
@dataclass
class Sensitivity:
    attributes: list[str]
    drop: np.ndarray  # mean accuracy drop per attribute
    spread: np.ndarray  # its standard deviation over the splits
    base_accuracy: float

    def as_dict(self) -> dict[str, float]:
        return {a: float(d) for a, d in zip(self.attributes, self.drop)}


def drop_column_sensitivity(frame: pd.DataFrame, attributes: list[str], label: str, repeats: int,
                            n_estimators: int, seed: int,
                            progress: Callable[[float, str], None] | None = None) -> Sensitivity:
    X = encode_features(frame, attributes)
    y = frame[label].astype(str).to_numpy()
    seeds = np.random.default_rng(seed).integers(0, 2**31 - 1, size=repeats)
    base = np.zeros(repeats)
    without = np.zeros((repeats, len(attributes)))
    for r, s in enumerate(seeds):
        if progress is not None:
            progress(r / repeats, f"sensitivity split {r + 1}/{repeats}")
        base[r] = forest_accuracy(X, y, int(s), n_estimators)
        for j in range(len(attributes)):
            without[r, j] = forest_accuracy(np.delete(X, j, axis=1), y, int(s), n_estimators)
    drops = base[:, None] - without
    return Sensitivity(list(attributes), drops.mean(axis=0), drops.std(axis=0), float(base.mean()))


def kmeans_1d(values: np.ndarray, clusters: int) -> np.ndarray:
    """Optimal k-means of 1-D values (least within-cluster sum of squares, dynamic programming
    over the sorted values); cluster 0 has the largest centroid."""
    x = np.asarray(values, dtype=float)
    m = len(x)
    clusters = max(1, min(clusters, m))
    order = np.argsort(x)
    xs = x[order]
    s1 = np.r_[0.0, np.cumsum(xs)]
    s2 = np.r_[0.0, np.cumsum(xs**2)]

    def sse(i, j):  # cost of xs[i..j] inclusive (arrays allowed for i)
        count = j - i + 1
        total = s1[j + 1] - s1[i]
        return (s2[j + 1] - s2[i]) - total**2 / count

    cost = np.full((clusters, m), np.inf)
    start = np.zeros((clusters, m), dtype=np.int64)
    cost[0] = [sse(0, j) for j in range(m)]
    for c in range(1, clusters):
        for j in range(c, m):
            i = np.arange(c, j + 1)  # first index of the last cluster
            total = cost[c - 1, i - 1] + sse(i, j)
            best = int(np.argmin(total))
            cost[c, j], start[c, j] = total[best], i[best]
    labels_sorted = np.zeros(m, dtype=np.int64)
    j = m - 1
    for c in range(clusters - 1, -1, -1):
        i = start[c, j] if c > 0 else 0
        labels_sorted[i:j + 1] = c
        j = i - 1
    # cluster c holds the c-th smallest values: renumber so 0 is the largest centroid
    labels = np.empty(m, dtype=np.int64)
    labels[order] = (clusters - 1) - labels_sorted
    return labels


def tiers_of(sensitivity: Sensitivity, n_tiers: int) -> dict[str, int]:
    labels = kmeans_1d(sensitivity.drop, n_tiers)
    return {a: int(t) + 1 for a, t in zip(sensitivity.attributes, labels)}


def tier_stability(main: dict[str, int], reruns: list[dict[str, int]]) -> dict:
    """Agreement of reruns' tiers with the main run's: share of attributes in the same tier
    and the adjusted Rand index of the two partitions (1 = identical clusters)."""
    if not reruns:
        return {"reruns": 0}
    names = list(main)
    same = [float(np.mean([run[a] == main[a] for a in names])) for run in reruns]
    ari = [float(adjusted_rand_score([main[a] for a in names], [run[a] for a in names]))
           for run in reruns]
    return {"reruns": len(reruns), "same_tier_share": same, "adjusted_rand_index": ari,
            "mean_same_tier_share": float(np.mean(same)), "mean_adjusted_rand_index": float(np.mean(ari)),
            "tiers_by_run": [main, *reruns]}


def attributes_up_to(tiers: dict[str, int], E: int) -> list[str]:
    return [a for a, t in tiers.items() if t <= E]


# ------------------------------------------------------------------- what the splits need
# scikit-learn's stratified splits need every class twice and, on each side of the split, at
# least one record per class; a single class would make every sensitivity 0. These checks
# turn its ValueErrors into messages that say what the label needs (no class is named: its
# values are data).
def _class_counts(labels: pd.Series) -> np.ndarray:
    return np.unique(labels.astype(str).to_numpy(), return_counts=True)[1]


def _test_size(n: int) -> int:
    return math.ceil(TEST_SHARE * n)  # as scikit-learn rounds a fractional test_size


def records_for_split(classes: int) -> int:
    """The fewest records whose stratified 70/30 split holds every class on both sides."""
    n = 2 * classes
    while _test_size(n) < classes or n - _test_size(n) < classes:
        n += 1
    return n


def require_forest_split(labels: pd.Series, label: str, where: str = "the table",
                         remedy: str = "merge rare classes or choose another label") -> None:
    """MethodInputError unless the forests' stratified 70/30 split of ``labels`` can be made
    and means something (two classes at least). ``where`` names the records in the message,
    ``remedy`` says what to change."""
    counts = _class_counts(labels)
    m, n = len(counts), int(counts.sum())
    if m < 2:
        raise MethodInputError(
            f"label column {label!r} has a single class in {where}: the random forests' "
            "sensitivities need at least two classes (every accuracy drop would be 0)")
    rare = int((counts < 2).sum())
    if rare:
        raise MethodInputError(
            f"label column {label!r}: {rare} of its {m} classes {'holds' if rare == 1 else 'hold'} "
            f"a single record in {where}; "
            f"the forests' stratified 70/30 split needs at least 2 records per class ({remedy})")
    if _test_size(n) < m or n - _test_size(n) < m:
        raise MethodInputError(
            f"label column {label!r} has {m} classes in {where} of {n} records: the forests' "
            f"stratified 70/30 split needs every class on both sides, so at least "
            f"{records_for_split(m)} records ({remedy})")


def stratified_sample(frame: pd.DataFrame, label: str, size: int, seed: int) -> pd.DataFrame:
    """``size`` records drawn with the label's class shares (the whole table when it is not
    larger); MethodInputError when the sample cannot hold every class twice."""
    if size >= len(frame):
        return frame
    m = len(_class_counts(frame[label]))
    if m > size or m > len(frame) - size:
        raise MethodInputError(
            f"label column {label!r} has {m} classes: a stratified sample of sample_size = {size} "
            f"of the {len(frame)} records needs at least {m} records drawn and {m} left out; "
            "change sample_size (at least the number of records uses them all)")
    sample, _ = train_test_split(frame, train_size=size, stratify=frame[label].astype(str),
                                 random_state=seed)
    require_forest_split(sample[label], label, f"the stratified sample (sample_size = {size})",
                         "raise sample_size to keep more of the rare classes, or merge them")
    return sample


# ------------------------------------------------------------------------------- pipeline
@dataclass
class RfkConfig:
    k: int = 5
    tiers: int = 5
    repeats: int = 5
    n_estimators: int = 50
    stability_runs: int = 1
    sample_size: int = 10_000
    eval_repeats: int = 2
    risk_threshold: int = 5
    seed: int = 0


@dataclass
class RfkOutcome:
    sensitivity: Sensitivity
    tiers: dict[str, int]
    stability: dict
    original_accuracy: float
    by_E: dict[int, dict]  # figures per threshold E
    releases: dict[int, object]  # Anonymized per E


def _ncp_all(result, attributes: list[str]) -> dict[str, float]:
    """NCP of every attribute of the table: generalized ones from the release, others 0."""
    per = result.metrics["ncp_per_qi"]
    return {a: float(per.get(a, 0.0)) for a in attributes}


def rfk_pipeline(frame: pd.DataFrame, infos: dict, hierarchies: dict, attributes: list[str],
                 label: str, thresholds: list[int], cfg: RfkConfig,
                 progress: Callable[[float, str], None] | None = None,
                 keep_releases: tuple[int, ...] = ()) -> RfkOutcome:
    """Sensitivities, tiers, their stability, and for every E the k-anonymized table's figures:
    information loss, forest accuracy on the release, re-identification risk over all attributes."""
    from app.privacy.anonymity.anonymize import Options, anonymize  # no import cycle at load
    from app.privacy.anonymity.models import Constraints
    from app.privacy.anonymity.risk import frame_risk

    def step(lo, hi):
        return (lambda f, s: progress(lo + (hi - lo) * f, s)) if progress else None

    if len(frame) < cfg.k:
        raise MethodInputError(f"the table has {len(frame)} records, fewer than k = {cfg.k}")
    require_forest_split(frame[label], label)
    sample = stratified_sample(frame, label, cfg.sample_size, cfg.seed)
    runs = 1 + cfg.stability_runs
    sensitivity = drop_column_sensitivity(sample, attributes, label, cfg.repeats, cfg.n_estimators,
                                          cfg.seed, step(0.0, 0.5 / runs))
    tiers = tiers_of(sensitivity, cfg.tiers)
    reruns = []
    for r in range(cfg.stability_runs):
        again = drop_column_sensitivity(sample, attributes, label, cfg.repeats, cfg.n_estimators,
                                        cfg.seed + 1000 * (r + 1),
                                        step(0.5 * (r + 1) / runs, 0.5 * (r + 2) / runs))
        reruns.append(tiers_of(again, cfg.tiers))
    stability = tier_stability(tiers, reruns)
    eval_seeds = [cfg.seed + 7 * (i + 1) for i in range(cfg.eval_repeats)]
    original = mean_accuracy(sample, attributes, label, eval_seeds, cfg.n_estimators)
    by_E: dict[int, dict] = {}
    releases: dict[int, object] = {}
    for i, E in enumerate(thresholds):
        if progress:
            progress(0.5 + 0.5 * i / len(thresholds), f"table E = {E}")
        qis = attributes_up_to(tiers, E)
        result = anonymize(frame, infos, hierarchies, qis, Constraints(k=cfg.k), None,
                           Options(risk_threshold=cfg.risk_threshold))
        released_sample = result.frame.loc[sample.index]
        ncp = _ncp_all(result, attributes)
        risk_all = frame_risk(result.frame, attributes, cfg.risk_threshold)
        by_E[E] = {
            "E": E, "anonymized": qis, "unchanged": [a for a in attributes if a not in qis],
            "ncp_anonymized": result.metrics["ncp"], "ncp_all": float(np.mean(list(ncp.values()))),
            "ncp_sum": float(sum(ncp.values())), "ncp_per_attribute": ncp,
            "accuracy": mean_accuracy(released_sample, attributes, label, eval_seeds, cfg.n_estimators),
            "accuracy_tiers_only": mean_accuracy(released_sample, qis, label, eval_seeds,
                                                 cfg.n_estimators),
            "k_achieved": result.achieved.k,
            "risk_anonymized": result.metrics["risk"], "risk_all_attributes": risk_all,
        }
        if E in keep_releases:
            releases[E] = result
    return RfkOutcome(sensitivity, tiers, stability, original, by_E, releases)
