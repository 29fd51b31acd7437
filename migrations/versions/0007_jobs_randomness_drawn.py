"""jobs.randomness_drawn: an attempt of the job drew randomness (or may have: a lost attempt)

A failed job is refunded when it drew no randomness. That was judged on its last attempt alone:
an attempt that drew and then died, followed by one that did not draw, gave the ε back although
the first failure may have depended on the noise. The flag is sticky over attempts and retries.
Jobs made before this revision start with false: their earlier attempts crashed or were lost,
and a crash was never refunded, so only a later refundable failure is affected.

Revision ID: 0007
Revises: 0006
"""
from alembic import op
import sqlalchemy as sa

revision = '0007'
down_revision = '0006'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column('jobs', sa.Column('randomness_drawn', sa.Boolean(), nullable=False,
                                    server_default=sa.text('false')))
    # a job queued again or on a later attempt now had an attempt that crashed or was lost
    op.execute("UPDATE jobs SET randomness_drawn = true WHERE (status = 'queued' AND attempt > 0) OR (status = 'running' AND attempt > 1)")


def downgrade() -> None:
    op.drop_column('jobs', 'randomness_drawn')
