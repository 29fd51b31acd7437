"""The child process that runs one method. It never touches the database: it reads its
input from a file, runs the registered method, and writes an encoded result to a file.

It runs under the forkserver (preloaded with the whole library, so a job starts in
milliseconds) and kills itself if the worker that started it disappears.
"""

from __future__ import annotations

import hashlib
import os
import pickle
import signal
import sys
import traceback
from typing import Any

import pandas as pd
import pyarrow.dataset  # noqa: F401  pandas imports it at the first Parquet read: ~0.1 s a job if not preloaded
import pyarrow.parquet  # noqa: F401

from app import codec, isolation
from app.config import get_settings
from app.errors import out_of_disk_space
from app.jsonsafe import jsonable
from app.privacy import registry
from app.privacy.context import Cancelled, RunContext
from app.privacy.data import ColumnInfo, MethodInput, SourceRelease
from app.privacy.guarantees import check_guarantees
from app.privacy.results import ModelResult, ReleaseResult, ReportResult
from app.privacy.rng import SecureRandom

registry.load_all()  # preloaded once in the forkserver


class _SignallingRandom(SecureRandom):
    """Sets ``drawn`` (shared with the worker) before the first randomness is drawn: a job the
    worker stops at its time or memory limit before that has drawn none, and is refunded."""

    def __init__(self, seed, drawn) -> None:
        super().__init__(seed)
        self._drawn = drawn

    def bytes(self, n: int):
        if self.bytes_drawn == 0 and self._drawn is not None:
            self._drawn.set()
        return super().bytes(n)


def main(job: dict[str, Any], progress_queue, stop_event, drawn_event=None) -> None:
    isolation.exit_with_parent(job["worker_pid"])
    if job.get("output_path"):
        _divert_output(job["output_path"])
    # a Ctrl-C reaches the whole process group: the worker decides what becomes of the job
    # (it lets it finish within its shutdown grace period, then stops it and queues it again)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    rng = _SignallingRandom(job["seed"], drawn_event)
    try:
        out = {"ok": _run(job, rng, progress_queue, stop_event)}
    except registry.MethodInputError as exc:
        out = {"error": {"type": "invalid_input", "message": str(exc)}}
    except Cancelled:
        out = {"error": {"type": "cancelled", "message": "cancelled while running"}}
    except MemoryError:
        out = {"error": {"type": "memory_limit", "message": "the job ran out of memory"}}
    except registry.MethodContractError as exc:  # Veil's own check of the result: no data in it
        out = {"error": {"type": "internal", "message": str(exc)}}
    except (Exception, SystemExit) as exc:  # never leak data values: report the type and where, not the text
        # (a method's sys.exit ended the process without a result: a crash, run three times)
        if out_of_disk_space(exc):  # a method's own files in a full folder; the worker knows what was drawn
            os._exit(isolation.NO_SPACE_EXIT)
        frame = traceback.extract_tb(exc.__traceback__)[-1]
        where = f"{os.path.basename(frame.filename)}:{frame.lineno}"  # the worker logs it, with the job
        out = {"error": {"type": "internal", "message": f"the method failed ({type(exc).__name__} "
                                                        f"at {where})"}}
    if "error" in out:  # whether any randomness was drawn decides a refund (app/worker/runner.py)
        out["randomness_drawn"] = rng.bytes_drawn > 0
    isolation.write_result(job["result_path"], out)  # the disk full: exit NO_SPACE_EXIT


def _divert_output(path: str) -> None:
    """What the job's process writes to stdout or stderr (a method's print, a library's warning)
    goes to a file of the job's folder, not into the worker's log: it went there as bare text
    between the JSON lines, data values and all (a plugin's debugging print of a record). The
    worker logs its size (runner.py)."""
    sys.stdout.flush()
    sys.stderr.flush()
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    except OSError:  # a full folder: the job finds out when it writes its result (NO_SPACE_EXIT)
        return
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.close(fd)


