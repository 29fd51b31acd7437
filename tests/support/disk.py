"""A full disk for one file: /dev/full answers every write with ENOSPC, as a full file system
does (tests/api/test_disk_full.py, tests/worker/test_disk_full_jobs.py)."""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path


def full_file_in_temporary_folders(monkeypatch, prefix: str, name: str) -> None:
    """Every temporary folder made with ``prefix`` holds ``name`` already, pointing at /dev/full."""
    real = tempfile.TemporaryDirectory

    @contextlib.contextmanager
    def seeded(*args, **kwargs):
        with real(*args, **kwargs) as tmp:
            if kwargs.get("prefix") == prefix:
                os.symlink("/dev/full", Path(tmp) / name)
            yield tmp

    monkeypatch.setattr(tempfile, "TemporaryDirectory", seeded)
