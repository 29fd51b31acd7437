"""The forward greedy loop of RFKA (seed 004, Algorithms 1 and 2) and Greedy_Hamdist's ranking.

Algorithm 1 as printed drops X when privacy_test passes; the text around it (and the spec)
says the opposite: keep X when the projection on sub ∪ {X} is still k-anonymous.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd


@dataclass
class Decision:
    feature: int  # column index in the candidate matrix
    kept: bool
    classes: int  # equivalence classes of the projection on sub ∪ {X} (only kept: published)
    min_class_size: int


def greedy_k_anonymous(codes: np.ndarray, order: np.ndarray, k: int) -> list[Decision]:
    """Walk the features in ``order``; keep a feature when the projection on the kept ones
    plus it has every equivalence class of size ≥ k (privacy_test, Algorithm 2).

    Incremental and O(n) per test: the kept projection is one dense class id per record; a
    candidate refines it to ``id · c + code`` and the test is one bincount."""
    codes = np.asarray(codes)
    n = codes.shape[0]
    group = np.zeros(n, dtype=np.int64)
    n_groups = 1 if n else 0
    decisions: list[Decision] = []
    for j in order:
        column = codes[:, j].astype(np.int64)
        card = int(column.max()) + 1 if n else 1
        refined = group * card + column
        counts = np.bincount(refined, minlength=n_groups * card)
        occupied = counts > 0
        smallest = int(counts[occupied].min()) if n else 0
        kept = smallest >= k
        if kept:
            dense = np.cumsum(occupied) - 1  # renumber so ids stay below n
            group = dense[refined]
            n_groups = int(occupied.sum())
        decisions.append(Decision(feature=int(j), kept=kept, classes=int(occupied.sum()),
                                  min_class_size=smallest))
    return decisions


def hamming_scores(binary: np.ndarray, label: np.ndarray) -> np.ndarray:
    """Greedy_Hamdist's score per binary feature f: min(d(f, y), d(¬f, y)) / n, where d is
    the Hamming distance to the binary label y. Smaller = closer to the label (or to its
    complement) = better. Symmetric in which class is called positive."""
    y = np.asarray(label).astype(bool)
    n = len(y)
    d = (np.asarray(binary).astype(bool) != y[:, None]).sum(axis=0)
    return np.minimum(d, n - d) / max(n, 1)


def _group_ids(frame: pd.DataFrame, columns: list[str]) -> np.ndarray:
    if not columns:
        return np.zeros(len(frame), dtype=np.int64)
    return frame.groupby(columns, dropna=False, observed=True, sort=False).ngroup().to_numpy()


def class_sizes(frame: pd.DataFrame, columns: list[str]) -> np.ndarray:
    """Sizes of the equivalence classes of ``frame`` on ``columns`` (an independent group-by,
    used to verify a release before it leaves the method)."""
    return np.bincount(_group_ids(frame, columns)) if len(frame) else np.array([], dtype=int)


def label_homogeneous_share(frame: pd.DataFrame, columns: list[str], label: str) -> float:
    """Share of records whose equivalence class holds a single label value: for them the
    label is disclosed despite k-anonymity (the homogeneity attack)."""
    if len(frame) == 0:
        return 0.0
    ids = _group_ids(frame, columns)
    distinct = frame[label].groupby(ids, dropna=False).nunique(dropna=False)
    return float((distinct.to_numpy()[ids] == 1).mean())
