"""Imported by the forkserver that upload children fork from (app/datasets/isolated.py), never
by the API process: reading a two-row CSV once there makes the imports and caches a first read
does lazily (pyarrow's pandas conversion, compiled patterns) part of every child, ≈ 15 ms an
upload less."""

from __future__ import annotations

import tempfile
from pathlib import Path

from app.datasets import encode, parsing

with tempfile.TemporaryDirectory(prefix="veil-warmup-") as _tmp:
    _sample = Path(_tmp) / "sample.csv"
    _sample.write_bytes(b"a,b\n1,x\n2,y\n")
    encode.encode_upload(_sample, "csv", parsing.Limits(max_rows=10, max_columns=10, max_cell_length=10),
                         None, Path(_tmp) / "sample.parquet")
