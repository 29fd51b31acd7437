"""audit events carry their transaction id: the trail is listed in an order a tail can follow

An event's id is taken when it is inserted, but it becomes visible when its transaction
commits, so ids appear out of order: a client that followed the trail with `cursor` missed an
event that committed after a later id was already listed. `txn` is the inserting transaction's
id (xid8 as bigint); the list shows an event only once every transaction that began writing
before its own has ended, ordered by (txn, id). Existing events get 0: all are settled.

Revision ID: 0003
Revises: 0002
"""
from alembic import op
import sqlalchemy as sa

revision = '0003'
down_revision = '0002'
branch_labels = None
depends_on = None


def upgrade() -> None:
    # a constant default fills the existing rows without an UPDATE (the trail is append-only)
    op.add_column('audit_events', sa.Column('txn', sa.BigInteger(), nullable=False, server_default='0'))
    op.alter_column('audit_events', 'txn', server_default=sa.text('(pg_current_xact_id())::text::bigint'))
    op.create_index('ix_audit_tenant_txn', 'audit_events', ['tenant', 'txn', 'id'], unique=False)


def downgrade() -> None:
    op.drop_index('ix_audit_tenant_txn', table_name='audit_events')
    op.drop_column('audit_events', 'txn')
