from __future__ import annotations

import uuid
from datetime import datetime

from pydantic import BaseModel, ConfigDict, Field


class BudgetUpdate(BaseModel):
    model_config = ConfigDict(extra="forbid")
    epsilon_total: float | None = Field(..., gt=0, le=1e6,
                                        description="the ε cap of the dataset; null removes the cap")


class BudgetEntry(BaseModel):
    job_id: uuid.UUID
    method: str
    kind: str = Field(..., description="debit (at acceptance) or refund (a job cancelled before it ran)")
    epsilon: float
    actor: str
    at: datetime


class Budget(BaseModel):
    dataset_id: uuid.UUID
    epsilon_total: float | None
    epsilon_spent: float
    epsilon_remaining: float | None
    entries: list[BudgetEntry]
