"""The reports' response models."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from pydantic import BaseModel, Field


class ReportSummary(BaseModel):
    id: uuid.UUID
    kind: str
    job_id: uuid.UUID
    dataset_id: uuid.UUID | None
    release_id: uuid.UUID | None
    plots: dict[str, dict[str, str]]
    created_at: datetime
    links: dict[str, str]


class Report(ReportSummary):
    data: dict[str, Any]


class ReportPage(BaseModel):
    items: list[ReportSummary] = Field(..., description="summaries: a report's data is at its `links.self`")
    next: str | None
