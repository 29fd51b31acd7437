"""job_outcomes: finished jobs counted by method, outcome and run-time bucket

/metrics exposed a histogram of the last 1,000 succeeded jobs' run times, read from the jobs
table at each scrape: its counts went down as old jobs left the window (Prometheus reads that
as a counter reset) and failed or cancelled jobs were not counted. Each terminal transition
now increments a counter row in the same transaction. Existing finished jobs are counted
once here (their first start to their finish; -Infinity for those that never ran), in the
bucket bounds of app/jobs/repository.DURATION_BOUNDS at this revision.

Revision ID: 0005
Revises: 0004
"""
from alembic import op
import sqlalchemy as sa

revision = '0005'
down_revision = '0004'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        'job_outcomes',
        sa.Column('method', sa.String(length=64), nullable=False),
        sa.Column('status', sa.String(length=16), nullable=False),
        sa.Column('le', sa.Float(), nullable=False),
        sa.Column('jobs', sa.BigInteger(), nullable=False),
        sa.Column('seconds', sa.Float(), nullable=False),
        sa.PrimaryKeyConstraint('method', 'status', 'le'),
    )
    op.execute(
        "INSERT INTO job_outcomes (method, status, le, jobs, seconds) "
        "SELECT method, status, le, count(*), coalesce(sum(seconds), 0) FROM ("
        "  SELECT method, status, secs AS seconds, CASE "
        "    WHEN secs IS NULL THEN '-Infinity'::float8 "
        "    ELSE coalesce((SELECT min(b) FROM unnest(ARRAY[0.1, 0.5, 1, 2, 5, 10, 30, 60, 300, 900]::float8[]) b "
        "                   WHERE secs <= b), 'Infinity'::float8) END AS le "
        # greatest() skips NULLs: a job that never ran must keep a NULL run time
        "  FROM (SELECT method, status, CASE WHEN started_at IS NOT NULL AND finished_at IS NOT NULL "
        "        THEN greatest(EXTRACT(EPOCH FROM finished_at - started_at)::float8, 0) END AS secs "
        "        FROM jobs WHERE status IN ('succeeded', 'failed', 'cancelled')) j) t "
        "GROUP BY method, status, le")


def downgrade() -> None:
    op.drop_table('job_outcomes')
