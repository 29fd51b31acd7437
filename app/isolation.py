"""Child processes under a memory and a time limit: the forkserver they start from, their
resident memory, and their exit when the process that started them is gone. Jobs
(app/worker/runner.py) and uploads (app/datasets/isolated.py) use them."""

from __future__ import annotations

import multiprocessing as mp
import os
import pickle
import threading
import time
from typing import Any

from app.errors import out_of_disk_space

_mp = mp.get_context("forkserver")
# ordered, without repeats; first, what makes the forkserver and its children ignore SIGTERM
_preload: dict[str, None] = {"app.forkserver_signals": None}


def forkserver(preload: list[str]):
    """The forkserver context, with ``preload`` added to the modules the forkserver imports
    once when it starts (a child forked from it starts in milliseconds). A process has one
    forkserver: modules named after it started are imported by each child instead."""
    _preload.update(dict.fromkeys(preload))
    _mp.set_forkserver_preload(list(_preload))
    return _mp


def rss_bytes(pid: int | None) -> int:
    """The process's resident memory (0 once it is gone)."""
    try:
        with open(f"/proc/{pid}/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


# A child that cannot write its result because the disk is full exits with this status
# (sysexits' EX_TEMPFAIL), so its parent can say so: without a result it read as a crash.
NO_SPACE_EXIT = 75


def write_result(path: str, out: Any) -> None:
    """The child's result, written whole or not at all (its parent reads it once the child
    has exited); the disk full: exit NO_SPACE_EXIT."""
    tmp = path + ".tmp"
    try:
        with open(tmp, "wb") as f:
            pickle.dump(out, f, protocol=pickle.HIGHEST_PROTOCOL)
        os.replace(tmp, path)
    except OSError as exc:
        if out_of_disk_space(exc):
            os._exit(NO_SPACE_EXIT)
        raise


def exit_with_parent(parent_pid: int) -> None:
    """Exit this child when the process that started it is gone (e.g. SIGKILLed): nothing
    else would end it, and no one would read what it makes."""
    def watch() -> None:
        while True:
            try:
                os.kill(parent_pid, 0)
            except ProcessLookupError:
                os._exit(70)
            time.sleep(0.5)

    threading.Thread(target=watch, daemon=True).start()
