"""Runs one job attempt: claim it (fencing), run the method in a child process with a time
and a memory limit, relay progress and cancellation, and store the outcome in ONE
transaction that only commits if this attempt still owns the job."""

from __future__ import annotations

import dataclasses
import hashlib
import logging
import os
import pickle
import queue as queue_module
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any, Callable


from app import isolation
from app.audit.service import record_job
from app.blobs import repository as blobs
from app.budgets import service as budgets
from app.config import get_settings
from app.datasets import repository as datasets_repo
from app.datasets.schema import column_infos
from app.db import DATABASE_AWAY, transaction
from app.errors import out_of_disk_space
from app.jobs import repository as jobs_repo
from app.jobs.service import source_of
from app.jsonsafe import jsonable
from app.models import service as models_service
from app.privacy import registry
from app.releases import repository as releases_repo
from app.releases import service as releases_service
from app.reports import service as reports_service

log = logging.getLogger("veil.runner")
WORKER_ID = f"{os.uname().nodename}:{os.getpid()}"
_CANCEL_GRACE_S = 2.0
_RETRYABLE = {"crashed"}  # a child that died unexpectedly may succeed on another attempt
# failures refunded when the job drew no randomness ("randomness_drawn" False in its outcome)
_REFUNDABLE = {"invalid_input", "input_deleted", "memory_limit", "time_limit", "cancelled", "crashed",
               "no_disk_space", "method_unavailable"}

# Test-only fault injection, read once at start: the reliability tests (tests/reliability,
# docs/reliability.md) make a worker die at the worst moments of a job. Never set in production.
#   exit_before_commit: die after the release is written, before its transaction commits;
#   exit_after_commit:  die right after the job's final transaction commits.
_FAULT = os.environ.get("VEIL_FAULT_INJECT", "")


def _fault_point(name: str) -> None:
    if _FAULT == name:
        os._exit(70)


# A worker started as `python -m app` (app/__main__.py) is not re-run in its job processes
# (multiprocessing skips `__main__` modules); one started as the `veil` script is, as
# "__mp_main__": preloading app.cli keeps that to the script's two lines, not app.cli's imports
# (pydantic-settings and friends: ~0.1 s a job otherwise).
_mp = isolation.forkserver(["app.cli", "app.config", "app.worker.child"])


def warm_up() -> None:
    """Start the forkserver (it imports the whole library once) and multiprocessing's
    resource tracker (a Queue or Event starts it) now, and import the child module here too,
    so the first job pays for none of them (≈ 2 s otherwise)."""
    from app.worker import child  # noqa: F401  (the parent pickles child.main by reference)

    q, ev = _mp.Queue(), _mp.Event()
    proc = _mp.Process(target=_noop)
    proc.start()
    proc.join()
    q.close()
    del ev


def _noop() -> None:
    pass


class Fenced(Exception):
    """This attempt no longer owns the job (requeued after a stall, or finished elsewhere)."""


def _never() -> bool:
    return False


def execute(job_id: uuid.UUID, shutting_down: Callable[[], bool] = _never) -> None:
    t0 = time.perf_counter()
    with transaction() as session:
        job = jobs_repo.claim(session, job_id, WORKER_ID)
        if job is None:
            log.info("job %s is not queued; delivery ignored", job_id)
            return
        record_job(session, job, actor="worker", action="job.started",
                   details={"attempt": job["attempt"], "worker": WORKER_ID})
        inputs = _load_inputs(session, job)
    t1 = time.perf_counter()
    outcome = _run_in_temporary_folder(job, inputs, shutting_down)
    t2 = time.perf_counter()
    try:
        error, ended = _finish_when_the_database_answers(job, inputs, outcome)
        _fault_point("exit_after_commit")
    except Fenced:
        error, ended = None, "fenced off"
        log.warning("job %s attempt %s was fenced off; its result is discarded",
                    job_id, job["attempt"])
    if error is not None and error["type"] != "worker_shutdown":
        _log_failure(job, error)
    # what became of the attempt, as its audit event says (procrastinate logs "Success" for all)
    log.info("job %s (%s) attempt %s %s: load %.3f s, run %.3f s, store %.3f s", job_id, job["method"],
             job["attempt"], ended, t1 - t0, t2 - t1, time.perf_counter() - t2)


