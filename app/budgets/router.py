from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from app import pagination
from app.auth.dependencies import OwnerPrincipal
from app.budgets import service
from app.budgets.schemas import Budget, BudgetUpdate, LedgerPage
from app.datasets.service import get_row
from app.deps import OffLoopRoute, SessionDep
from app.errors import problem_responses
from app.openapi_parts import CURSOR, DatasetId

router = APIRouter(prefix="/v1/datasets/{dataset_id}/budget", tags=["budgets"], route_class=OffLoopRoute)


@router.get("", response_model=Budget, responses=problem_responses(401, 403, 404, 422, 503))
def get_budget(dataset_id: DatasetId, principal: OwnerPrincipal, session: SessionDep) -> Budget:
    """The dataset's ε cap, what is spent and remains, and the latest entries of its ledger."""
    get_row(session, principal, dataset_id)
    return Budget(**service.view(session, dataset_id))


@router.put("", response_model=Budget, responses=problem_responses(401, 403, 404, 409, 422, 503))
def put_budget(dataset_id: DatasetId, body: BudgetUpdate, principal: OwnerPrincipal,
               session: SessionDep) -> Budget:
    """Set the ε cap (never below what is already spent). Also for a deleted dataset: DP jobs
    on its releases are still charged to it, so its owner must still be able to raise it."""
    get_row(session, principal, dataset_id, for_update=True)
    return Budget(**service.set_total(session, principal, dataset_id, body.epsilon_total))


@router.get("/entries", response_model=LedgerPage, responses=problem_responses(401, 403, 404, 422, 503))
def get_ledger(dataset_id: DatasetId, principal: OwnerPrincipal, session: SessionDep,
               cursor: Annotated[str | None, Query(max_length=20, description=CURSOR)] = None,
               limit: Annotated[int, Query(ge=1, le=1000, description="items per page")] = 200) -> LedgerPage:
    """The whole ε ledger of the dataset, oldest first: every debit, refund and reconciliation."""
    get_row(session, principal, dataset_id)
    return LedgerPage(**service.ledger_page(session, dataset_id, pagination.decode_id(cursor), limit))
