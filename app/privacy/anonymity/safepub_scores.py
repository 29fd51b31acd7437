"""SafePub's other quality models as exponential-mechanism scores (Bild, Kuhn & Prasser, PoPETs
2018(1), Section 5; ARX's ``getScore`` of MetricMDNUEntropyPrecomputed, MetricSDAECS and
MetricClassification), each with its add/remove sensitivity; granularity and discernibility
are in safepub_search.py. docs/methods/safepub.md gives the same derivations.

All are computed on the input table D at a node of the lattice (full-domain generalization:
the members of a class share every generalized value), the classes of fewer than k_s = ⌈k/β⌉
records counted as suppressed, as for the other two. Neighbours add or remove one record t
(n → n + 1); the bounds below are for an addition, a removal being the same pair read backwards.

* ``entropy`` — SafePub's score for non-uniform entropy. Non-uniform entropy itself,
  Σ over cells of −log₂ P(value | generalized value), moves by ~log₂ n when one record is added
  (a new original value under a generalized value shared by n records), and n is not public: no
  bounded sensitivity. SafePub scores instead, per quasi-identifier q, how many records share
  each released value: loss_q = Σ_v c_v²/n + (cells of q that carry nothing: suppressed records,
  and every record when q is at its root), c_v the kept records whose q reads v (v below the
  root), and score = −(1/m)·Σ_q loss_q. Per q, with A = Σ_v c_v² ≤ n²:
    - t in a kept class, its value v held by c ≤ n records: (2c + 1)/(n + 1) − A/(n(n + 1)),
      in (−1, 1] (A ≥ c², and n(2c + 1) − c² ≤ n(n + 1) for c ≤ n);
    - t suppressed, or q at the root: 1 − A/(n(n + 1)) ∈ (0, 1];
    - t's class crosses from k_s − 1 to k_s records (k_s − 1 cells leave the suppressed, k_s join
      v, held by c ≤ n − k_s + 1 others): (2c·k_s + k_s²)/(n + 1) − A/(n(n + 1)) − (k_s − 1), above
      −k_s (A < n(n + 1)) and at most k_s − (k_s − 1)²/n (A ≥ c², largest at the largest c).
  Each q moves by less than k_s; their mean too. **Sensitivity k_s** — and nearly reached: a class
  of k_s − 1 records differing on every quasi-identifier from one class of all the others moves
  every q by ≈ −k_s when it crosses.
* ``group_size`` — ARX's score for the average equivalence class size (AECS = records / classes,
  smaller is better): the number of kept classes, plus one when any record is suppressed (the
  suppressed records read as one class). t joins a kept class or a suppressed one: no change, or
  +1 when a new suppressed class sets the "any suppressed" flag; t's class crosses k_s: +1 kept,
  and the flag may fall (its last suppressed class): +1 or 0. **Sensitivity 1**, reached by any
  new class when k_s = 1.
* ``classification`` — SafePub's suitability for training classifiers (Section 5.5; ARX's
  MetricClassification, "all attributes are QIs"): the label is part of every record, classes
  (and suppression) are over the quasi-identifiers and the label, and per class of the
  quasi-identifiers the kept (class, label) group of most records counts — the records a majority
  vote of the release gets right. At the top node (every quasi-identifier at its root) nothing is
  learnt from the features and the score is 0. t adds to one (class, label) group: a group of
  ≥ k_s grows by one (the class's term by 0 or 1), a group below stays below (0), or the group
  crosses to k_s (the class's term from its old value, at least 0, to at most k_s). **Sensitivity
  k_s** (SafePub: k), reached when a group of k_s − 1 records of one label, alone in its class,
  crosses. (ARX's later MetricSDClassification keeps the label out of the classes and counts the
  mode of every class of ≥ k records: a label released beside classes it is not part of is not
  covered by Li et al.'s theorem, so Veil follows the paper.)
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np

from app.privacy.anonymity.label_modes import label_modes

METRICS = ("granularity", "discernibility", "entropy", "group_size", "classification")


def sensitivity(metric: str, m: int, k_score: int) -> int:
    """The score's add/remove sensitivity (m quasi-identifiers; granularity and discernibility:
    safepub_search.py's docstring; the others: this module's)."""
    if metric == "granularity":
        return m * max(1, k_score - 1)
    if metric == "discernibility":
        return max(1, k_score)  # max(2, k_s) until the kept case's bound was tightened to 1
    if metric == "group_size":
        return 1
    if metric in ("entropy", "classification"):
        return k_score
    raise ValueError(f"unknown metric {metric!r}")


def group_size_score(sizes: np.ndarray, k_score: int) -> Fraction:
    """Kept classes, plus one when some record is suppressed (``sizes``: per class id, 0 for an
    id no scored record has)."""
    kept = sizes >= k_score
    return Fraction(int(kept.sum()) + int(bool(((sizes > 0) & ~kept).any())))


def entropy_score(codes: list[list[np.ndarray]], heights: list[int], node, member: np.ndarray, weight: np.ndarray,
                  n: int, suppressed: int) -> Fraction:
    """−(1/m)·Σ_q (Σ_v c_v²/n + cells carrying nothing); ``member`` holds one row of ``codes``
    (per quasi-identifier and level) per kept class and ``weight`` the class's size (the class's
    members share the value at every q)."""
    total = 0  # n·Σ_q loss_q, an integer
    for q, level in enumerate(node):
        if level == heights[q]:  # the root: no record's cell says anything
            total += n * n
            continue
        counts = np.bincount(codes[q][level][member], weights=weight).astype(np.int64)  # exact: sums of integers < 2⁵³
        total += int(np.dot(counts, counts)) + n * suppressed
    return -Fraction(total, n * len(node))


def classification_score(ids: np.ndarray, n_classes: int, labels: np.ndarray, counts: np.ndarray, n_labels: int,
                         k_score: int) -> Fraction:
    """Σ over classes of the most frequent label's count, where it reaches k_s (per row — a record,
    or a distinct tuple standing for ``counts`` records —: ``ids`` its class, ``labels`` its label
    code < n_labels); the caller scores the top node 0."""
    mode = label_modes(ids, n_classes, labels, counts, n_labels)
    return Fraction(int(mode[mode >= k_score].sum()))
