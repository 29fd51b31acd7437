"""mask and png releases no longer keep the realized number of flipped bits

Their metrics published `flipped_bits` and `flip_rate`: with the released rows, the number of
flips is the L1 distance between input and output, so whoever knows every other record
recovers the last one (the leakage acceptance check, 4 of 4 single-item records at ε = 1.1).
New releases state `expected_flip_rate` from the parameters instead; this removes the two
figures from the releases made before.

Revision ID: 0006
Revises: 0005
"""
from alembic import op

revision = '0006'
down_revision = '0005'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute("UPDATE releases SET metrics = metrics - 'flipped_bits' - 'flip_rate' "
               "WHERE metrics ?| array['flipped_bits', 'flip_rate']")


def downgrade() -> None:
    pass  # what was removed is not to be published again
