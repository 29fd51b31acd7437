from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from app.budgets.schemas import BudgetFigures
from app.datasets.schema import ColumnRole, ColumnType
from app.openapi_parts import SENT_WHOLE
from app.privacy.json_types import JsonTyped
from app.privacy.registry import DataShape


class Column(BaseModel):
    model_config = SENT_WHOLE
    name: str
    type: ColumnType
    role: ColumnRole
    missing: int
    distinct: int
    bounds: list[float] | None = None
    categories: list[str] | None = None
    integer: bool = False
    inferred: list[str] = Field(
        [], description="facts Veil read from the data at upload instead of the owner declaring "
        "them: 'type' (the column's type) and 'integer' (whether every value is whole). A DP release "
        "that relies on one warns that it shows it; declare it (PUT …/schema) to make it public")


class DatasetSummary(BaseModel):
    """A dataset as lists show it; its columns are at GET /v1/datasets/{id}."""
    model_config = SENT_WHOLE
    id: uuid.UUID
    name: str
    format: str
    shape: DataShape
    rows: int
    column_count: int
    sha256: str = Field(..., description="SHA-256 of the uploaded bytes")
    size_bytes: int
    hierarchies: list[str] = Field(default_factory=list, description="columns with a hierarchy")
    deleted: bool = False
    budget: BudgetFigures = Field(..., description="its ε budget as GET …/budget gives it (cap, spent, "
                                  "remaining; the ledger there)")
    created_at: datetime
    links: dict[str, str] = Field(..., description="self, data (CSV), profile, budget, and the lists of "
                                  "its jobs and releases")


class Dataset(DatasetSummary):
    columns: list[Column]


class SyntheticRequest(JsonTyped):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)
    generator: Literal["bank_customers"] = Field(
        "bank_customers", description="bank_customers: the synthetic bank-card customers of seed "
        "000 (spec 01 §6), with the three-valued customer value as label")
    rows: int = Field(50_000, ge=10, le=2_000_000)
    seed: int = Field(0, ge=0, description="synthetic data is not personal: seeds are fine here")
    name: str | None = Field(None, max_length=300)


class DatasetPage(BaseModel):
    items: list[DatasetSummary] = Field(..., description="summaries: a dataset's columns are at GET "
                                        "/v1/datasets/{id} (a 2,000-column schema is ~350 KB)")
    next: str | None


class ColumnProfile(Column):
    profile: dict[str, Any] | None = None


class Profile(BaseModel):
    id: uuid.UUID
    rows: int
    columns: list[ColumnProfile]


class Hierarchy(BaseModel):
    model_config = SENT_WHOLE
    dataset_id: uuid.UUID
    column: str
    levels: int
    values: int
    warnings: list[str] = Field(default_factory=list, description=(
        "what the upload kept but you should look at: a last level of several values (a root '*' "
        "is added above them; a header row gives one), and in a numeric column labels that read "
        "as intervals ('20-24', '[20, 25)', '<20', '>=90', '90+') but do not hold every value "
        "under them (a release shows them as written) and leaves that are not numbers (ignored)"))
