from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from app.privacy.registry import DataShape, MethodKind, MethodSource


class Method(BaseModel):
    name: str
    family: str
    kind: MethodKind
    summary: str
    guarantee: str
    paper: str
    sources: list[MethodSource] = Field(
        ..., description="what a job may name as input")
    shapes: list[DataShape] = Field(..., description="the inputs it takes")
    epsilon_debited: bool = Field(..., description="whether the job's ε is debited from the budget")
    params_schema: dict[str, Any]
    docs: str