def _load_inputs(session, job) -> dict[str, Any]:
    source_release = None
    if job["release_id"] is not None:
        source_release = releases_repo.get(session, job["release_id"], job["tenant"])
        payload = blobs.read(session, source_release["blob_id"])
        columns, shape = source_release["columns"], source_release["shape"]
    elif job["dataset_id"] is not None:
        # FOR KEY SHARE: a delete committed between this read and the blob's left no bytes (the
        # job failed 'internal', its ε kept); now the delete waits for the claim's commit, or
        # has committed and the job fails input_deleted having run nothing
        ds = datasets_repo.get(session, job["tenant"], job["dataset_id"], for_key_share=True)
        if ds["blob_id"] is None:
            return {"error": {"type": "input_deleted", "message": "the dataset was deleted before the job ran"},
                    "randomness_drawn": False}  # nothing ran: refunded like a job cancelled while queued
        payload = blobs.read(session, ds["blob_id"])
        columns, shape = ds["columns"], ds["shape"]
    else:
        payload, columns, shape = None, [], None
    root_sha = None
    hierarchies: dict[str, str] = {}
    if job["dataset_id"] is not None:
        root = datasets_repo.get(session, job["tenant"], job["dataset_id"])
        root_sha = root["sha256"]
        spec = registry.get(job["method"])
        if shape == "table" and spec is not None and spec.uses_hierarchies:  # the others never read them
            hierarchies = datasets_repo.hierarchy_texts(session, job["dataset_id"])
    return {"payload": payload, "columns": columns, "shape": shape, "hierarchies": hierarchies,
            # read when the job starts (a hierarchy uploaded after the submission counts):
            # the release's audit event names the ones it was made with (_used_hierarchies)
            "hierarchies_sha256": {c: hashlib.sha256(t.encode()).hexdigest() for c, t in hierarchies.items()},
            "source_release": source_release, "input_sha256": root_sha or "",
            "source": dataclasses.asdict(source_of(source_release)) if source_release else None}


def _no_disk_space(randomness_drawn: bool) -> dict[str, Any]:
    """A full temporary folder: the attempt fails at once, saying so. Its write raised out of the
    task, and the job stayed `running` until the stall timeout, then failed `stalled` (the
    server's folder is in the log, not in the tenant's message)."""
    return {"error": {"type": "no_disk_space", "message":
                      "the worker had no disk space left for the job's files: nothing was released; "
                      "an admin can retry the job once an operator has freed space"},
            "randomness_drawn": randomness_drawn}


# A result the database had no room for (the job's own files are in the temporary folder).
_DATABASE_FULL_MESSAGE = ("the database had no disk space left for the job's result: nothing was released; "
                          "an admin can retry the job once an operator has freed space")


def _run_in_temporary_folder(job, inputs: dict[str, Any], shutting_down: Callable[[], bool]) -> dict[str, Any]:
    if "error" in inputs:
        return inputs
    if registry.get(job["method"]) is None:
        # VEIL_PLUGINS set for the API but not for this worker, or a worker of an older version:
        # its process failed 'internal' (an AttributeError) keeping the ε, although nothing ran
        return {"error": {"type": "method_unavailable", "message":
                          f"this worker has no method {job['method']!r} (a VEIL_PLUGINS module the API "
                          "loads and it does not, or an older version): nothing ran; an admin can retry "
                          "the job once every worker has it"}, "randomness_drawn": False}
    try:
        folder = tempfile.TemporaryDirectory(prefix="veil-job-")
    except OSError as exc:
        if not out_of_disk_space(exc):
            raise
        return _no_disk_space(randomness_drawn=False)
    with folder as tmp:
        return _run_child(job, inputs, Path(tmp), shutting_down)


