"""jobs keep their queue entry's priority: the fair-queueing priority needs the lowest priority
among the tenant's waiting jobs, which an index gives at once (a join with the queue's table
read every active job of the tenant, under the tenant's submission lock)

Revision ID: 0004
Revises: 0003
"""
from alembic import op
import sqlalchemy as sa

revision = '0004'
down_revision = '0003'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column('jobs', sa.Column('queue_priority', sa.Integer(), nullable=True))
    op.create_index('ix_jobs_tenant_waiting', 'jobs', ['tenant', 'queue_priority'], unique=False,
                    postgresql_where=sa.text("status = 'queued'"))


def downgrade() -> None:
    op.drop_index('ix_jobs_tenant_waiting', table_name='jobs')
    op.drop_column('jobs', 'queue_priority')
