"""The ε budget of a dataset. Debited in the transaction that accepts a job; refunded for a
job cancelled while still queued, one whose dataset was deleted before it started, or one
its method refused as invalid input, its time or memory limit stopped or its owner cancelled
before it drew any randomness (app/worker/runner.py). Any other failure is not refunded: its noise may have
been drawn (docs/epsilon.md). ε spent but lost to a restore from an older backup is written back
by an operator as a reconciliation (`veil ledger debit`; docs/reliability.md, Backup and restore)."""

from __future__ import annotations

import math
import uuid
from decimal import Decimal
from typing import Any

from sqlalchemy.orm import Session

from app.audit.service import record
from app.auth.schemas import Principal
from app import pagination
from app.budgets import repository
from app.errors import BudgetExhausted, Conflict, NotFound, Unprocessable
from app.jsonsafe import jsonable


def _dec(x: float) -> Decimal:
    return Decimal(repr(float(x)))


def _shown(epsilon: float) -> str:
    """An ε for a message: ∞ says what it means (JSON answers spell it "Infinity")."""
    if math.isinf(epsilon):
        return "Infinity (a step of it has no finite privacy bound)"
    return f"{epsilon:.6g}"


def _apart(first: float, second: float) -> tuple[str, str]:
    """The two figures of a refusal, with as many digits as it takes to tell them apart: at 6
    digits a job needing 2.0000001 with 2 left read "needs ε = 2 but only 2 remains"."""
    if math.isinf(first) or math.isinf(second):
        return _shown(first), _shown(second)
    for digits in (6, 9, 12, 17):
        shown = f"{first:.{digits}g}", f"{second:.{digits}g}"
        if shown[0] != shown[1]:
            break
    return shown


def refuse_while_a_restore_awaits(session: Session) -> None:
    """409 while a restore is detected and not accepted (app/ops/restore.py): ε spent after the
    backup is not in the ledger, so nothing may spend ε — a debit, or an admin's retry of a job
    that still holds its debit (it may have been retried and released after the backup)."""
    from app.ops.restore import pending

    if pending(session):
        raise Conflict("the database was restored from a backup and ε spent after the backup is not "
                       "in the ledger: no ε is debited until an operator reconciles the budgets and "
                       "accepts the restore (`veil restore-accept`; docs/reliability.md, Backup and restore)")


def debit(session: Session, *, dataset_id: uuid.UUID, job_id: uuid.UUID, method: str,
          epsilon: float, actor: uuid.UUID) -> None:
    if epsilon != 0:  # post-processing of a DP release (charged 0) spends nothing: it goes on
        refuse_while_a_restore_awaits(session)
    repository.ensure_row(session, dataset_id)
    if not repository.try_debit(session, dataset_id, _dec(epsilon)):
        row = repository.get(session, dataset_id)
        if row["epsilon_spent"] > row["epsilon_total"]:  # a reconciliation recorded ε spent past the cap
            raise BudgetExhausted(f"the job needs ε = {_shown(epsilon)} but nothing of the dataset's budget "
                                  f"remains (total {float(row['epsilon_total']):.6g}, spent "
                                  f"{float(row['epsilon_spent']):.6g}: past it by ε written into the ledger "
                                  "by `veil ledger debit`)")
        needed, left = _apart(epsilon, float(row["epsilon_total"] - row["epsilon_spent"]))
        raise BudgetExhausted(f"the job needs ε = {needed} but only {left} of the "
                              f"dataset's budget remains (total {float(row['epsilon_total']):.6g})")
    repository.add_entry(session, dataset_id=dataset_id, job_id=job_id, method=method,
                         kind="debit", epsilon=_dec(epsilon), actor=actor)


def refund(session: Session, *, dataset_id: uuid.UUID, job_id: uuid.UUID, method: str,
           epsilon: Decimal, actor: uuid.UUID) -> None:
    repository.lock(session, dataset_id)  # first: the entry's id is taken under the lock, like a debit's
    repository.add_entry(session, dataset_id=dataset_id, job_id=job_id, method=method,
                         kind="refund", epsilon=-epsilon, actor=actor)
    if epsilon.is_finite():
        repository.refund(session, dataset_id, epsilon)
    else:  # an ∞ job cancelled while queued: spent − ∞ has no value, so sum what is still held
        repository.recompute_spent(session, dataset_id)


def debit_again_if_refunded(session: Session, *, job, actor: uuid.UUID) -> float | None:
    """A failed job that is run again (an admin's retry) must hold its ε again if it was
    refunded: otherwise it could release without paying, and each failed rerun would refund
    once more (the spent figure falling below what was released). Returns what was debited."""
    epsilon = job["epsilon"]
    if job["dataset_id"] is None or epsilon is None or repository.holds_debit(session, job["id"]):
        return None
    debit(session, dataset_id=job["dataset_id"], job_id=job["id"], method=job["method"],
          epsilon=float(epsilon), actor=actor)
    return float(epsilon)


NOTE_MAX = 2000


