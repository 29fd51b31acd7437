"""What a job's child process reports while it runs (no database: the child alone)."""

from __future__ import annotations

import dataclasses
import queue
import threading

import pandas as pd

from app import codec
from app.privacy.data import ColumnInfo
from app.privacy.rng import SecureRandom
from app.worker import child


def test_the_last_stage_before_the_result_is_stored_says_so(tmp_path):
    """A method ends on its last stage (often "done"); encoding and storing its result can take seconds
    (a report's plots), and the job showed "running … done" meanwhile (found following the README)."""
    frame = pd.DataFrame({"a": ["x", "y", "x", "y"], "b": ["1", "1", "2", "2"]})
    path = tmp_path / "input.parquet"
    path.write_bytes(codec.table_to_parquet(frame))
    columns = [ColumnInfo("a", "categorical"), ColumnInfo("b", "categorical")]
    job = {"method": "risk", "params": {"quasi_identifiers": ["a", "b"]}, "input_path": str(path),
           "shape": "table", "column_infos": [dataclasses.asdict(c) for c in columns],
           "columns": [{"name": c.name, "type": c.type} for c in columns], "hierarchies": {}, "source": None}
    stages: queue.Queue = queue.Queue()
    out = child._run(job, SecureRandom(seed=1), stages, threading.Event())
    assert out["kind"] == "report"
    reported = []
    while not stages.empty():
        reported.append(stages.get())
    assert reported[-1] == (1.0, "storing the result") and len(reported) > 1
    # decoding the input comes first, and can be what a limit stops: errph on 4.95 M rows under a
    # 600 MiB limit said "stopped at 'running' (0% done)" (scale acceptance run)
    assert reported[0] == (0.0, "loading the input")
