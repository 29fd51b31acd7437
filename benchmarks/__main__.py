"""Run every benchmark module and print one table (Veil, peer, ratio); write docs/benchmarks.md.

    python -m benchmarks            # the full workloads of the issues
    python -m benchmarks --quick    # small sizes, seconds
    python -m benchmarks --only service,rr
"""

from __future__ import annotations

import argparse
import importlib
import os
import platform
import pkgutil
import sys
import time
import traceback
from pathlib import Path

import benchmarks
from benchmarks.common import Row

ROOT = Path(__file__).resolve().parents[1]


def _fmt(x: float | None) -> str:
    if x is None:
        return "—"
    if x == 0:
        return "0"
    if abs(x) >= 100:
        return f"{x:,.0f}"
    if abs(x) >= 1:
        return f"{x:.2f}"
    return f"{x:.3g}"


def machine() -> str:
    cpu = "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{cpu}, {os.cpu_count()} cores, Python {platform.python_version()}"


def table(rows: list[tuple[str, Row]]) -> str:
    lines = ["| family | workload | Veil | unit | peer | peer value | ratio (× Veil better) | target | notes |",
             "|---|---|---|---|---|---|---|---|---|"]
    for family, r in rows:
        lines.append(f"| {family} | {r.workload} | {_fmt(r.veil)} | {r.unit} | {r.peer or '—'} | "
                     f"{_fmt(r.peer_value)} | {_fmt(r.ratio)} | {r.target or '—'} | {r.notes} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks")
    parser.add_argument("--quick", action="store_true", help="small sizes (seconds)")
    parser.add_argument("--only", default="", help="comma-separated families (module suffixes)")
    parser.add_argument("--no-write", action="store_true", help="do not write docs/benchmarks.md")
    parser.add_argument("--skip", default="", help="comma-separated families to leave out")
    parser.add_argument("--merge", action="store_true",
                        help="with --only: replace those families' rows in docs/benchmarks.md, keep the rest")
    args = parser.parse_args(argv)
    only = {x.strip() for x in args.only.split(",") if x.strip()}
    skip = {x.strip() for x in args.skip.split(",") if x.strip()}
    rows: list[tuple[str, Row]] = []
    failures = 0
    for mod in sorted(m.name for m in pkgutil.iter_modules(benchmarks.__path__) if m.name.startswith("bench_")):
        family = mod.removeprefix("bench_")
        if (only and family not in only) or family in skip:
            continue
        print(f"[{family}] running…", file=sys.stderr, flush=True)
        started = time.perf_counter()
        try:
            for row in importlib.import_module(f"benchmarks.{mod}").cases(args.quick):
                rows.append((family, row))
        except Exception:
            failures += 1
            traceback.print_exc()
            rows.append((family, Row(workload="(benchmark failed)", veil=None, unit="", notes="see log")))
        print(f"[{family}] {time.perf_counter() - started:.1f}s", file=sys.stderr, flush=True)
    text = table(rows)
    print(text)
    if args.merge and only and not args.no_write:
        merge_into_doc(ROOT / "docs" / "benchmarks.md", rows, only)
    elif not args.no_write and not only:
        left_out = f"\n\n{_left_out_line(skip)}" if skip else ""
        doc = ROOT / "docs" / "benchmarks.md"
        doc.parent.mkdir(exist_ok=True)
        doc.write_text(
            "# Benchmarks\n\nWritten by `make bench` (`python -m benchmarks"
            f"{' --quick' if args.quick else ''}`) on {time.strftime('%Y-%m-%d')}.\n\n"
            f"Machine: {machine()}.\n\nRatio: how many times Veil is better than the peer "
            "(throughput: Veil / peer; times: peer / Veil). Peers run in the same process on the "
            "same data; a peer that is not installed shows no value." + left_out + "\n\n" + text + "\n")
    return 1 if failures else 0


LEFT_OUT = "Left out of this run: "
MERGED = "Rows of "


def _left_out_line(families) -> str:
    return (f"{LEFT_OUT}{', '.join(sorted(families))} (their figures: "
            "docs/experiments/dp_release.md, docs/reliability.md).")


def merge_into_doc(doc: Path, rows: list[tuple[str, Row]], families: set[str]) -> None:
    """Replace the rows of ``families`` in the written report (a family's own run, e.g. one
    that must wait for a quiet machine); the other rows and the header stay. The header's
    notes follow: a merged family is no longer "left out", and an earlier "rows of … from a
    separate run" stamp no longer names it."""
    lines = doc.read_text().splitlines()
    body = [i for i, line in enumerate(lines) if line.startswith("| ") and not line.startswith("| family ")]
    kept = [lines[i] for i in body if lines[i].split("|")[1].strip() not in families]
    new = table(rows).splitlines()[2:]
    start = body[0]
    stamp = f"{MERGED}{', '.join(sorted(families))} from a separate run on {time.strftime('%Y-%m-%d %H:%M')}."
    head = []
    for line in lines[:start]:
        if line.startswith(LEFT_OUT):
            left = [f for f in line.removeprefix(LEFT_OUT).split(" (")[0].split(", ") if f not in families]
            line = _left_out_line(left) if left else None
        elif line.startswith(MERGED):
            named, rest = line.removeprefix(MERGED).split(" from a separate run", 1)
            left = [f for f in named.split(", ") if f not in families]
            line = f"{MERGED}{', '.join(left)} from a separate run{rest}" if left else None
        if line is not None:
            head.append(line)
    head, header = head[:-2], head[-2:]  # the table's header and rule stay above the rows
    while head and not head[-1].strip():
        head.pop()
    # blank lines left by dropped notes collapse to one
    head = [x for i, x in enumerate(head) if x.strip() or (i and head[i - 1].strip())]
    head += ["", stamp, ""]
    doc.write_text("\n".join(head + header + kept + new + lines[body[-1] + 1:]) + "\n")


if __name__ == "__main__":
    sys.exit(main())
