"""Apriori over exact or reconstructed supports, association rules, and the
``frequent_itemsets`` analysis (spec 02 §4)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import pandas as pd
from pydantic import Field

from app.privacy.context import RunContext
from app.privacy.data import ColumnInfo, MethodInput, SourceRelease, columns_changed_by, named_with_steps
from app.privacy.itemsets.encoding import check_chosen_columns, check_numeric_bins, default_item_columns, one_hot
from app.privacy.itemsets.groups import POOLED_ASSUMPTION
from app.privacy.itemsets.supports import (
    MAX_ITEMSET_SIZE, SupportOracle, changed_before_encoding_note, exact_oracle, randomized_items,
    release_oracle,
)
from app.privacy.registry import (
    TABLES_ONLY, DataShape, MethodKind, MethodInputError, MethodSpec, Params, MethodSource, register,
)
from app.privacy.results import ReportResult

DEFAULT_MAX_CANDIDATES = 200_000
HARD_MAX_CANDIDATES = 2_000_000
NOT_ANTI_MONOTONE = ("reconstructed supports are estimates and not anti-monotone: Apriori prunes a "
                     "candidate when one of its subsets' estimate fell below minsup, so some itemsets "
                     "frequent in the original data are lost (see docs/experiments/itemsets.md)")


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
                f"level {k} has {len(cands)} candidate itemsets, above max_candidates={max_candidates}: " + (
                    f"raise minsup or lower max_len (max_candidates is at its maximum, {HARD_MAX_CANDIDATES})"
                    if max_candidates >= HARD_MAX_CANDIDATES else
                    f"raise minsup, lower max_len, or raise max_candidates (up to {HARD_MAX_CANDIDATES})"))
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
        "categorical or boolean column that is not an identifier)", json_schema_extra=TABLES_ONLY)
    bins: int = Field(5, ge=2, le=64, description="tabular input: bins of numeric columns with declared bounds",
                      json_schema_extra=TABLES_ONLY)


def mining_oracle(data: MethodInput, params: FrequentItemsetsParams) -> tuple[SupportOracle, tuple[str, ...], str]:
    """The support oracle of the input and how its supports are obtained."""
    source = data.source
    randomized = source is not None and randomized_items(source.metadata)
    if source is not None and not randomized and any(randomized_items(s.get("metadata")) for s in source.chain):
        raise MethodInputError("this release derives from a mask/png release by a later step; mine the "
                               "mask/png release itself")
    if randomized:
        if data.transactions is None:
            raise MethodInputError("the release holds no transactions")
        oracle = release_oracle(data.transactions, source.metadata, params.estimator)
        how = f"reconstructed from the {source.method} release ({params.estimator} estimator)"
        return oracle, data.transactions.labels, how
    chosen: list[str] = []
    if data.transactions is not None:
        td = data.transactions
    elif data.frame is not None:
        chosen = params.columns if params.columns is not None else default_item_columns(data.columns)
        td = one_hot(data.frame, data.columns, chosen, params.bins).transactions
    else:
        raise MethodInputError("the input holds neither a table nor transactions")
    if source is None:
        return exact_oracle(td), td.labels, "exact counts of the input (nothing to reconstruct)"
    return exact_oracle(td), td.labels, "counts of the release as published (not reconstructed)"


def changed_columns_note(data: MethodInput, params: FrequentItemsetsParams) -> str | None:
    """On a table release: the mined columns a step of its chain changed (randomized,
    transformed, generalized, synthesized), whose published counts are not the original's. On
    a mask/png release: the encoded columns an earlier step changed before the encoding, whose
    reconstructed supports are the input release's, not the original's."""
    if data.source is not None and randomized_items(data.source.metadata):
        return changed_before_encoding_note(data.source)
    if data.source is None or data.frame is None:
        return None
    chosen = params.columns if params.columns is not None else default_item_columns(data.columns)
    changed = columns_changed_by(data.source.steps(), chosen)
    if not changed:
        return None
    return (f"columns changed by the release's steps: {named_with_steps(changed)}; their supports (and "
            "standard errors of 0) are those of the release as published, not estimates of the "
            "original data's — only mask and png releases are reconstructed here (reconstruct gives "
            "a randomized column's original distribution)")


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
    rows_used, excluded = oracle.coverage(params.estimator)
    if excluded:
        notes.append(f"the stratified estimator leaves out the rows randomized with p = 0.5 (pure noise, "
                     f"no information): the supports cover the {rows_used} of the {oracle.matrix.n_rows} "
                     "transactions in the other groups")
    changed = changed_columns_note(data, params)
    if changed:
        notes.append(changed)
    unestablished = int((1.96 * itemsets["se"] >= params.minsup).sum())
    if unestablished:
        notes.append(f"{unestablished} of the {len(itemsets)} itemsets have standard errors so large "
                     "(1.96·se ≥ minsup) that their support is not distinguishable from 0: the "
                     "randomization leaves little signal at this size (p near 0.5, or few transactions)")
    ctx.progress(1.0, "done")
    return ReportResult(
        kind="frequent_itemsets",
        data={"minsup": params.minsup, "max_len": params.max_len, "min_confidence": params.min_confidence,
              "max_rule_len": params.max_rule_len,
              "supports": how, "n_transactions": oracle.matrix.n_rows, "rows_used": rows_used,
              "excluded_strata_p": excluded, "n_items": len(labels),
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
    check_chosen_columns(params.columns, columns)
    check_numeric_bins(params.columns or [], columns, params.bins)


register(MethodSpec(
    name="frequent_itemsets",
    family="itemsets",
    kind=MethodKind.analysis,
    summary="Apriori over supports reconstructed from a mask/png release (exact counts on other "
            "input), with association rules (confidence, lift).",
    params=FrequentItemsetsParams,
    guarantee="post-processing of the release: no further privacy cost (on a dataset: none, exact counts)",
    paper="Agrawal & Srikant, Apriori (VLDB 1994); support reconstruction of seed 001 (MASK, PN/g)",
    run=run_frequent_itemsets,
    sources=frozenset({MethodSource.release, MethodSource.dataset}),
    shapes=frozenset({DataShape.table, DataShape.transactions}),
    check=_check,
    produces_randomness=False,
    docs="docs/methods/frequent_itemsets.md",
    slow_params=('max_len', 'max_candidates', 'max_rules'),
))
