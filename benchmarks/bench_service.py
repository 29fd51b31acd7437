"""The service end to end: a real `veil serve` (embedded PostgreSQL, one worker) on loopback.

Workloads (issue 2): upload + parse of a generated 1,000,000 × 10 CSV; `errph` on it, submit →
succeeded through the API; job dispatch latency (created → started, from the job's own
timestamps) with an idle worker. The parser alone is compared with pandas.read_csv.
"""

from __future__ import annotations

import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
import numpy as np
import pandas as pd

from benchmarks.common import Row, best_time

ROOT = Path(__file__).resolve().parents[1]
KEY = "veil_bench_benchmarkkey"


def make_csv(path: Path, rows: int, cols: int = 10) -> None:
    rng = np.random.default_rng(0)
    labels = np.array([f"v{i}" for i in range(8)])
    frame = pd.DataFrame({f"c{j}": labels[rng.integers(0, 8, rows)] for j in range(cols)})
    frame.to_csv(path, index=False)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Service:
    def __init__(self, data_dir: Path) -> None:
        self.port = _free_port()
        env = {**os.environ, "VEIL_DATA_DIR": str(data_dir), "VEIL_PORT": str(self.port),
               "VEIL_DEV_API_KEY": KEY, "VEIL_WORKERS": "1", "VEIL_LOG_LEVEL": "WARNING"}
        env.pop("DATABASE_URL", None)
        env.pop("VEIL_PLUGINS", None)
        self.proc = subprocess.Popen([sys.executable, "-m", "app", "serve"], env=env, cwd=ROOT,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.client = httpx.Client(base_url=f"http://127.0.0.1:{self.port}",
                                   headers={"Authorization": f"Bearer {KEY}"}, timeout=120)
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            try:
                if self.client.get("/readyz").status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.2)
        raise RuntimeError("the service did not become ready")

    def close(self) -> None:
        self.client.close()
        self.proc.terminate()
        self.proc.wait(30)

    def upload(self, path: Path) -> dict:
        with open(path, "rb") as f:
            r = self.client.post("/v1/datasets", files={"file": (path.name, f, "text/csv")})
        r.raise_for_status()
        return r.json()

    def run(self, dataset_id: str, method: str, params: dict) -> dict:
        r = self.client.post("/v1/jobs", json={"dataset_id": dataset_id, "method": method, "params": params})
        r.raise_for_status()
        job_id = r.json()["id"]
        while True:
            job = self.client.get(f"/v1/jobs/{job_id}").json()
            if job["status"] in ("succeeded", "failed", "cancelled"):
                return job
            time.sleep(0.01)


def _seconds(job: dict, a: str, b: str) -> float:
    return (pd.Timestamp(job[b]) - pd.Timestamp(job[a])).total_seconds()


def _jsonl_row(n: int) -> Row:
    """The JSON Lines download encoder (exact floats, column at a time) against pandas' to_json
    (what it replaced: 10 decimal places, not exact)."""
    import numpy as np
    import pyarrow as pa

    from app.downloads.jsonl_writer import jsonl_batches

    rng = np.random.default_rng(0)
    table = pa.table({**{f"f{i}": rng.normal(size=n) for i in range(8)},
                      **{f"c{i}": pa.array(rng.choice(["alpha", "beta", 'ga"mma'], n)).dictionary_encode()
                         for i in range(8)}})
    ours = best_time(lambda: sum(map(len, jsonl_batches(table))), repeat=2)
    frame = table.to_pandas()
    theirs = best_time(lambda: len(frame.to_json(orient="records", lines=True)), repeat=2)
    return Row(f"JSON Lines download encoding, {n:,} × 16 (8 float, 8 text)", ours, "s",
               peer="pandas DataFrame.to_json(lines=True) (10 decimals, not exact)", peer_value=theirs,
               higher_is_better=False, notes="floats in their shortest exact form")


