"""The planner's persistence: one transaction per batch, outbox, tracking, snapshot, dead letters.

Layer: store. Everything a batch changes is written in ONE transaction (`commit_batch`), so
after a crash the database holds either the whole batch or none of it. Publishing happens
after the commit, from the outbox; never publishes anything itself.

The state snapshot is written only now and then (the shell decides when), in the transaction
of the batch it follows, so it may trail the tracked sequence: the audit rows, rounds and
outbox rows after the snapshot's sequence (`catch_up_*`) are what a restart replays on it. It
is stored zlib-compressed (`packed`); one stored before is read as it is (`unpacked`).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
import zlib
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import ColumnElement, Select, Table, and_, or_, select, update
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from services.store import tables, urls
from services.store.errors import reaching

AuditRow = tuple[int, str, str, int, bytes]
"""`(seq, subject, type, at_ms, data)` of one applied event."""

OutboxRow = tuple[str, int, str, bytes]
"""`(id, plan_seq, subject, data)` of one decision, in publication order."""

DeadLetterRow = tuple[int, str, str, bytes]
"""`(seq, subject, reason, data)` of one poisoned message."""

PAGE_ROWS = 5_000
"""Rows per query when reading the catch-up rows (keyset pages, never a whole table)."""


@dataclass(frozen=True)
class Snapshot:
    """The latest state snapshot (None if never written) at `seq`, and the tracked sequence.

    `seq` <= `tracked_seq`: the batches in between are in the audit log, not in `data`.
    `stream_created`: the identity of the stream `tracked_seq` belongs to (`tables.tracking`);
    None when none was recorded (nothing tracked yet, or tracked before schema revision 0003).
    """

    data: bytes | None
    seq: int
    tracked_seq: int
    stream_created: str | None = None


@dataclass(frozen=True)
class RecordedRow:
    """One outbox row as committed: id, plan point, position in its round, subject, JSON."""

    id: str
    plan_seq: int
    position: int
    subject: str
    data: bytes


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


SNAPSHOT_COMPRESSION_LEVEL = 1
"""zlib's fastest level: a snapshot is mostly repeated names (nodes' images, labels), which it
already shrinks about tenfold."""
ZLIB_HEADER = 0x78
"""The first byte of every zlib stream (deflate, 32 KiB window); a state's JSON starts with `{`."""


async def packed(state_bytes: bytes) -> bytes:
    """A snapshot's bytes as stored: zlib-compressed (in a thread: it can take a fraction of a
    second for a large cluster's state, and zlib lets other threads run meanwhile)."""
    return await asyncio.to_thread(zlib.compress, state_bytes, SNAPSHOT_COMPRESSION_LEVEL)


async def unpacked(stored: bytes) -> bytes:
    """The state's bytes of a stored snapshot: decompressed, or as stored when it is not a zlib
    stream (written before snapshots were compressed).

    Raises:
        zlib.error: a stream starting as zlib's that does not decompress (a damaged snapshot).
    """
    if not stored or stored[0] != ZLIB_HEADER:
        return stored
    return await asyncio.to_thread(zlib.decompress, stored)


