from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from pydantic import BaseModel


class AuditEvent(BaseModel):
    id: int
    at: datetime
    actor: str
    tenant: str
    action: str
    subject_type: str
    subject: str
    dataset_id: uuid.UUID | None
    release_id: uuid.UUID | None
    details: dict[str, Any]


class AuditPage(BaseModel):
    items: list[AuditEvent]
    next: str | None
