"""The database schema (SQLAlchemy Core). Alembic migrations are generated from it; all SQL
that uses it lives in the domains' repositories."""

from __future__ import annotations

from sqlalchemy import (
    BigInteger, Boolean, CheckConstraint, Column, DateTime, Float, ForeignKey, Index, Integer, LargeBinary,
    MetaData, Numeric, String, Table, Text, UniqueConstraint, func, text,
)
from sqlalchemy.dialects.postgresql import JSONB, UUID

metadata = MetaData(naming_convention={
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
})


def _id() -> Column:
    return Column("id", UUID(as_uuid=True), primary_key=True)


def _created_at() -> Column:
    return Column("created_at", DateTime(timezone=True), nullable=False, server_default=func.now())


api_keys = Table(
    "api_keys", metadata, _id(),
    Column("tenant", String(64), nullable=False),
    Column("role", String(16), nullable=False),
    Column("prefix", String(16), nullable=False, unique=True),
    Column("key_hash", String(64), nullable=False),  # sha256 hex of the whole key
    Column("label", String(200)),
    _created_at(),
    Column("revoked_at", DateTime(timezone=True)),
)

# Large payloads (uploaded data, releases, plots, models) in 4 MiB chunks.
blob_chunks = Table(
    "blob_chunks", metadata,
    Column("blob_id", UUID(as_uuid=True), primary_key=True),
    Column("seq", Integer, primary_key=True),
    Column("data", LargeBinary, nullable=False),
)

datasets = Table(
    "datasets", metadata, _id(),
    Column("tenant", String(64), nullable=False),
    Column("name", String(300), nullable=False),
    Column("format", String(20), nullable=False),
    Column("shape", String(20), nullable=False),  # table | transactions
    Column("rows", BigInteger, nullable=False),
    Column("columns", JSONB, nullable=False),  # schema + profile, one entry per column
    Column("sha256", String(64), nullable=False),
    Column("size_bytes", BigInteger, nullable=False),
    Column("blob_id", UUID(as_uuid=True)),  # NULL once deleted (data purged)
    Column("created_by", UUID(as_uuid=True), nullable=False),
    _created_at(),
    Column("deleted_at", DateTime(timezone=True)),
    Column("idempotency_key", String(200)),
    Column("request_hash", String(64)),
    UniqueConstraint("tenant", "idempotency_key", name="uq_datasets_idempotency"),
    # every list pages newest first by (created_at, id): an index per filter a list takes hands a
    # page over in that order (without one, each page sorted every row the filter matched)
    Index("ix_datasets_tenant_created", "tenant", "created_at", "id"),
)

hierarchies = Table(
    "hierarchies", metadata,
    Column("dataset_id", UUID(as_uuid=True), ForeignKey("datasets.id"), primary_key=True),
    Column("column_name", String(300), primary_key=True),
    Column("text", Text, nullable=False),
    Column("levels", Integer, nullable=False),
    _created_at(),
)

jobs = Table(
    "jobs", metadata, _id(),
    Column("tenant", String(64), nullable=False),
    Column("created_by", UUID(as_uuid=True), nullable=False),
    Column("method", String(64), nullable=False),
    Column("kind", String(20), nullable=False),
    Column("dataset_id", UUID(as_uuid=True)),  # the input dataset, or the root of the input release
    Column("release_id", UUID(as_uuid=True)),  # the input release, if any
    Column("params", JSONB, nullable=False),
    Column("seed", BigInteger),
    Column("epsilon", Numeric),  # debited from the dataset's budget at acceptance
    Column("status", String(16), nullable=False),
    Column("progress", Float, nullable=False, server_default=text("0")),
    Column("stage", String(200)),
    Column("error", JSONB),
    Column("attempt", Integer, nullable=False, server_default=text("0")),
    Column("max_attempts", Integer, nullable=False),
    Column("worker_id", String(100)),
    Column("heartbeat_at", DateTime(timezone=True)),
    Column("cancel_requested", Boolean, nullable=False, server_default=text("false")),
    # an attempt of this job drew randomness, or may have (a lost attempt): no refund after it
    Column("randomness_drawn", Boolean, nullable=False, server_default=text("false")),
    Column("queue_job_id", BigInteger),  # procrastinate's job id of the current attempt
    Column("queue_priority", Integer),  # that entry's priority (fair queueing between tenants)
    _created_at(),
    Column("started_at", DateTime(timezone=True)),
    Column("finished_at", DateTime(timezone=True)),
    Column("idempotency_key", String(200)),
    Column("request_hash", String(64)),
    UniqueConstraint("tenant", "idempotency_key", name="uq_jobs_idempotency"),
    Index("ix_jobs_tenant_created", "tenant", "created_at", "id"),
    Index("ix_jobs_dataset_created", "dataset_id", "created_at", "id"),
    Index("ix_jobs_release_created", "release_id", "created_at", "id"),
    Index("ix_jobs_created", "created_at", "id"),  # admins: every tenant's
    Index("ix_jobs_status_heartbeat", "status", "heartbeat_at"),
    # the active-job cap counts these on every submission
    Index("ix_jobs_tenant_active", "tenant", postgresql_where=text("status IN ('queued', 'running')")),
    Index("ix_jobs_tenant_waiting", "tenant", "queue_priority", postgresql_where=text("status = 'queued'")),
)

