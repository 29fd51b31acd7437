from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from fastapi import APIRouter
from pydantic import BaseModel, ConfigDict, Field

from app.auth.dependencies import ReaderPrincipal
from app.deps import SessionDep
from app.errors import problem_responses
from app.models import service

router = APIRouter(prefix="/v1/models", tags=["models"])


class Model(BaseModel):
    id: uuid.UUID
    job_id: uuid.UUID
    method: str
    release_id: uuid.UUID | None
    metadata: dict[str, Any]
    metrics: dict[str, Any]
    created_at: datetime
    links: dict[str, str]


class PredictRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    records: list[dict[str, Any]] = Field(..., min_length=1, max_length=100_000,
                                          description="raw records with the model's feature columns")


class Prediction(BaseModel):
    predictions: list[Any]
    classes: list[str]
    probabilities: list[list[float]] | None


@router.get("/{model_id}", response_model=Model, responses=problem_responses(401, 403, 404, 422, 503))
def get_model(model_id: uuid.UUID, principal: ReaderPrincipal, session: SessionDep) -> Model:
    return Model(**service.to_response(service.get_row(session, principal, model_id)))


@router.post("/{model_id}/predict", response_model=Prediction,
             responses=problem_responses(401, 403, 404, 413, 422, 503))
def predict(model_id: uuid.UUID, body: PredictRequest, principal: ReaderPrincipal,
            session: SessionDep) -> Prediction:
    """Predict a batch of raw records; probabilities per class in `classes` order."""
    return Prediction(**service.predict(session, principal, model_id, body.records))
