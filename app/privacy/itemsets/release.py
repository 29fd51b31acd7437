"""The ``mask`` and ``png`` release methods (spec 02 §1-3).

MASK keeps every bit of the 0/1 transaction matrix with probability p and flips it otherwise.
PN/g splits the rows into groups, each randomized like MASK with its own p_t (p_t = 1:
published as is). Both publish a transaction set (CSR) over the same item universe and, in
the metadata, what a reconstruction needs: each row's keep probability (as a group rule),
the item labels, and the privacy figures per bit, per record and per group.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
from pydantic import Field, field_validator, model_validator

from app.privacy.context import RunContext
from app.privacy.data import ColumnInfo, MethodInput, SourceRelease, TransactionData
from app.privacy.guarantees import guarantee
from app.privacy.itemsets import bits
from app.privacy.itemsets.encoding import (
    Encoded, check_chosen_columns, check_numeric_bins, default_item_columns, one_hot,
)
from app.privacy.itemsets.groups import (
    check_group_count, check_group_map, epsilon_bit,
    MAX_COLUMN_GROUPS, POOLED_ASSUMPTION, Grouping, png_grouping, privacy_figures, row_keep_probabilities,
)
from app.privacy.itemsets.supports import randomized_items, reconstruct_step
from app.privacy.json_types import schema_bounds
from app.privacy.registry import (
    TABLES_ONLY, DataShape, MethodKind, MethodInputError, MethodSpec, Params, register, register_reconstructor,
)
from app.privacy.results import ReleaseResult
from app.privacy.rng import SecureRandom

MAX_RELEASE_CELLS = 1_000_000_000  # rows × items randomized in one release
PAPER = ("Guo & Tong, individual-grouping multi-parameter randomization PN/g for privacy-"
         "preserving frequent itemset mining (seed 001); Rizvi & Haritsa, MASK, VLDB 2002")


# --------------------------------------------------------------------------------- params
class ItemParams(Params):
    columns: list[str] | None = Field(
        None, description="tabular datasets: columns one-hot encoded into items named "
        "'column=value' (default: every categorical or boolean column that is not an identifier)",
        json_schema_extra=TABLES_ONLY)
    bins: int = Field(5, ge=2, le=64, description="tabular datasets: equal-width bins for numeric "
                      "columns with declared bounds", json_schema_extra=TABLES_ONLY)
    items: list[str] | None = Field(
        None, max_length=100_000, description="the published items (labels), in this order; the "
        "others are dropped. On a transaction file this declares the item universe: an item that "
        "occurs in no transaction is published too (randomized like the rest), so the release no "
        "longer discloses which items occur (without it the universe is read from the data, and "
        "the release warns). On a table, each must be an item of its encoding (column=value). An "
        "item listed twice is published once, at its first place")
    top_items: int | None = Field(
        None, ge=1, le=100_000, description="publish only the N most frequent items (the choice "
        "reads the raw data: which items are the most frequent is disclosed)")


def _bounded_p(value: float) -> float:
    if not 0.5 <= value <= 1.0:
        raise ValueError("keep probabilities must lie in [0.5, 1]")
    return value


def _never_flips(p: float) -> bool:
    """p = 1, or so close to 1 that its 32-bit flip threshold is 0: no bit can flip and the rows
    are published as they are (ε = ∞), so it needs the same opt-in as p = 1."""
    return int(bits.flip_thresholds(1.0 - p)) == 0


def _pure_noise(p: float) -> bool:
    """p so close to 0.5 that its realized flip probability is exactly 1/2."""
    return int(bits.flip_thresholds(1.0 - p)) == 2**31


class MaskParams(ItemParams):
    p: float = Field(0.9, gt=0.5, le=1.0, description="keep probability of every bit (1 = publish "
                     "as is: needs allow_zero_probabilities)")
    allow_zero_probabilities: bool = Field(
        False, description="permit p = 1 (flip probability 0): every bit is published as it is, "
        "which makes ε infinite (as errph's and warner's option of the same name)")

    @model_validator(mode="after")
    def _raw_needs_opt_in(self):
        if _never_flips(self.p) and not self.allow_zero_probabilities:
            raise ValueError("p = 1 (or within 2^-33 of 1, where no bit can flip) publishes every "
                             "bit as it is and makes ε infinite; set allow_zero_probabilities to "
                             "accept that")
        if _pure_noise(self.p):
            raise ValueError("p is so close to 0.5 that every bit flips with probability 1/2: the "
                             "release would be pure noise (p must exceed 0.5 by more than 2^-33)")
        return self


class PngParams(ItemParams):
    ps: list[float] | dict[str, float] = Field(
        ..., description="keep probability per group, each in [0.5, 1]: a list in group order "
        "(recycled when shorter than the number of groups) or, with group_column, a map from the "
        "column's value to p ('*' = every other value)",
        json_schema_extra=schema_bounds(minimum=0.5, maximum=1.0))
    group_size: int | None = Field(
        None, ge=1, description="rows per group (the last group may be short); default: as many "
        "equal groups as entries in ps")
    group_column: str | None = Field(None, description="tabular datasets: a column whose value is the group",
                                     json_schema_extra=TABLES_ONLY)
    shuffle: bool = Field(
        True, description="assign rows to groups at random (group_size mode; the published order "
        "is then random) — this is what the pooled estimator assumes. With group_column it only "
        "randomizes the order inside each group")
    allow_zero_probabilities: bool = Field(
        False, description="permit p = 1 groups (flip probability 0, the paper's design): their rows "
        "are published as they are, so the release's ε is infinite and so is the debit (as mask's "
        "option of the same name)")

    @field_validator("ps")
    @classmethod
    def _ps_in_range(cls, v):
        values = list(v.values()) if isinstance(v, dict) else v
        if not values:
            raise ValueError("ps must not be empty")
        if len(values) > MAX_COLUMN_GROUPS:
            raise ValueError(f"at most {MAX_COLUMN_GROUPS} keep probabilities")
        for p in values:
            _bounded_p(p)
        if all(_never_flips(p) for p in values):  # no protected group: it is mask at p = 1
            raise ValueError("every keep probability is 1 (or within 2^-33 of 1, where no bit "
                             "can flip): nothing would be randomized; to publish the rows as "
                             "they are use mask with p = 1 and allow_zero_probabilities")
        if all(_pure_noise(p) for p in values):  # as mask refuses p = 0.5
            raise ValueError("every keep probability is 0.5 (or within 2^-33 of it): every bit "
                             "would flip with probability 1/2 and the release would be pure "
                             "noise; give at least one p_t above 0.5")
        return v

    @model_validator(mode="after")
    def _raw_rows_need_opt_in(self):
        values = list(self.ps.values()) if isinstance(self.ps, dict) else self.ps
        if any(_never_flips(p) for p in values) and not self.allow_zero_probabilities:
            raise ValueError("a keep probability of 1 (or within 2^-33 of 1) publishes that group's "
                             "rows as they are, which makes ε infinite (and the debit with it); set "
                             "allow_zero_probabilities to accept that")
        return self

    @model_validator(mode="after")
    def _one_grouping(self):
        if self.group_size is not None and self.group_column is not None:
            raise ValueError("give group_size or group_column, not both")
        if isinstance(self.ps, dict) and self.group_column is None:
            raise ValueError("ps as a mapping needs group_column; otherwise give a list")
        return self


# ------------------------------------------------------------------------------ the items
def prepare_items(data: MethodInput, params: ItemParams) -> Encoded:
    """The release's input as transactions: the dataset's own or a one-hot encoding."""
    _refuse_randomized_source(data.source)
    if data.transactions is not None:
        if params.columns is not None:
            raise MethodInputError("'columns' applies to tabular datasets; this one is a transaction file")
        encoded = Encoded(data.transactions, columns=[])
    elif data.frame is not None:
        chosen = params.columns if params.columns is not None else default_item_columns(data.columns)
        encoded = one_hot(data.frame, data.columns, chosen, params.bins)
    else:
        raise MethodInputError("the input holds neither a table nor transactions")
    encoded = _restrict_items(encoded, params)
    td = encoded.transactions
    if td.n_items == 0:
        raise MethodInputError("no item to randomize")
    if td.n_transactions == 0:
        raise MethodInputError("no transaction to randomize")
    _within_cell_limit(td.n_transactions, td.n_items)
    return encoded


def _within_cell_limit(rows: int, items: int) -> None:
    if rows * items > MAX_RELEASE_CELLS:
        raise MethodInputError(
            f"{rows} transactions × {items} items exceed the limit of {MAX_RELEASE_CELLS} "
            "randomized cells (every absent item is flipped too, so a sparse file becomes dense): "
            "restrict the release with 'items' or 'top_items'")


def _restrict_items(encoded: Encoded, params: ItemParams) -> Encoded:
    """The published item universe. ``items`` declares it: on a transaction file an item that
    occurs in no transaction is published too (all its bits are randomized like the others'),
    so the universe says nothing about the data; a table's items are its encoding's
    (``column=value``), and one that is not is refused. ``top_items`` then keeps the most frequent."""
    td = encoded.transactions
    warnings = list(encoded.warnings)
    if params.items is None and not encoded.columns:
        warnings.append("the item universe was read from the data (no declared 'items'), so which "
                        "items occur in at least one transaction is disclosed")
    if params.items is None and params.top_items is None:
        return Encoded(td, columns=encoded.columns, warnings=warnings, details=encoded.details,
                       items_per_column=encoded.items_per_column)
    labels = list(td.labels)
    universe = np.arange(td.n_items)  # the universe's item of each input item (-1: dropped)
    if params.items is not None:
        declared = list(dict.fromkeys(params.items))  # a repeated label is one item
        at = pd.Index(td.labels).get_indexer(declared)  # input item of each declared one, or -1
        if encoded.columns and (at < 0).any():
            missing = np.flatnonzero(at < 0)
            raise MethodInputError(f"items[{params.items.index(declared[missing[0]])}] is not an item of "
                                   f"the input ({len(missing)} unknown in all)")
        universe = np.full(td.n_items, -1)
        universe[at[at >= 0]] = np.flatnonzero(at >= 0)
        labels = declared
    keep = np.ones(len(labels), dtype=bool)
    if params.top_items is not None and params.top_items < len(labels):
        in_universe = universe[td.indices]
        frequency = np.bincount(in_universe[in_universe >= 0], minlength=len(labels))
        keep[:] = False
        keep[np.argsort(-frequency, kind="stable")[:params.top_items]] = True
        warnings.append(f"only the {params.top_items} most frequent items are published: the choice "
                        "read the raw data, so which items are the most frequent is disclosed")
    code = np.full(td.n_items, -1)  # each input item's published code, -1 if not published
    mapped = universe >= 0
    code[mapped] = np.where(keep[universe[mapped]], (np.cumsum(keep) - 1)[universe[mapped]], -1)
    new_code = code[td.indices]
    kept_entry = new_code >= 0
    row = np.repeat(np.arange(td.n_transactions), np.diff(td.indptr))[kept_entry]
    new_code = new_code[kept_entry]
    order = np.lexsort((new_code, row))  # a declared order may permute the items: rows stay ascending
    indptr = np.concatenate([[0], np.cumsum(np.bincount(row, minlength=td.n_transactions))]).astype(np.int64)
    restricted = TransactionData(indptr=indptr, indices=new_code[order].astype(np.int32),
                                 labels=tuple(label for label, k in zip(labels, keep) if k))
    published = code >= 0  # per input item; a table's come column by column
    column_of = np.repeat(np.arange(len(encoded.items_per_column)), encoded.items_per_column)
    return Encoded(restricted, columns=encoded.columns, warnings=warnings,
                   details={**encoded.details, "items_restricted": True,
                            "items_declared": params.items is not None},
                   items_per_column=np.bincount(column_of[published], minlength=len(encoded.columns)).tolist()
                   if encoded.columns else [])


# ------------------------------------------------------------------------------- running
def randomize_transactions(td: TransactionData, keep_p: float | np.ndarray, rng: SecureRandom,
                           order: np.ndarray | None = None) -> tuple[TransactionData, int]:
    """MASK over transactions: returns the release (rows in ``order``) and the bits flipped.
    ``keep_p`` is one p or one per release row."""
    indptr, indices = td.indptr, td.indices
    if order is not None:
        indptr, indices = bits.permute_csr(indptr, indices, order)
    matrix = bits.from_csr(indptr, indices, td.n_items)
    flipped = bits.randomize(matrix, keep_p, rng)
    out_indptr, out_indices = bits.to_csr(matrix)
    return TransactionData(indptr=out_indptr, indices=out_indices, labels=td.labels), flipped


# Measured on retail.dat through the API (fimi acceptance check): making a release and storing
# it takes ~24 bytes per published item occurrence (its indices through to_csr, the Parquet
# payload and its hash) beside the bit matrix; mask p = 0.9 on 11,000 items peaked at 2.56 GiB.
BYTES_PER_OCCURRENCE = 24


def _within_memory(td: TransactionData, row_p: np.ndarray, order: np.ndarray | None,
                   limit: int | None) -> None:
    """Every absent item is published with probability 1 − p: a low p on many items publishes
    far more occurrences than the input holds. Refuse at once what the limit cannot hold (the job
    was stopped at its memory limit after a minute, with no word on what to change)."""
    if limit is None:
        return
    ones = np.diff(td.indptr) if order is None else np.diff(td.indptr)[order]
    expected = float(np.sum(ones * row_p + (td.n_items - ones) * (1 - row_p)))
    need = expected * BYTES_PER_OCCURRENCE + td.n_transactions * td.n_items / 8
    if need > limit:
        raise MethodInputError(
            f"this release would publish about {expected:.3g} item occurrences ({td.n_transactions} "
            f"transactions × {td.n_items} items, each absent item published with probability 1 − p), "
            f"needing about {need / 2**20:,.0f} MiB, beyond the job's memory limit of "
            f"{limit / 2**20:,.0f} MiB: publish fewer items ('top_items' or 'items') or raise p")


def _release(method: str, encoded: Encoded, grouping: Grouping, ctx: RunContext,
             extra_warnings: list[str]) -> ReleaseResult:
    td = encoded.transactions
    n, m = td.n_transactions, td.n_items
    row_p = row_keep_probabilities(grouping.description, n)
    _within_memory(td, row_p, grouping.order, ctx.memory_limit_bytes)
    ctx.progress(0.2, "randomizing")
    single = len(np.unique(row_p)) == 1
    released, _ = randomize_transactions(td, float(row_p[0]) if single else row_p, ctx.rng, grouping.order)
    ctx.progress(0.9, "describing the release")
    differing = min(encoded.max_differing_bits, m)
    figures = privacy_figures(row_p, differing, grouping.description)
    unprotected_share = figures["share_unprotected_rows"]
    warnings = list(encoded.warnings) + extra_warnings
    if unprotected_share > 0:
        warnings.append(f"{unprotected_share:.2%} of the rows (groups with p = 1) are published exactly "
                        "as they are: they have no protection at all")
    unprotected_columns = []
    if grouping.description.get("group_column"):
        unprotected_columns.append(grouping.description["group_column"])
        warnings.append("the group of every row is published (rows are released group by group), so "
                        "the group column's value of each row is disclosed")
    kind = "bit (item present/absent)" if not encoded.columns else "one-hot bit (column=value)"
    statements = [
        f"every {kind} of every row is randomized independently: kept with its group's probability p, flipped "
        "otherwise; each bit is ε_bit = |ln(p/(1-p))| local-DP",
        f"a record is local-DP at {differing}·ε_bit (two records differ in at most {differing} bits: "
        + ("every item" if not encoded.columns else
           "2 per one-hot column publishing two items or more, 1 per column publishing one") + ")",
        "flip probabilities are realized to within 2^-33 (32-bit thresholds on CSPRNG output)",
        "the number of transactions and the item universe (labels) are published",
    ]
    if encoded.columns:
        statements.append("only the encoded columns are published: " + ", ".join(encoded.columns))
    if method == "png":
        statements.append("each row's keep probability (its group) is published: the reconstruction needs it")
    epsilon = figures["epsilon_record_max"]
    metadata = {"itemsets": {
        "method": method, "n_transactions": n, "n_items": m, "items": list(td.labels),
        "groups": grouping.description,
        "row_order": "input" if grouping.order is None else grouping.description["assignment"],
        "privacy": figures,
        "encoding": {"columns": encoded.columns, **encoded.details} if encoded.columns
        else {"source": "transactions", **encoded.details},
        "reconstruction": {"pooled_assumption": POOLED_ASSUMPTION,
                           "estimators": ["pooled", "stratified"], "default_path": "weight_class"},
    }}
    return ReleaseResult(
        transactions=released,
        guarantees=guarantee(
            "local_dp", rng=ctx.rng.name,
            private=ctx.rng.is_private and unprotected_share == 0 and not unprotected_columns,
            epsilon=epsilon, protected_columns=list(encoded.columns),
            unprotected_columns=unprotected_columns, statements=statements, warnings=warnings,
            epsilon_bit=figures["epsilon_bit_max"], epsilon_record=epsilon,
            share_unprotected_rows=unprotected_share, strata=figures["strata"],
            pooled_estimator_assumption=POOLED_ASSUMPTION if method == "png" else None,
        ),
        # never the realized number of flipped bits: with the output it is Σ|input − output|,
        # which gives away a record whose neighbours are known (its bit exactly at one item)
        metrics={"cells": n * m, "expected_flip_rate": float(1.0 - row_p.mean()),
                 "published_items": int(released.indices.size)},
        metadata=metadata,
    )


def run_mask(data: MethodInput, params: MaskParams, ctx: RunContext) -> ReleaseResult:
    ctx.progress(0.0, "encoding items")
    encoded = prepare_items(data, params)
    grouping = Grouping(order=None, description={"kind": "single", "ps": [params.p], "assignment": "all rows"})
    result = _release("mask", encoded, grouping, ctx, [])
    ctx.progress(1.0, "done")
    return result


def run_png(data: MethodInput, params: PngParams, ctx: RunContext) -> ReleaseResult:
    ctx.progress(0.0, "encoding items")
    encoded = prepare_items(data, params)
    grouping = png_grouping(params, encoded.transactions.n_transactions, data.frame, data.columns, ctx.rng)
    extra = []
    if grouping.description["kind"] == "fixed_size" and not params.shuffle:
        extra.append("groups are runs of consecutive rows: if the input is ordered (sorted or "
                     "grouped in any way, as FIMI's mushroom.dat is by edibility), the pooled "
                     "estimator's assumption fails; use the stratified estimator or shuffle=true")
    result = _release("png", encoded, grouping, ctx, extra)
    ctx.progress(1.0, "done")
    return result


# -------------------------------------------------------------------------- registration
def _refuse_randomized_source(source: SourceRelease | None) -> None:
    if source is not None and any(randomized_items(step.get("metadata")) for step in source.steps()):
        raise MethodInputError("this release is already randomized by mask/png; randomize the dataset "
                               "instead (supports could no longer be reconstructed from the original)")


def _check(params: ItemParams, columns: list[ColumnInfo], source: SourceRelease | None) -> None:
    _refuse_randomized_source(source)
    if params.items is not None and not params.items:
        raise MethodInputError("items is empty: no item to randomize")
    if params.columns is not None and not params.columns:
        raise MethodInputError("columns is empty: no column to encode into items")
    check_chosen_columns(params.columns, columns)
    check_numeric_bins(params.columns or [], columns, params.bins)
    group_column = getattr(params, "group_column", None)
    if group_column is not None:
        info = next((c for c in columns if c.name == group_column), None)
        if info is None:
            raise MethodInputError(f"unknown column {group_column!r}")
        if isinstance(params.ps, list) and info.distinct is not None:  # the profile knows the groups
            check_group_count(params.ps, group_column, info.distinct + (info.missing > 0),
                              declared=info.categories is not None)
        if isinstance(params.ps, dict):  # it failed as a job, refunded (edges acceptance check)
            check_group_map(params.ps, info)


def _epsilon_upper_bound(params: ItemParams, columns: list[ColumnInfo]) -> float:
    """ε debited from the budget at acceptance: the per-record ε of the most exposed protected
    row, priced from the schema before any data is read. Two records differ in at most every
    published item (transactions) or 2 bits per one-hot column (tables), so this bounds the
    figure the release reports (which caps the bits by the items actually present). A p = 1
    (mask, or a PN/g group: both need allow_zero_probabilities) publishes rows as they are: ε is
    ∞ — priced from the parameters, whether or not a row lands in that group — so a dataset with
    a budget refuses the job."""
    ps = [params.p] if isinstance(params, MaskParams) else (
        list(params.ps.values()) if isinstance(params.ps, dict) else list(params.ps))
    if max(ps) >= 1.0:
        return math.inf
    if _is_transaction_file(params, columns):
        bits = _published_items(params, columns)
        if bits is None:
            raise MethodInputError("the number of items is unknown, so ε cannot be priced; profile "
                                   "the dataset or name the published items in 'items'")
    else:
        chosen = params.columns if params.columns is not None else default_item_columns(columns)
        bits = 2 * len(chosen)
        if params.items is not None:
            bits = min(bits, len(set(params.items)))
        if params.top_items is not None:
            bits = min(bits, params.top_items)
    return float(bits * max(epsilon_bit(p) for p in ps))


def _check_size(params: ItemParams, rows: int, columns: list[ColumnInfo]) -> None:
    """A transaction file's size is known at submission (its rows and the item count of its
    schema): one too large to randomize is a 422, not a job that fails after reading it. A
    table's items depend on its encoding; the job checks them."""
    known = _is_transaction_file(params, columns) and (params.items is not None or columns[0].distinct is not None)
    if known:  # not top_items alone: it only bounds the count from above
        _within_cell_limit(rows, _published_items(params, columns))


