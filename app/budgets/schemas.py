from __future__ import annotations

import uuid
from datetime import datetime

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from app.privacy.json_types import JsonTyped

Epsilon = float | Literal["Infinity", "-Infinity"]


class BudgetUpdate(JsonTyped):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)
    epsilon_total: float | None = Field(..., gt=0, le=1e6,
                                        description="the ε cap of the dataset; null removes the cap")


class BudgetEntry(BaseModel):
    job_id: uuid.UUID | None = Field(..., description="the job; null for a reconciliation of a job not known")
    method: str | None = Field(..., description="the job's method; null for a reconciliation of a job "
                               "this database does not hold")
    kind: Literal["debit", "refund", "reconciliation"] = Field(
        ..., description="debit (at acceptance), refund (a job cancelled, refused as invalid input or "
        "stopped by a limit before it drew any randomness) or reconciliation (ε spent after a backup "
        "and lost by its restore, written back by an operator: spent like a debit, even past the cap)")
    epsilon: Epsilon
    actor: str = Field(..., description="the id of the API key that acted (a worker's refund names the "
                       "submitter's), or `cli` for a reconciliation (an operator's command)")
    note: str | None = Field(..., description="a reconciliation's: what was lost and how it is known")
    at: datetime


class BudgetFigures(BaseModel):
    """A dataset's ε budget in three numbers (its ledger: GET /v1/datasets/{id}/budget)."""
    epsilon_total: float | None = Field(..., description="the ε cap; null when there is none")
    epsilon_spent: Epsilon = Field(..., description="ε debited and not refunded")
    epsilon_remaining: Epsilon | None = Field(..., description="what the cap leaves; null without a cap")


class Budget(BudgetFigures):
    dataset_id: uuid.UUID
    entries: list[BudgetEntry] = Field(
        ..., description="the latest entries of the ledger (at most 100), oldest first; the whole "
        "ledger: GET /v1/datasets/{dataset_id}/budget/entries")
    entry_count: int = Field(..., description="entries in the whole ledger")


class LedgerPage(BaseModel):
    items: list[BudgetEntry]
    next: str | None = Field(..., description="pass as `cursor` for the next page; null on the last")
