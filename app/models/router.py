from __future__ import annotations

import uuid
from typing import Annotated

from fastapi import APIRouter, Query
from pydantic import AfterValidator

from app.auth.dependencies import ReaderPrincipal
from app.deps import OffLoopRoute, SessionDep, known_method
from app.errors import problem_responses
from app.models import service
from app.models.schemas import Model, ModelPage, Prediction, PredictRequest
from app.openapi_parts import Cursor, ModelId, PageSize

router = APIRouter(prefix="/v1/models", tags=["models"], route_class=OffLoopRoute)


@router.get("", response_model=ModelPage, responses=problem_responses(401, 403, 422, 503))
def list_models(principal: ReaderPrincipal, session: SessionDep,
                release_id: Annotated[uuid.UUID | None, Query(description="models trained on this release")] = None,
                method: Annotated[str | None, Query(description="models of this method"), AfterValidator(known_method)] = None,
                cursor: Cursor = None, limit: PageSize = 50) -> ModelPage:
    """The tenant's models, newest first, paginated by `next`."""
    return ModelPage(**service.list_page(session, principal, release_id=release_id, method=method,
                                         cursor=cursor, limit=limit))


@router.get("/{model_id}", response_model=Model, responses=problem_responses(401, 403, 404, 422, 503))
def get_model(model_id: ModelId, principal: ReaderPrincipal, session: SessionDep) -> Model:
    """A trained model: its method, the release it was trained on, metadata and metrics."""
    return Model(**service.to_response(service.get_row(session, principal, model_id)))


@router.post("/{model_id}/predict", response_model=Prediction,
             responses=problem_responses(401, 403, 404, 413, 422, 503))
def predict(model_id: ModelId, body: PredictRequest, principal: ReaderPrincipal,
            session: SessionDep) -> Prediction:
    """Predict a batch of raw records; probabilities per class in `classes` order."""
    return Prediction(**service.predict(session, principal, model_id, body.records))
