"""Tracking records which EVENTS stream its sequence belongs to (`tracking.stream_created`).

A stream deleted and created anew under the same name starts its sequences again, holding
other events at the positions tracked; the stream's creation time tells the two apart. (Alembic
logs the first paragraph of this docstring as the step's name: keep it one line.)

Revision ID: 0003
Revises: 0002
Create Date: 2026-12-06
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0003"
down_revision: str | None = "0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    # nullable: a sequence tracked before this revision did not record its stream; the
    # planner adopts the stream it finds at its next start
    with op.batch_alter_table("tracking") as batch:
        batch.add_column(sa.Column("stream_created", sa.String(64), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("tracking") as batch:
        batch.drop_column("stream_created")
