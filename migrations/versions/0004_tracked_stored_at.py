"""Tracking records when NATS stored the message at the tracked seq (`last_stored_at_us`).

A stream restored from a backup keeps the time each message was stored; the same bytes
published again at the tracked sequence after a restore get a new one, so the planner tells a
restored EVENTS stream from another by subject, bytes and stored time. (Alembic logs the first
paragraph of this docstring as the step's name: keep it one line.)

Revision ID: 0004
Revises: 0003
Create Date: 2026-12-06
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0004"
down_revision: str | None = "0003"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    # nullable: a sequence tracked before this revision did not record it; the planner then
    # compares subject and bytes only, until its next batch records one
    with op.batch_alter_table("tracking") as batch:
        batch.add_column(sa.Column("last_stored_at_us", sa.BigInteger, nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("tracking") as batch:
        batch.drop_column("last_stored_at_us")
