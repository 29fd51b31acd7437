from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from pydantic import BaseModel, Field


class Provenance(BaseModel):
    input_sha256: str = Field(..., description="SHA-256 of the uploaded dataset the chain starts from")
    output_sha256: str = Field(
        ..., description="SHA-256 of the release's Parquet download (GET …/data?format=parquet)")
    code_version: str
    created_by: str
    created_at: datetime
    job_id: str


class Release(BaseModel):
    id: uuid.UUID
    job_id: uuid.UUID
    dataset_id: uuid.UUID
    source_release_id: uuid.UUID | None
    method: str
    params: dict[str, Any]
    guarantees: dict[str, Any] = Field(..., description="exactly what the code delivered: notion, "
                                       "private, epsilon (\"Infinity\" when unbounded), per-column figures")
    metrics: dict[str, Any]
    metadata: dict[str, Any] = Field(..., description="published facts a reconstruction needs")
    chain: list[dict[str, Any]] = Field(..., description="earlier steps, oldest first")
    shape: str
    rows: int
    columns: list[dict[str, Any]]
    provenance: Provenance
    links: dict[str, str]


class ReleasePage(BaseModel):
    items: list[Release]
    next: str | None
