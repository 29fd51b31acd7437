"""The models' request and response models."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from app.openapi_parts import SENT_WHOLE
from app.privacy.json_types import JsonTyped


class Model(BaseModel):
    id: uuid.UUID
    job_id: uuid.UUID
    method: str
    release_id: uuid.UUID | None
    metadata: dict[str, Any]
    metrics: dict[str, Any]
    created_at: datetime
    links: dict[str, str]


class PredictRequest(JsonTyped):
    model_config = ConfigDict(extra="forbid")
    records: list[dict[str, Any]] = Field(..., min_length=1, max_length=100_000,
                                          description="raw records with the model's feature columns")


class Prediction(BaseModel):
    model_config = SENT_WHOLE
    predictions: list[Any]
    classes: list[str]
    probabilities: list[list[float]] | None
    unreadable: dict[str, list[int]] = Field(
        default_factory=dict, description="per feature, the records (0-based) whose value the model "
        "could not read and left out of their score: outside the published domain, or missing")


class ModelPage(BaseModel):
    items: list[Model]
    next: str | None
