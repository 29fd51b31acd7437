"""ε lost to a restore is written into the ledger: a `reconciliation` entry (`veil ledger debit`)

After a restore from an older backup, every ε spent after the backup is missing from the
ledger. An operator writes it back as an entry of its own kind, which a debit's columns could
not hold: the lost job may be unknown (`job_id` null), its method too (`method` null), the
actor is the operator's command, not an API key (`actor` text, as in the audit trail), and the
entry says why (`note`).

Revision ID: 0011
Revises: 0010
"""
import sqlalchemy as sa
from alembic import op

revision = '0011'
down_revision = '0010'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.alter_column('budget_entries', 'job_id', existing_type=sa.UUID(), nullable=True)
    op.alter_column('budget_entries', 'method', existing_type=sa.String(length=64), nullable=True)
    op.alter_column('budget_entries', 'actor', existing_type=sa.UUID(), type_=sa.String(length=100),
                    existing_nullable=False, postgresql_using='actor::text')
    op.add_column('budget_entries', sa.Column('note', sa.Text(), nullable=True))


def downgrade() -> None:
    held = op.get_bind().execute(sa.text(
        "SELECT count(*) FROM budget_entries WHERE kind = 'reconciliation'")).scalar()
    if held:
        raise RuntimeError(f"the ledger holds {held} reconciliation entries, which 0010's columns cannot "
                           "hold: a downgrade would lose ε spent")
    op.drop_column('budget_entries', 'note')
    op.alter_column('budget_entries', 'actor', existing_type=sa.String(length=100), type_=sa.UUID(),
                    existing_nullable=False, postgresql_using='actor::uuid')
    op.alter_column('budget_entries', 'method', existing_type=sa.String(length=64), nullable=False)
    op.alter_column('budget_entries', 'job_id', existing_type=sa.UUID(), nullable=False)
