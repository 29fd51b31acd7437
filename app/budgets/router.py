from __future__ import annotations

import uuid

from fastapi import APIRouter

from app.auth.dependencies import OwnerPrincipal
from app.budgets import service
from app.budgets.schemas import Budget, BudgetUpdate
from app.datasets.service import get_row
from app.deps import SessionDep
from app.errors import problem_responses

router = APIRouter(prefix="/v1/datasets/{dataset_id}/budget", tags=["budgets"])


@router.get("", response_model=Budget, responses=problem_responses(401, 403, 404, 422, 503))
def get_budget(dataset_id: uuid.UUID, principal: OwnerPrincipal, session: SessionDep) -> Budget:
    """The dataset's ε cap, what is spent and remains, and the ledger of every debit."""
    get_row(session, principal, dataset_id)
    return Budget(**service.view(session, dataset_id))


@router.put("", response_model=Budget, responses=problem_responses(401, 403, 404, 409, 422, 503))
def put_budget(dataset_id: uuid.UUID, body: BudgetUpdate, principal: OwnerPrincipal,
               session: SessionDep) -> Budget:
    """Set the ε cap (never below what is already spent)."""
    get_row(session, principal, dataset_id, for_update=True)
    return Budget(**service.set_total(session, principal, dataset_id, body.epsilon_total))
