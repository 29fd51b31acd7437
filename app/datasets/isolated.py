"""An upload read in a child process under a memory and a time limit (like a job: see
app/worker/runner.py). A parse may allocate many times the file's size (a Parquet file's
footer can pass the decoded-size budget and still need gigabytes; a transaction file needs
15–22× its size), and a process keeps the memory it grew to: the child returns it all
when it exits, and is killed when it grows past the limit.

The child gets the file's path and writes the Parquet payload next to it; what comes back
through a small result file is the shape, rows and columns, or the error the parser raised
(its class, status, detail and errors), raised again here as it is. A stored table's schema
change (PUT …/schema: decode, check, re-code a type) runs the same way, under the same limits."""

from __future__ import annotations

import logging
import os
import pickle
import tempfile
import time
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from app import errors, isolation
from app.config import get_settings
from app.datasets.encode import Encoded, apply_schema_update, encode_upload
from app.datasets.parsing import Limits
from app.datasets.schema import SchemaUpdate
from app.errors import (TEMP_FULL, InsufficientStorage, PayloadTooLarge, Unprocessable, VeilError,
                        out_of_disk_space)

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
    result_path = payload_path.with_name(payload_path.name + ".result")
    spec = {"task": "upload", "path": str(path), "fmt": fmt, "limits": limits, "update": update,
            "payload_path": str(payload_path)}
    return _run(spec, result_path, _UPLOAD)


def apply_schema(payload_path: Path, columns: list[dict[str, Any]], update: SchemaUpdate,
                 out_path: Path) -> tuple[list[dict[str, Any]], bool]:
    """apply_schema_update(...) in a child process, under the upload limits: the stored table is
    decoded (and re-encoded for a type change) there, not in the API process, which would keep
    the memory (4.95 M rows × 15 columns: +1.2 GiB)."""
    result_path = out_path.with_name(out_path.name + ".result")
    spec = {"task": "schema", "payload_path": str(payload_path), "columns": columns,
            "update": update, "out_path": str(out_path)}
    return _run(spec, result_path, _SCHEMA)


@dataclass(frozen=True)
class _Task:
    """What the child does, as its answers word it."""
    too_large: str  # past the memory limit ({limit}: MiB)
    too_slow: str   # past the time limit ({limit}: seconds)
    ended: str      # the child died without a result
    failed: str     # the child failed with anything but a refusal ({fmt})


_UPLOAD = _Task("the upload needs more than {limit} MiB to read (the memory limit for reading an "
                "upload); upload fewer rows or columns",
                "the file takes longer than {limit:g} s to read (the time limit for reading an upload)",
                "the file could not be read: the process reading it ended unexpectedly",
                "the file could not be read as {fmt}")
_SCHEMA = _Task("the schema change needs more than {limit} MiB to apply (the memory limit for "
                "reading an upload, VEIL_UPLOAD_MEMORY_LIMIT_MB); change fewer columns at once",
                "the schema change takes longer than {limit:g} s to apply (the time limit for reading "
                "an upload, VEIL_UPLOAD_PARSE_TIME_LIMIT_S)",
                "the schema change could not be applied: the process applying it ended unexpectedly",
                "the schema change could not be applied")


def _run(spec: dict[str, Any], result_path: Path, task: _Task) -> Any:
    settings = get_settings()
    memory_limit_mb, time_limit_s = settings.upload_memory_limit_mb, settings.upload_parse_time_limit_s
    spec = {**spec, "result_path": str(result_path), "parent_pid": os.getpid()}
    what = spec.get("fmt") or spec["task"]
    proc = _context().Process(target=_child, args=(spec,), daemon=True)
    started = time.monotonic()
    proc.start()
    try:
        while proc.is_alive():
            if time.monotonic() - started > time_limit_s:
                raise Unprocessable(task.too_slow.format(limit=time_limit_s))
            if isolation.rss_bytes(proc.pid) > memory_limit_mb * 1024 * 1024:
                raise _too_large(memory_limit_mb, task)
            proc.join(_POLL_S)  # returns as soon as the child exits
    finally:
        if proc.is_alive():
            proc.kill()
        proc.join(5)
    if not result_path.exists():
        if proc.exitcode == isolation.NO_SPACE_EXIT:
            raise _no_space(what)
        log.error("the process reading an upload (%s) ended without a result (exit code %s)",
                  what, proc.exitcode)
        raise Unprocessable(task.ended)
    with open(result_path, "rb") as f:
        out = pickle.load(f)
    if "ok" in out:
        return out["ok"]
    raise _reraised(out["error"], what, memory_limit_mb, task)


def _no_space(what: str) -> InsufficientStorage:
    log.error("reading an upload (%s): out of disk space in the temporary folder %s", what,
              tempfile.gettempdir())
    return InsufficientStorage(TEMP_FULL)


def _too_large(memory_limit_mb: int, task: _Task = _UPLOAD) -> PayloadTooLarge:
    return PayloadTooLarge(task.too_large.format(limit=memory_limit_mb))


def _reraised(error: dict[str, Any], fmt: str, memory_limit_mb: int, task: _Task = _UPLOAD) -> VeilError:
    if error["kind"] == "refused":
        cls = getattr(errors, error["class"], None)
        if isinstance(cls, type) and issubclass(cls, VeilError) and cls.status == error["status"]:
            return cls(error["detail"], errors=error["errors"])
        return errors.FrameworkError(error["status"], error["detail"])
    if error["kind"] == "memory":
        return _too_large(memory_limit_mb, task)
    if error["kind"] == "no_space":
        return _no_space(fmt)
    log.error("reading an upload (%s) failed with %s at %s", fmt, error["type"], error["where"])
    return Unprocessable(task.failed.format(fmt=fmt))


def _child(spec: dict[str, Any]) -> None:
    """The child's work: never touches the database; writes its result file last."""
    isolation.exit_with_parent(spec["parent_pid"])
    try:
        if spec["task"] == "schema":
            result: Any = apply_schema_update(Path(spec["payload_path"]), spec["columns"], spec["update"],
                                              Path(spec["out_path"]))
        else:
            result = encode_upload(Path(spec["path"]), spec["fmt"], spec["limits"], spec["update"],
                                   Path(spec["payload_path"]))
        out: dict[str, Any] = {"ok": result}
    except VeilError as exc:
        out = {"error": {"kind": "refused", "class": type(exc).__name__, "status": exc.status,
                         "detail": exc.detail, "errors": exc.errors}}
    except MemoryError:
        out = {"error": {"kind": "memory"}}
    except Exception as exc:  # never a data value: the type and where, not the text
        frame = traceback.extract_tb(exc.__traceback__)[-1]
        kind = "no_space" if out_of_disk_space(exc) else "internal"
        out = {"error": {"kind": kind, "type": type(exc).__name__,
                         "where": f"{os.path.basename(frame.filename)}:{frame.lineno}"}}
    isolation.write_result(spec["result_path"], out)
