"""Supports on releases: the ``reconstruct`` hook for mask/png, Apriori over reconstructed
supports, association rules, and the ``frequent_itemsets`` analysis (spec 02 §4)."""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from math import comb
from typing import Any, Literal

import numpy as np
import pandas as pd
from pydantic import Field

from app.privacy.context import RunContext
from app.privacy.data import ColumnInfo, MethodInput, SourceRelease, TransactionData
from app.privacy.itemsets import bits
from app.privacy.itemsets.encoding import check_item_columns, default_item_columns, one_hot
from app.privacy.itemsets.estimation import Estimator, Path, estimate_supports
from app.privacy.itemsets.release import POOLED_ASSUMPTION, row_keep_probabilities
from app.privacy.registry import (
    DataShape, Kind, MethodInputError, MethodSpec, Params, Source, register, register_reconstructor,
)
from app.privacy.results import ReportResult

RANDOMIZED_METHODS = ("mask", "png")
MAX_ITEMSET_SIZE = 10
MAX_RECONSTRUCT_ITEMSETS = 250_000
DEFAULT_MAX_CANDIDATES = 200_000
HARD_MAX_CANDIDATES = 2_000_000
NOT_ANTI_MONOTONE = ("reconstructed supports are estimates and not anti-monotone: Apriori prunes a "
                     "candidate when one of its subsets' estimate fell below minsup, so some itemsets "
                     "frequent in the original data are lost (see docs/experiments/itemsets.md)")


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
def resolve_itemsets(labels: tuple[str, ...], itemsets: list[list[str]] | None,
                     max_len: int | None) -> list[np.ndarray]:
    """Item-code arrays, one per itemset, either named or every itemset up to max_len."""
    if itemsets is not None:
        if len(itemsets) > MAX_RECONSTRUCT_ITEMSETS:
            raise MethodInputError(f"{len(itemsets)} itemsets asked; the limit is {MAX_RECONSTRUCT_ITEMSETS}")
        position = {label: i for i, label in enumerate(labels)}
        out = []
        for i, names in enumerate(itemsets):
            if not names or len(names) > MAX_ITEMSET_SIZE:
                raise MethodInputError(f"itemsets[{i}] must hold 1 to {MAX_ITEMSET_SIZE} items")
            if len(set(names)) != len(names):
                raise MethodInputError(f"itemsets[{i}] repeats an item")
            unknown = [j for j, name in enumerate(names) if name not in position]
            if unknown:
                raise MethodInputError(f"itemsets[{i}][{unknown[0]}] is not an item of the release")
            out.append(np.array([position[name] for name in names], dtype=np.int64))
        return out
    size = max_len or 1
    m = len(labels)
    total = sum(comb(m, k) for k in range(1, size + 1))
    if total > MAX_RECONSTRUCT_ITEMSETS:
        raise MethodInputError(f"all itemsets up to size {size} over {m} items are {total}; the limit "
                               f"is {MAX_RECONSTRUCT_ITEMSETS}: lower max_len or name the itemsets")
    return [row for k in range(1, size + 1) for row in all_combinations(m, k)]


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
            or data.source.method not in RANDOMIZED_METHODS:
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
    return {
        "kind": "itemset_supports",
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


register_reconstructor("mask", reconstruct_step)
register_reconstructor("png", reconstruct_step)


# ------------------------------------------------------------------------------ apriori
@dataclass
class Level:
    itemsets: np.ndarray  # (F, k) item codes, rows sorted lexicographically
    support: np.ndarray
    se: np.ndarray
    candidates: int


def _row_keys(rows: np.ndarray) -> np.ndarray:
    """Rows as byte strings whose order is the rows' lexicographic order (big-endian ints)."""
    rows = np.ascontiguousarray(rows.astype(">i4"))
    return rows.view(np.dtype((np.void, 4 * rows.shape[1]))).ravel()


def _contains(sorted_keys: np.ndarray, keys: np.ndarray) -> np.ndarray:
    pos = np.minimum(np.searchsorted(sorted_keys, keys), len(sorted_keys) - 1)
    return sorted_keys[pos] == keys


def next_candidates(frequent: np.ndarray, max_candidates: int) -> np.ndarray:
    """Apriori-gen: join frequent (k-1)-itemsets sharing their first k-2 items, then keep the
    candidates whose every (k-1)-subset is frequent. Output rows are sorted."""
    m, width = frequent.shape
    if m < 2:
        return np.zeros((0, width + 1), dtype=np.int64)
    prefix_change = np.zeros(m, dtype=bool)  # rows starting a run of equal (k-2)-prefixes
    prefix_change[0] = True
    prefix_change[1:] = np.any(frequent[1:, :-1] != frequent[:-1, :-1], axis=1)
    starts = np.flatnonzero(prefix_change)
    ends = np.append(starts[1:], m)
    group_end = np.repeat(ends, ends - starts)  # one past the last row of each row's group
    partners = group_end - np.arange(m) - 1
    joined = int(partners.sum())
    if joined > 10 * max_candidates:
        raise MethodInputError(
            f"level {width + 1} would join {joined} candidate itemsets, far above max_candidates="
            f"{max_candidates}: raise minsup or lower max_len")
    left = np.repeat(np.arange(m), partners)
    right = left + 1 + (np.arange(joined) - np.repeat(np.cumsum(partners) - partners, partners))
    cands = np.hstack([frequent[left], frequent[right][:, -1:]])
    if width >= 2:
        keys = _row_keys(frequent)
        keep = np.ones(len(cands), dtype=bool)
        for drop in range(width - 1):  # dropping one of the last two items gives a parent
            keep &= _contains(keys, _row_keys(np.delete(cands, drop, axis=1)))
        cands = cands[keep]
    return cands


def apriori(oracle: SupportOracle, minsup: float, max_len: int | None,
            max_candidates: int = DEFAULT_MAX_CANDIDATES, ctx: RunContext | None = None) -> list[Level]:
    """Level-wise mining; the counting of each level is one batched bitwise pass."""
    levels: list[Level] = []
    cands = np.arange(oracle.matrix.n_items, dtype=np.int64)[:, None]
    k = 1
    while len(cands) and (max_len is None or k <= max_len):
        if len(cands) > max_candidates:
            raise MethodInputError(
                f"level {k} has {len(cands)} candidate itemsets, above max_candidates={max_candidates}: "
                f"raise minsup, lower max_len, or raise max_candidates (up to {HARD_MAX_CANDIDATES})")
        if ctx is not None:
            ctx.progress(min(0.9, 0.1 * k), f"counting {len(cands)} candidate {k}-itemsets")
        support, se, _, _ = oracle.supports(cands)
        keep = support >= minsup
        levels.append(Level(cands[keep], support[keep], se[keep], len(cands)))
        if max_len is not None and k == max_len:
            break
        cands = next_candidates(cands[keep], max_candidates)
        k += 1
    return levels


def association_rules(levels: list[Level], min_confidence: float, max_rules: int,
                      max_rule_len: int = 4) -> tuple[pd.DataFrame, bool]:
    """Rules X → Y from every frequent itemset Z = X ∪ Y (2 ≤ |Z| ≤ max_rule_len): confidence
    supp(Z)/supp(X), lift confidence/supp(Y). All subsets of a frequent itemset are frequent
    (Apriori prunes otherwise), so their supports are looked up, never recounted. A k-itemset
    has 2^k − 2 splits, hence the size bound."""
    by_size = {lv.itemsets.shape[1]: lv for lv in levels}
    keys = {k: _row_keys(lv.itemsets) for k, lv in by_size.items()}  # already sorted
    parts = []
    for k, lv in by_size.items():
        if k < 2 or k > max_rule_len or not len(lv.itemsets):
            continue
        for mask in range(1, 2**k - 1):
            left = [j for j in range(k) if (mask >> j) & 1]
            right = [j for j in range(k) if not (mask >> j) & 1]
            x, y = lv.itemsets[:, left], lv.itemsets[:, right]
            sx = _lookup(by_size, keys, x)
            sy = _lookup(by_size, keys, y)
            with np.errstate(divide="ignore", invalid="ignore"):
                confidence = lv.support / sx
                lift = confidence / sy
            ok = np.isfinite(confidence) & np.isfinite(lift) & (sx > 0) & (confidence >= min_confidence)
            if ok.any():
                parts.append((x[ok], y[ok], lv.support[ok], confidence[ok], lift[ok]))
    rows = []
    for x, y, s, c, lft in parts:
        rows.append(pd.DataFrame({"antecedent": list(x), "consequent": list(y), "support": s,
                                  "confidence": c, "lift": lft}))
    table = (pd.concat(rows, ignore_index=True) if rows else
             pd.DataFrame(columns=["antecedent", "consequent", "support", "confidence", "lift"]))
    table = table.sort_values(["lift", "confidence"], ascending=False, kind="stable")
    truncated = len(table) > max_rules
    return table.head(max_rules).reset_index(drop=True), truncated


def _lookup(by_size: dict[int, Level], keys: dict[int, np.ndarray], rows: np.ndarray) -> np.ndarray:
    level = by_size.get(rows.shape[1])
    if level is None or not len(level.itemsets):
        return np.full(len(rows), np.nan)
    pos = np.minimum(np.searchsorted(keys[rows.shape[1]], _row_keys(rows)), len(level.itemsets) - 1)
    found = keys[rows.shape[1]][pos] == _row_keys(rows)
    return np.where(found, level.support[pos], np.nan)


# -------------------------------------------------------------------- frequent_itemsets
class FrequentItemsetsParams(Params):
    minsup: float = Field(0.1, gt=0.0, le=1.0, description="minimum (reconstructed) support")
    max_len: int | None = Field(4, ge=1, le=MAX_ITEMSET_SIZE,
                                description="largest itemset size (null: until no candidate is left)")
    min_confidence: float = Field(0.8, ge=0.0, le=1.0, description="minimum confidence of a rule")
    estimator: Literal["pooled", "stratified"] = Field(
        "pooled", description="png releases: the paper's pooled estimator or the stratified one")
    max_candidates: int = Field(DEFAULT_MAX_CANDIDATES, ge=1, le=HARD_MAX_CANDIDATES,
                                description="stop with an error when a level has more candidates")
    max_rules: int = Field(10_000, ge=0, le=200_000, description="rules returned (highest lift first)")
    max_rule_len: int = Field(4, ge=2, le=8, description="rules come from frequent itemsets of at "
                              "most this size (a k-itemset has 2^k - 2 antecedent/consequent splits)")
    columns: list[str] | None = Field(
        None, description="tabular input: columns one-hot encoded into items (default: every "
        "categorical or boolean column that is not an identifier)")
    bins: int = Field(5, ge=2, le=64, description="tabular input: bins of numeric columns with declared bounds")


def mining_oracle(data: MethodInput, params: FrequentItemsetsParams) -> tuple[SupportOracle, tuple[str, ...], str]:
    """The support oracle of the input and how its supports are obtained."""
    source = data.source
    randomized = source is not None and source.method in RANDOMIZED_METHODS
    if source is not None and not randomized and any(s["method"] in RANDOMIZED_METHODS for s in source.chain):
        raise MethodInputError("this release derives from a mask/png release by a later step; mine the "
                               "mask/png release itself")
    if randomized:
        if data.transactions is None:
            raise MethodInputError("the release holds no transactions")
        oracle = release_oracle(data.transactions, source.metadata, params.estimator)
        how = f"reconstructed from the {source.method} release ({params.estimator} estimator)"
        return oracle, data.transactions.labels, how
    if data.transactions is not None:
        td = data.transactions
    elif data.frame is not None:
        chosen = params.columns if params.columns is not None else default_item_columns(data.columns)
        td = one_hot(data.frame, data.columns, chosen, params.bins).transactions
    else:
        raise MethodInputError("the input holds neither a table nor transactions")
    return exact_oracle(td), td.labels, "exact counts of the input (nothing to reconstruct)"


def run_frequent_itemsets(data: MethodInput, params: FrequentItemsetsParams, ctx: RunContext) -> ReportResult:
    ctx.progress(0.0, "loading transactions")
    oracle, labels, how = mining_oracle(data, params)
    levels = apriori(oracle, params.minsup, params.max_len, params.max_candidates, ctx)
    ctx.progress(0.9, "deriving rules")
    rules, truncated = association_rules(levels, params.min_confidence, params.max_rules, params.max_rule_len)
    names = np.array(labels, dtype=object)
    itemsets = pd.DataFrame({
        "items": [list(names[row]) for lv in levels for row in lv.itemsets],
        "size": np.concatenate([np.full(len(lv.itemsets), lv.itemsets.shape[1]) for lv in levels]),
        "support": np.concatenate([lv.support for lv in levels]),
        "se": np.concatenate([lv.se for lv in levels]),
    })
    rules["antecedent"] = [list(names[r]) for r in rules["antecedent"]]
    rules["consequent"] = [list(names[r]) for r in rules["consequent"]]
    notes = [] if oracle.exact else [NOT_ANTI_MONOTONE,
                                     "supports, confidences and lifts are ratios of estimates; they may "
                                     "leave [0, 1] by noise"]
    if oracle.grouped and params.estimator == "pooled":
        notes.append(POOLED_ASSUMPTION)
    ctx.progress(1.0, "done")
    return ReportResult(
        kind="frequent_itemsets",
        data={"minsup": params.minsup, "max_len": params.max_len, "min_confidence": params.min_confidence,
              "max_rule_len": params.max_rule_len,
              "supports": how, "n_transactions": oracle.matrix.n_rows, "n_items": len(labels),
              "levels": [{"size": i + 1, "candidates": lv.candidates, "frequent": len(lv.itemsets)}
                         for i, lv in enumerate(levels)],
              "itemsets": _records(itemsets), "rules": _records(rules), "rules_truncated": truncated,
              "notes": notes},
        tables={"itemsets": _flat(itemsets), "rules": _flat(rules)},
    )


def _records(frame: pd.DataFrame) -> list[dict[str, Any]]:
    return [{k: (float(v) if isinstance(v, (float, np.floating)) else
                 int(v) if isinstance(v, (np.integer,)) else v) for k, v in row.items()}
            for row in frame.to_dict(orient="records")]


def _flat(frame: pd.DataFrame) -> pd.DataFrame:
    """Item lists as text, for CSV/Parquet tables."""
    out = frame.copy()
    for col in ("items", "antecedent", "consequent"):
        if col in out:
            out[col] = ["{" + ", ".join(v) + "}" for v in out[col]]
    return out


def _check(params: FrequentItemsetsParams, columns: list[ColumnInfo], source: SourceRelease | None) -> None:
    if params.columns is not None:
        check_item_columns(params.columns, columns)


register(MethodSpec(
    name="frequent_itemsets",
    family="itemsets",
    kind=Kind.analysis,
    summary="Apriori over supports reconstructed from a mask/png release (exact counts on other "
            "input), with association rules (confidence, lift).",
    params=FrequentItemsetsParams,
    guarantee="post-processing of the release: no further privacy cost (on a dataset: none, exact counts)",
    paper="Agrawal & Srikant, Apriori (VLDB 1994); support reconstruction of seed 001 (MASK, PN/g)",
    run=run_frequent_itemsets,
    sources=frozenset({Source.release, Source.dataset}),
    shapes=frozenset({DataShape.table, DataShape.transactions}),
    check=_check,
    produces_randomness=False,
    docs="docs/methods/frequent_itemsets.md",
))
