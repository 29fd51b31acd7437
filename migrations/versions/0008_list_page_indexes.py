"""indexes that hand every list's page over in its order

Every list pages newest first by (created_at, id) (the audit trail by (txn, id), the ledger by
id), filtered by tenant, dataset or release. Only the jobs' tenant list had an index in that
order; the others read every row the filter matched and sorted them for each page: with 23,000
releases of one tenant a page of /v1/releases took 23 ms in PostgreSQL, the same for the last
page as for the first, growing with the tenant's history. The admins' lists across tenants, a
dataset's audit trail and ledger, and the refund check (a job's ledger entries, read from the
whole ledger of every tenant) read the same way. Single-column indexes that a new one starts
with are dropped (the new one serves their lookups).

Revision ID: 0008
Revises: 0007
"""
from alembic import op

revision = '0008'
down_revision = '0007'
branch_labels = None
depends_on = None

# (index, table, columns before, columns after): None before, a new index; None after, one
# that a new index starting with the same column replaces; both, the same name with more columns
_CHANGES = [
    ('ix_datasets_tenant_created', 'datasets', None, ['tenant', 'created_at', 'id']),
    ('ix_datasets_tenant', 'datasets', ['tenant'], None),
    ('ix_jobs_tenant_created', 'jobs', ['tenant', 'created_at'], ['tenant', 'created_at', 'id']),
    ('ix_jobs_dataset_created', 'jobs', None, ['dataset_id', 'created_at', 'id']),
    ('ix_jobs_release_created', 'jobs', None, ['release_id', 'created_at', 'id']),
    ('ix_jobs_created', 'jobs', None, ['created_at', 'id']),
    ('ix_releases_tenant_created', 'releases', None, ['tenant', 'created_at', 'id']),
    ('ix_releases_tenant', 'releases', ['tenant'], None),
    ('ix_releases_dataset_created', 'releases', None, ['dataset_id', 'created_at', 'id']),
    ('ix_releases_dataset_id', 'releases', ['dataset_id'], None),
    ('ix_reports_tenant_created', 'reports', None, ['tenant', 'created_at', 'id']),
    ('ix_reports_tenant', 'reports', ['tenant'], None),
    ('ix_reports_dataset_created', 'reports', None, ['dataset_id', 'created_at', 'id']),
    ('ix_reports_release_created', 'reports', None, ['release_id', 'created_at', 'id']),
    ('ix_models_tenant_created', 'models', None, ['tenant', 'created_at', 'id']),
    ('ix_models_tenant', 'models', ['tenant'], None),
    ('ix_models_release_created', 'models', None, ['release_id', 'created_at', 'id']),
    ('ix_budget_entries_dataset', 'budget_entries', None, ['dataset_id', 'id']),
    ('ix_budget_entries_dataset_id', 'budget_entries', ['dataset_id'], None),
    ('ix_budget_entries_job', 'budget_entries', None, ['job_id']),
    ('ix_audit_dataset', 'audit_events', ['dataset_id'], ['dataset_id', 'txn', 'id']),
    ('ix_audit_release', 'audit_events', ['release_id'], ['release_id', 'txn', 'id']),
    ('ix_audit_txn', 'audit_events', None, ['txn', 'id']),
]


def _change(old: int, new: int) -> None:
    """From the columns at position ``old`` of each change to those at ``new`` (2: before, 3: after)."""
    for change in _CHANGES:
        name, table = change[:2]
        if change[old] is not None:
            op.drop_index(name, table_name=table)
        if change[new] is not None:
            op.create_index(name, table, change[new], unique=False)


def upgrade() -> None:
    _change(2, 3)


def downgrade() -> None:
    _change(3, 2)
