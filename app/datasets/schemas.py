from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from pydantic import BaseModel, Field

from app.datasets.schema import ColumnRole, ColumnType


class Column(BaseModel):
    name: str
    type: ColumnType
    role: ColumnRole
    missing: int
    distinct: int
    bounds: list[float] | None = None
    categories: list[str] | None = None
    integer: bool = False


class Dataset(BaseModel):
    id: uuid.UUID
    name: str
    format: str
    shape: str = Field(..., description="table | transactions")
    rows: int
    columns: list[Column]
    sha256: str = Field(..., description="SHA-256 of the uploaded bytes")
    size_bytes: int
    hierarchies: list[str] = Field(default_factory=list, description="columns with a hierarchy")
    deleted: bool = False
    created_at: datetime


class DatasetPage(BaseModel):
    items: list[Dataset]
    next: str | None


class ColumnProfile(Column):
    profile: dict[str, Any] | None = None


class Profile(BaseModel):
    id: uuid.UUID
    rows: int
    columns: list[ColumnProfile]


class Hierarchy(BaseModel):
    dataset_id: uuid.UUID
    column: str
    levels: int
    values: int
