"""Reading the audit log from the database in pages (SQLite and PostgreSQL): the events of a
page are built by the database as one JSON array and decoded in one call; a page that does
not decode is read again row by row, so a damaged row is named and nothing is skipped."""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import AsyncIterator

import pytest
import sqlalchemy
from sqlalchemy.ext.asyncio import AsyncEngine

from services.audit.db_log import DatabaseLog
from services.contracts import codec
from services.contracts.events import ClockTicked
from services.planner.rederive.rounds import LoggedEvent, RoundInput
from services.store import audit, tables
from services.store.audit import DamagedRow, EventBatch

pytestmark = pytest.mark.integration

PAGE = 100
ODD_SUBJECT = 'gangsched.events.pod.ns."quoted\\back".ünï\x01\x1f\u2028😀'


async def write_log(engine: AsyncEngine, events: int, plan_every: int,
                    damaged: int | None = None, damage: bytes = b"") -> None:
    """`events` clock ticks (seq 1..events, at_ms = seq), a round every `plan_every` events
    with one recorded decision each; the row at seq `damaged` holds bytes that are no event."""
    rows = [{"seq": seq, "subject": ODD_SUBJECT if seq % 7 == 0 else "gangsched.events.clock",
             "type": "ClockTicked", "at_ms": seq,
             "data": damage if seq == damaged else codec.encode(ClockTicked(at_ms=seq))}
            for seq in range(1, events + 1)]
    points = list(range(plan_every, events + 1, plan_every))
    async with engine.begin() as connection:
        await connection.execute(sqlalchemy.insert(tables.audit_events), rows)
        await connection.execute(sqlalchemy.insert(tables.rounds), [
            {"plan_seq": p, "event_count": plan_every, "decision_count": 1} for p in points])
        await connection.execute(sqlalchemy.insert(tables.outbox), [
            {"id": f"{p}-0", "plan_seq": p, "position": 0, "subject": f"d.{p}",
             "data": b'{"n":%d}' % p} for p in points])


@pytest.fixture
def row_by_row(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Pages read again row by row (their `after_seq`): a healthy log has none."""
    seen: list[int] = []
    original = DatabaseLog._row_by_row

    async def counted(self: DatabaseLog, batch: EventBatch) -> list[LoggedEvent]:
        seen.append(batch.after_seq)
        return await original(self, batch)

    monkeypatch.setattr(DatabaseLog, "_row_by_row", counted)
    return seen


@contextlib.asynccontextmanager
async def snapshot_of(url: str) -> AsyncIterator[audit.AuditLog]:
    """A read-only snapshot of the audit log at `url`, its engine disposed after."""
    engine = audit.open_read_only(url)
    try:
        async with audit.snapshot(engine) as snapshot:
            yield snapshot
    finally:
        await engine.dispose()


async def read_rounds(url: str) -> list[RoundInput]:
    async with snapshot_of(url) as snapshot:
        return [rnd async for rnd in DatabaseLog(snapshot, page_rows=PAGE).rounds()]


async def test_pages_of_events_decode_whole_in_order_with_their_subjects(
        engine: AsyncEngine, migrated_db_url: str, row_by_row: list[int]) -> None:
    await write_log(engine, events=1055, plan_every=30)
    rounds = await read_rounds(migrated_db_url)
    assert row_by_row == []  # every page decoded whole
    events = [item for rnd in rounds for item in rnd.events]
    assert [item.seq for item in events] == list(range(1, 1056))
    assert all(item.event == ClockTicked(at_ms=item.seq) for item in events)
    assert {item.subject for item in events if item.seq % 7 == 0} == {ODD_SUBJECT}
    planned = [rnd for rnd in rounds if rnd.plan_seq is not None]
    assert [rnd.plan_seq for rnd in planned] == list(range(30, 1051, 30))  # 1050 the last
    assert all([item.seq for item in rnd.events][-1] == rnd.plan_seq for rnd in planned)
    assert [(d.id, d.data) for rnd in planned for d in rnd.recorded] == [
        (f"{p}-0", b'{"n":%d}' % p) for p in range(30, 1051, 30)]
    assert rounds[-1].plan_seq is None  # the tail after the last plan point
    assert [item.seq for item in rounds[-1].events] == list(range(1051, 1056))


@pytest.mark.parametrize("damage", [
    b'{"type":"Clock',                                              # cut short
    b'{"type":"ClockTicked","at_ms":5},{"type":"ClockTicked","at_ms":9}',  # two in one row
])
async def test_a_damaged_row_is_named_by_its_seq(engine: AsyncEngine, migrated_db_url: str,
                                                 row_by_row: list[int], damage: bytes) -> None:
    await write_log(engine, events=350, plan_every=50, damaged=234, damage=damage)
    with pytest.raises(DamagedRow, match=r"^table audit_events, row seq 234: data is no event: "):
        await read_rounds(migrated_db_url)
    assert row_by_row == [200]  # only the page holding it was read again


async def test_postgresql_pages_are_cut_by_bytes_too(engine: AsyncEngine,
                                                     migrated_db_url: str) -> None:
    if engine.dialect.name != "postgresql":
        pytest.skip("SQLite pages are cut by rows only (see the next test)")
    await write_log(engine, events=300, plan_every=10)
    async with snapshot_of(migrated_db_url) as snapshot:
        sizes = [batch.count async for batch in snapshot.event_batches(
            page_rows=100, page_bytes=1000)]
        first = [batch.count async for batch in snapshot.event_batches(
            page_rows=100, page_bytes=1)]
    each = len(codec.encode(ClockTicked(at_ms=100)))
    assert sum(sizes) == 300 and max(sizes) <= 1000 // each + 1 and len(sizes) > 3
    assert first == [1] * 300  # one row per page, never none


async def test_a_sqlite_page_too_big_for_one_value_is_read_row_by_row(
        engine: AsyncEngine, migrated_db_url: str, row_by_row: list[int]) -> None:
    if engine.dialect.name != "sqlite":
        pytest.skip("PostgreSQL pages are cut by bytes before they get too big")
    await write_log(engine, events=250, plan_every=10)
    async with snapshot_of(migrated_db_url) as snapshot:
        raw = await snapshot.connection.get_raw_connection()
        driver = raw.driver_connection
        assert driver is not None
        # SQLite's limit on one value lowered below a page (not below one row)
        await driver._execute(driver._conn.setlimit, sqlite3.SQLITE_LIMIT_LENGTH, 4000)
        rounds = [rnd async for rnd in DatabaseLog(snapshot, page_rows=PAGE).rounds()]
    assert [item.seq for rnd in rounds for item in rnd.events] == list(range(1, 251))
    assert row_by_row == [0, 100]  # the last page (50 rows) fits in 4000 bytes


async def test_leaving_early_waits_for_the_prefetched_page_and_ends_the_snapshot(
        engine: AsyncEngine, migrated_db_url: str) -> None:
    await write_log(engine, events=1000, plan_every=10)
    reader = audit.open_read_only(migrated_db_url)
    try:
        async with audit.snapshot(reader) as snapshot:
            async for rnd in DatabaseLog(snapshot, page_rows=PAGE).rounds():
                assert rnd.plan_seq == 10
                break
        async with audit.snapshot(reader) as snapshot:  # the connection is usable again
            assert await snapshot.event_bounds() == (1000, 1000)
    finally:
        await reader.dispose()
