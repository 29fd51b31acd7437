"""Uploads are read in a child process under a memory and a time limit
(app/datasets/isolated.py): a parse past the memory limit is a 413 and the API process does
not grow by it; past the time limit a 422; the parser's refusals come back as they were."""

from __future__ import annotations

import io
import os

import numpy as np
import psutil
import pyarrow as pa
import pyarrow.parquet as pq
from sqlalchemy import text

from app.db import transaction
from tests.support.api import assert_problem, upload
from tests.support.server import RssSampler

MiB = 1024 * 1024


def _memory_hungry_parquet() -> bytes:
    """370 KB that reads as 2,000,000 × 8 integers: ~450 MiB more to parse, convert and encode."""
    buf = io.BytesIO()
    pq.write_table(pa.table({f"c{j}": np.arange(2_000_000) % 7 for j in range(8)}), buf)
    assert buf.tell() < MiB
    return buf.getvalue()


def _forkserver_rss_mib() -> float:
    """What a child starts from: the forkserver's memory (it preloads the library)."""
    for proc in psutil.Process().children():
        if "multiprocessing.forkserver" in " ".join(proc.cmdline()):
            return proc.memory_info().rss / MiB
    raise AssertionError("no forkserver: the app's start-up should have started it")


def _dataset_count() -> int:
    with transaction() as s:
        return s.execute(text("SELECT count(*) FROM datasets")).scalar_one()


def test_a_parse_past_the_memory_limit_is_413_and_the_api_process_keeps_nothing(client, owner, monkeypatch):
    from app.config import get_settings

    assert upload(client, owner, b"a,b\n1,x\n").status_code == 201  # the forkserver is up and warm
    limit = int(_forkserver_rss_mib()) + 128
    monkeypatch.setattr(get_settings(), "upload_memory_limit_mb", limit)
    ok = upload(client, owner, b"a,b\n1,x\n2,y\n", "small.csv")
    assert ok.status_code == 201, ok.text  # the limit leaves room for an ordinary parse
    data, before_count = _memory_hungry_parquet(), _dataset_count()
    with RssSampler(os.getpid()) as rss:  # this process is the API process (TestClient)
        r = upload(client, owner, data, "hungry.parquet")
    assert_problem(r, 413, f"the upload needs more than {limit} MiB to read")
    # parsed in this process, the file raised its peak by ~450 MiB
    assert rss.growth_mib < 100, f"the API process grew by {rss.growth_mib:.0f} MiB"
    assert _dataset_count() == before_count


def test_a_parse_past_the_time_limit_is_422(client, owner, monkeypatch):
    from app.config import get_settings

    monkeypatch.setattr(get_settings(), "upload_parse_time_limit_s", 0.001)
    r = upload(client, owner, _memory_hungry_parquet(), "slow.parquet")
    assert_problem(r, 422, "longer than 0.001 s to read", "time limit")


def test_the_parsers_refusals_come_back_unchanged(client, owner):
    assert_problem(upload(client, owner, b"", "empty.csv"), 422, "the uploaded file is empty")
    body = assert_problem(upload(client, owner, b"a,a\n1,2\n"), 422)
    assert body["detail"] == "column 'a' appears more than once in the header"
    assert body["type"] == "https://veil.dev/problems/unprocessable"
    # raised after the parse, by the schema overrides (also in the child)
    r = upload(client, owner, b"a,b\n1,x\n", schema={"b": {"type": "numeric"}})
    assert_problem(r, 422, "column 'b': row 1 is not a number")
    r = upload(client, owner, b"1 2\n2 3\n", "t.dat", schema={"a": {"role": "label"}})
    assert_problem(r, 422, "a transaction file has no columns to describe")


def test_a_refusal_keeps_its_class_status_and_errors():
    from app.datasets.isolated import _reraised
    from app.errors import PayloadTooLarge, Unprocessable

    issue = [{"loc": ["x"], "msg": "m", "type": "t"}]
    exc = _reraised({"kind": "refused", "class": "PayloadTooLarge", "status": 413,
                     "detail": "too big", "errors": issue}, "parquet", 2048)
    assert type(exc) is PayloadTooLarge and exc.detail == "too big" and exc.errors == issue
    crashed = _reraised({"kind": "internal", "type": "KeyError", "where": "parsing.py:1"}, "csv", 2048)
    assert type(crashed) is Unprocessable and crashed.detail == "the file could not be read as csv"
    assert type(_reraised({"kind": "memory"}, "csv", 64)) is PayloadTooLarge
