"""Rounds record which planner planned them (`rounds.planner`).

An audit can then tell a determinism bug from a planner upgrade. (Alembic logs the first
paragraph of this docstring as the step's name: keep it one line.)

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-30
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0002"
down_revision: str | None = "0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    # nullable: rounds planned before this revision did not record their planner
    with op.batch_alter_table("rounds") as batch:
        batch.add_column(sa.Column("planner", sa.String(64), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("rounds") as batch:
        batch.drop_column("planner")
