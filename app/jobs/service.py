"""Jobs: accept (validate, price, debit, queue — one transaction), read, list, cancel, retry."""

from __future__ import annotations

import hashlib
import json
import math
import uuid
from dataclasses import dataclass, replace
from decimal import Decimal
from typing import Any

from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from app import pagination
from app.audit.service import record, record_job
from app.auth.schemas import Principal, Role
from app.auth.service import tenant_scope
from app.budgets import service as budgets
from app.config import get_settings
from app.datasets import repository as datasets_repo
from app.datasets import service as datasets
from app.datasets.schema import column_infos
from app.jsonsafe import jsonable
from app.errors import Conflict, Forbidden, NotFound, TooManyRequests, Unprocessable
from app.jobs import repository
from app.privacy import registry
from app.privacy.data import SourceRelease
from app.releases import repository as releases
from app.worker import queue


@dataclass
class ResolvedInput:
    dataset_id: uuid.UUID | None  # the root dataset (also for a release input)
    release_id: uuid.UUID | None
    shape: str | None
    columns: list[dict[str, Any]]
    source: SourceRelease | None
    rows: int | None = None


def source_of(release_row) -> SourceRelease:
    return SourceRelease(release_id=str(release_row["id"]), method=release_row["method"],
                         params=release_row["params"], guarantees=release_row["guarantees"],
                         metadata=release_row["metadata"], chain=tuple(release_row["chain"]))


def covering_dp_release(source: SourceRelease | None) -> str | None:
    """The id of a step of the source's chain (itself included) that is central DP of its whole
    table — private, a finite ε, no column left unprotected — or None. Whatever is computed from
    such a release is post-processing: it costs the dataset's records nothing more."""
    if source is None:
        return None
    for step in source.steps():
        g = step["guarantees"]
        epsilon = g.get("epsilon")
        if (g.get("notion") == "central_dp" and g.get("private") and not g.get("unprotected_columns")
                and isinstance(epsilon, (int, float)) and math.isfinite(epsilon)):
            return str(step["release_id"])
    return None


def _wrong_input(spec: registry.MethodSpec) -> str:
    """Name what the method does take (an experiment takes neither kind of input)."""
    if registry.MethodSource.dataset in spec.sources:
        return f"method {spec.name!r} runs on a dataset: give dataset_id"
    if registry.MethodSource.release in spec.sources:
        return f"method {spec.name!r} runs on a release: give release_id"
    return f"method {spec.name!r} takes neither dataset_id nor release_id: send only method and params"


OWNERS_ONLY_ON_RAW_DATA = "only owners may run jobs on raw datasets"
ANALYSTS_NO_RELEASES = "analysts may run analyses on releases and experiments, not release methods"


def _resolve(session: Session, principal: Principal, spec: registry.MethodSpec, req) -> ResolvedInput:
    given = [x for x in (req.dataset_id, req.release_id) if x is not None]
    if len(given) > 1:
        raise Unprocessable("give dataset_id or release_id, not both")
    if not given:
        if registry.MethodSource.none not in spec.sources:
            raise Unprocessable(f"method {spec.name!r} needs a dataset_id or a release_id")
        return ResolvedInput(None, None, None, [], None, None)
    if req.dataset_id is not None:
        if registry.MethodSource.dataset not in spec.sources:
            raise Unprocessable(_wrong_input(spec))
        if principal.role != Role.owner:
            raise Forbidden(OWNERS_ONLY_ON_RAW_DATA)
        # held until commit: a schema change waits for this submission and then sees its job
        row = datasets.get_row(session, principal, req.dataset_id, live=True, for_key_share=True)
        return ResolvedInput(row["id"], None, row["shape"], row["columns"], None, row["rows"])
    if registry.MethodSource.release not in spec.sources:
        raise Unprocessable(_wrong_input(spec))
    row = releases.get(session, req.release_id, principal.tenant)
    if row is None:
        raise NotFound(f"release {req.release_id} not found")
    return ResolvedInput(row["dataset_id"], row["id"], row["shape"], row["columns"], source_of(row), row["rows"])


def _request_hash(req) -> str:
    return hashlib.sha256(json.dumps(req.model_dump(mode="json"), sort_keys=True).encode()).hexdigest()


