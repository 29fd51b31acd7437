"""Supports of itemsets from bit-packed transactions: exact counts, or reconstructed from a
mask/png release (the ``reconstruct`` hook of these methods, registered in release.py)."""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from math import comb
from typing import Any

import numpy as np

from app.privacy.context import RunContext
from app.privacy.data import MethodInput, TransactionData, columns_changed_by, named_with_steps
from app.privacy.itemsets import bits
from app.privacy.itemsets.estimation import Estimator, Path, estimate_supports, no_information
from app.privacy.itemsets.groups import POOLED_ASSUMPTION, row_keep_probabilities
from app.privacy.registry import MethodInputError


def randomized_items(metadata: dict[str, Any] | None) -> bool:
    """Whether a step randomized the items (mask, png): such a release publishes its
    randomization in metadata["itemsets"], through which its supports are reconstructed."""
    return "itemsets" in (metadata or {})


def changed_before_encoding_note(source: Any) -> str | None:
    """On a mask/png release of a table release (``source``: the release's SourceRelease): the
    note naming the encoded columns (the step's protected columns) an earlier step of the chain
    changed before they were one-hot encoded, and whose supports the release then estimates."""
    if source is None or not randomized_items(source.metadata):
        return None
    changed = columns_changed_by(source.chain, (source.guarantees or {}).get("protected_columns") or [])
    if not changed:
        return None
    return (f"columns changed by earlier steps of the chain before {source.method} encoded them as "
            f"items: {named_with_steps(changed)}; the supports of their items are reconstructed "
            f"through {source.method}'s randomization only: estimates for the release {source.method} "
            "ran on, not of the original data's (the earlier steps are not undone)")


MAX_ITEMSET_SIZE = 10
MAX_RECONSTRUCT_ITEMSETS = 250_000


# ----------------------------------------------------------------------- support oracle
@dataclass
class SupportOracle:
    """Supports of itemsets of a bit matrix: exact (raw data) or reconstructed (a release)."""

    matrix: bits.BitMatrix
    strata_p: np.ndarray | None = None  # keep probability per segment; None = exact counts
    estimator: Estimator = "pooled"
    path: Path = "weight"

    @property
    def exact(self) -> bool:
        return self.strata_p is None

    @property
    def grouped(self) -> bool:
        return self.strata_p is not None and len(np.unique(self.strata_p)) > 1

    def supports(self, itemsets: np.ndarray, estimator: Estimator | None = None):
        """(support, se, rows_used, excluded strata) of the (B, k) itemsets."""
        itemsets = np.asarray(itemsets, dtype=np.int64)
        if self.exact:
            n = self.matrix.n_rows
            return bits.itemset_counts(self.matrix, itemsets)[:, 0] / n, np.zeros(len(itemsets)), n, []
        k = itemsets.shape[1]
        counts = (bits.weight_counts(self.matrix, itemsets) if self.path == "weight"
                  else bits.pattern_counts(self.matrix, itemsets))
        est = estimate_supports(counts, self.matrix.seg_rows, self.strata_p, k,
                                estimator or self.estimator, self.path)
        return est.support, est.se, est.rows_used, est.excluded_strata

    def coverage(self, estimator: Estimator | None = None) -> tuple[int, list[float]]:
        """(rows the supports cover, keep probabilities of the strata left out): the stratified
        estimator leaves out the p = 0.5 strata; exact counts and the pooled estimator use every row."""
        if self.exact or (estimator or self.estimator) != "stratified":
            return self.matrix.n_rows, []
        out = (self.matrix.seg_rows > 0) & no_information(self.strata_p)
        return int(self.matrix.seg_rows[~out].sum()), sorted({float(p) for p in self.strata_p[out]})

    def published(self, itemsets: np.ndarray) -> np.ndarray:
        """Share of the released rows holding every item (no reconstruction)."""
        return bits.itemset_counts(self.matrix, itemsets).sum(axis=1) / self.matrix.n_rows


def release_oracle(td: TransactionData, metadata: dict[str, Any], estimator: Estimator = "pooled",
                   path: Path = "weight") -> SupportOracle:
    """Bit matrix of a mask/png release with its rows grouped by keep probability."""
    meta = metadata.get("itemsets")
    if not meta or "groups" not in meta:
        raise MethodInputError("the release metadata lacks the randomization parameters")
    if meta.get("n_transactions") not in (None, td.n_transactions):
        raise MethodInputError("the release's transactions do not match its metadata")
    row_p = row_keep_probabilities(meta["groups"], td.n_transactions)
    strata_p, stratum = np.unique(row_p, return_inverse=True)
    matrix = bits.from_csr(td.indptr, td.indices, td.n_items, stratum, len(strata_p))
    return SupportOracle(matrix, strata_p, estimator, path)


def exact_oracle(td: TransactionData) -> SupportOracle:
    return SupportOracle(bits.from_csr(td.indptr, td.indices, td.n_items))