# Every job that reached a terminal state, counted once per finish by method, outcome and the
# upper bound of its run time's bucket (-Infinity: it never ran). Cumulative, so /metrics can
# expose counters that only grow (it read the last 1,000 jobs' durations, and counts went down).
job_outcomes = Table(
    "job_outcomes", metadata,
    Column("method", String(64), primary_key=True),
    Column("status", String(16), primary_key=True),
    Column("le", Float, primary_key=True),
    Column("jobs", BigInteger, nullable=False),
    Column("seconds", Float, nullable=False),
)

releases = Table(
    "releases", metadata, _id(),
    Column("tenant", String(64), nullable=False),
    Column("job_id", UUID(as_uuid=True), ForeignKey("jobs.id"), nullable=False, unique=True),
    Column("dataset_id", UUID(as_uuid=True), nullable=False),  # the root dataset
    Column("source_release_id", UUID(as_uuid=True)),
    Column("method", String(64), nullable=False),
    Column("params", JSONB, nullable=False),
    Column("guarantees", JSONB, nullable=False),
    Column("metrics", JSONB, nullable=False),
    Column("metadata", JSONB, nullable=False),
    Column("chain", JSONB, nullable=False),  # earlier steps, oldest first
    Column("shape", String(20), nullable=False),
    Column("columns", JSONB, nullable=False),
    Column("rows", BigInteger, nullable=False),
    Column("blob_id", UUID(as_uuid=True), nullable=False),
    Column("input_sha256", String(64), nullable=False),
    Column("output_sha256", String(64), nullable=False),
    Column("code_version", String(64), nullable=False),
    Column("created_by", UUID(as_uuid=True), nullable=False),
    _created_at(),
    Index("ix_releases_tenant_created", "tenant", "created_at", "id"),
    Index("ix_releases_dataset_created", "dataset_id", "created_at", "id"),
)

reports = Table(
    "reports", metadata, _id(),
    Column("tenant", String(64), nullable=False),
    Column("job_id", UUID(as_uuid=True), ForeignKey("jobs.id"), nullable=False, unique=True),
    Column("kind", String(64), nullable=False),
    Column("dataset_id", UUID(as_uuid=True)),
    Column("release_id", UUID(as_uuid=True)),
    Column("data", JSONB, nullable=False),
    Column("plots", JSONB, nullable=False),  # name -> {png: blob_id, svg: blob_id}
    _created_at(),
    Index("ix_reports_tenant_created", "tenant", "created_at", "id"),
    Index("ix_reports_dataset_created", "dataset_id", "created_at", "id"),
    Index("ix_reports_release_created", "release_id", "created_at", "id"),
)

models = Table(
    "models", metadata, _id(),
    Column("tenant", String(64), nullable=False),
    Column("job_id", UUID(as_uuid=True), ForeignKey("jobs.id"), nullable=False, unique=True),
    Column("method", String(64), nullable=False),
    Column("release_id", UUID(as_uuid=True)),
    Column("metadata", JSONB, nullable=False),
    Column("metrics", JSONB, nullable=False),
    Column("blob_id", UUID(as_uuid=True), nullable=False),
    _created_at(),
    Index("ix_models_tenant_created", "tenant", "created_at", "id"),
    Index("ix_models_release_created", "release_id", "created_at", "id"),
)

