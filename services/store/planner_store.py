"""The planner's persistence: one transaction per batch, outbox, tracking, snapshot, dead letters.

Layer: store. Everything a batch changes is written in ONE transaction (`commit_batch`), so
after a crash the database holds either the whole batch or none of it. Publishing happens
after the commit, from the outbox; never publishes anything itself.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass

from sqlalchemy import Table, select, update
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from services.store import tables

AuditRow = tuple[int, str, str, int, bytes]
"""`(seq, subject, type, at_ms, data)` of one applied event."""

OutboxRow = tuple[str, int, str, bytes]
"""`(id, plan_seq, subject, data)` of one decision, in publication order."""

DeadLetterRow = tuple[int, str, str, bytes]
"""`(seq, subject, reason, data)` of one poisoned message."""


@dataclass(frozen=True)
class PendingDecision:
    """An outbox row not yet published."""

    id: str
    plan_seq: int
    subject: str
    data: bytes


@dataclass(frozen=True)
class PendingDeadLetter:
    """A dead letter not yet republished to the dead-letter subject."""

    seq: int
    subject: str
    reason: str
    data: bytes


class PlannerStore:
    """Reads and writes the planner's rows for one consumer and one snapshot name."""

    def __init__(
        self, engine: AsyncEngine, *, consumer: str = "planner", snapshot: str = "planner"
    ) -> None:
        self.engine = engine
        self.consumer = consumer
        self.snapshot = snapshot

    async def load(self) -> tuple[bytes | None, int]:
        """The last committed state and tracked sequence.

        Shapes: `(None, 0)` for an empty database (rebuild from the start of the stream).
        """
        async with self.engine.connect() as connection:
            snapshot = (
                await connection.execute(
                    select(tables.snapshots.c.data).where(tables.snapshots.c.name == self.snapshot)
                )
            ).scalar_one_or_none()
            last_seq = (
                await connection.execute(
                    select(tables.tracking.c.last_seq).where(
                        tables.tracking.c.consumer == self.consumer
                    )
                )
            ).scalar_one_or_none()
        return snapshot, int(last_seq or 0)

    async def commit_batch(
        self,
        events: Sequence[AuditRow],
        decisions: Sequence[OutboxRow],
        plan_seq: int | None,
        state_bytes: bytes,
        last_seq: int,
        dead_letters: Sequence[DeadLetterRow] = (),
    ) -> None:
        """Write one batch in ONE transaction: audit rows, outbox, round, snapshot, tracking.

        `plan_seq` None means no planning round ran (a batch of poisoned messages only).
        Raises:
            sqlalchemy.exc.IntegrityError: an event sequence or decision id already stored,
                which means the caller broke the tracking invariant; nothing is written.
        """
        async with self.engine.begin() as connection:
            await _insert(connection, tables.audit_events, [_audit(row) for row in events])
            await _insert(connection, tables.outbox, [
                _outbox(row, position) for position, row in enumerate(decisions)
            ])
            await _insert(connection, tables.dead_letters, [_dead(row) for row in dead_letters])
            if plan_seq is not None:
                await _insert(connection, tables.rounds, [{
                    "plan_seq": plan_seq, "event_count": len(events),
                    "decision_count": len(decisions),
                }])
            await _upsert(connection, tables.snapshots, "name", self.snapshot,
                          {"seq": last_seq, "data": state_bytes})
            await _upsert(connection, tables.tracking, "consumer", self.consumer,
                          {"last_seq": last_seq})

    async def pending_outbox(self) -> list[PendingDecision]:
        """Decisions committed but not yet published. Shapes: by plan_seq, then position."""
        outbox = tables.outbox
        query = (
            select(outbox.c.id, outbox.c.plan_seq, outbox.c.subject, outbox.c.data)
            .where(outbox.c.published_at_ms.is_(None))
            .order_by(outbox.c.plan_seq, outbox.c.position)
        )
        async with self.engine.connect() as connection:
            rows = (await connection.execute(query)).all()
        return [PendingDecision(row.id, row.plan_seq, row.subject, row.data) for row in rows]

    async def mark_published(self, ids: Sequence[str]) -> None:
        """Record that the decisions `ids` are stored in the DECISIONS stream (idempotent)."""
        if ids:
            async with self.engine.begin() as connection:
                await connection.execute(
                    update(tables.outbox)
                    .where(tables.outbox.c.id.in_(list(ids)))
                    .values(published_at_ms=_now_ms())
                )

    async def record_dead_letter(self, seq: int, subject: str, reason: str, data: bytes) -> None:
        """Store one poisoned message outside a batch; a sequence already stored is kept."""
        async with self.engine.begin() as connection:
            known = (await connection.execute(
                select(tables.dead_letters.c.seq).where(tables.dead_letters.c.seq == seq)
            )).first()
            if known is None:
                row = _dead((seq, subject, reason, data))
                await _insert(connection, tables.dead_letters, [row])

    async def pending_dead_letters(self) -> list[PendingDeadLetter]:
        """Dead letters not yet republished. Shapes: by sequence."""
        dead = tables.dead_letters
        query = (
            select(dead.c.seq, dead.c.subject, dead.c.reason, dead.c.data)
            .where(dead.c.published_at_ms.is_(None))
            .order_by(dead.c.seq)
        )
        async with self.engine.connect() as connection:
            rows = (await connection.execute(query)).all()
        return [PendingDeadLetter(row.seq, row.subject, row.reason, row.data) for row in rows]

    async def mark_dead_letters_published(self, seqs: Sequence[int]) -> None:
        """Record that the dead letters `seqs` are stored on the dead-letter subject."""
        if seqs:
            async with self.engine.begin() as connection:
                await connection.execute(
                    update(tables.dead_letters)
                    .where(tables.dead_letters.c.seq.in_(list(seqs)))
                    .values(published_at_ms=_now_ms())
                )


async def _insert(connection: AsyncConnection, table: Table, rows: list[dict[str, object]]) -> None:
    """Insert `rows` into `table` (one executemany); nothing for no rows."""
    if rows:
        await connection.execute(table.insert(), rows)


async def _upsert(
    connection: AsyncConnection, table: Table, key: str, value: str, values: dict[str, object]
) -> None:
    """Update the row whose `key` is `value`, or insert it (portable; one writer at a time)."""
    result = await connection.execute(
        update(table).where(table.c[key] == value).values(**values)
    )
    if result.rowcount == 0:
        await connection.execute(table.insert(), [{key: value, **values}])


def _audit(row: AuditRow) -> dict[str, object]:
    seq, subject, event_type, at_ms, data = row
    return {"seq": seq, "subject": subject, "type": event_type, "at_ms": at_ms, "data": data}


def _outbox(row: OutboxRow, position: int) -> dict[str, object]:
    decision_id, plan_seq, subject, data = row
    return {"id": decision_id, "plan_seq": plan_seq, "position": position,
            "subject": subject, "data": data, "published_at_ms": None}


def _dead(row: DeadLetterRow) -> dict[str, object]:
    seq, subject, reason, data = row
    return {"seq": seq, "subject": subject, "reason": reason, "data": data,
            "published_at_ms": None}


def _now_ms() -> int:
    """Wall-clock UTC epoch milliseconds (bookkeeping only; planning never reads it)."""
    return time.time_ns() // 1_000_000
