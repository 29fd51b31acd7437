"""The profitability model (Wan et al. 2015, ARX's ProfitabilityProsecutor) on Adult with its ARX
hierarchies: the optimal lattice, prosecutor attacker, with ARX's default amounts (benefit 1,200,
loss 300, gain 300, cost 4 per record), with a fine 25 times the benefit (loss 30,000), and the
no-attack variant (k-anonymity at ⌈300 / 4⌉ = 75). Each row is the whole anonymization with its
independent check; the notes give the publisher's total expected payout the check recomputed."""

from __future__ import annotations

import time

from app.privacy.anonymity.anonymize import Options, anonymize
from app.privacy.anonymity.models import Constraints
from app.privacy.anonymity.profitability import CostBenefit
from benchmarks.bench_anonymity import QIS, adult
from benchmarks.common import Row

CASES = [
    ("ARX's default amounts", CostBenefit(), "publisher_payout"),
    ("publisher loss 30,000 (25 × the benefit)", CostBenefit(publisher_loss=30_000.0), "publisher_payout"),
    ("publisher loss 30,000, NCP minimized", CostBenefit(publisher_loss=30_000.0), "ncp"),
    ("no attack: k-anonymity at ⌈300 / 4⌉ = 75", CostBenefit(no_attack=True), "publisher_payout"),
]


def cases(quick: bool) -> list[Row]:
    frame, hierarchies, infos = adult(5000 if quick else None)
    label = "Adult 5,000 sample" if quick else "Adult 30,162"
    rows = []
    for name, game, metric in CASES[:2] if quick else CASES:
        k = game.derived_k if game.no_attack else 1
        started = time.perf_counter()
        r = anonymize(frame, infos, hierarchies, QIS, Constraints(k=k, profitability=game), None,
                      Options(algorithm="lattice", suppression=0.2, metric=metric))
        seconds = time.perf_counter() - started
        lat, found = r.metadata["lattice"], r.metadata["profitability"]
        rows.append(Row(
            workload=f"Lattice, profitability (prosecutor), {label}, 8 QIs, 20% suppression, {name}: time",
            veil=seconds, unit="s", higher_is_better=False,
            notes=f"metric {metric}; optimal={lat['optimal']}, {lat['nodes_evaluated']} of {lat['lattice_size']} "
                  f"nodes checked; levels {tuple(lat['levels'].values())}; total expected payout "
                  f"{found['publisher_payout']:,.0f} ({found['publisher_payout_per_record']:.1f} per released "
                  f"record); {r.metrics['suppressed']} suppressed; {found['classes']} classes, the attack paying "
                  f"in {found['classes_attack_profitable']}; NCP {r.metrics['ncp']:.3f}; no ARX peer run here"))
    return rows
