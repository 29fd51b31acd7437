"""Itemsets (spec 02): randomizing bits, reconstructing pair supports, mining a MASK release.

Issue targets: 10^8 bits randomized ≤ 1 s; supports of all 4,950 pairs of 100 items over
10^6 transactions ≤ 10 s; a mask release of mushroom mined at minsup 0.3 ≤ 10 s. Reference
in the same run: mlxtend's fpgrowth on the raw data.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from app.privacy.context import RunContext
from app.privacy.data import MethodInput, SourceRelease, TransactionData
from app.privacy.experiments import datasets_dir
from app.privacy.itemsets import bits
from app.privacy.itemsets.encoding import read_fimi
from app.privacy.itemsets.estimation import estimate_supports
from app.privacy.itemsets.mining import FrequentItemsetsParams, apriori, run_frequent_itemsets
from app.privacy.itemsets.release import MaskParams, run_mask
from app.privacy.itemsets.supports import all_combinations, exact_oracle
from app.privacy.reconstruction import ReconstructParams, run_reconstruct
from app.privacy.rng import SecureRandom
from benchmarks.common import Row, best_time

FPGROWTH = "mlxtend.frequent_patterns.fpgrowth (raw data)"


def _random_matrix(rows: int, items: int, density: float, seed: int) -> bits.BitMatrix:
    dense = np.random.default_rng(seed).random((rows, items), dtype=np.float32) < density
    return bits.from_dense(dense)


def _randomize_case(rows: int, items: int) -> Row:
    matrix = _random_matrix(rows, items, 0.2, seed=1)
    rng = SecureRandom()
    seconds = best_time(lambda: bits.randomize(matrix, 0.9, rng), repeat=3)
    cells = rows * items
    return Row(workload=f"mask: randomize {cells:.0e} bits (p = 0.9, CSPRNG)", veil=seconds, unit="s",
               higher_is_better=False, target="≤ 1 s" if cells >= 10**8 else None,
               notes=f"{cells / seconds / 1e6:.0f} M bits/s; one uint32 of AES-CTR output per bit")


def _pairs_case(rows: int, items: int) -> list[Row]:
    matrix = _random_matrix(rows, items, 0.2, seed=2)
    bits.randomize(matrix, 0.9, SecureRandom())
    pairs = all_combinations(items, 2)

    def reconstruct():
        counts = bits.weight_counts(matrix, pairs)
        return estimate_supports(counts, matrix.seg_rows, np.array([0.9]), 2)

    core = best_time(reconstruct, repeat=2)
    # The same through the `reconstruct` analysis, as a job runs it: CSR release in, report out.
    indptr, indices = bits.to_csr(matrix)
    release = TransactionData(indptr=indptr, indices=indices, labels=tuple(str(i) for i in range(items)))
    metadata = {"itemsets": {"groups": {"kind": "single", "ps": [0.9]}, "n_transactions": rows}}
    source = SourceRelease(release_id="bench", method="mask", params={"p": 0.9}, guarantees={},
                           metadata=metadata)
    data = MethodInput(columns=[], transactions=release, source=source)
    params = ReconstructParams(itemsets=[[str(a), str(b)] for a, b in pairs])
    end_to_end = best_time(lambda: run_reconstruct(data, params, RunContext()), repeat=2)
    target = "≤ 10 s" if rows >= 10**6 else None
    workload = f"all {len(pairs)} pairs of {items} items × {rows:.0e} transactions"
    return [
        Row(workload=f"reconstruct supports + SE of {workload} (counting and inversion)", veil=core,
            unit="s", higher_is_better=False, target=target, notes="weight classes, bit-sliced counting"),
        Row(workload=f"`reconstruct` analysis end to end, {workload}", veil=end_to_end, unit="s",
            higher_is_better=False, target=target,
            notes=f"packs the CSR release ({len(indices):.2e} entries), counts, inverts, builds the report"),
    ]


def _dense_frame(td: TransactionData) -> pd.DataFrame:
    dense = np.zeros((td.n_transactions, td.n_items), dtype=bool)
    dense[np.repeat(np.arange(td.n_transactions), np.diff(td.indptr)), td.indices] = True
    return pd.DataFrame(dense, columns=list(td.labels))


def _fpgrowth(td: TransactionData, minsup: float) -> tuple[float | None, int | None, str]:
    """(seconds, itemsets found, note) of mlxtend's fpgrowth on the raw data."""
    try:
        from mlxtend.frequent_patterns import fpgrowth
    except ImportError:
        return None, None, "mlxtend not installed"
    frame = _dense_frame(td)
    found = []
    seconds = best_time(lambda: found.append(fpgrowth(frame, min_support=minsup)), repeat=3)
    return seconds, len(found[-1]), ""


def _mining_cases(td: TransactionData, minsup: float, label: str) -> list[Row]:
    peer, peer_found, peer_note = _fpgrowth(td, minsup)
    release = run_mask(MethodInput(columns=[], transactions=td), MaskParams(p=0.9), RunContext())
    source = SourceRelease(release_id="bench", method="mask", params={"p": 0.9},
                           guarantees=release.guarantees, metadata=release.metadata)
    on_release = MethodInput(columns=[], transactions=release.transactions, source=source)
    params = FrequentItemsetsParams(minsup=minsup, max_len=None, min_confidence=0.9)
    holder = {}

    def mine_release():
        holder["report"] = run_frequent_itemsets(on_release, params, RunContext())

    mined = best_time(mine_release, repeat=3)
    found = sum(lv["frequent"] for lv in holder["report"].data["levels"])
    raw_levels = []
    raw = best_time(lambda: raw_levels.append(apriori(exact_oracle(td), minsup, None)), repeat=3)
    truth = sum(len(lv.itemsets) for lv in raw_levels[-1])
    return [
        Row(workload=f"frequent_itemsets on a mask p=0.9 release of {label}, minsup {minsup} (rules included)",
            veil=mined, unit="s", higher_is_better=False, peer=FPGROWTH, peer_value=peer,
            target="≤ 10 s" if label == "mushroom" else None,
            notes=(peer_note or f"{found} itemsets found on the release; the peer mines the raw data")),
        Row(workload=f"Apriori on raw {label}, minsup {minsup} (exact counts, bitwise)", veil=raw, unit="s",
            higher_is_better=False, peer=FPGROWTH, peer_value=peer,
            notes=peer_note or f"{truth} frequent itemsets (fpgrowth: {peer_found})"),
    ]


def cases(quick: bool) -> list[Row]:
    rows: list[Row] = []
    if quick:
        rows.append(_randomize_case(10_000, 100))
        rows.extend(_pairs_case(10_000, 100))
        td = read_fimi(datasets_dir() / "itemsets" / "mushroom.dat")
        every_8th = np.arange(0, td.n_transactions, 8)  # the file is sorted: sample across it
        from app.privacy.itemsets.bits import permute_csr
        indptr, indices = permute_csr(td.indptr, td.indices, every_8th)
        small = TransactionData(indptr=indptr, indices=indices, labels=td.labels)
        rows.extend(_mining_cases(small, 0.3, "mushroom (every 8th row)"))
        return rows
    rows.append(_randomize_case(1_000_000, 100))
    rows.extend(_pairs_case(1_000_000, 100))
    rows.extend(_mining_cases(read_fimi(datasets_dir() / "itemsets" / "mushroom.dat"), 0.3, "mushroom"))
    return rows


if __name__ == "__main__":
    import sys

    for row in cases(quick="--quick" in sys.argv):
        print(row)
