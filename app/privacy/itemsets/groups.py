"""PN/g groups: which keep probability each release row gets, and the privacy figures per
bit, record, group and stratum that every mask/png release publishes."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from app.privacy.data import ColumnInfo
from app.privacy.itemsets.bits import flip_thresholds
from app.privacy.registry import MethodInputError
from app.privacy.rng import SecureRandom

if TYPE_CHECKING:
    from app.privacy.itemsets.release import PngParams

MAX_COLUMN_GROUPS = 10_000
MISSING_GROUP = "<missing>"
DEFAULT_GROUP = "*"
POOLED_ASSUMPTION = (
    "the pooled estimator (the paper's, eq. 5) inverts the row-weighted mixture of the groups' "
    "transition matrices; it is exact in expectation only when every group has the same itemset "
    "distribution, i.e. rows were assigned to groups at random (shuffle=true). With consecutive "
    "groups on ordered data or a group column, use estimator='stratified', which is unbiased "
    "under any grouping (at a larger variance when some p_t are near 0.5)")


@dataclass
class Grouping:
    order: np.ndarray | None  # release row i is input row order[i]; None = input order
    description: dict[str, Any]  # published: rebuilds each release row's keep probability


def row_keep_probabilities(groups: dict[str, Any], n: int) -> np.ndarray:
    """Keep probability of every row of the release (release order) from the published rule."""
    kind = groups["kind"]
    ps = np.asarray(groups["ps"], dtype=np.float64)
    if kind == "single":
        return np.full(n, ps[0])
    if kind == "fixed_size":
        group = np.arange(n) // int(groups["group_size"])
        return ps[group % len(ps)]
    if kind == "blocks":
        sizes = np.asarray(groups["sizes"], dtype=np.int64)
        if sizes.sum() != n:
            raise MethodInputError("the release's group sizes do not add up to its transactions")
        return np.repeat(ps, sizes)
    raise MethodInputError(f"unknown group rule {kind!r} in the release metadata")


def png_grouping(params: PngParams, n: int, frame: pd.DataFrame | None,
                 columns: list[ColumnInfo], rng: SecureRandom) -> Grouping:
    if params.group_column is not None:
        return _column_grouping(params, frame, columns, rng)
    ps = list(params.ps)  # a list (the model validator rejected a mapping here)
    size = params.group_size or max(1, math.ceil(n / len(ps)))
    n_groups = max(1, math.ceil(n / size))
    order = rng.permutation(n) if params.shuffle else None
    return Grouping(order=order, description={
        "kind": "fixed_size", "group_size": size, "n_groups": n_groups, "ps": ps,
        "ps_recycled": len(ps) != n_groups, "assignment": "random" if params.shuffle else "consecutive rows",
    })


def check_group_map(ps: dict[str, float], info) -> None:
    """At submission, a map of keep probabilities against the column's declared categories (the
    caller's own declaration, so its values may be named): a key outside them, or a declared
    value — or the missing cells the profile counts — with no p and no '*' entry. Without
    declared categories the data's values are checked when the job runs."""
    if info.categories is None:
        return
    declared = [str(c) for c in info.categories]
    unknown, uncovered = _map_gaps(ps, declared + [MISSING_GROUP],
                                   declared + ([MISSING_GROUP] if info.missing else []))
    if unknown:
        raise MethodInputError(f"ps names {len(unknown)} value(s) outside the declared categories of "
                               f"column {info.name!r}: " + ", ".join(map(repr, unknown[:10])))
    if uncovered:
        raise MethodInputError(f"ps gives no keep probability for {len(uncovered)} declared value(s) of "
                               f"column {info.name!r}: " + ", ".join(map(repr, uncovered[:10]))
                               + "; add them or a '*' entry")


def _map_gaps(ps: dict[str, float], labels: list[str], needed: list[str]) -> tuple[list[str], list[str]]:
    """A map's keys that name no label, and the needed labels it gives no p (none with '*')."""
    unknown = [key for key in ps if key not in labels and key != DEFAULT_GROUP]
    uncovered = [] if DEFAULT_GROUP in ps else [v for v in needed if v not in ps]
    return unknown, uncovered


def check_group_count(ps: list[float], column: str, groups: int, declared: bool) -> None:
    """A list of keep probabilities for a group column gives one per value the column holds
    (a missing cell is a value); checked at submission from the profile, and on the data. The
    message gives the order the list follows: the declared categories' (missing last), else the
    values sorted as text."""
    if len(ps) != groups:
        order = (f"in the order of its declared categories, {MISSING_GROUP} last" if declared
                 else f"in the order of the values sorted as text, {MISSING_GROUP} among them")
        raise MethodInputError(f"ps lists {len(ps)} probabilities; column {column!r} has {groups} "
                               f"values (give one per value {order}, or a map)")


