from __future__ import annotations

import uuid
from decimal import Decimal
from typing import Any

from sqlalchemy import Integer, bindparam, func, insert, select, text
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.orm import Session

from app.sql import any_of
from app.tables import budget_entries, budgets, datasets, jobs


def ensure_row(session: Session, dataset_id: uuid.UUID) -> None:
    session.execute(pg_insert(budgets).values(dataset_id=dataset_id).on_conflict_do_nothing())


_GET = select(budgets).where(budgets.c.dataset_id == bindparam("d"))  # built once (see app/sql.py)


def get(session: Session, dataset_id: uuid.UUID):
    return session.execute(_GET, {"d": dataset_id}).mappings().first()


def totals(session: Session, dataset_ids: list[uuid.UUID]) -> dict[uuid.UUID, tuple[Decimal | None, Decimal]]:
    """(cap, spent) of each dataset that has a budget row (one without has neither yet)."""
    q = select(budgets.c.dataset_id, budgets.c.epsilon_total, budgets.c.epsilon_spent).where(
        budgets.c.dataset_id == any_of("ids"))
    return {d: (total, spent) for d, total, spent in session.execute(q, {"ids": dataset_ids})}


def set_total(session: Session, dataset_id: uuid.UUID, total: Decimal | None) -> bool:
    """Set the cap unless it is below what is already spent (one conditional UPDATE)."""
    row = session.execute(text(
        "UPDATE budgets SET epsilon_total = :total, updated_at = now() "
        "WHERE dataset_id = :d AND (CAST(:total AS numeric) IS NULL OR epsilon_spent <= :total) "
        "RETURNING dataset_id"), {"total": total, "d": dataset_id}).first()
    return row is not None


def try_debit(session: Session, dataset_id: uuid.UUID, epsilon: Decimal) -> bool:
    """Debit ε if it fits under the cap. One conditional UPDATE: concurrent debits serialize
    on the row lock and each re-checks the condition, so the cap can never be overspent."""
    row = session.execute(text(
        "UPDATE budgets SET epsilon_spent = epsilon_spent + :e, updated_at = now() "
        "WHERE dataset_id = :d AND (epsilon_total IS NULL OR epsilon_spent + :e <= epsilon_total) "
        "RETURNING dataset_id"), {"e": epsilon, "d": dataset_id}).first()
    return row is not None


def refund(session: Session, dataset_id: uuid.UUID, epsilon: Decimal) -> None:
    session.execute(text("UPDATE budgets SET epsilon_spent = epsilon_spent - :e, updated_at = now() "
                         "WHERE dataset_id = :d"), {"e": epsilon, "d": dataset_id})


def lock(session: Session, dataset_id: uuid.UUID) -> None:
    """The budget row's lock, until the transaction ends: a dataset's ledger entries are
    written under it, so their ids follow their commits (a follower of the ledger misses none)."""
    session.execute(text("SELECT 1 FROM budgets WHERE dataset_id = :d FOR UPDATE"), {"d": dataset_id})


def add_entry(session: Session, **values: Any) -> None:
    session.execute(insert(budget_entries).values(**{**values, "actor": str(values["actor"])}))


def add_spent(session: Session, dataset_id: uuid.UUID, epsilon: Decimal) -> Decimal:
    """Add ε to what is spent, whatever the cap (a reconciliation records ε already spent)."""
    return session.execute(text(
        "UPDATE budgets SET epsilon_spent = epsilon_spent + :e, updated_at = now() "
        "WHERE dataset_id = :d RETURNING epsilon_spent"), {"e": epsilon, "d": dataset_id}).scalar_one()


_LATEST = (select(budget_entries).where(budget_entries.c.dataset_id == bindparam("d"))
           .order_by(budget_entries.c.id.desc()).limit(bindparam("n", type_=Integer)))


def latest_entries(session: Session, dataset_id: uuid.UUID, limit: int) -> list[dict[str, Any]]:
    """The ``limit`` most recent ledger entries, oldest first."""
    rows = [dict(r) for r in session.execute(_LATEST, {"d": dataset_id, "n": limit}).mappings()]
    return rows[::-1]


def entries_after(session: Session, dataset_id: uuid.UUID, after: int | None, limit: int
                  ) -> list[dict[str, Any]]:
    """A page of the ledger, oldest first, after the entry ``after`` (keyset on the id): up to
    ``limit`` + 1 entries (the extra one: whether a page follows; ``pagination.id_page``)."""
    q = select(budget_entries).where(budget_entries.c.dataset_id == dataset_id)
    if after is not None:
        q = q.where(budget_entries.c.id > after)
    return [dict(r) for r in session.execute(q.order_by(budget_entries.c.id).limit(limit + 1)).mappings()]


HOLDING = ("debit", "reconciliation")  # the kinds of entry that spend a job's ε


def holds_debit(session: Session, job_id: uuid.UUID) -> bool:
    """Whether the ledger still holds the job's ε: more debits (or reconciliations) than refunds
    (a refund is always of the whole ε; counting, not summing, because ∞ − ∞ has no value)."""
    return session.execute(select(
        func.count().filter(budget_entries.c.kind.in_(HOLDING))
        > func.count().filter(budget_entries.c.kind == "refund"))
        .where(budget_entries.c.job_id == job_id)).scalar_one()


def recompute_spent(session: Session, dataset_id: uuid.UUID) -> None:
    """epsilon_spent := Σ of the ε the ledger holds, job by job, plus the reconciliations of no
    known job. For an infinite refund, where ``spent - ∞`` has no value. The row lock comes
    first, in its own statement, so the sum (the next statement, a new snapshot) sees every
    debit committed before it."""
    lock(session, dataset_id)
    session.execute(text(
        "UPDATE budgets SET updated_at = now(), epsilon_spent = (SELECT COALESCE(SUM(held), 0) FROM ("
        "  SELECT MAX(epsilon) FILTER (WHERE kind IN ('debit', 'reconciliation')) AS held FROM budget_entries"
        "  WHERE dataset_id = :d AND job_id IS NOT NULL GROUP BY job_id"
        "  HAVING COUNT(*) FILTER (WHERE kind IN ('debit', 'reconciliation'))"
        "       > COUNT(*) FILTER (WHERE kind = 'refund')) AS jobs) "
        "+ (SELECT COALESCE(SUM(epsilon), 0) FROM budget_entries"
        "   WHERE dataset_id = :d AND job_id IS NULL AND kind = 'reconciliation') "
        "WHERE dataset_id = :d"), {"d": dataset_id})


def dataset_tenant(session: Session, dataset_id: uuid.UUID) -> str | None:
    """The tenant of a dataset, deleted or not (None: no such dataset)."""
    return session.execute(select(datasets.c.tenant).where(datasets.c.id == dataset_id)).scalar()


def job_of(session: Session, job_id: uuid.UUID):
    return session.execute(select(jobs.c.dataset_id, jobs.c.method).where(jobs.c.id == job_id)).first()


_COUNT = select(func.count()).select_from(budget_entries).where(budget_entries.c.dataset_id == bindparam("d"))


def count_entries(session: Session, dataset_id: uuid.UUID) -> int:
    return session.execute(_COUNT, {"d": dataset_id}).scalar_one()
