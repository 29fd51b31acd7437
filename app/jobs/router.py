from __future__ import annotations

import uuid
from typing import Annotated

from fastapi import APIRouter, Body, Query, Response
from pydantic import AfterValidator

from app.auth.dependencies import AdminPrincipal, AnyPrincipal
from app.deps import OffLoopRoute, SessionDep, known_method
from app.errors import budget_conflict, problem_responses
from app.jobs import service
from app.jobs.schemas import Job, JobPage, JobRequest, JobStatus
from app.openapi_parts import Cursor, IdempotencyKey, JobId, PageSize

router = APIRouter(prefix="/v1/jobs", tags=["jobs"], route_class=OffLoopRoute)


@router.post("", status_code=202, response_model=Job,
             responses={202: {"description": "accepted: the job is queued",
                              "headers": {"Location": {"description": "the job's address",
                                                       "schema": {"type": "string"}}}},
                        200: {"model": Job, "description": "a replay: the same Idempotency-Key and "
                              "request as before; the original job"},
                        **problem_responses(401, 403, 404, 409, 422, 429, 503),
                        409: budget_conflict("the Idempotency-Key was used for another request")})
def submit_job(body: Annotated[JobRequest, Body()], response: Response, principal: AnyPrincipal,
               session: SessionDep,
               idempotency_key: IdempotencyKey = None) -> Job:
    """Submit a job: `{dataset_id | release_id, method, params}`. Its ε (if any) is debited
    from the dataset's budget in the same transaction that queues it."""
    job, created = service.submit(session, principal, body, idempotency_key)
    # Commit here, in this thread: a submission ends holding the tenant's lock and the budget
    # row's, and the request dependency's commit comes only after the hops back to the event
    # loop and into another thread — under load that wait, not the work, serialized the
    # submissions. (A failed commit still becomes the dependency's rollback and 503.)
    session.commit()
    response.status_code = 202 if created else 200
    response.headers["Location"] = f"/v1/jobs/{job['id']}"
    return Job(**job)


@router.get("", response_model=JobPage, responses=problem_responses(401, 403, 422, 503))
def list_jobs(principal: AnyPrincipal, session: SessionDep,
              status: Annotated[JobStatus | None, Query(description="only jobs in this state")] = None,
              method: Annotated[str | None, Query(description="only jobs of this method"), AfterValidator(known_method)] = None,
              dataset_id: Annotated[uuid.UUID | None, Query(description="jobs run on this dataset")] = None,
              release_id: Annotated[uuid.UUID | None, Query(description="jobs run on this release")] = None,
              tenant: Annotated[str | None, Query(description="admins only: another tenant's jobs")] = None,
              cursor: Cursor = None, limit: PageSize = 50) -> JobPage:
    """Jobs of the caller's tenant (admins: of every tenant), newest first."""
    return JobPage(**service.list_page(session, principal, status=status and status.value, method=method,
                                       dataset_id=dataset_id, release_id=release_id, tenant=tenant, cursor=cursor, limit=limit))


@router.get("/{job_id}", response_model=Job, responses=problem_responses(401, 404, 422, 503))
def get_job(job_id: JobId, principal: AnyPrincipal, session: SessionDep) -> Job:
    """A job's status, progress and stage; when it succeeded, the ids of what it produced
    (`result`); when it failed, the error."""
    return Job(**service.get(session, principal, job_id))


@router.post("/{job_id}/cancel", status_code=202, response_model=Job,
             responses=problem_responses(401, 403, 404, 409, 422, 503))
def cancel_job(job_id: JobId, principal: AnyPrincipal, session: SessionDep) -> Job:
    """Cancel: a queued job at once (its ε is refunded); a running one is asked to stop
    (`cancel_requested`): it ends `cancelled`, or `succeeded` if it finished first."""
    return Job(**service.cancel(session, principal, job_id))


@router.post("/{job_id}/retry", status_code=202, response_model=Job,
             responses={**problem_responses(401, 403, 404, 409, 422, 429, 503),
                        409: budget_conflict("the job has not failed, or its dataset was deleted")})
def retry_job(job_id: JobId, principal: AdminPrincipal, session: SessionDep) -> Job:
    """Admins: run a failed job again (held to the tenant's cap of active jobs, like a submission)."""
    return Job(**service.retry(session, principal, job_id))