class PlannerStore:
    """Reads and writes the planner's rows for one consumer and one snapshot name.

    Raises (every method): services.store.errors.StoreUnavailable when the database cannot
    be reached or read (refused, reset, timed out, authentication; `errors.reaching`), naming
    it without its password; any other error (a bug) as the driver raised it.
    """

    def __init__(
        self, engine: AsyncEngine, *, consumer: str = "planner", snapshot: str = "planner",
        planner: str | None = None,
    ) -> None:
        self.engine = engine
        self.consumer = consumer
        self.snapshot = snapshot
        self.planner = planner  # recorded with every round (`tables.rounds`)
        self.shown_url = urls.shown(engine.url.render_as_string(hide_password=False))
        """The database's URL without its password, for messages."""

    async def load(self) -> tuple[bytes | None, int]:
        """The latest snapshot's bytes and the tracked sequence (see `load_snapshot`: the
        snapshot may be older than the tracked sequence).

        Shapes: `(None, 0)` for an empty database (rebuild from the start of the stream).
        """
        snapshot = await self.load_snapshot()
        return snapshot.data, snapshot.tracked_seq

    async def load_snapshot(self) -> Snapshot:
        """The latest snapshot, its sequence and the tracked sequence, read in one transaction.
        `data` is the state's own bytes (stored `packed`, read back `unpacked`).

        Shapes: `Snapshot(None, 0, tracked, stream_created)` when no snapshot was written yet;
        `Snapshot(None, 0, 0, None)` for an empty database.
        """
        snapshots, tracking = tables.snapshots, tables.tracking
        async with self._connection(begin=True) as connection:
            row = (await connection.execute(
                select(snapshots.c.data, snapshots.c.seq).where(snapshots.c.name == self.snapshot)
            )).first()
            tracked = (await connection.execute(
                select(tracking.c.last_seq, tracking.c.stream_created)
                .where(tracking.c.consumer == self.consumer)
            )).first()
        data, seq = (None, 0) if row is None else (await unpacked(bytes(row.data)), int(row.seq))
        if tracked is None:
            return Snapshot(data, seq, 0)
        return Snapshot(data, seq, int(tracked.last_seq), tracked.stream_created)

    async def adopt_stream(self, stream_created: str) -> None:
        """Record `stream_created` as the identity of the stream the tracked sequence belongs
        to (`tables.tracking`), keeping the sequence (0 when nothing was tracked yet)."""
        async with self._connection(begin=True) as connection:
            await _track(connection, self.consumer, {"stream_created": stream_created})

    async def commit_batch(
        self,
        events: Sequence[AuditRow],
        decisions: Sequence[OutboxRow],
        plan_seq: int | None,
        state_bytes: bytes | None,
        last_seq: int,
        dead_letters: Sequence[DeadLetterRow] = (),
        published: Sequence[str] = (),
        stream_created: str | None = None,
        last_stored_at_us: int | None = None,
    ) -> None:
        """Write one batch in ONE transaction: audit rows, outbox, round, tracking, and the
        snapshot (`state_bytes`, at `last_seq`) unless it is None; and mark the earlier
        decisions `published` (ids JetStream has stored since the last commit) as
        `mark_published` does, which saves that call its own transaction.

        `plan_seq` None means no planning round ran (a batch of poisoned messages only).
        `stream_created`: the identity of the stream the batch was read from, tracked with
        `last_seq` (None: the one recorded is kept). `last_stored_at_us`: when NATS stored the
        message at `last_seq`, UTC epoch microseconds, tracked with it (None: NULL, none
        recorded for that sequence).
        Raises:
            sqlalchemy.exc.IntegrityError: an event sequence or decision id already stored,
                which means the caller broke the tracking invariant; nothing is written.
        """
        async with self._connection(begin=True) as connection:
            await _insert(connection, tables.audit_events, [_audit(row) for row in events])
            await _insert(connection, tables.outbox, [
                _outbox(row, position) for position, row in enumerate(decisions)
            ])
            await _insert(connection, tables.dead_letters, [_dead(row) for row in dead_letters])
            if plan_seq is not None:
                await _insert(connection, tables.rounds, [{
                    "plan_seq": plan_seq, "event_count": len(events),
                    "decision_count": len(decisions), "planner": self.planner,
                }])
            if state_bytes is not None:
                await _upsert(connection, tables.snapshots, "name", self.snapshot,
                              {"seq": last_seq, "data": await packed(state_bytes)})
            tracked: dict[str, object] = {"last_seq": last_seq,
                                          "last_stored_at_us": last_stored_at_us}
            if stream_created is not None:
                tracked["stream_created"] = stream_created
            await _track(connection, self.consumer, tracked)
            await _mark_published(connection, published)

    async def message_at(self, seq: int) -> tuple[str, bytes, int | None] | None:
        """The message the planner took in at stream sequence `seq`, as received: the applied
        event (`tables.audit_events`), else the poisoned message (`tables.dead_letters`).
        Shapes: `(subject, data, stored_at_us)`, `stored_at_us` when NATS stored it (UTC epoch
        microseconds) if `seq` is the tracked sequence and it was recorded, else None; None
        when neither table holds `seq` (nothing taken in there)."""
        tracking = tables.tracking
        async with self._connection() as connection:
            stored_at_us = (await connection.execute(
                select(tracking.c.last_stored_at_us).where(
                    tracking.c.consumer == self.consumer, tracking.c.last_seq == seq)
            )).scalar()
            for table in (tables.audit_events, tables.dead_letters):
                row = (await connection.execute(
                    select(table.c.subject, table.c.data).where(table.c.seq == seq)
                )).first()
                if row is not None:
                    return (str(row.subject), bytes(row.data),
                            None if stored_at_us is None else int(stored_at_us))
        return None

    async def save_snapshot(self, state_bytes: bytes, seq: int) -> bool:
        """Write the snapshot at `seq` if the last committed batch ends there (the tracked
        sequence is `seq`) and the stored snapshot is older; whether it was written. In one
        transaction, so a snapshot never claims a sequence the state does not reach: a caller
        whose last commit was not confirmed (interrupted) writes nothing."""
        snapshots, tracking = tables.snapshots, tables.tracking
        async with self._connection(begin=True) as connection:
            tracked = (await connection.execute(
                select(tracking.c.last_seq).where(tracking.c.consumer == self.consumer)
            )).scalar_one_or_none()
            stored = (await connection.execute(
                select(snapshots.c.seq).where(snapshots.c.name == self.snapshot)
            )).scalar_one_or_none()
            if tracked != seq or (stored is not None and stored >= seq):
                return False
            await _upsert(connection, snapshots, "name", self.snapshot,
                          {"seq": seq, "data": await packed(state_bytes)})
        return True

    async def pending_outbox(self) -> list[PendingDecision]:
        """Decisions committed but not yet published. Shapes: by plan_seq, then position."""
        outbox = tables.outbox
        query = (
            select(outbox.c.id, outbox.c.plan_seq, outbox.c.subject, outbox.c.data)
            .where(outbox.c.published_at_ms.is_(None))
            .order_by(outbox.c.plan_seq, outbox.c.position)
        )
        async with self._connection() as connection:
            rows = (await connection.execute(query)).all()
        return [PendingDecision(row.id, row.plan_seq, row.subject, row.data) for row in rows]

    async def mark_published(self, ids: Sequence[str]) -> None:
        """Record that the decisions `ids` are stored in the DECISIONS stream (idempotent)."""
        if ids:
            async with self._connection(begin=True) as connection:
                await _mark_published(connection, ids)

    async def record_dead_letter(self, seq: int, subject: str, reason: str, data: bytes) -> None:
        """Store one poisoned message outside a batch; a sequence already stored is kept."""
        async with self._connection(begin=True) as connection:
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
        async with self._connection() as connection:
            rows = (await connection.execute(query)).all()
        return [PendingDeadLetter(row.seq, row.subject, row.reason, row.data) for row in rows]

    async def mark_dead_letters_published(self, seqs: Sequence[int]) -> None:
        """Record that the dead letters `seqs` are stored on the dead-letter subject."""
        if seqs:
            async with self._connection(begin=True) as connection:
                await connection.execute(
                    update(tables.dead_letters)
                    .where(tables.dead_letters.c.seq.in_(list(seqs)))
                    .values(published_at_ms=_now_ms())
                )

    async def catch_up_events(self, after_seq: int, upto_seq: int) -> AsyncIterator[AuditRow]:
        """The audit rows with `after_seq` < seq <= `upto_seq`, by seq (read in pages)."""
        audit = tables.audit_events
        query = select(audit.c.seq, audit.c.subject, audit.c.type, audit.c.at_ms, audit.c.data)
        async for row in self._pages(query, audit.c.seq, after_seq, upto_seq):
            yield int(row[0]), row[1], row[2], int(row[3]), bytes(row[4])

    async def catch_up_plan_points(self, after_seq: int,
                                   upto_seq: int) -> AsyncIterator[tuple[int, str | None]]:
        """The recorded plan points in (`after_seq`, `upto_seq`], ascending, each with the
        planner that planned its round (None: recorded before planners were)."""
        rounds = tables.rounds
        async for row in self._pages(select(rounds.c.plan_seq, rounds.c.planner),
                                     rounds.c.plan_seq, after_seq, upto_seq):
            yield int(row[0]), row[1]

    async def catch_up_outbox(self, after_seq: int, upto_seq: int) -> AsyncIterator[RecordedRow]:
        """The outbox rows planned in (`after_seq`, `upto_seq`], by plan point then position."""
        outbox = tables.outbox
        columns = (outbox.c.id, outbox.c.plan_seq, outbox.c.position, outbox.c.subject,
                   outbox.c.data)
        later: ColumnElement[bool] = outbox.c.plan_seq > after_seq
        while True:
            query = (select(*columns).where(later, outbox.c.plan_seq <= upto_seq)
                     .order_by(outbox.c.plan_seq, outbox.c.position).limit(PAGE_ROWS))
            async with self._connection() as connection:
                rows = (await connection.execute(query)).all()
            for row in rows:
                yield RecordedRow(row[0], int(row[1]), int(row[2]), row[3], bytes(row[4]))
            if len(rows) < PAGE_ROWS:
                return
            plan_seq, position = int(rows[-1][1]), int(rows[-1][2])
            later = or_(outbox.c.plan_seq > plan_seq,
                        and_(outbox.c.plan_seq == plan_seq, outbox.c.position > position))

    @contextlib.asynccontextmanager
    async def _connection(self, *, begin: bool = False) -> AsyncIterator[AsyncConnection]:
        """A connection (in a transaction committed at the end when `begin`), whose failures
        to reach the database, at connect, in a query or at commit, are `StoreUnavailable`."""
        with reaching(self.shown_url):
            if begin:
                async with self.engine.begin() as connection:
                    yield connection
            else:
                async with self.engine.connect() as connection:
                    yield connection

    async def _pages(self, query: Select[Any], key: Any, after: int,
                     upto: int) -> AsyncIterator[Any]:
        """Rows of `query` with `after` < `key` <= `upto`, by `key`, `PAGE_ROWS` at a time."""
        while True:
            page = query.where(key > after, key <= upto).order_by(key).limit(PAGE_ROWS)
            async with self._connection() as connection:
                rows = (await connection.execute(page)).all()
            for row in rows:
                yield row
            if len(rows) < PAGE_ROWS:
                return
            after = int(rows[-1][0])