# -------------------------------------------------------------------------- reconstruct
def check_itemsets(labels: tuple[str, ...] | list[str], itemsets: list[list[str]] | None,
                   max_len: int | None) -> None:
    """Refuse itemsets (or a max_len) the release cannot answer. Reads only the published item
    labels, so the job's submission runs it too (these used to fail as jobs)."""
    if itemsets is not None and max_len is not None:
        raise MethodInputError("give 'itemsets' or 'max_len', not both")
    if itemsets is not None:
        if len(itemsets) > MAX_RECONSTRUCT_ITEMSETS:
            raise MethodInputError(f"{len(itemsets)} itemsets asked; the limit is {MAX_RECONSTRUCT_ITEMSETS}")
        known = set(labels)
        for i, names in enumerate(itemsets):
            if not names or len(names) > MAX_ITEMSET_SIZE:
                raise MethodInputError(f"itemsets[{i}] must hold 1 to {MAX_ITEMSET_SIZE} items")
            if len(set(names)) != len(names):
                raise MethodInputError(f"itemsets[{i}] repeats an item")
            unknown = [j for j, name in enumerate(names) if name not in known]
            if unknown:
                raise MethodInputError(f"itemsets[{i}][{unknown[0]}] is not an item of the release")
        return
    size, m = max_len or 1, len(labels)
    total = sum(comb(m, k) for k in range(1, size + 1))
    if total > MAX_RECONSTRUCT_ITEMSETS:
        raise MethodInputError(f"all itemsets up to size {size} over {m} items are {total}; the limit "
                               f"is {MAX_RECONSTRUCT_ITEMSETS}: lower max_len or name the itemsets")


def resolve_itemsets(labels: tuple[str, ...], itemsets: list[list[str]] | None,
                     max_len: int | None) -> list[np.ndarray]:
    """Item-code arrays, one per itemset, either named or every itemset up to max_len."""
    check_itemsets(labels, itemsets, max_len)
    if itemsets is not None:
        position = {label: i for i, label in enumerate(labels)}
        return [np.array([position[name] for name in names], dtype=np.int64) for names in itemsets]
    size = max_len or 1
    return [row for k in range(1, size + 1) for row in all_combinations(len(labels), k)]


def all_combinations(m: int, k: int) -> np.ndarray:
    flat = np.fromiter(itertools.chain.from_iterable(itertools.combinations(range(m), k)),
                       dtype=np.int64, count=comb(m, k) * k)
    return flat.reshape(-1, k)


def reconstruct_step(data: MethodInput, step: dict[str, Any], params: Any, ctx: RunContext) -> dict[str, Any]:
    """The ``reconstruct`` analysis on a mask/png release: supports with standard errors."""
    td = data.transactions
    if td is None:
        raise MethodInputError("support reconstruction needs the release's transactions")
    if data.source is None or data.source.release_id != step.get("release_id", data.source.release_id) \
            or not randomized_items(data.source.metadata):
        raise MethodInputError("supports can be reconstructed only on the mask/png release itself, "
                               "not on a later release derived from it")
    oracle = release_oracle(td, step["metadata"], params.estimator)
    wanted = resolve_itemsets(td.labels, params.itemsets, params.max_len)
    results: list[dict[str, Any] | None] = [None] * len(wanted)
    sizes = np.array([len(w) for w in wanted])
    other = "stratified" if params.estimator == "pooled" else "pooled"
    excluded: list[float] = []
    for done, k in enumerate(np.unique(sizes)):
        ctx.progress(done / len(np.unique(sizes)), f"reconstructing {k}-itemsets")
        idx = np.flatnonzero(sizes == k)
        sets = np.stack([wanted[i] for i in idx])
        support, se, used, excluded_k = oracle.supports(sets)
        excluded = excluded_k or excluded
        published = oracle.published(sets)
        alt = oracle.supports(sets, other) if oracle.grouped else None
        for j, i in enumerate(idx):
            row = {"items": [td.labels[c] for c in wanted[i]], "size": int(k),
                   "support": float(support[j]), "se": float(se[j]), "count": float(support[j] * used),
                   "published_support": float(published[j])}
            if alt is not None:
                row[f"support_{other}"] = float(alt[0][j])
                row[f"se_{other}"] = float(alt[1][j])
            results[i] = row
    meta = step["metadata"]["itemsets"]
    note = changed_before_encoding_note(data.source)
    return {
        "kind": "itemset_supports",
        "notes": [note] if note else [],
        "estimator": params.estimator,
        "path": "weight_class",
        "n_transactions": td.n_transactions,
        "strata": [{"p": float(p), "rows": int(r)} for p, r in zip(oracle.strata_p, oracle.matrix.seg_rows)],
        "excluded_strata_p": excluded if params.estimator == "stratified" else [],
        "assumption": POOLED_ASSUMPTION if params.estimator == "pooled" and oracle.grouped else
        ("unbiased under any grouping; strata with p = 0.5 are excluded and the supports cover "
         "the remaining rows" if params.estimator == "stratified" else "one keep probability: exact in expectation"),
        "standard_error": "randomization standard error (rows independent), evaluated at the estimate",
        "share_unprotected_rows": meta.get("privacy", {}).get("share_unprotected_rows"),
        "itemsets": results,
    }

