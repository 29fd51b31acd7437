"""An upload read in a child process under a memory and a time limit (like a job: see
app/worker/runner.py). A parse may allocate many times the file's size (a Parquet file's
footer can pass the decoded-size budget and still need gigabytes; a transaction file needs
15–22× its size), and a process keeps the memory it grew to: the child returns it all
when it exits, and is killed when it grows past the limit.

The child gets the file's path and writes the Parquet payload next to it; what comes back
through a small result file is the shape, rows and columns, or the error the parser raised
(its class, status, detail and errors), raised again here as it is."""

from __future__ import annotations

import logging
import os
import pickle
import time
import traceback
from pathlib import Path
from typing import Any

from app import errors, isolation
from app.config import get_settings
from app.datasets.encode import Encoded, encode_upload
from app.datasets.parsing import Limits
from app.datasets.schema import SchemaUpdate
from app.errors import PayloadTooLarge, Unprocessable, VeilError

log = logging.getLogger("veil.uploads")
_POLL_S = 0.02

# The parsing modules are imported once by the forkserver, not by each child (≈ 1 s), and warmed
# up there. app.cli: an API process started from the `veil` script re-runs it in each child as
# "__mp_main__" (see app/worker/runner.py).
# Named when an upload process is wanted (warm_up, encode), not at import: a worker process
# imports this module too (through the services) and its forkserver must not load and warm up
# the parsing modules for nothing.
_PRELOAD = ["app.cli", "app.config", "app.datasets.isolated", "app.datasets.child_warmup"]


def _context():
    return isolation.forkserver(_PRELOAD)


def warm_up() -> None:
    """Start the forkserver now (it imports the parsing modules in the background), so the
    first upload does not wait for it from the start."""
    from multiprocessing import forkserver

    _context()
    forkserver.ensure_running()


def encode(path: Path, fmt: str, limits: Limits, update: SchemaUpdate | None,
           payload_path: Path) -> Encoded:
    """encode_upload(...) in a child process; a refusal is raised as the parser raised it."""
    settings = get_settings()
    memory_limit_mb, time_limit_s = settings.upload_memory_limit_mb, settings.upload_parse_time_limit_s
    result_path = payload_path.with_name(payload_path.name + ".result")
    spec = {"path": str(path), "fmt": fmt, "limits": limits, "update": update,
            "payload_path": str(payload_path), "result_path": str(result_path), "parent_pid": os.getpid()}
    proc = _context().Process(target=_child, args=(spec,), daemon=True)
    started = time.monotonic()
    proc.start()
    try:
        while proc.is_alive():
            if time.monotonic() - started > time_limit_s:
                raise Unprocessable(f"the file takes longer than {time_limit_s:g} s to read "
                                    "(the time limit for reading an upload)")
            if isolation.rss_bytes(proc.pid) > memory_limit_mb * 1024 * 1024:
                raise _too_large(memory_limit_mb)
            proc.join(_POLL_S)  # returns as soon as the child exits
    finally:
        if proc.is_alive():
            proc.kill()
        proc.join(5)
    if not result_path.exists():
        log.error("the process reading an upload (%s) ended without a result (exit code %s)",
                  fmt, proc.exitcode)
        raise Unprocessable("the file could not be read: the process reading it ended unexpectedly")
    with open(result_path, "rb") as f:
        out = pickle.load(f)
    if "ok" in out:
        return out["ok"]
    raise _reraised(out["error"], fmt, memory_limit_mb)


def _too_large(memory_limit_mb: int) -> PayloadTooLarge:
    return PayloadTooLarge(f"the upload needs more than {memory_limit_mb} MiB to read (the memory "
                           "limit for reading an upload); upload fewer rows or columns")


def _reraised(error: dict[str, Any], fmt: str, memory_limit_mb: int) -> VeilError:
    if error["kind"] == "refused":
        cls = getattr(errors, error["class"], None)
        if isinstance(cls, type) and issubclass(cls, VeilError) and cls.status == error["status"]:
            return cls(error["detail"], errors=error["errors"])
        return errors.FrameworkError(error["status"], error["detail"])
    if error["kind"] == "memory":
        return _too_large(memory_limit_mb)
    log.error("reading an upload (%s) failed with %s at %s", fmt, error["type"], error["where"])
    return Unprocessable(f"the file could not be read as {fmt}")


def _child(spec: dict[str, Any]) -> None:
    """The child's work: never touches the database; writes its result file last."""
    isolation.exit_with_parent(spec["parent_pid"])
    try:
        out: dict[str, Any] = {"ok": encode_upload(Path(spec["path"]), spec["fmt"], spec["limits"],
                                                   spec["update"], Path(spec["payload_path"]))}
    except VeilError as exc:
        out = {"error": {"kind": "refused", "class": type(exc).__name__, "status": exc.status,
                         "detail": exc.detail, "errors": exc.errors}}
    except MemoryError:
        out = {"error": {"kind": "memory"}}
    except Exception as exc:  # never a data value: the type and where, not the text
        frame = traceback.extract_tb(exc.__traceback__)[-1]
        out = {"error": {"kind": "internal", "type": type(exc).__name__,
                         "where": f"{os.path.basename(frame.filename)}:{frame.lineno}"}}
    tmp = spec["result_path"] + ".tmp"
    with open(tmp, "wb") as f:
        pickle.dump(out, f, protocol=pickle.HIGHEST_PROTOCOL)
    os.replace(tmp, spec["result_path"])
