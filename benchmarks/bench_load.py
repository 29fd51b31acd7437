"""The service under constant load (benchmarks/load.py): 200 reads/s and 20 job submissions/s
offered to a real `veil serve` on loopback, 60 s (5 s with --quick), its worker processes
running the submitted jobs meanwhile."""

from __future__ import annotations

from benchmarks.common import Row
from benchmarks.load import run


def cases(quick: bool) -> list[Row]:
    seconds = 5 if quick else 60
    report = run(seconds=seconds, reads=200, submits=20)
    rows = []
    for kind, label, target in (("read", "reads", "≤ 100 ms"), ("submit", "job submissions", "≤ 200 ms")):
        r = report[kind]
        rows.append(Row(
            f"{label} at {r['offered_per_s']:g}/s offered for {seconds} s: p99 latency", r["p99_ms"], "ms",
            higher_is_better=False, target=target,
            notes=f"achieved {r['achieved_per_s']:g}/s; p50 {r['p50_ms']} ms, p95 {r['p95_ms']} ms; "
                  f"statuses {r['statuses']}; load average after {report['config']['loadavg_after']}"))
    rows.append(Row("5xx answers under that load", float(report["read"]["errors_5xx"] + report["submit"]["errors_5xx"]),
                    "count", higher_is_better=False, target="0"))
    return rows