def submit(session: Session, principal: Principal, req, idempotency_key: str | None
           ) -> tuple[dict[str, Any], bool]:
    request_hash = _request_hash(req)
    spec = registry.get(req.method)
    assert spec is not None  # the request union only admits registered methods
    if principal.role == Role.admin:
        raise Forbidden("admin keys operate the service; submit jobs with an owner or analyst key")
    if idempotency_key:
        existing = repository.by_idempotency_key(session, principal.tenant, idempotency_key)
        if existing is not None:
            return _replay(session, principal, spec, req, existing, request_hash), False
    settings = get_settings()
    if req.seed is not None and not settings.test_mode:
        raise Unprocessable("seed is accepted only when the service runs in the reproducible test "
                            "mode (VEIL_TEST_MODE); privacy-producing jobs draw from the OS CSPRNG",
                            errors=[{"loc": ["body", "seed"], "msg": "seed not accepted", "type": "seed"}])
    resolved = _resolve(session, principal, spec, req)
    if principal.role == Role.analyst and spec.kind == registry.MethodKind.release:
        raise Forbidden(ANALYSTS_NO_RELEASES)
    if resolved.shape is not None and resolved.shape not in {s.value for s in spec.shapes}:
        raise Unprocessable(f"method {spec.name!r} does not accept {resolved.shape} input")
    if resolved.shape is not None and (misfit := registry.misfit_params(req.params, resolved.shape)):
        applies, kind, this = (("tabular datasets", "tables_only", "a transaction file")
                               if resolved.shape == "transactions" else
                               ("transaction files and releases", "transactions_only", "a table"))
        raise Unprocessable(f"'{misfit[0]}' applies to {applies}; this input is {this}",
                            errors=[{"loc": ["body", "params", name], "msg": f"applies to {applies} only",
                                     "type": kind} for name in misfit])
    infos = column_infos(resolved.columns)
    hierarchy = None
    if spec.uses_hierarchies and resolved.dataset_id is not None and resolved.shape == "table":
        # the root dataset's, as the job's runner reads them (a release's input too)
        held = set(datasets_repo.hierarchy_columns(session, [resolved.dataset_id]).get(resolved.dataset_id, []))
        infos = [replace(c, has_hierarchy=c.name in held) for c in infos]
        hierarchy = _stored_hierarchy(session, resolved.dataset_id)
    try:
        spec.validate_against(req.params, infos, resolved.source, resolved.rows, hierarchy)
        epsilon = spec.epsilon_cost(req.params, infos) if resolved.dataset_id else None
        covered_by = covering_dp_release(resolved.source) if epsilon is not None else None
        if covered_by is not None:  # post-processing of a central-DP release: nothing to debit
            epsilon = 0.0
    except registry.MethodInputError as exc:
        raise Unprocessable(str(exc), errors=[{"loc": ["body", "params"], "msg": str(exc),
                                               "type": "method_input"}]) from None
    job_id = uuid.uuid4()
    values = dict(id=job_id, tenant=principal.tenant, created_by=principal.key_id, method=spec.name,
                  kind=spec.kind.value, dataset_id=resolved.dataset_id, release_id=resolved.release_id,
                  params=req.params.model_dump(mode="json"), seed=req.seed,
                  epsilon=None if epsilon is None else Decimal(repr(epsilon)), status="queued",
                  max_attempts=settings.max_attempts, idempotency_key=idempotency_key,
                  request_hash=request_hash)
    try:
        with session.begin_nested():
            repository.insert_job(session, **values)
    except IntegrityError:
        # A concurrent request with the same Idempotency-Key won the race: the unique index made
        # this insert wait for its commit, so its job is there to answer with (it was a 409
        # "being processed; retry" — and for a different request too). Nothing of this one stays:
        # its insert was rolled back, and the debit and queue entry come after it.
        existing = repository.by_idempotency_key(session, principal.tenant, idempotency_key or "")
        if existing is None:
            raise
        return _replay(session, principal, spec, req, existing, request_hash), False
    record(session, tenant=principal.tenant, actor=principal.actor, action="job.submitted",
           subject_type="job", subject_id=job_id, dataset_id=resolved.dataset_id,
           release_id=resolved.release_id,
           details={"method": spec.name, "epsilon": epsilon, "seed_given": req.seed is not None,
                    **({"post_processing_of": covered_by} if covered_by is not None else {})})
    row = repository.get(session, job_id)
    # The two checks that lock (the tenant's submissions, the dataset's budget row) come last:
    # the locks are held until the request commits, so the less work after them, the less
    # concurrent submissions wait. Failing either rolls the whole submission back. The queue
    # entry is made under the tenant's lock: its fair priority depends on the tenant's others.
    _enqueue_within_the_cap(session, principal.tenant, job_id)
    if epsilon is not None:
        budgets.debit(session, dataset_id=resolved.dataset_id, job_id=job_id, method=spec.name,
                      epsilon=epsilon, actor=principal.key_id)
    return to_response(session, row, principal, results={
        "result": {"release_ids": [], "report_id": None, "model_id": None}, "epsilon_refunded": False}), True


