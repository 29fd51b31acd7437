from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field


class Method(BaseModel):
    name: str
    family: str
    kind: str = Field(..., description="release | analysis | experiment")
    summary: str
    guarantee: str
    paper: str
    sources: list[str] = Field(..., description="what a job may name as input: dataset, release, none")
    shapes: list[str] = Field(..., description="table, transactions")
    epsilon_debited: bool = Field(..., description="whether the job's ε is debited from the budget")
    params_schema: dict[str, Any]
    docs: str
