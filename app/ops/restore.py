"""The restore check: a database restored from a logical backup (pg_dump → pg_restore) is
detected, and its budgets are frozen until an operator accepts the restore.

Why: the ε ledger is the record of what was released. A backup is older than the service it
restores: every job accepted, and every release made, after the backup is missing from the
restored ledger — its ε would be granted again — and a job queued or running at the backup may
have released before the failure. Veil cannot know what happened after the backup; the
operator can (the releases' receivers, an audit follower's copy of the trail, the old database).

How it is detected: pg_restore copies the audit trail in with one transaction, so its events
share one inserting transaction id (`xmin`) while their `txn` — the id of the transaction that
first wrote each — differ; Veil writes an event with the xmin of its own transaction (never
inside a savepoint: app/audit/service.py refuses it), so even one event copied in
has an xmin that is not the transaction its txn names. Into a new cluster, the restored
events' txn are also ahead of the cluster's transaction ids. Any of these is a restore. A
copy of the data directory or of a volume (a physical backup) keeps both and is NOT detected:
the operator declares it (`veil restore-check --declare`), and the same follows.

What it does, once, in one transaction (`veil migrate`, `veil serve` and `veil worker` run it
at start, before any job):
- raises the audit trail's txn offset above every restored event's (by 2^32: past what the old
  cluster may have written after the backup), so what happens next is listed after them and
  a follower's position from before the failure still precedes it;
- fails every job that was queued or running at the backup (`restored`): it may have run and
  released after the backup, so it is not run again, and its ε stays spent (not refunded; an
  admin's retry is refused — submit it again, which debits again);
- records `service.restored` in every tenant's trail (the backup's last event, the jobs failed);
- refuses every ε debit, and an admin's retry of a job with ε, (409) until `veil restore-accept`
  (a command; no API call accepts a restore) records that the budgets were reconciled: the ε
  spent after the backup written into the ledger by `veil ledger debit` (a reconciliation,
  app/budgets/service.py), which the freeze does not refuse.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy.orm import Session

from app.audit.service import record, record_job
from app.ops import repository

OFFSET_STEP = 2 ** 32  # one epoch of transaction ids
RECENT = 50
RESTORED_ERROR = ("the database was restored from a backup taken while this job was queued or running: it may "
                  "have run and released after the backup, so it is not run again and its ε stays "
                  "spent; submit it again (a new job debits its ε again)")


def _not_inserted_by_its_txn(events: list[dict[str, Any]], offset: int) -> bool:
    """An event whose inserting transaction is not the one its txn names (txn is that
    transaction's 64-bit id plus the offset, xmin its 32-bit id): copied in. Events copied in
    by one transaction show it, and one event since the last check alone does: a restore of a
    trail of one event went undetected when two had to share an xmin."""
    return any(e["txn"] != 0 and (e["txn"] - offset) % 2 ** 32 != e["xmin"] for e in events)


def check(session: Session, *, declared: bool = False) -> dict[str, Any] | None:
    """Detect a restore (and act on it once). Returns what was found while it is not accepted.
    ``declared``: the operator says the database was restored (a physical copy, undetectable)."""
    state = repository.service_state(session, for_update=True)
    if state is None:  # a database migrated before 0010 is not used by this code
        return None
    if state["restore_detected_at"] is not None and state["restore_accepted_at"] is None:
        return {**state["restore"], "detected_at": state["restore_detected_at"].isoformat()}
    last = repository.last_event(session)
    if last is None:
        return None
    real_xid = repository.current_xid(session)
    ahead = last["txn"] - state["txn_offset"] >= real_xid
    recent = repository.newest_events_since(session, state["checked_upto"], RECENT)
    if not (declared or ahead or _not_inserted_by_its_txn(recent, state["txn_offset"])):
        return None
    restored_upto = repository.max_event_id(session)
    offset = max(last["txn"] + OFFSET_STEP - real_xid, state["txn_offset"])
    repository.set_service_state(session, txn_offset=offset)  # before the events below take theirs
    failed = repository.fail_in_flight_jobs(session, {"type": "restored", "message": RESTORED_ERROR})
    for job in failed:
        record_job(session, job, actor="system", action="job.failed",
                   details={"error_type": "restored", "epsilon_kept": job["epsilon"] is not None})
    found = {"backup_last_event": {"position": f"{last['txn']}.{last['id']}", "at": _iso(last["at"])},
             "jobs_failed": [str(j["id"]) for j in failed]}
    for tenant in repository.tenants(session):
        record(session, tenant=tenant, actor="system", action="service.restored", subject_type="service",
               subject_id="database", details={
                   "backup_last_event_at": found["backup_last_event"]["at"],
                   "backup_last_event_position": found["backup_last_event"]["position"],
                   "jobs_failed": [str(j["id"]) for j in failed if j["tenant"] == tenant],
                   "note": "ε spent after the backup is not in the ledger; ε debits are refused "
                           "until an operator accepts the restore"})
    repository.set_service_state(session, checked_upto=restored_upto, restore=found,
                                 restore_detected_at=repository.now(session), restore_accepted_at=None)
    state = repository.service_state(session)
    return {**found, "detected_at": state["restore_detected_at"].isoformat()}


def accept(session: Session, *, actor: str, note: str | None = None) -> dict[str, Any] | None:
    """Record that the budgets were reconciled after a detected restore: ε debits resume.
    Returns the restore accepted, or None when none was pending."""
    state = repository.service_state(session, for_update=True)
    if state is None or state["restore_detected_at"] is None or state["restore_accepted_at"] is not None:
        return None
    for tenant in repository.tenants(session):
        record(session, tenant=tenant, actor=actor, action="service.restore_accepted",
               subject_type="service", subject_id="database",
               details={"detected_at": state["restore_detected_at"].isoformat(), "note": note})
    repository.set_service_state(session, restore_accepted_at=repository.now(session),
                                 checked_upto=repository.max_event_id(session))
    return dict(state["restore"] or {})


def pending(session: Session) -> bool:
    return repository.restore_pending(session)


def _iso(moment: datetime) -> str:
    return moment.isoformat()
