"""Imported by the forkserver only (the first module it preloads, app/isolation.py): it and the
job and upload processes it forks ignore SIGTERM, as multiprocessing already makes them ignore
SIGINT.

A stop signal sent to a whole process group or cgroup (systemd's default KillMode, `kill --
-PGID`, a terminal's Ctrl-C) reaches them beside the worker or API process that started them.
The forkserver died of SIGTERM, and its parent then read each running child's exit code as 255
from the closed socket: a worker recorded its job `crashed` at once (an attempt used) while the
job's process ran on unseen, instead of the shutdown grace period the worker gives it. The
parent decides what becomes of a child (it kills it with SIGKILL); the forkserver still exits
when its parent is gone (multiprocessing's alive pipe), and a child when its parent is
(isolation.exit_with_parent)."""

from __future__ import annotations

import signal
import sys

if sys.argv[:1] == ["-c"] and "multiprocessing.forkserver" in sys.modules:  # never in the parent
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
