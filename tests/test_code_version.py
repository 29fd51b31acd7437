"""The code version a release records names the code that ran: the checkout's commit, marked
`.dirty` when the package's tracked files differ from it. A `veil serve` started from a tree
with uncommitted changes stamped the bare commit (provenance acceptance check)."""

from __future__ import annotations

import subprocess
from pathlib import Path

from app.version import checkout_commit


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=repo,
                          check=True, capture_output=True, text=True).stdout.strip()


def test_the_commit_is_marked_dirty_when_the_package_has_uncommitted_changes(tmp_path):
    package = tmp_path / "app"
    package.mkdir()
    (package / "mod.py").write_text("X = 1\n")
    (tmp_path / "README.md").write_text("readme\n")
    _git(tmp_path, "init", "-q")
    _git(tmp_path, "add", ".")
    _git(tmp_path, "commit", "-q", "-m", "first")
    head = _git(tmp_path, "rev-parse", "--short=12", "HEAD")
    assert checkout_commit(package) == head
    (tmp_path / "README.md").write_text("changed, outside the package\n")
    (package / "new_untracked.py").write_text("Y = 2\n")
    assert checkout_commit(package) == head
    (package / "mod.py").write_text("X = 2\n")
    assert checkout_commit(package) == f"{head}.dirty"


def test_no_checkout_no_commit(tmp_path):
    assert checkout_commit(tmp_path) == ""