async def _insert(connection: AsyncConnection, table: Table, rows: list[dict[str, object]]) -> None:
    """Insert `rows` into `table` (one executemany); nothing for no rows."""
    if rows:
        await connection.execute(table.insert(), rows)


async def _upsert(
    connection: AsyncConnection, table: Table, key: str, value: str, values: dict[str, object],
    *, inserted: dict[str, object] | None = None,
) -> None:
    """Update the row whose `key` is `value`, or insert it (portable; one writer at a time);
    `inserted`: defaults of an inserted row for columns `values` does not set."""
    result = await connection.execute(
        update(table).where(table.c[key] == value).values(**values)
    )
    if result.rowcount == 0:
        await connection.execute(table.insert(), [{**(inserted or {}), key: value, **values}])


async def _track(connection: AsyncConnection, consumer: str, values: dict[str, object]) -> None:
    """Update the tracking row of `consumer` with `values`, or insert it (at sequence 0 unless
    `values` say otherwise)."""
    await _upsert(connection, tables.tracking, "consumer", consumer, values,
                  inserted={"last_seq": 0})


async def _mark_published(connection: AsyncConnection, ids: Sequence[str]) -> None:
    """Set `published_at_ms` of the outbox rows `ids` (one UPDATE; nothing for no ids)."""
    if ids:
        await connection.execute(
            update(tables.outbox).where(tables.outbox.c.id.in_(list(ids)))
            .values(published_at_ms=_now_ms())
        )


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