def _run_child(job, inputs: dict[str, Any], tmp: Path, shutting_down: Callable[[], bool]) -> dict[str, Any]:
    settings = get_settings()
    input_path = None
    if inputs["payload"] is not None:
        input_path = str(tmp / "input.parquet")
        try:
            Path(input_path).write_bytes(inputs["payload"])
        except OSError as exc:  # before the job's process starts: nothing ran
            if not out_of_disk_space(exc):
                raise
            return _no_disk_space(randomness_drawn=False)
    spec = {
        "method": job["method"], "params": job["params"], "seed": job["seed"],
        "input_path": input_path, "shape": inputs["shape"], "columns": inputs["columns"],
        "column_infos": [dataclasses.asdict(c) for c in column_infos(inputs["columns"])],
        "hierarchies": inputs["hierarchies"], "source": inputs["source"],
        "result_path": str(tmp / "result.pickle"), "output_path": str(tmp / "output.txt"),
        "worker_pid": os.getpid(),
        "memory_limit_bytes": settings.job_memory_limit_mb * 1024 * 1024,
    }
    progress_q = _mp.Queue()
    stop, drawn = _mp.Event(), _mp.Event()  # drawn: set by the child before its first random draw
    from app.worker import child

    proc = _mp.Process(target=child.main, args=(spec, progress_q, stop, drawn), daemon=True)
    started = time.monotonic()
    proc.start()
    progress, stage = 0.0, "running"
    next_beat = 0.0
    cancel_deadline = None
    limit_bytes = settings.job_memory_limit_mb * 1024 * 1024
    failure: dict[str, str] | None = None
    try:
        while proc.is_alive():
            proc.join(0.02)
            progress, stage = _drain(progress_q, progress, stage)
            now = time.monotonic()
            if now >= next_beat:
                next_beat = now + settings.heartbeat_interval_s / 2
                cancel = _beat(job, progress, stage)
                if cancel is None:
                    failure = {"type": "fenced", "message": "attempt fenced off"}
                    break
                if cancel and cancel_deadline is None:
                    stop.set()
                    cancel_deadline = now + _CANCEL_GRACE_S
            if cancel_deadline is not None and now > cancel_deadline:
                failure = {"type": "cancelled", "message": "cancelled while running"}
                break
            if shutting_down():
                failure = {"type": "worker_shutdown", "message": "the worker was stopped during the job"}
                break
            if now - started > settings.job_time_limit_s:
                # the stage it was stopped at says what made it slow (aim on COIL 2000's 86
                # columns: a few rounds of ~4 minutes each, 15% of its progress, said nothing)
                failure = {"type": "time_limit", "message":
                           f"the job exceeded its time limit of {settings.job_time_limit_s:g} s, "
                           f"stopped at {stage!r} ({progress:.0%} done): "
                           + _time_limit_advice(job, progress, now - started)}
                break
            rss = isolation.rss_bytes(proc.pid)
            if rss > limit_bytes:
                failure = {"type": "memory_limit", "message":
                           f"the job exceeded its memory limit of {settings.job_memory_limit_mb} MiB, "
                           f"stopped at {stage!r} ({progress:.0%} done): run it on fewer rows or "
                           "columns, or raise VEIL_JOB_MEMORY_LIMIT_MB"}
                break
        if failure is None:  # the stage the child ended on ("storing the result"), while the result is stored
            progress, stage = _drain(progress_q, progress, stage)
            _beat(job, progress, stage)
    finally:
        if proc.is_alive():
            proc.kill()
        proc.join(5)
        progress_q.close()
        _log_output(job, Path(spec["output_path"]))
    if failure is not None:
        # stopped by a limit before its first draw: nothing random was computed (refunded)
        return {"error": failure, "randomness_drawn": drawn.is_set()}
    result_path = Path(spec["result_path"])
    if not result_path.exists() and proc.exitcode == isolation.NO_SPACE_EXIT:
        return _no_disk_space(randomness_drawn=drawn.is_set())  # it ran, and could not write its result
    if not result_path.exists():
        return {"error": {"type": "crashed", "message":
                          f"the job's process ended without a result (exit code {proc.exitcode})"},
                "randomness_drawn": drawn.is_set()}  # killed from outside (OOM killer) before a draw
    with open(result_path, "rb") as f:
        out = pickle.load(f)
    return out if "error" in out else out["ok"]