budgets = Table(
    "budgets", metadata,
    Column("dataset_id", UUID(as_uuid=True), ForeignKey("datasets.id"), primary_key=True),
    Column("epsilon_total", Numeric),  # NULL: no cap set (spending is still recorded)
    Column("epsilon_spent", Numeric, nullable=False, server_default=text("0")),
    Column("updated_at", DateTime(timezone=True), nullable=False, server_default=func.now()),
)

budget_entries = Table(
    "budget_entries", metadata,
    Column("id", BigInteger, primary_key=True, autoincrement=True),
    Column("dataset_id", UUID(as_uuid=True), nullable=False),
    Column("job_id", UUID(as_uuid=True)),  # null: a reconciliation of a job not known
    Column("method", String(64)),  # null: a reconciliation of a job not in this database
    # debit | refund | reconciliation (ε lost to a restore, written by `veil ledger debit`)
    Column("kind", String(16), nullable=False),
    Column("epsilon", Numeric, nullable=False),  # negative for a refund
    Column("actor", String(100), nullable=False),  # an API key id, or "worker"/"cli" (as in audit_events)
    Column("note", Text),  # a reconciliation's: what was lost and how it is known
    Column("at", DateTime(timezone=True), nullable=False, server_default=func.now()),
    Index("ix_budget_entries_dataset", "dataset_id", "id"),  # paged by id
    Index("ix_budget_entries_job", "job_id"),  # whether a job's ε is still held (a refund)
)

audit_events = Table(
    "audit_events", metadata,
    Column("id", BigInteger, primary_key=True, autoincrement=True),
    Column("at", DateTime(timezone=True), nullable=False, server_default=func.now()),
    Column("tenant", String(64), nullable=False),
    Column("actor", String(100), nullable=False),  # an API key id, or "worker"/"system"
    Column("action", String(64), nullable=False),
    Column("subject_type", String(32), nullable=False),
    Column("subject_id", String(64), nullable=False),
    Column("dataset_id", UUID(as_uuid=True)),
    Column("release_id", UUID(as_uuid=True)),
    Column("details", JSONB, nullable=False),
    # the inserting transaction's id (xid8) plus service_state.txn_offset (raised above every
    # restored event's after a logical restore): the list's order, in which a tail misses nothing
    Column("txn", BigInteger, nullable=False, server_default=text("veil_txn()")),
    Index("ix_audit_tenant_at", "tenant", "at"),
    Index("ix_audit_tenant_txn", "tenant", "txn", "id"),
    Index("ix_audit_dataset", "dataset_id", "txn", "id"),
    Index("ix_audit_release", "release_id", "txn", "id"),
    Index("ix_audit_txn", "txn", "id"),  # admins: every tenant's
    Index("ix_audit_tenant_action", "tenant", "action", "txn", "id"),  # ?action=
    Index("ix_audit_action", "action", "txn", "id"),  # ?action= across tenants (admins)
    Index("ix_audit_actor", "actor", "txn", "id"),  # ?actor=: a key is one tenant's
)

worker_heartbeats = Table(
    "worker_heartbeats", metadata,
    Column("worker_id", String(100), primary_key=True),
    Column("host", String(200), nullable=False),
    Column("pid", Integer, nullable=False),
    Column("started_at", DateTime(timezone=True), nullable=False, server_default=func.now()),
    Column("seen_at", DateTime(timezone=True), nullable=False, server_default=func.now()),
)

# One row (id 1): the audit trail's txn offset and a detected restore (migration 0010,
# app/ops/restore.py). A restore detected and not yet accepted freezes every ε debit.
service_state = Table(
    "service_state", metadata,
    Column("id", Integer, primary_key=True),
    Column("txn_offset", BigInteger, nullable=False, server_default=text("0")),
    Column("checked_upto", BigInteger, nullable=False, server_default=text("0")),  # audit ids seen by the check
    Column("restore_detected_at", DateTime(timezone=True)),
    Column("restore", JSONB),  # what the check found: the backup's newest event, the jobs it failed
    Column("restore_accepted_at", DateTime(timezone=True)),
    CheckConstraint("id = 1", name="one_row"),
)
