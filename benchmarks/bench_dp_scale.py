"""mst and aim at a million rows, as a job runs them: time and peak resident memory.

The table is Adult's training file replicated with light jitter (ages and hours ± 2, fnlwgt
± 5,000, clipped to the declared bounds; rows drawn with replacement), stored as Parquet the
way an upload is (text columns categorical) and read back in a fresh interpreter through the
worker's own loading (codec.parquet_to_table, codec.for_methods); the release is encoded to
Parquet as the job stores it. Every column declared (bounds from the experiment's ADULT_BOUNDS,
categories from the data), ε = 1, seeded. The peak is the process's (ru_maxrss): the library,
jax's compiled programs (~0.6 GiB for mst), the input, the run.

    python -m benchmarks --only dp_scale [--quick] [--merge]
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd

from app import codec
from app.privacy.experiments import dataset_file
from app.privacy.experiments.dp_release_tasks import ADULT_BOUNDS
from benchmarks.common import Row

ROOT = Path(__file__).resolve().parents[1]
JITTER = {"age": 2, "fnlwgt": 5000, "hours-per-week": 2}

# one job's load → run → store in a fresh interpreter; prints seconds and the process's peak RSS
RUN = """
import json, resource, sys, time
from app import codec
from app.privacy import registry
from app.privacy.context import RunContext
from app.privacy.data import MethodInput
from app.privacy.experiments.dp_release_tasks import ADULT_BOUNDS, declared_schema
from app.privacy.rng import SecureRandom

registry.load_all()
path, method, extra = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
spec = registry.get(method)
started = time.perf_counter()
with open(path, "rb") as f:
    frame = codec.for_methods(codec.parquet_to_table(f.read()))
data = MethodInput(declared_schema(frame, ADULT_BOUNDS), frame)
result = spec.run(data, spec.params(epsilon=1.0, **extra), RunContext(SecureRandom(seed=0)))
stored = codec.table_to_parquet(result.frame)
print(json.dumps({"seconds": time.perf_counter() - started,
                  "peak_gib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20}))
"""

# measured the same way before the compact codes and the sampler's rewrite (2026-11-29)
BEFORE = {"mst": "45 s, 1.71 GiB", "aim": "74 s, 1.31 GiB"}


def replicated_adult(rows: int, seed: int = 0) -> pd.DataFrame:
    raw = pd.read_csv(dataset_file("adult", "adult_train.csv"), na_values="?", skipinitialspace=True)
    rng = np.random.default_rng(seed)
    frame = raw.iloc[rng.integers(0, len(raw), rows)].reset_index(drop=True)
    for name, width in JITTER.items():
        frame[name] = np.clip(frame[name] + rng.integers(-width, width + 1, rows), *ADULT_BOUNDS[name])
    text = [c for c in frame.columns if c not in ADULT_BOUNDS]
    return frame.astype({c: "category" for c in text})  # as a stored upload's text columns load


def _run(path: Path, method: str, extra: dict) -> dict:
    done = subprocess.run([sys.executable, "-c", RUN, str(path), method, json.dumps(extra)],
                          capture_output=True, text=True, cwd=ROOT, check=True, timeout=1800)
    return json.loads(done.stdout.strip().splitlines()[-1])


def cases(quick: bool) -> list[Row]:
    rows = 100_000 if quick else 1_000_000
    runs = [("mst", {"iterations": 200} if quick else {})] + ([] if quick else [("aim", {})])
    out = []
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "adult.parquet"
        path.write_bytes(codec.table_to_parquet(replicated_adult(rows)))
        for method, extra in runs:
            got = _run(path, method, extra)
            note = f"peak RSS of the process {got['peak_gib']:.2f} GiB"
            out.append(Row(workload=f"{method} ε = 1, Adult replicated to {rows:,} rows (light jitter) × 15 "
                                    "columns, loaded, released and stored as a job does: time (fresh process)"
                                    + (", 200 iterations (quick)" if quick else ""),
                           veil=got["seconds"], unit="s", higher_is_better=False,
                           notes=note if quick else f"{note}; before compact codes and the sampler's "
                                                    f"parent groups (2026-11-29): {BEFORE[method]}"))
    return out