def _typed_parse_rows(n: int, tmp: Path) -> list[Row]:
    """What the round-trip sweep (session 16) added to parsing, measured: a date column is read
    again as text to keep it as written, and a JSON Lines integer column beyond 2^53 is kept
    exact by a pure-Python pass (only such columns). Each against the same file without it."""
    from app.datasets.parsing import Limits, parse

    limits = Limits(max_rows=10_000_000, max_columns=2000, max_cell_length=65536)
    rng = np.random.default_rng(1)
    labels = np.array([f"v{i}" for i in range(8)])
    base = pd.DataFrame({f"c{j}": labels[rng.integers(0, 8, n)] for j in range(9)})
    dates = (pd.Timestamp("2020-01-01") + pd.to_timedelta(rng.integers(0, 1500, n), unit="D")).strftime("%Y-%m-%d")
    plain, dated = tmp / "plain.csv", tmp / "dated.csv"
    base.assign(c9=labels[rng.integers(0, 8, n)]).to_csv(plain, index=False)
    base.assign(c9=dates).to_csv(dated, index=False)
    t_plain = best_time(lambda: parse(plain, "csv", limits), repeat=2)
    t_dated = best_time(lambda: parse(dated, "csv", limits), repeat=2)
    t_pandas = best_time(lambda: pd.read_csv(dated, parse_dates=["c9"]), repeat=2)
    rows = [Row(f"parse {n:,} × 10 CSV with a date column (kept as written)", t_dated, "s",
                peer="pandas.read_csv(parse_dates=) (dates as Timestamps)", peer_value=t_pandas,
                higher_is_better=False, notes=f"the same file with a text column instead: {t_plain:.2f} s")]
    ids = 10**19 + rng.integers(0, 10**12, n).astype(np.uint64)  # 20 digits: beyond float64's exact integers
    small, big = tmp / "small.jsonl", tmp / "big.jsonl"
    for path, column in ((small, rng.integers(0, 10**6, n)), (big, ids)):
        with path.open("w") as out:
            out.writelines(f'{{"id": {v}, "c": "{c}"}}\n' for v, c in zip(column.tolist(), labels[rng.integers(0, 8, n)]))
    t_small = best_time(lambda: parse(small, "jsonl", limits), repeat=2)
    t_big = best_time(lambda: parse(big, "jsonl", limits), repeat=2)
    t_pandas = best_time(lambda: pd.read_json(big, lines=True), repeat=2)
    rows.append(Row(f"parse {n:,} JSON Lines rows with a 20-digit integer id (kept exact)", t_big, "s",
                    peer="pandas.read_json(lines=True)", peer_value=t_pandas, higher_is_better=False,
                    notes=f"the same rows with ids < 10^6: {t_small:.2f} s"))
    return rows


def _csv_download_row(n: int) -> Row:
    """A stored release of text columns downloaded as CSV (row group at a time, encoded a batch at
    a time) against pandas reading the Parquet whole and writing it with to_csv."""
    import io

    import numpy as np

    from app import codec
    from app.downloads import encode_table

    rng = np.random.default_rng(0)
    frame = pd.DataFrame({f"g{i}": rng.choice([f"[{j}-{j + 5}[ generalized" for j in range(40)], n).astype(object)
                          for i in range(8)} | {"x": rng.normal(size=n)})
    payload = codec.table_to_parquet(frame)
    ours = best_time(lambda: sum(map(len, encode_table(payload, "table", "csv"))), repeat=2)
    theirs = best_time(lambda: len(pd.read_parquet(io.BytesIO(payload)).to_csv(index=False)), repeat=2)
    return Row(f"CSV download of a stored release, {n:,} × 9 (8 text, 1 float)", ours, "s",
               peer="pandas read_parquet + to_csv (whole table in memory)", peer_value=theirs,
               higher_is_better=False,
               notes="streamed by row group: Arrow memory 26 MiB at 1,000,000 rows (whole-table read: 240 MiB)")


def cases(quick: bool) -> list[Row]:
    rows_n = 100_000 if quick else 1_000_000
    rows: list[Row] = []
    with tempfile.TemporaryDirectory(prefix="veil-bench-") as tmp:
        csv = Path(tmp) / "bench.csv"
        make_csv(csv, rows_n)
        size_mb = csv.stat().st_size / 1e6

        from app.datasets.parsing import Limits, parse

        limits = Limits(max_rows=10_000_000, max_columns=2000, max_cell_length=65536)
        ours = best_time(lambda: parse(csv, "csv", limits), repeat=3)
        theirs = best_time(lambda: pd.read_csv(csv), repeat=3)
        rows.append(Row(f"parse {rows_n:,} × 10 CSV ({size_mb:.0f} MB), typed + categorical", ours, "s",
                        peer="pandas.read_csv (object strings, no profile)", peer_value=theirs,
                        higher_is_better=False))

        rows.extend(_typed_parse_rows(rows_n, Path(tmp)))
        rows.append(_jsonl_row(rows_n // 5))
        rows.append(_csv_download_row(rows_n))

        service = Service(Path(tmp) / "data")
        try:
            start = time.perf_counter()
            ds = service.upload(csv)
            upload_s = time.perf_counter() - start
            rows.append(Row(f"upload + parse + store {rows_n:,} × 10 CSV through the API", upload_s, "s",
                            target="≤ 5 s (1M rows)", notes=f"{size_mb / upload_s:.0f} MB/s"))
            start = time.perf_counter()
            job = service.run(ds["id"], "errph", {"p0": 0.5})
            e2e = time.perf_counter() - start
            assert job["status"] == "succeeded", job
            rows.append(Row(f"errph {rows_n:,} × 10 categorical, submit → succeeded", e2e, "s",
                            target="≤ 5 s (1M rows)",
                            notes=f"run in worker {_seconds(job, 'started_at', 'finished_at'):.2f} s"))
            tiny = service.client.post("/v1/datasets", files={"file": ("t.csv", b"a,b\nx,1\ny,2\n")}).json()
            waits = []
            for _ in range(10 if quick else 30):
                job = service.run(tiny["id"], "errph", {"p0": 0.5})
                waits.append(_seconds(job, "created_at", "started_at") * 1000)
                time.sleep(0.05)
            rows.append(Row("job dispatch latency p50 (created → running), idle worker",
                            statistics.median(waits), "ms", higher_is_better=False, target="≤ 200 ms",
                            notes=f"p90 {np.percentile(waits, 90):.0f} ms over {len(waits)} jobs"))
        finally:
            service.close()
    return rows
