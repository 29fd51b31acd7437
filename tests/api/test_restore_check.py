"""A database restored from a logical backup (pg_dump → pg_restore) is detected: the audit
trail keeps its order, the jobs in flight at the backup are not run a second time, and no ε is
debited until an operator accepts the restore (docs/reliability.md, "Backup and restore")."""

from __future__ import annotations

import uuid
from contextlib import contextmanager

import pytest
from sqlalchemy import text
from sqlalchemy.orm import Session

from tests.api.test_migrations import _database_at

TENANT = "restored-co"


@contextmanager
def _scratch(database: str):
    """A scratch database at this code's migration (test_migrations' helper)."""
    with _database_at(database, "head") as (engine, _url):
        yield engine


def _event(session, action: str, txn: int | None = None) -> None:
    values = dict(tenant=TENANT, actor="system", action=action, subject_type="test",
                  subject_id="x", details="{}")
    if txn is None:
        session.execute(text("INSERT INTO audit_events (tenant, actor, action, subject_type, subject_id, "
                             "details) VALUES (:tenant, :actor, :action, :subject_type, :subject_id, "
                             "CAST(:details AS jsonb))"), values)
    else:
        session.execute(text("INSERT INTO audit_events (tenant, actor, action, subject_type, subject_id, "
                             "details, txn) VALUES (:tenant, :actor, :action, :subject_type, :subject_id, "
                             "CAST(:details AS jsonb), :txn)"), {**values, "txn": txn})


def _restored_state(engine) -> tuple[uuid.UUID, uuid.UUID]:
    """What pg_restore leaves in a new cluster: events copied in by one transaction, their txn
    from the old cluster's (further along) transaction ids; a job queued at the backup, its ε
    debited."""
    dataset, job = uuid.uuid4(), uuid.uuid4()
    with Session(engine) as s, s.begin():
        _event(s, "before.backup")
    with Session(engine) as s, s.begin():
        now = s.execute(text("SELECT pg_current_xact_id()::text::bigint")).scalar()
        for k in range(3):
            _event(s, f"restored.{k}", txn=now + 1_000_000 + k)
        s.execute(text("INSERT INTO datasets (id, tenant, name, format, shape, rows, columns, sha256, "
                       "size_bytes, created_by) VALUES (:d, :t, 'd.csv', 'csv', 'table', 1, '[]', "
                       "repeat('0', 64), 1, :d)"), {"d": dataset, "t": TENANT})
        s.execute(text("INSERT INTO budgets (dataset_id, epsilon_total, epsilon_spent) VALUES (:d, 10, 2)"),
                  {"d": dataset})
        s.execute(text("INSERT INTO jobs (id, tenant, created_by, method, kind, dataset_id, params, epsilon, "
                       "status, max_attempts) VALUES (:j, :t, :d, 'errph', 'release', :d, '{}', 2, "
                       "'queued', 3)"), {"j": job, "t": TENANT, "d": dataset})
        s.execute(text("INSERT INTO budget_entries (dataset_id, job_id, method, kind, epsilon, actor) "
                       "VALUES (:d, :j, 'errph', 'debit', 2, :d)"), {"d": dataset, "j": job})
    return dataset, job


def test_a_logical_restore_is_detected_keeps_the_trails_order_and_freezes_debits(database):
    from app.audit.repository import list_events
    from app.budgets import service as budgets
    from app.errors import Conflict
    from app.ops import restore

    with _scratch(database) as engine:
        with Session(engine) as s, s.begin():
            assert restore.check(s) is None  # a database nobody restored
        dataset, job = _restored_state(engine)
        with Session(engine) as s, s.begin():
            found = restore.check(s)
        assert found is not None and found["jobs_failed"] == [str(job)]
        with Session(engine) as s, s.begin():
            assert restore.check(s)["detected_at"] == found["detected_at"]  # once, not again
            _event(s, "after.restore")
        with Session(engine) as s:
            trail = [e["action"] for e in list_events(s, tenant=TENANT, dataset_id=None, release_id=None,
                                                       actor=None, action=None, since=None, until=None,
                                                       after=None, limit=100, settled=True)]
            # every restored event first, in its order; what happened since after it
            assert trail[:4] == ["before.backup", "restored.0", "restored.1", "restored.2"]
            assert trail[-1] == "after.restore" and "service.restored" in trail and "job.failed" in trail
            row = s.execute(text("SELECT status, error, randomness_drawn FROM jobs WHERE id = :j"),
                            {"j": job}).mappings().one()
            assert row["status"] == "failed" and row["error"]["type"] == "restored"
            assert row["randomness_drawn"]  # it may have run after the backup: its ε stays spent
            assert s.execute(text("SELECT epsilon_spent FROM budgets WHERE dataset_id = :d"),
                             {"d": dataset}).scalar() == 2
        with Session(engine) as s, s.begin(), pytest.raises(Conflict, match="restored from a backup"):
            budgets.debit(s, dataset_id=dataset, job_id=uuid.uuid4(), method="errph", epsilon=1.0,
                          actor=dataset)
        with Session(engine) as s, s.begin():  # post-processing of a DP release spends no ε: it goes on
            budgets.debit(s, dataset_id=dataset, job_id=uuid.uuid4(), method="reconstruct", epsilon=0.0,
                          actor=dataset)
        with Session(engine) as s, s.begin():
            restore.accept(s, actor="test")
        with Session(engine) as s, s.begin():
            assert restore.check(s) is None
            budgets.debit(s, dataset_id=dataset, job_id=uuid.uuid4(), method="errph", epsilon=1.0,
                          actor=dataset)


