"""Initial schema: audit log, outbox, rounds, tracking, snapshots, dead letters.

Revision ID: 0001
Revises:
Create Date: 2026-01-01
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0001"
down_revision: str | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "audit_events",
        sa.Column("seq", sa.BigInteger, primary_key=True, autoincrement=False),
        sa.Column("subject", sa.Text, nullable=False),
        sa.Column("type", sa.String(64), nullable=False),
        sa.Column("at_ms", sa.BigInteger, nullable=False),
        sa.Column("data", sa.LargeBinary, nullable=False),
    )
    op.create_table(
        "outbox",
        sa.Column("id", sa.String(64), primary_key=True),
        sa.Column("plan_seq", sa.BigInteger, nullable=False),
        sa.Column("position", sa.Integer, nullable=False),
        sa.Column("subject", sa.Text, nullable=False),
        sa.Column("data", sa.LargeBinary, nullable=False),
        sa.Column("published_at_ms", sa.BigInteger, nullable=True),
    )
    op.create_index("ix_outbox_plan_seq", "outbox", ["plan_seq"])
    op.create_index("ix_outbox_published_at_ms", "outbox", ["published_at_ms"])
    op.create_table(
        "rounds",
        sa.Column("plan_seq", sa.BigInteger, primary_key=True, autoincrement=False),
        sa.Column("event_count", sa.Integer, nullable=False),
        sa.Column("decision_count", sa.Integer, nullable=False),
    )
    op.create_table(
        "tracking",
        sa.Column("consumer", sa.String(128), primary_key=True),
        sa.Column("last_seq", sa.BigInteger, nullable=False),
    )
    op.create_table(
        "snapshots",
        sa.Column("name", sa.String(128), primary_key=True),
        sa.Column("seq", sa.BigInteger, nullable=False),
        sa.Column("data", sa.LargeBinary, nullable=False),
    )
    op.create_table(
        "dead_letters",
        sa.Column("seq", sa.BigInteger, primary_key=True, autoincrement=False),
        sa.Column("subject", sa.Text, nullable=False),
        sa.Column("reason", sa.Text, nullable=False),
        sa.Column("data", sa.LargeBinary, nullable=False),
        sa.Column("published_at_ms", sa.BigInteger, nullable=True),
    )
    op.create_index("ix_dead_letters_published_at_ms", "dead_letters", ["published_at_ms"])


def downgrade() -> None:
    op.drop_table("dead_letters")
    op.drop_table("snapshots")
    op.drop_table("tracking")
    op.drop_table("rounds")
    op.drop_table("outbox")
    op.drop_table("audit_events")
