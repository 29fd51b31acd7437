"""The code version stamped on every release: the package version and, when the source is a
git checkout, the commit."""

from __future__ import annotations

import os
import subprocess
from functools import lru_cache
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path


@lru_cache
def code_version() -> str:
    try:
        base = version("veil")
    except PackageNotFoundError:
        base = "0"
    commit = os.environ.get("VEIL_COMMIT")
    if not commit:
        try:
            commit = subprocess.run(["git", "rev-parse", "--short=12", "HEAD"], capture_output=True,
                                    text=True, timeout=5, cwd=Path(__file__).parent).stdout.strip()
        except (OSError, subprocess.SubprocessError):
            commit = ""
    return f"{base}+{commit}" if commit else base