def _log_output(job, path: Path) -> None:
    """The job's process writes its stdout and stderr to a file (child._divert_output): the log
    says how much, never what (a method's print may hold data values)."""
    try:
        size = path.stat().st_size
    except OSError:
        return
    if size:
        log.warning("job %s (%s) attempt %s: its process wrote %d bytes to stdout or stderr, not logged "
                    "(they may hold data values; a method reports through ctx.progress, its result and "
                    "its exceptions)", job["id"], job["method"], job["attempt"], size)


def _time_limit_advice(job, progress: float, elapsed: float) -> str:
    """What to change: the method's slow parameters with the values the job ran at (rfk_anonymity
    at its maxima on 3,000 rows needs hours; the stage alone did not say which to lower)."""
    spec = registry.get(job["method"])
    params = job["params"] or {}
    named = [f"{n} ({params[n]!r})" if n in params else n for n in (spec.slow_params if spec else ())]
    pace = (f"at this pace it would need about {elapsed / progress:,.0f} s in all; "
            if progress >= 0.005 else "")
    lower = (f"lower {', '.join(named[:-1])} or {named[-1]}, or " if len(named) > 1
             else f"lower {named[0]}, or " if named else "")
    return f"{pace}{lower}run it on fewer rows or columns, or raise VEIL_JOB_TIME_LIMIT_S"


def _beat(job, progress: float, stage: str) -> bool | None:
    """The attempt's heartbeat: cancel_requested, None when the attempt was fenced off, False
    when the database did not answer — the job runs on (one failed heartbeat killed its process
    and lost its work; the stall timeout still applies: if the database stays away that long, a
    reaper requeues the job and this attempt's result is fenced off)."""
    try:
        with transaction() as session:
            return jobs_repo.heartbeat(session, job["id"], job["attempt"], progress, stage)
    except DATABASE_AWAY as exc:
        log.warning("job %s attempt %s: heartbeat failed (%s); the job runs on", job["id"],
                    job["attempt"], type(exc).__name__)
        return False


def _finish_when_the_database_answers(job, inputs: dict[str, Any],
                                     outcome: dict[str, Any]) -> tuple[dict[str, str] | None, str]:
    """_finish, retried while the database is away, for up to the stall timeout: the result of
    a long job is not thrown away for a blip (after the stall timeout a reaper may have given
    the job a new attempt, and this one is fenced off anyway)."""
    deadline = time.monotonic() + get_settings().stall_timeout_s
    while True:
        try:
            return _finish(job, inputs, outcome)
        except DATABASE_AWAY as exc:
            if out_of_disk_space(exc) and "error" not in outcome:
                # the database's disk is full, not away: retried, the result failed `stalled`
                # minutes later ("the worker stopped responding"); the failure is a few bytes
                log.warning("job %s attempt %s: the database had no disk space for its result",
                            job["id"], job["attempt"])
                outcome = {"error": {"type": "no_disk_space", "message": _DATABASE_FULL_MESSAGE},
                           "randomness_drawn": True}  # it ran: its ε is kept
                continue
            if time.monotonic() > deadline:
                raise
            log.warning("job %s attempt %s: storing the outcome failed (%s); retrying", job["id"],
                        job["attempt"], type(exc).__name__)
            time.sleep(1.0)


