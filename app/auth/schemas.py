from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum

from pydantic import BaseModel, ConfigDict, Field

from app.privacy.json_types import JsonTyped


class Role(StrEnum):
    owner = "owner"
    analyst = "analyst"
    admin = "admin"


@dataclass(frozen=True)
class Principal:
    key_id: uuid.UUID
    tenant: str
    role: Role

    @property
    def actor(self) -> str:
        return str(self.key_id)

    def reads_what_came_from(self, row) -> bool:
        """Whether this key may read what a job or report (``row``: its dataset_id, release_id)
        says of its input: anything made from a release (post-processing) or by an experiment,
        and what was computed from a raw dataset for the tenant's owners only — it describes the
        data with no ε, as the dataset itself does."""
        on_raw_data = row["dataset_id"] is not None and row["release_id"] is None
        return self.role == Role.owner or not on_raw_data


class KeyCreate(JsonTyped):
    model_config = ConfigDict(extra="forbid")  # a misspelt or unsupported field is refused, not ignored
    tenant: str = Field(..., min_length=1, max_length=64, pattern=r"^[A-Za-z0-9_.-]+$")
    role: Role
    label: str | None = Field(None, max_length=200)


class KeyCreated(BaseModel):
    id: uuid.UUID
    tenant: str
    role: Role
    key: str = Field(..., description="the API key; shown once, stored only as a hash")


class KeyInfo(BaseModel):
    """A key as listed: never its secret (only its SHA-256 is stored)."""
    id: uuid.UUID
    tenant: str
    role: Role
    label: str | None
    prefix: str = Field(..., description="the public part after veil_: identifies the key in logs")
    created_at: datetime
    revoked_at: datetime | None


class KeyPage(BaseModel):
    items: list[KeyInfo]
    next: str | None