def _is_transaction_file(params: ItemParams, columns: list[ColumnInfo]) -> bool:
    """A transaction file's schema is its one `items` column (app/datasets/schema.py)."""
    return len(columns) == 1 and columns[0].name == "items" and params.columns is None


def _published_items(params: ItemParams, columns: list[ColumnInfo]) -> int | None:
    """How many items a release of a transaction file publishes, from its schema and the
    params (None when neither says)."""
    n_items = len(set(params.items)) if params.items is not None else (columns[0].distinct or params.top_items)
    return n_items if n_items is None or params.top_items is None else min(n_items, params.top_items)


SHAPES = frozenset({DataShape.table, DataShape.transactions})

register(MethodSpec(
    name="mask",
    family="itemsets",
    kind=MethodKind.release,
    summary="MASK: every bit of the 0/1 transaction matrix (or one-hot table) is kept with "
            "probability p and flipped otherwise; supports are reconstructable.",
    params=MaskParams,
    guarantee="local DP: ε_bit = |ln(p/(1-p))| per bit; per record, ε_bit × the bits two records "
              "can differ in (every item, or 2 per one-hot column)",
    paper=PAPER,
    run=run_mask,
    shapes=SHAPES,
    check=_check,
    check_rows=_check_size,
    epsilon=_epsilon_upper_bound,
    docs="docs/methods/mask.md",
))
register_reconstructor("mask", reconstruct_step)

register(MethodSpec(
    name="png",
    family="itemsets",
    kind=MethodKind.release,
    summary="PN/g: rows split into groups (fixed size, at random or consecutive, or by a column), "
            "each group randomized like MASK with its own keep probability p_t.",
    params=PngParams,
    guarantee="local DP per group: ε_bit = |ln(p_t/(1-p_t))| per bit; rows of a p_t = 1 group are "
              "published as is and have no protection",
    paper=PAPER,
    run=run_png,
    shapes=SHAPES,
    check=_check,
    check_rows=_check_size,
    epsilon=_epsilon_upper_bound,
    docs="docs/methods/png.md",
))
register_reconstructor("png", reconstruct_step)
