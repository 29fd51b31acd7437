from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from pydantic import BaseModel, Field

# Every action an event can carry; the list's `action` filter takes these only (a typo such as
# `dataset.download` answered an empty page, as if nothing had been downloaded).
# tests/api/test_audit_actions.py checks the set against the actions the code records.
ACTIONS = frozenset({
    "budget.set", "budget.reconciled",
    "dataset.uploaded", "dataset.generated", "dataset.downloaded", "dataset.profile_read",
    "dataset.schema_updated", "dataset.hierarchy_set", "dataset.hierarchy_downloaded",
    "dataset.hierarchy_deleted", "dataset.deleted",
    "job.submitted", "job.started", "job.succeeded", "job.failed", "job.requeued", "job.retried",
    "job.cancel_requested", "job.cancelled",
    "key.created", "key.revoked",
    "model.created", "model.predicted",
    "release.created", "release.downloaded",
    "report.created",
    "service.restored", "service.restore_accepted",  # app/ops/restore.py, in every tenant's trail
})


def known_action(action: str | None) -> str | None:
    if action is not None and action not in ACTIONS:
        raise ValueError(f"unknown action {action!r}; the actions: {', '.join(sorted(ACTIONS))}")
    return action


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
    position: str = Field(description="the event's place in the trail's order: as `cursor`, the "
                          "events after it (to follow the trail from the last event seen)")


class AuditPage(BaseModel):
    items: list[AuditEvent]
    next: str | None
