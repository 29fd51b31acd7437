"""partial index for the tenant's active-job count

Every submission counts the tenant's queued and running jobs (the active-job cap); without
this index that count reads every job the tenant ever ran.

Revision ID: 0002
Revises: 0001
"""
from alembic import op
import sqlalchemy as sa

revision = '0002'
down_revision = '0001'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index('ix_jobs_tenant_active', 'jobs', ['tenant'], unique=False,
                    postgresql_where=sa.text("status IN ('queued', 'running')"))


def downgrade() -> None:
    op.drop_index('ix_jobs_tenant_active', table_name='jobs')