def _stored_hierarchy(session: Session, dataset_id: uuid.UUID):
    """A column's stored hierarchy, parsed when a method's check asks for it (only the columns it
    reads: a hierarchy may be megabytes); None when the column has none."""
    def parse(column: str):
        from app.privacy.anonymity.hierarchies import parse_hierarchies

        text = datasets_repo.hierarchy_text(session, dataset_id, column)
        return None if text is None else parse_hierarchies({column: text}, get_settings().max_cell_length)[column]
    return parse


def _replay(session: Session, principal: Principal, spec: registry.MethodSpec, req, existing,
            request_hash: str) -> dict[str, Any]:
    """The job an earlier request with the same Idempotency-Key made (200), if it was the same
    request (409 otherwise)."""
    if existing["request_hash"] != request_hash:
        raise Conflict("this Idempotency-Key was used for a different job request")
    # keys are per tenant: the same request by a role that may not submit it (an
    # analyst replaying an owner's job on raw data) is refused as the submission would be
    if principal.role != Role.owner and (req.dataset_id is not None or spec.kind == registry.MethodKind.release):
        raise Forbidden(OWNERS_ONLY_ON_RAW_DATA if req.dataset_id is not None else ANALYSTS_NO_RELEASES)
    return to_response(session, existing, principal)


def _enqueue_within_the_cap(session: Session, tenant: str, job_id: uuid.UUID) -> None:
    """Queue the job (already counted as active) unless the tenant is over its cap of active
    jobs; the per-tenant lock makes concurrent submissions and retries read the count in turn.
    Take it before the budget row's lock, as every caller does, so the two never deadlock."""
    cap = get_settings().tenant_max_active_jobs
    repository.lock_tenant_submissions(session, tenant)
    standing = repository.queue_standing(session, tenant, job_id)
    if standing[0] > cap:  # with this one
        raise TooManyRequests(f"the tenant already has {cap} queued or running jobs; wait for some to finish")
    queue.enqueue(session, job_id, tenant, standing)


RAW_DATA_MESSAGE = ("withheld: this job read the raw dataset and its message can describe the data "
                    "(what the data holds, not what a release shows); the tenant's owners see it")


def _error_for(principal: Principal, row) -> dict[str, Any] | None:
    """A failure on raw data says something about the data ("values outside the declared
    categories", "every cell falls above the cut") that no ε covers. Only owners may run jobs on
    raw datasets and they can read the data itself; analysts and admins see the error's type."""
    error = row["error"]
    if error is None or principal.reads_what_came_from(row):
        return error
    return {**error, "message": RAW_DATA_MESSAGE}


def to_response(session: Session, row, principal: Principal,
                results: dict[str, Any] | None = None) -> dict[str, Any]:
    if results is None:
        results = repository.results_of(session, [row["id"]])[row["id"]]
    refunded, results = results["epsilon_refunded"], results["result"]
    return {"id": row["id"], "method": row["method"], "status": row["status"],
            "progress": row["progress"], "stage": row["stage"], "error": _error_for(principal, row),
            "result": results, "dataset_id": row["dataset_id"], "release_id": row["release_id"],
            "params": row["params"], "epsilon": _eps(row["epsilon"]), "epsilon_refunded": refunded,
            "cancel_requested": bool(row["cancel_requested"]), "attempt": row["attempt"], "created_at": row["created_at"],
            "started_at": row["started_at"], "finished_at": row["finished_at"],
            "links": _links(row, results, principal)}


def _links(row, results: dict[str, Any], principal: Principal) -> dict[str, str]:
    """The job, what it ran on and what it made — those the caller's role can read: the
    dataset and a report on it are its owners' (analysts had links that answered 403), and
    an admin reads jobs, not what they made."""
    links = {"self": f"/v1/jobs/{row['id']}"}
    if principal.role == Role.admin:
        return links
    owner = principal.role == Role.owner
    if row["release_id"] is not None:  # what it ran on
        links["source_release"] = f"/v1/releases/{row['release_id']}"
    elif row["dataset_id"] is not None and owner:
        links["dataset"] = f"/v1/datasets/{row['dataset_id']}"
    if results["release_ids"]:
        links["release"] = f"/v1/releases/{results['release_ids'][0]}"
    if results["report_id"] and principal.reads_what_came_from(row):
        links["report"] = f"/v1/reports/{results['report_id']}"
    if results["model_id"]:
        links["model"] = f"/v1/models/{results['model_id']}"
    return links


