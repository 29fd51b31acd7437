"""The embedded PostgreSQL's runtime folder (pgserver's lock between the processes that use the
server) is `VEIL_DATA_DIR/run`, on every start. It was made with mode 0755, and platformdirs
takes `XDG_RUNTIME_DIR` only at 0700: from the second start on every process fell back to
`runtime-<uid>` in its own temporary folder — left behind in the operator's TMPDIR (a soak's
restart), and, since `veil serve` gives its workers a TMPDIR of their own, not the lock its
workers took."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _migrate(data_dir: Path, tmpdir: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "XDG_RUNTIME_DIR")}
    env.update(VEIL_DATA_DIR=str(data_dir), TMPDIR=str(tmpdir))
    done = subprocess.run([sys.executable, "-m", "app", "migrate"], env=env, cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]


def test_every_start_keeps_the_runtime_folder_in_the_data_directory(tmp_path):
    data_dir, tmpdir = tmp_path / "data", tmp_path / "tmp"
    tmpdir.mkdir()
    for _ in range(2):  # the first start made the folder; the second one read it
        _migrate(data_dir, tmpdir)
    assert sorted(p.name for p in tmpdir.iterdir()) == []
    run = data_dir / "run"
    assert stat.S_IMODE(run.stat().st_mode) == 0o700
    assert (run / "python_PostgresServer" / ".lockfile").exists()