def _drain(q, progress: float, stage: str) -> tuple[float, str]:
    while True:
        try:
            progress, stage = q.get_nowait()
        except (queue_module.Empty, EOFError, OSError):
            return progress, stage


def _log_failure(job, error: dict[str, str]) -> None:
    """One line per failed attempt, with the job: the child process does not log (its stderr
    is not the service's JSON log). A refusal of the input is expected, and its message may
    depend on the data (it is withheld from analysts too): its type only."""
    if error["type"] in ("invalid_input", "cancelled", "input_deleted"):
        log.info("job %s (%s) attempt %s ended: %s", job["id"], job["method"], job["attempt"], error["type"])
    else:  # our own messages: the exception's type and line, a limit, an exit code
        where = (f" (the temporary folder {tempfile.gettempdir()})"
                 if error["type"] == "no_disk_space" and error["message"] != _DATABASE_FULL_MESSAGE else "")
        log.error("job %s (%s) attempt %s failed: %s: %s%s", job["id"], job["method"], job["attempt"],
                  error["type"], error["message"], where)


def _finish(job, inputs: dict[str, Any], outcome: dict[str, Any]) -> tuple[dict[str, str] | None, str]:
    """Store the attempt's outcome; returns its error (None when it succeeded) and what became
    of the job, in words for the log ("succeeded", "requeued (crashed)", "failed (time_limit),
    ε 1 refunded")."""
    error = outcome.get("error") if isinstance(outcome, dict) else None
    if error and error["type"] == "fenced":
        raise Fenced()
    with transaction() as session:
        row = jobs_repo.lock_attempt(session, job["id"], job["attempt"])
        if row is None:
            raise Fenced()
        if error is not None and outcome.get("randomness_drawn") is not False:
            jobs_repo.note_randomness_drawn(session, job["id"])  # sticky: later attempts see it
        if error is None and _input_deleted_meanwhile(session, job):
            error = {"type": "input_deleted", "message": "the dataset was deleted while the job ran; "
                     "nothing is released from its purged data"}
        if error is None:
            made = _store(session, row, inputs, outcome)
            jobs_repo.finish(session, job["id"], "succeeded", stage="done")
            _fault_point("exit_before_commit")
            action, details = "job.succeeded", {"attempt": job["attempt"], **made}
        elif error["type"] == "cancelled" or row["cancel_requested"]:
            jobs_repo.finish(session, job["id"], "cancelled",
                             error={"type": "cancelled", "message": "cancelled while running"},
                             stage="cancelled")
            action, details = "job.cancelled", {"while": "running"}
            if _refundable(row, {"type": "cancelled"}, outcome):  # before its first draw
                details["refunded_epsilon"] = _refund(session, row, job["id"])
        elif error["type"] == "worker_shutdown":
            # not the job's fault: queued again at once (not after the stall timeout), and the
            # attempt it used is given back (attempt numbers stay unique: they fence)
            from app.worker import queue

            jobs_repo.requeue(session, job["id"], stage=f"requeued: attempt {job['attempt']} stopped "
                              "by a worker shutdown", give_back_attempt=True)
            queue.enqueue(session, job["id"], job["tenant"])
            action, details = "job.requeued", {"attempt": job["attempt"], "reason": "worker shutdown"}
        elif error["type"] in _RETRYABLE and row["attempt"] < row["max_attempts"]:
            from app.worker import queue

            jobs_repo.requeue(session, job["id"], stage=f"requeued: attempt {job['attempt']} {error['type']}")
            queue.enqueue(session, job["id"], job["tenant"])
            action, details = "job.requeued", {"attempt": job["attempt"], "reason": error["type"]}
        else:
            jobs_repo.finish(session, job["id"], "failed", error=error, stage="failed")
            action, details = "job.failed", {"attempt": job["attempt"], "error": error["type"]}
            if _refundable(row, error, outcome):
                details["refunded_epsilon"] = _refund(session, row, job["id"])
        record_job(session, job, actor="worker", action=action, details=details)
    return error, _ended(action, details)


