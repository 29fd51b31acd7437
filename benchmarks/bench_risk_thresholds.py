"""ARX's risk-based models as lattice thresholds (risk_thresholds.py) on Adult with its ARX
hierarchies, 8 QIs, 5 % suppression, against k-anonymity at k = 5 on the same lattice: k = 5 caps
every record's risk at 0.2; the average risk 0.2 caps only the mean, which keeps more detail; the
relaxed variant lets 5 % of the records be at risk above 0.2; sample uniqueness bounds the share of
records alone in their class. Each row is the whole anonymization with its independent check.
No Python peer implements these models (ARX, in Java, is not run here)."""

from __future__ import annotations

import time

from app.privacy.anonymity.anonymize import Options, anonymize
from app.privacy.anonymity.models import Constraints
from app.privacy.anonymity.risk_thresholds import RiskThresholds
from benchmarks.bench_anonymity import QIS, adult
from benchmarks.common import Row

CASES = [
    ("k-anonymity k = 5 (every record's risk ≤ 0.2)", 5, None),
    ("average risk ≤ 0.2", 1, RiskThresholds(average=0.2)),
    ("average risk ≤ 0.2, at most 5 % of records above risk 0.2", 1,
     RiskThresholds(average=0.2, highest=0.2, records_at_risk=0.05)),
    ("sample uniques ≤ 1 %", 1, RiskThresholds(sample_uniques=0.01)),
]


def cases(quick: bool) -> list[Row]:
    frame, hierarchies, infos = adult(5000 if quick else None)
    label = "Adult 5,000 sample" if quick else "Adult 30,162"
    rows = []
    for name, k, risk in CASES[:2] if quick else CASES:
        started = time.perf_counter()
        r = anonymize(frame, infos, hierarchies, QIS, Constraints(k=k, risk=risk), None,
                      Options(algorithm="lattice", suppression=0.05))
        seconds = time.perf_counter() - started
        lat = r.metadata["lattice"]
        found = r.metadata.get("risk_thresholds", {}).get("achieved", {})
        figures = ", ".join(f"{key} {value:.4f}" for key, value in found.items())
        rows.append(Row(
            workload=f"Lattice, {label}, 8 QIs, 5% suppression, {name}: time",
            veil=seconds, unit="s", higher_is_better=False,
            notes=f"optimal={lat['optimal']}, {lat['nodes_evaluated']} of {lat['lattice_size']} nodes checked; "
                  f"levels {tuple(lat['levels'].values())}; NCP {r.metrics['ncp']:.3f}; "
                  f"{r.metrics['suppressed']} suppressed; {r.metrics['classes']} classes, smallest "
                  f"{r.achieved.k}" + (f"; achieved {figures}" if figures else "") + "; no Python peer"))
    return rows
