"""Read-only queries over the planner's audit log: events, rounds and outbox (replay, explain).

Layer: store. Never writes: the database is opened read-only (SQLite `mode=ro` plus
`PRAGMA query_only`; PostgreSQL `default_transaction_read_only`), and a guard on every cursor
refuses a statement that is not a read (`ReadOnlyViolation`), so an audit can run beside the live
planner. Everything is read in ONE snapshot transaction (SQLite deferred `BEGIN` under WAL;
PostgreSQL `REPEATABLE READ`), so events, rounds and outbox agree although the planner keeps
committing batches. Large tables are read in pages by key (keyset pagination), never all at once.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast
from urllib.parse import quote

from sqlalchemy import ColumnElement, Select, and_, event, func, or_, select
from sqlalchemy.engine import URL
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine, create_async_engine

from services.store import engines, tables
from services.store.planner_store import AuditRow

PAGE_ROWS = 20_000
EventRow = tuple[int, str, bytes]
"""`(seq, subject, data)` of one audit event, as replay reads it."""
READ_STATEMENTS = ("select", "pragma", "show", "begin", "commit", "rollback")
"""First words of the only SQL statements an audit connection may send."""


class ReadOnlyViolation(Exception):
    """Something tried to write through an audit connection (a bug: audits never write)."""


class AuditUnavailable(Exception):
    """The audit database does not exist (a SQLite file that is not there)."""


@dataclass(frozen=True)
class OutboxRecord:
    """One recorded decision: id, plan point, index in its round, subject and encoded JSON."""

    id: str
    plan_seq: int
    position: int
    subject: str
    data: bytes


def read_only_url(url: str) -> URL:
    """`url` with the async driver, and for SQLite a `file:` URI opened with `mode=ro`.

    Raises:
        ValueError: as `engines.async_url`.
        AuditUnavailable: a SQLite file that does not exist (never create one by reading).
    """
    parsed = engines.async_url(url)
    if parsed.get_backend_name() != "sqlite":
        return parsed
    path = Path(parsed.database or "").expanduser()
    if not parsed.database or parsed.database == ":memory:" or not path.is_file():
        raise AuditUnavailable(f"no SQLite database at {path}")
    location = "file:" + quote(str(path.resolve()))
    return parsed.set(database=location, query={"mode": "ro", "uri": "true"})


def open_read_only(url: str) -> AsyncEngine:
    """An async engine that can only read the database at `url` (module docstring).

    Raises:
        ValueError, AuditUnavailable: as `read_only_url`.
    """
    parsed = read_only_url(url)
    if parsed.get_backend_name() == "sqlite":
        engine = create_async_engine(parsed)
        _sqlite_read_only(engine)
    else:
        engine = create_async_engine(parsed, connect_args={
            "server_settings": {"default_transaction_read_only": "on"}})
    _refuse_writes(engine)
    return engine


def _sqlite_read_only(engine: AsyncEngine) -> None:
    """`query_only`, a busy timeout, and a deferred `BEGIN` so reads share one snapshot.

    Source: the SQLAlchemy SQLite dialect docs (the driver's own BEGIN is disabled, ours is
    emitted); a deferred BEGIN takes a WAL read snapshot at its first SELECT.
    """

    @event.listens_for(engine.sync_engine, "connect")
    def on_connect(dbapi_connection: Any, connection_record: Any) -> None:
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA query_only=ON")
        cursor.execute(f"PRAGMA busy_timeout={engines.SQLITE_BUSY_TIMEOUT_MS}")
        cursor.close()

    @event.listens_for(engine.sync_engine, "begin")
    def on_begin(connection: Any) -> None:
        connection.exec_driver_sql("BEGIN")


def _refuse_writes(engine: AsyncEngine) -> None:
    """Raise `ReadOnlyViolation` before any statement that is not a read reaches the server."""

    @event.listens_for(engine.sync_engine, "before_cursor_execute")
    def check(connection: Any, cursor: Any, statement: str, *args: Any) -> None:
        words = statement.lstrip().split(None, 1)
        if not words or words[0].lower() not in READ_STATEMENTS:
            raise ReadOnlyViolation(f"audit connections only read; refused: {statement[:80]!r}")


@contextlib.asynccontextmanager
async def snapshot(engine: AsyncEngine) -> AsyncIterator[AuditLog]:
    """One read transaction over the audit tables (module docstring); rolled back at the end."""
    async with engine.connect() as connection:
        if engine.dialect.name == "postgresql":
            connection = await connection.execution_options(
                isolation_level="REPEATABLE READ", postgresql_readonly=True)
        async with connection.begin() as transaction:
            yield AuditLog(connection)
            await transaction.rollback()


class AuditLog:
    """Queries on one snapshot connection. Shapes: every list in key order (see each)."""

    def __init__(self, connection: AsyncConnection) -> None:
        self.connection = connection

    async def event_bounds(self) -> tuple[int, int]:
        """`(count, last seq)` of the audit events (`(0, 0)` for an empty log)."""
        audit = tables.audit_events
        row = (await self.connection.execute(
            select(func.count(), func.coalesce(func.max(audit.c.seq), 0)))).one()
        return int(row[0]), int(row[1])

    async def events(self, *, after_seq: int = 0, page_rows: int = PAGE_ROWS
                     ) -> AsyncIterator[list[EventRow]]:
        """Pages of `(seq, subject, data)` with seq > `after_seq`, by seq."""
        audit = tables.audit_events
        while True:
            query = (select(audit.c.seq, audit.c.subject, audit.c.data)
                     .where(audit.c.seq > after_seq).order_by(audit.c.seq))
            rows = await self._page(query, page_rows)
            if not rows:
                return
            yield cast(list[EventRow], rows)  # both drivers return int, str, bytes
            after_seq = int(rows[-1][0])

    async def plan_points(self, *, after_seq: int = 0, page_rows: int = PAGE_ROWS
                          ) -> AsyncIterator[list[int]]:
        """Pages of recorded plan points (rounds' `plan_seq`) greater than `after_seq`."""
        rounds = tables.rounds
        while True:
            query = (select(rounds.c.plan_seq).where(rounds.c.plan_seq > after_seq)
                     .order_by(rounds.c.plan_seq))
            rows = await self._page(query, page_rows)
            if not rows:
                return
            yield [int(row[0]) for row in rows]
            after_seq = int(rows[-1][0])

    async def outbox(self, *, page_rows: int = PAGE_ROWS) -> AsyncIterator[list[OutboxRecord]]:
        """Pages of recorded decisions, by plan point then position (publication order)."""
        outbox = tables.outbox
        after: tuple[int, int] = (-1, -1)
        while True:
            later = or_(outbox.c.plan_seq > after[0],
                        and_(outbox.c.plan_seq == after[0], outbox.c.position > after[1]))
            rows = await self._page(_outbox_query(later), page_rows)
            if not rows:
                return
            records = [_record(row) for row in rows]
            yield records
            after = (records[-1].plan_seq, records[-1].position)

    async def events_on_subjects(self, suffixes: Sequence[str]) -> list[AuditRow]:
        """Every audit event whose subject ends with one of `suffixes`, by seq."""
        if not suffixes:
            return []
        audit = tables.audit_events
        query = (select(audit.c.seq, audit.c.subject, audit.c.type, audit.c.at_ms, audit.c.data)
                 .where(or_(*[_ends_with(audit.c.subject, s) for s in suffixes]))
                 .order_by(audit.c.seq))
        rows = (await self.connection.execute(query)).all()
        return [(int(r[0]), r[1], r[2], int(r[3]), bytes(r[4])) for r in rows]

    async def outbox_on_subjects(self, suffixes: Sequence[str]) -> list[OutboxRecord]:
        """Every recorded decision whose subject ends with one of `suffixes`, in order."""
        if not suffixes:
            return []
        outbox = tables.outbox
        query = _outbox_query(or_(*[_ends_with(outbox.c.subject, s) for s in suffixes]))
        return [_record(row) for row in (await self.connection.execute(query)).all()]

    async def _page(self, query: Select[Any], page_rows: int) -> list[Any]:
        rows: list[Any] = list((await self.connection.execute(query.limit(page_rows))).all())
        return rows


def _outbox_query(where: ColumnElement[bool]) -> Select[Any]:
    outbox = tables.outbox
    return (select(outbox.c.id, outbox.c.plan_seq, outbox.c.position, outbox.c.subject,
                   outbox.c.data)
            .where(where).order_by(outbox.c.plan_seq, outbox.c.position))


def _record(row: Any) -> OutboxRecord:
    return OutboxRecord(row[0], int(row[1]), int(row[2]), row[3], bytes(row[4]))


def _ends_with(column: Any, suffix: str) -> ColumnElement[bool]:
    """`column LIKE '%<suffix>'` with the LIKE wildcards of `suffix` escaped."""
    escaped = suffix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    condition: ColumnElement[bool] = column.like("%" + escaped, escape="\\")
    return condition