def _run(job: dict[str, Any], rng: SecureRandom, progress_queue, stop_event) -> dict[str, Any]:
    spec = registry.get(job["method"])
    params = spec.params.model_validate(job["params"])

    def report(fraction: float, stage: str) -> None:
        progress_queue.put((fraction, stage))

    report(0.0, "loading the input")  # a limit can stop a job here (a large table's decoding)
    data, integers = _load_input(job)
    # the method's own stages follow; one that reports none was stopped "at 'loading the input'"
    report(0.0, "running")

    ctx = RunContext(rng=rng, on_progress=report, should_stop=stop_event.is_set,
                     memory_limit_bytes=job.get("memory_limit_bytes"))
    result = spec.run(data, params, ctx)
    report(1.0, "storing the result")  # encoding and storing can take seconds (plots, big tables)
    return encode(result, job, integers=integers)


def _load_input(job: dict[str, Any]) -> tuple[MethodInput, list[str]]:
    """The method's input, and the table's nullable integer columns, which it gets as float64
    (codec.for_methods) and its release stores as integers again (codec.restore_integers)."""
    columns = [ColumnInfo(**{**c, "inferred": tuple(c.get("inferred", ()))}) for c in job["column_infos"]]
    source = SourceRelease(**job["source"]) if job["source"] else None
    hierarchies = {}
    if job["hierarchies"]:  # given to a method registered with uses_hierarchies only (runner.py)
        from app.privacy.anonymity.hierarchies import parse_hierarchies

        hierarchies = parse_hierarchies(job["hierarchies"], get_settings().max_cell_length)
    if job["input_path"] is None:
        return MethodInput(columns=columns, source=source), []
    with open(job["input_path"], "rb") as f:
        payload = f.read()
    if job["shape"] == "transactions":
        return MethodInput(columns=columns, transactions=codec.parquet_to_transactions(payload),
                           hierarchies=hierarchies, source=source), []
    frame = codec.parquet_to_table(payload)
    return MethodInput(columns=columns, frame=codec.for_methods(frame), hierarchies=hierarchies,
                       source=source), codec.nullable_integers(frame)


_RESULTS = {registry.MethodKind.release: (ReleaseResult,), registry.MethodKind.analysis: (ReportResult, ModelResult),
            registry.MethodKind.experiment: (ReportResult, ModelResult)}


def _check_result_type(result, spec: registry.MethodSpec) -> None:
    """A release method returns a ReleaseResult, an analysis or experiment a report or a model:
    an analysis's release was published from an analyst's job with no ε debited."""
    expected = _RESULTS[spec.kind]
    if not isinstance(result, expected):
        names = " or a ".join(t.__name__ for t in expected)
        got = (f"a {type(result).__name__}" if isinstance(result, (ReleaseResult, ReportResult, ModelResult))
               else f"{type(result).__name__}, not a result object")
        raise registry.MethodContractError(
            f"method {spec.name!r} returned {got}: a method registered as {spec.kind.value} "
            f"(MethodSpec.kind) returns a {names} (app.privacy.results)")


def encode(result, job: dict[str, Any], integers: list[str] = ()) -> dict[str, Any]:
    """``integers``: the input table's nullable integer columns (_load_input)."""
    spec = registry.get(job["method"])
    _check_result_type(result, spec)
    if isinstance(result, ReleaseResult):
        check_guarantees(result.guarantees, job["method"])  # the API's Release schema promises them
        if result.transactions is not None:
            payload, shape, rows = codec.transactions_to_parquet(result.transactions), "transactions", \
                result.transactions.n_transactions
            columns = [{"name": "items", "type": "categorical", "role": "insensitive", "missing": 0,
                        "distinct": result.transactions.n_items, "bounds": None, "categories": None,
                        "integer": False, "inferred": []}]
        else:
            columns = _output_columns(result.frame, result.columns, job["columns"])
            frame = codec.restore_integers(_nullable_booleans(result.frame, columns), list(integers))
            payload, shape, rows = codec.table_to_parquet(frame), "table", len(frame)
        return {"kind": "release", "payload": payload, "shape": shape, "rows": rows,
                "output_sha256": hashlib.sha256(codec.parquet_download(payload, shape)).hexdigest(),
                "columns": jsonable(columns), "guarantees": jsonable(_on_source(result.guarantees, job)),
                "metrics": jsonable(result.metrics), "metadata": jsonable(result.metadata),
                "hierarchies_used": (None if result.hierarchies_used is None
                                     else list(result.hierarchies_used))}
    if isinstance(result, ReportResult):
        if result.kind != (spec.report_kind or spec.name):  # the reports list filters by it
            raise registry.MethodContractError(
                f"{spec.name} returned a report of kind {result.kind!r}; its spec says "
                f"{spec.report_kind or spec.name!r} (MethodSpec.report_kind)")
        data = dict(result.data)
        if result.tables:
            data["tables"] = {name: table.to_dict(orient="records") for name, table in result.tables.items()}
        return {"kind": "report", "report_kind": result.kind, "data": jsonable(data),
                "plots": {name: {"png": p.png, "svg": p.svg} for name, p in result.plots.items()}}
    return {"kind": "model", "model": pickle.dumps(result.model, protocol=pickle.HIGHEST_PROTOCOL),
            "metadata": jsonable(result.metadata), "metrics": jsonable(result.metrics)}


