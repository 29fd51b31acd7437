from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from pydantic import BaseModel, Field

from app.privacy.guarantees import Guarantees
from app.privacy.registry import DataShape


class Provenance(BaseModel):
    input_sha256: str = Field(..., description="SHA-256 of the uploaded dataset the chain starts from "
                              "(owners only: a function of the raw data outside any ε, it is "
                              "'withheld: …' for analysts)")
    output_sha256: str = Field(
        ..., description="SHA-256 of the release's Parquet download (GET …/data?format=parquet)")
    code_version: str
    created_by: str
    created_at: datetime
    job_id: str


class ReleaseSummary(BaseModel):
    """A release as lists show it: what it is, what it guarantees, where it came from."""
    id: uuid.UUID
    job_id: uuid.UUID
    dataset_id: uuid.UUID
    source_release_id: uuid.UUID | None
    method: str
    params: dict[str, Any]
    guarantees: Guarantees = Field(..., description="exactly what the code delivered: the common keys "
                                   "below, and the method's own figures beside them")
    metrics: dict[str, Any]
    shape: DataShape
    rows: int
    created_at: datetime = Field(..., description="when the release was stored, as every other resource "
                                 "says it (the same time as provenance.created_at)")
    provenance: Provenance
    links: dict[str, str] = Field(..., description=(
        "self, data, job, source_release for a chained release, and dataset for the tenant's "
        "owners (the dataset answers them only)"))


class Release(ReleaseSummary):
    metadata: dict[str, Any] = Field(..., description="published facts a reconstruction needs")
    chain: list[dict[str, Any]] = Field(..., description="earlier steps, oldest first")
    columns: list[dict[str, Any]]


class ReleasePage(BaseModel):
    items: list[ReleaseSummary] = Field(..., description="summaries: a release's metadata, chain "
                                        "and columns are at its `links.self`")
    next: str | None
