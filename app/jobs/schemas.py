"""Job request and response models. The request is a discriminated union on ``method``,
built from the registry: each method's params model validates its ``params``."""

from __future__ import annotations

import uuid
from enum import Enum
from datetime import datetime
from typing import Annotated, Any, Literal, Union

from pydantic import BaseModel, ConfigDict, Field, WithJsonSchema, create_model

from app.privacy import registry
from app.openapi_parts import SENT_WHOLE
from app.privacy.json_types import json_typed


class JobRequestBase(BaseModel):
    model_config = ConfigDict(extra="forbid")
    dataset_id: uuid.UUID | None = Field(None, description="the input dataset")
    release_id: uuid.UUID | None = Field(None, description="the input release (instead of a dataset)")
    seed: int | None = Field(None, description="only in the reproducible test mode; such releases "
                             "are marked not private")

    _json_types = json_typed("seed")  # params check their own; the method tag cannot take it


def _request_model(spec: registry.MethodSpec) -> type[JobRequestBase]:
    title = "".join(part.capitalize() for part in spec.name.split("_")) + "JobRequest"
    return create_model(
        title, __base__=JobRequestBase,
        method=(Literal[spec.name], Field(..., description=spec.summary)),
        params=(spec.params, Field(default_factory=spec.params)),
    )


def build_request_union() -> Any:
    models = [_request_model(s) for s in registry.all_methods()]
    return Annotated[Union[tuple(models)], Field(discriminator="method")]


JobRequest = build_request_union()

# "Infinity" as a one-value enum, not a const: generated clients parse a union of a number and
# a const string as the const alone (openapi-python-client refused every finite ε)
Unbounded = Annotated[Literal["Infinity"], WithJsonSchema({"type": "string", "enum": ["Infinity"]})]
# A named type, so answers and the list filter share it in the document (an inline Literal
# made generated clients define two enums for it)
class JobStatus(str, Enum):
    """A job's state: queued, running, then one of succeeded, failed or cancelled."""
    queued = "queued"
    running = "running"
    succeeded = "succeeded"
    failed = "failed"
    cancelled = "cancelled"


class JobError(BaseModel):
    type: str
    message: str


class JobResult(BaseModel):
    model_config = SENT_WHOLE
    release_ids: list[uuid.UUID] = Field(default_factory=list)
    report_id: uuid.UUID | None = None
    model_id: uuid.UUID | None = None


class Job(BaseModel):
    model_config = SENT_WHOLE
    id: uuid.UUID
    method: str
    status: JobStatus
    progress: float
    stage: str | None
    error: JobError | None
    result: JobResult
    dataset_id: uuid.UUID | None
    release_id: uuid.UUID | None
    params: dict[str, Any]
    epsilon: float | Unbounded | None = Field(
        None, description="ε debited from the dataset's budget when the job was accepted "
        "(\"Infinity\" when unbounded); `epsilon_refunded` says whether it was given back")
    epsilon_refunded: bool = Field(
        False, description="the ledger gave the job's ε back (cancelled while queued, or failed or "
        "stopped before drawing randomness): it no longer counts in the dataset's spending, and "
        "an admin's retry debits it again. The ε a dataset's jobs hold is the sum of `epsilon` over "
        "those with false")
    cancel_requested: bool = Field(
        False, description="a cancel was asked while the job ran: it ends 'cancelled' once its "
        "worker stops it, or keeps its result (and its ε stays spent) if it finished first")
    attempt: int
    created_at: datetime
    started_at: datetime | None
    finished_at: datetime | None
    links: dict[str, str] = Field(default_factory=dict, description=(
        "self, what the job ran on (dataset or source_release) and what it made (release, report, "
        "model): those the caller's role can read (an analyst is not given the dataset or a report "
        "on it, an admin only self)"))


class JobPage(BaseModel):
    items: list[Job]
    next: str | None
