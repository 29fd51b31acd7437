"""a database restored from a logical backup (pg_dump → pg_restore) is detected and its ledger frozen

An audit event's `txn` is the id of the transaction that wrote it (migration 0003). A restore
into another cluster starts transaction ids afresh, below the restored events' `txn`: events
written after it were listed *before* the restored ones, and `settled=true` hid the restored
ones until the new cluster's ids caught up (restored at txn 1,011 under a cluster at 885).
`txn` is now the transaction's id plus `service_state.txn_offset`, which the restore check
(app/ops/restore.py) raises above every restored event's. The same row records a detected
restore, which freezes ε debits until an operator accepts it (`veil restore-accept`).

Revision ID: 0010
Revises: 0009
"""
import sqlalchemy as sa
from alembic import op

revision = '0010'
down_revision = '0009'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        'service_state',
        sa.Column('id', sa.Integer(), primary_key=True),
        sa.Column('txn_offset', sa.BigInteger(), nullable=False, server_default=sa.text('0')),
        sa.Column('checked_upto', sa.BigInteger(), nullable=False, server_default=sa.text('0')),
        sa.Column('restore_detected_at', sa.DateTime(timezone=True)),
        sa.Column('restore', sa.dialects.postgresql.JSONB()),
        sa.Column('restore_accepted_at', sa.DateTime(timezone=True)),
        sa.CheckConstraint('id = 1', name='ck_service_state_one_row'),
    )
    op.execute("INSERT INTO service_state (id) VALUES (1)")
    op.execute("""CREATE FUNCTION veil_txn() RETURNS bigint LANGUAGE sql VOLATILE AS $$
        SELECT pg_current_xact_id()::text::bigint + COALESCE((SELECT txn_offset FROM service_state WHERE id = 1), 0)
    $$""")
    op.execute("""CREATE FUNCTION veil_settled_below() RETURNS bigint LANGUAGE sql STABLE AS $$
        SELECT pg_snapshot_xmin(pg_current_snapshot())::text::bigint
               + COALESCE((SELECT txn_offset FROM service_state WHERE id = 1), 0)
    $$""")
    op.alter_column('audit_events', 'txn', server_default=sa.text('veil_txn()'))


def downgrade() -> None:
    op.alter_column('audit_events', 'txn', server_default=sa.text('(pg_current_xact_id())::text::bigint'))
    op.execute("DROP FUNCTION veil_settled_below()")
    op.execute("DROP FUNCTION veil_txn()")
    op.drop_table('service_state')