def _eps(value: Decimal | None) -> float | str | None:
    return None if value is None else jsonable(float(value))


def _visible(session: Session, principal: Principal, job_id: uuid.UUID, *, for_update: bool = False):
    tenant = None if principal.role == Role.admin else principal.tenant
    row = repository.get(session, job_id, tenant, for_update=for_update)
    if row is None:
        raise NotFound(f"job {job_id} not found")
    return row


def get(session: Session, principal: Principal, job_id: uuid.UUID) -> dict[str, Any]:
    return to_response(session, _visible(session, principal, job_id), principal)


def list_page(session: Session, principal: Principal, *, status: str | None, method: str | None,
              dataset_id: uuid.UUID | None, tenant: str | None, cursor: str | None,
              limit: int, release_id: uuid.UUID | None = None) -> dict[str, Any]:
    tenant = tenant_scope(principal, tenant)
    after = pagination.decode(cursor)
    rows = repository.list_page(session, tenant=tenant, status=status, method=method,
                                dataset_id=dataset_id, release_id=release_id, after=after, limit=limit)
    results = repository.results_of(session, [r["id"] for r in rows])
    return pagination.page(rows, limit, lambda r: to_response(session, r, principal, results[r["id"]]))


def cancel(session: Session, principal: Principal, job_id: uuid.UUID) -> dict[str, Any]:
    row = _visible(session, principal, job_id, for_update=True)
    if principal.role == Role.analyst and row["created_by"] != principal.key_id:
        raise Forbidden("analysts may cancel only their own jobs")
    if row["status"] == "queued":
        repository.cancel_if_queued(session, job_id)
        if row["queue_job_id"] is not None:
            queue.cancel_queued(session, row["queue_job_id"])
        details: dict[str, Any] = {"while": "queued"}
        # nothing ran since it was queued; an earlier attempt (crashed, lost, stopped by a
        # worker shutdown) may have drawn, and then the ε stays spent
        if row["epsilon"] is not None and not row["randomness_drawn"]:
            budgets.refund(session, dataset_id=row["dataset_id"], job_id=job_id, method=row["method"],
                           epsilon=row["epsilon"], actor=principal.key_id)
            details["refunded_epsilon"] = _eps(row["epsilon"])  # as job.failed says it
        record_job(session, row, actor=principal.actor, action="job.cancelled", details=details)
    elif row["status"] == "running":
        if not row["cancel_requested"]:  # asked again: the same answer, no second event
            repository.request_cancel(session, job_id)
            record_job(session, row, actor=principal.actor, action="job.cancel_requested")
    else:
        raise Conflict(f"job {job_id} has already finished ({row['status']})")
    return to_response(session, repository.get(session, job_id), principal)


def retry(session: Session, principal: Principal, job_id: uuid.UUID) -> dict[str, Any]:
    row = _visible(session, principal, job_id, for_update=True)
    if row["status"] != "failed":
        raise Conflict(f"only failed jobs can be retried; job {job_id} is {row['status']}")
    if (row["error"] or {}).get("type") == "restored":  # it may have released after the backup
        raise Conflict(f"job {job_id} was in flight when the backup the database was restored from was "
                       "taken: it may have run since, so it is not run again; submit it again (its ε is "
                       "debited again)")
    if row["epsilon"] is not None:  # even one that holds its ε and debits nothing again
        budgets.refuse_while_a_restore_awaits(session)
    if row["release_id"] is None and row["dataset_id"] is not None:  # a job on raw data
        ds = datasets_repo.get(session, row["tenant"], row["dataset_id"])
        if ds is None or ds["deleted_at"] is not None:
            raise Conflict(f"job {job_id} cannot run again: its dataset {row['dataset_id']} was deleted "
                           "and its data purged")
    repository.requeue_for_retry(session, job_id)
    _enqueue_within_the_cap(session, row["tenant"], job_id)
    debited = budgets.debit_again_if_refunded(session, job=row, actor=principal.key_id)
    record_job(session, row, actor=principal.actor, action="job.retried",
               details=None if debited is None else {"epsilon_debited": debited})
    return to_response(session, repository.get(session, job_id), principal)