CHAIN_KEYS = ("notion", "private", "epsilon", "delta", "protected_columns", "unprotected_columns")


def _on_source(guarantees: dict[str, Any], job: dict[str, Any]) -> dict[str, Any]:
    """A step run on a release states its guarantee for that release's records (aim on an mst
    release: ε of aim over the mst table), which reads as if it were the dataset's; say so, and
    list the earlier steps' guarantees beside it (`chain_guarantees`, oldest first): trr on an
    errph release says notion 'none' for its own step while the errph columns keep their ε."""
    source = job.get("source")
    if not source:
        return guarantees
    note = (f"this step ran on release {source['release_id']} ({source['method']}), not on the dataset: "
            "the guarantee above is stated for that release's records; what the dataset's records "
            "keep is given by the steps of the chain (chain_guarantees; a DP step's guarantee also "
            "covers everything computed from its release: post-processing)")
    steps = SourceRelease(**source).steps()
    earlier = [{"release_id": step["release_id"], "method": step["method"],
                **{k: step["guarantees"].get(k) for k in CHAIN_KEYS}} for step in steps]
    return {**guarantees, "statements": [*guarantees.get("statements", []), note],
            "chain_guarantees": earlier}


def _nullable_booleans(frame: pd.DataFrame, columns: list[dict[str, Any]]) -> pd.DataFrame:
    """A boolean column with missing cells, as pandas' nullable "boolean" (as a dataset's is
    stored): a method hands it back as objects (True, False, None), which a Parquet reader read
    back as object while the dataset's download read as boolean (walk2 acceptance check).
    Left as it is when a value is no truth value (the schema is the method's word, not this)."""
    names = [c["name"] for c in columns if c["type"] == "boolean" and frame[c["name"]].dtype == object
             and pd.api.types.infer_dtype(frame[c["name"]], skipna=True) == "boolean"]
    return frame.astype({name: "boolean" for name in names}) if names else frame


def _output_columns(frame: pd.DataFrame, declared: list[ColumnInfo] | None,
                    input_columns: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The release's schema: the method's declared columns, else the input's entries for
    columns that kept their name, re-counted on the release (never on the raw data)."""
    from app.datasets.schema import infer_type

    by_name = {c["name"]: c for c in input_columns}
    if declared is not None:
        by_name.update({c.name: {"name": c.name, "type": c.type, "role": c.role,
                                 "bounds": list(c.bounds) if c.bounds else None,
                                 "categories": list(c.categories) if c.categories else None,
                                 "integer": c.integer, "inferred": list(c.inferred)} for c in declared})
    out = []
    for name in frame.columns:
        series = frame[name]
        base = dict(by_name.get(name) or {"name": str(name), "type": infer_type(series),
                                           "role": "insensitive", "bounds": None,
                                           "categories": None, "integer": False, "inferred": ["type"]})
        base.pop("profile", None)
        base["missing"] = int(series.isna().sum())
        base["distinct"] = int(series.nunique(dropna=True))
        out.append(base)
    return out