def test_a_restored_trail_of_one_event_is_detected(database):
    """One event cannot show two transactions' events copied in by one, and into a new cluster
    whose transaction ids already passed the old one's it is not ahead: a restore of a database
    of one event went undetected (the ledger drill). Its inserting transaction is not the one
    its txn names."""
    from app.ops import restore

    with _scratch(database) as engine:
        with Session(engine) as s, s.begin():
            behind = s.execute(text("SELECT pg_current_xact_id()::text::bigint")).scalar() - 3
            _event(s, "restored.only", txn=behind)
        with Session(engine) as s, s.begin():
            found = restore.check(s)
        assert found is not None and found["backup_last_event"]["position"].startswith(f"{behind}.")


def test_a_physical_copy_is_not_detected_but_can_be_declared(database):
    from app.ops import restore

    with _scratch(database) as engine:
        job = uuid.uuid4()
        with Session(engine) as s, s.begin():
            _event(s, "before.backup")
            s.execute(text("INSERT INTO jobs (id, tenant, created_by, method, kind, params, status, "
                           "max_attempts) VALUES (:j, :t, :j, 'risk', 'analysis', '{}', 'running', 3)"),
                      {"j": job, "t": TENANT})
        with Session(engine) as s, s.begin():
            assert restore.check(s) is None and not restore.pending(s)
            found = restore.check(s, declared=True)
        assert found["jobs_failed"] == [str(job)]
        with Session(engine) as s:
            assert restore.pending(s)


def test_a_failed_job_holding_its_epsilon_is_not_retried_while_a_restore_awaits(database):
    """The freeze refused every ε debit, but an admin's retry of a failed job that still holds its
    ε debits nothing (budgets.debit_again_if_refunded) and ran it: a job that failed before the
    backup and was retried and released after it (a release the restored ledger cannot know of)
    released again, with fresh noise, for one debit (mends 9666d8a). Now refused until the
    restore is accepted, as a debit is."""
    from app.auth.schemas import Principal, Role
    from app.errors import Conflict
    from app.jobs import service as jobs
    from app.ops import restore

    with _scratch(database) as engine:
        dataset, _queued = _restored_state(engine)
        failed = uuid.uuid4()
        with Session(engine) as s, s.begin():  # failed before the backup, its ε kept (it drew)
            s.execute(text("INSERT INTO jobs (id, tenant, created_by, method, kind, dataset_id, params, "
                           "epsilon, status, max_attempts, attempt, randomness_drawn, error) VALUES (:j, :t, "
                           ":d, 'errph', 'release', :d, '{}', 1, 'failed', 3, 3, true, "
                           "'{\"type\": \"no_disk_space\"}')"), {"j": failed, "t": TENANT, "d": dataset})
            s.execute(text("INSERT INTO budget_entries (dataset_id, job_id, method, kind, epsilon, actor) "
                           "VALUES (:d, :j, 'errph', 'debit', 1, :d)"), {"d": dataset, "j": failed})
        with Session(engine) as s, s.begin():
            assert restore.check(s) is not None
        admin = Principal(key_id=uuid.uuid4(), tenant="ops", role=Role.admin)
        with Session(engine) as s, s.begin(), pytest.raises(Conflict, match="restored from a backup"):
            jobs.retry(s, admin, failed)
        with Session(engine) as s:
            assert s.execute(text("SELECT status FROM jobs WHERE id = :j"), {"j": failed}).scalar() == "failed"


def test_an_event_recorded_inside_a_savepoint_is_refused(database):
    """Its xmin would be the subtransaction's, which the restore check reads as a restored
    event: the next start would fail every job in flight and freeze every budget. No code does
    it (both savepoints end before their event); this keeps it so."""
    from app.audit.service import record

    with _scratch(database) as engine:
        with Session(engine) as s, s.begin():
            s.execute(text("CREATE TEMPORARY TABLE scratch (x int)"))
            with s.begin_nested(), pytest.raises(RuntimeError, match="inside a savepoint"):
                s.execute(text("INSERT INTO scratch VALUES (1)"))  # the savepoint takes an xid of its own
                record(s, tenant=TENANT, actor="system", action="in.savepoint", subject_type="test",
                       subject_id="x")
            record(s, tenant=TENANT, actor="system", action="after.savepoint", subject_type="test",
                   subject_id="x")
        with Session(engine) as s, s.begin():  # the one after it: the transaction's own xid
            from app.ops import restore

            assert restore.check(s) is None