def reconciliation_refusal(epsilon: float, note: str) -> tuple[str, str] | None:
    """Why a reconciliation cannot be written, as (the argument, what is wrong); None if it can."""
    if not (math.isfinite(epsilon) and epsilon > 0):
        return "epsilon", "must be a finite number more than 0"
    if not note.strip():
        return "note", "say what was lost and how it is known (the ledger and the audit trail keep it)"
    if len(note) > NOTE_MAX:
        return "note", f"at most {NOTE_MAX:,} characters, not {len(note):,}"
    return None


def reconcile(session: Session, *, dataset_id: uuid.UUID, epsilon: float, note: str,
              job_id: uuid.UUID | None, actor: str) -> dict[str, Any]:
    """Write ε spent but missing from the ledger (lost to a restore from an older backup) as a
    ``reconciliation`` entry: spent like a debit, whatever the cap (it records what was already
    released, so nothing may refuse it) and while a restore awaits acceptance (when it is
    needed). Recorded as ``budget.reconciled`` in the dataset's tenant's trail."""
    refused = reconciliation_refusal(epsilon, note)
    if refused is not None:
        raise Unprocessable(f"{refused[0]}: {refused[1]}")
    tenant = repository.dataset_tenant(session, dataset_id)
    if tenant is None:
        raise NotFound(f"no dataset {dataset_id} in this database")
    repository.ensure_row(session, dataset_id)
    repository.lock(session, dataset_id)  # first: the entry's id is taken under the lock, like a debit's
    method = None
    if job_id is not None:
        if repository.holds_debit(session, job_id):
            raise Conflict(f"the ledger already holds job {job_id}'s ε (debited or reconciled, not "
                           "refunded): writing it again would count it twice")
        job = repository.job_of(session, job_id)
        if job is not None and job.dataset_id != dataset_id:
            raise Conflict(f"job {job_id} is a job of dataset {job.dataset_id}, not of {dataset_id}")
        method = None if job is None else job.method
    spent = repository.add_spent(session, dataset_id, _dec(epsilon))
    repository.add_entry(session, dataset_id=dataset_id, job_id=job_id, method=method, kind="reconciliation",
                         epsilon=_dec(epsilon), actor=actor, note=note.strip())
    record(session, tenant=tenant, actor=actor, action="budget.reconciled", subject_type="dataset",
           subject_id=dataset_id, dataset_id=dataset_id, details={
               "epsilon": epsilon, "job_id": None if job_id is None else str(job_id), "note": note.strip(),
               "epsilon_spent": float(spent)})
    return {"tenant": tenant, **_figures(repository.get(session, dataset_id)["epsilon_total"], spent)}


# The budget view shows the latest entries of the ledger; the whole ledger is paginated
# (a dataset with many jobs would otherwise make every budget read heavier).
ENTRIES_SHOWN = 100


def _entry(e: dict[str, Any]) -> dict[str, Any]:
    return {**e, "epsilon": jsonable(float(e["epsilon"]))}


def view(session: Session, dataset_id: uuid.UUID) -> dict[str, Any]:
    row = repository.get(session, dataset_id)
    if row is None:  # no debit and no cap yet (a read used to insert it every time: a write per read)
        repository.ensure_row(session, dataset_id)
        row = repository.get(session, dataset_id)
    shown = repository.latest_entries(session, dataset_id, ENTRIES_SHOWN)
    count = len(shown) if len(shown) < ENTRIES_SHOWN else repository.count_entries(session, dataset_id)
    return {"dataset_id": dataset_id, **_figures(row["epsilon_total"], row["epsilon_spent"]),
            "entries": [_entry(e) for e in shown], "entry_count": count}


def _figures(total: Decimal | None, spent: Decimal) -> dict[str, Any]:
    cap = None if total is None else float(total)
    return {"epsilon_total": cap, "epsilon_spent": jsonable(float(spent)),
            "epsilon_remaining": None if cap is None else jsonable(max(cap - float(spent), 0.0))}


NO_BUDGET = _figures(None, Decimal(0))  # a dataset no job has debited and no cap was set for


def figures_of(session: Session, dataset_ids: list[uuid.UUID]) -> dict[uuid.UUID, dict[str, Any]]:
    """Each dataset's cap, spent and remaining ε, as ``view`` gives them (one query)."""
    found = repository.totals(session, dataset_ids) if dataset_ids else {}
    return {d: _figures(*found[d]) if d in found else NO_BUDGET for d in dataset_ids}


def ledger_page(session: Session, dataset_id: uuid.UUID, after: int | None, limit: int) -> dict[str, Any]:
    rows = repository.entries_after(session, dataset_id, after, limit)
    return pagination.id_page(rows, limit, _entry)


def set_total(session: Session, principal: Principal, dataset_id: uuid.UUID,
              total: float | None) -> dict[str, Any]:
    repository.ensure_row(session, dataset_id)
    if not repository.set_total(session, dataset_id, None if total is None else _dec(total)):
        spent, asked = _apart(float(repository.get(session, dataset_id)["epsilon_spent"]), float(total))
        raise Conflict(f"ε = {spent} is already spent; the total cannot be set below it ({asked} asked)")
    record(session, tenant=principal.tenant, actor=principal.actor, action="budget.set",
           subject_type="dataset", subject_id=dataset_id, dataset_id=dataset_id,
           details={"epsilon_total": total})
    return view(session, dataset_id)
