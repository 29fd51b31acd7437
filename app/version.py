"""The code version stamped on every release: the package version and, when the source is a
git checkout, the commit — with `.dirty` when the package's tracked files differ from it."""

from __future__ import annotations

import subprocess
from functools import lru_cache
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path


@lru_cache
def code_version() -> str:
    """Read once per process: a process runs the code it imported, so `veil serve` and every
    worker call this when they start (a first call at the first release recorded whatever
    commit the checkout had moved to by then)."""
    try:
        base = version("veil")
    except PackageNotFoundError:
        base = "0"
    from app.config import get_settings

    commit = get_settings().commit or checkout_commit(Path(__file__).parent)
    return f"{base}+{commit}" if commit else base


def checkout_commit(package: Path) -> str:
    """HEAD of the checkout holding ``package`` (12 hex digits), `.dirty` appended when a tracked
    file under ``package`` differs from it; "" outside a checkout."""
    head = _git(package, "rev-parse", "--short=12", "HEAD")
    if not head:
        return ""
    # --no-optional-locks: a status refreshes the index under its lock when it can, which would
    # make a commit made meanwhile in the same checkout fail
    changed = _git(package, "--no-optional-locks", "status", "--porcelain", "--untracked-files=no", "--", ".")
    return f"{head}.dirty" if changed else head


def _git(cwd: Path, *args: str) -> str:
    try:
        done = subprocess.run(["git", *args], capture_output=True, text=True, timeout=5, cwd=cwd)
    except (OSError, subprocess.SubprocessError):
        return ""
    return done.stdout.strip() if done.returncode == 0 else ""