def _ended(action: str, details: dict[str, Any]) -> str:
    words = action.removeprefix("job.")
    if "reason" in details or "error" in details:
        words += f" ({details.get('reason') or details['error']})"
    if "refunded_epsilon" in details:  # a number, or "Infinity"
        refunded = details["refunded_epsilon"]
        words += f", ε {refunded:g} refunded" if isinstance(refunded, float) else f", ε {refunded} refunded"
    return words


def _input_deleted_meanwhile(session, job) -> bool:
    """A job on a dataset's raw data whose dataset was deleted after the job loaded it. The
    row lock orders this against the delete (which locks it too): either the delete waits for
    this commit (and the release stays, as every earlier release does) or this sees it."""
    if job["release_id"] is not None or job["dataset_id"] is None:
        return False  # a job on a release: that input is not purged by a delete
    # FOR KEY SHARE conflicts with the delete's FOR UPDATE, not with submissions' KEY SHARE:
    # FOR UPDATE here queued every submission on the dataset behind each job's final commit
    # (make load: read p99 44 → 450 ms, submissions 89 → 768 ms)
    ds = datasets_repo.get(session, job["tenant"], job["dataset_id"], for_key_share=True)
    return ds is None or ds["deleted_at"] is not None


def _refund(session, row, job_id) -> Any:
    budgets.refund(session, dataset_id=row["dataset_id"], job_id=job_id, method=row["method"],
                   epsilon=row["epsilon"], actor=row["created_by"])
    return jsonable(float(row["epsilon"]))  # as the audit shows it: ∞ as "Infinity"


def _refundable(row, error: dict[str, Any], outcome: dict[str, Any]) -> bool:
    """A job refused by its method's input checks, stopped by its time or memory limit,
    cancelled or killed from outside (the kernel's OOM killer: "crashed") before its first
    draw, or whose dataset was deleted before it started, released nothing and computed
    nothing random: its ε goes back, like a job cancelled while queued (errph on 4.95 M rows
    stopped while decoding its input kept its ε of 22.5). An infinite ε goes back too: a dataset
    without a cap records it as spent, and kept, it would bar any cap for good although nothing
    was drawn. Every attempt counts: one that drew and then crashed or was lost may have failed
    because of its noise, and the job's record shows it; ``row["randomness_drawn"]``, read
    before this attempt noted its own, says so. (A job whose dataset is deleted while it runs
    has drawn its noise: no "randomness_drawn" False, no refund.)"""
    return (error["type"] in _REFUNDABLE and outcome.get("randomness_drawn") is False
            and not row["randomness_drawn"] and row["epsilon"] is not None)


def _used_hierarchies(inputs: dict[str, Any], encoded: dict[str, Any]) -> dict[str, str]:
    """The hashes of the hierarchies the method was given and says it generalized with
    (ReleaseResult.hierarchies_used: kanonymity on Mondrian was given a numeric QI's and a
    non-QI's and used neither); a method that does not say used every one it was given."""
    given = inputs["hierarchies_sha256"]
    used = encoded.get("hierarchies_used")
    if used is None:
        return dict(given)
    keep = set(used)
    return {c: h for c, h in given.items() if c in keep}


def _store(session, job, inputs: dict[str, Any], encoded: dict[str, Any]) -> dict[str, str]:
    """Store the result; returns what the job made ({"release_id": …} or report_id, model_id)."""
    if encoded["kind"] == "release":
        made = releases_service.store(session, job=job, encoded=encoded, input_sha256=inputs["input_sha256"],
                                      source_release=inputs["source_release"],
                                      hierarchies_sha256=_used_hierarchies(inputs, encoded))
    elif encoded["kind"] == "report":
        made = reports_service.store(session, job=job, encoded=encoded)
    else:
        made = models_service.store(session, job=job, encoded=encoded)
    return {f"{encoded['kind']}_id": str(made)}