def _column_grouping(params: PngParams, frame: pd.DataFrame | None, columns: list[ColumnInfo],
                     rng: SecureRandom) -> Grouping:
    name = params.group_column
    if frame is None:
        raise MethodInputError("group_column applies to tabular datasets; this one is a transaction file")
    if name not in frame.columns:
        raise MethodInputError(f"unknown column {name!r}")
    info = next((c for c in columns if c.name == name), None)
    text = frame[name].astype("string").fillna(MISSING_GROUP).to_numpy(dtype=object)
    if info is not None and info.categories is not None:
        labels = [str(c) for c in info.categories] + [MISSING_GROUP]
    else:
        labels = sorted(pd.unique(text).tolist())
    codes = pd.Categorical(text, categories=labels).codes.astype(np.int64)
    if (codes < 0).any():
        raise MethodInputError(f"column {name!r} holds values outside its declared categories")
    sizes = np.bincount(codes, minlength=len(labels))
    present = np.flatnonzero(sizes)
    if len(present) > MAX_COLUMN_GROUPS:
        raise MethodInputError(f"column {name!r} has more than {MAX_COLUMN_GROUPS} values: too many groups")
    if isinstance(params.ps, dict):
        # the data's values are not named (the submission check names declared ones)
        unknown, uncovered = _map_gaps(params.ps, labels, [labels[i] for i in present])
        if unknown:
            raise MethodInputError(f"ps names {len(unknown)} value(s) that column {name!r} does not hold")
        default = params.ps.get(DEFAULT_GROUP)
        if uncovered:
            raise MethodInputError(f"ps gives no keep probability for {len(uncovered)} value(s) of "
                                   f"column {name!r}; add them or a '*' entry")
        ps_of = [params.ps.get(labels[i], default) for i in present]
    else:
        declared = info is not None and info.categories is not None
        check_group_count(params.ps, name, len(present), declared=declared)
        ps_of = list(params.ps)
    # Rows are published group by group (random order inside a group with shuffle).
    tiebreak = rng.uint64(len(codes)) if params.shuffle else np.arange(len(codes))
    order = np.lexsort((tiebreak, codes))
    return Grouping(order=order, description={
        "kind": "blocks", "group_column": name, "labels": [labels[i] for i in present],
        "sizes": sizes[present].tolist(), "ps": ps_of,
        "assignment": f"by the value of column {name!r}",
    })


# ------------------------------------------------------------------------------- privacy
def epsilon_bit(p: float) -> float:
    """Local-DP level of one bit kept with probability p, as ``bits.randomize`` realizes it: a
    bit flips when a uniform uint32 is below T = round((1 − p)·2^32), so the delivered level is
    |ln((2^32 − T)/T)| — within ~2^-32/(1 − p) of the ideal |ln(p/(1 − p))|, and ∞ when p is so
    close to 1 that T = 0 (nothing flips). ∞ at p ∈ {0, 1}."""
    if p >= 1.0 or p <= 0.0:
        return math.inf
    flips = int(flip_thresholds(np.array([1.0 - p]))[0])
    if flips == 0:
        return math.inf
    return abs(math.log((2**32 - flips) / flips))


def privacy_figures(row_p: np.ndarray, differing_bits: int, groups: dict[str, Any]) -> dict[str, Any]:
    values, rows = np.unique(row_p, return_counts=True)
    n = len(row_p)
    strata = [{"p": float(p), "rows": int(r), "share": float(r / n), "epsilon_bit": epsilon_bit(p),
               "epsilon_record": differing_bits * epsilon_bit(p),
               "protected": math.isfinite(epsilon_bit(p))}  # p = 1, or so near 1 nothing flips
              for p, r in zip(values, rows)]
    protected = [s for s in strata if s["protected"]]
    protected_rows = sum(s["rows"] for s in protected)
    mean_p = float(row_p.mean())
    return {
        "bits_in_which_two_records_can_differ": differing_bits,
        "strata": strata,
        "share_unprotected_rows": float(1.0 - protected_rows / n),
        "mean_keep_probability": mean_p,
        "epsilon_bit_max": max(s["epsilon_bit"] for s in strata),
        "epsilon_record_max": max(s["epsilon_record"] for s in strata),
        "epsilon_record_min": min(s["epsilon_record"] for s in strata),
        "epsilon_record_mean_over_protected_rows": (
            sum(s["epsilon_record"] * s["rows"] for s in protected) / protected_rows
            if protected_rows else None),
        "epsilon_bit_of_mean_keep_probability": epsilon_bit(mean_p),
        "groups": [{"p": float(p), "epsilon_bit": epsilon_bit(p),
                    "epsilon_record": differing_bits * epsilon_bit(p)} for p in groups["ps"]],
    }
