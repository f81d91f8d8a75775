"""Read-only queries over the planner's audit log: events, rounds and outbox (replay, explain).

Layer: store. Never writes: the database is opened read-only (SQLite `mode=ro` plus
`PRAGMA query_only`; PostgreSQL `default_transaction_read_only`), and a guard on every cursor
refuses a statement that is not a read (`ReadOnlyViolation`), so an audit can run beside the live
planner. Everything is read in ONE snapshot transaction (SQLite deferred `BEGIN` under WAL;
PostgreSQL `REPEATABLE READ`), so events, rounds and outbox agree although the planner keeps
committing batches. Large tables are read in pages by key (keyset pagination), never all at once.
A row holding a value of a type the planner never writes (SQLite keeps anything anywhere) is
`DamagedRow`, naming its table, row and column.
"""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
from collections.abc import AsyncIterator, Callable, Coroutine, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import quote

from sqlalchemy import ColumnElement, Executable, Select, event, func, or_, select, text
from sqlalchemy.engine import URL
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine, create_async_engine

from services.config import paths
from services.store import engines, tables
from services.store.planner_store import AuditRow

PAGE_ROWS = 20_000
EventRow = tuple[int, str, bytes]
"""`(seq, subject, data)` of one audit event, as replay reads it."""
PAGE_BYTES = 64 * 2**20
"""PostgreSQL: at most this many bytes of event JSON per page (a single larger event is a page
alone), far below its 1 GB limit on one value; an error there would abort the snapshot."""
_FIRST_ROWS_SQL = ("SELECT seq, subject, data FROM audit_events WHERE seq > :after ORDER BY seq "
                   "LIMIT :rows")
_SIZED_ROWS_SQL = (
    "SELECT seq, subject, data FROM (SELECT seq, subject, data, sum(length(data)) OVER "
    "(ORDER BY seq ROWS UNBOUNDED PRECEDING) AS running, row_number() OVER (ORDER BY seq) AS n "
    f"FROM ({_FIRST_ROWS_SQL}) AS first_rows) AS sized WHERE running <= :bytes OR n = 1")
EVENT_BATCH_SQL = {
    # SQLite 3.40 has no ORDER BY inside an aggregate: group_concat follows the ordered
    # subquery in practice, and the reader checks the order (`EventBatch`) rather than trust it.
    # A page past SQLite's limit on one value fails without harm and is read row by row.
    "sqlite": (
        "SELECT count(*), max(seq), CAST('[' || group_concat("
        "'[' || seq || ',' || json_quote(subject) || ',' || CAST(data AS TEXT) || ']', ',') "
        f"|| ']' AS BLOB) FROM ({_FIRST_ROWS_SQL})"),
    "postgresql": (
        "SELECT count(*), max(seq), '['::bytea || string_agg(convert_to('[' || seq || ',' "
        "|| to_json(subject)::text || ',', 'UTF8') || data || ']'::bytea, ','::bytea "
        f"ORDER BY seq) || ']'::bytea FROM ({_SIZED_ROWS_SQL}) AS page"),
}
"""One page of audit events (at most `rows` rows; on PostgreSQL also at most `bytes` bytes of
event JSON, at least one row) as ONE JSON array of `[seq, subject, event]` (see `EventBatch`).

The event bytes are spliced in unchanged (no UTF-8 or JSON check in SQL, so a damaged row never
aborts the snapshot transaction): the decoder validates, and a page that does not decode is
read again row by row to name the damaged one."""
EVENT_BOUNDS_SQL = f"SELECT count(*), max(seq) FROM ({_FIRST_ROWS_SQL}) AS first_rows"
"""The rows of a page that SQLite could not build whole: its count and last seq."""
READ_STATEMENTS = ("select", "pragma", "show", "begin", "commit", "rollback")
"""First words of the only SQL statements an audit connection may send."""


class ReadOnlyViolation(Exception):
    """Something tried to write through an audit connection (a bug: audits never write)."""


class AuditUnavailable(Exception):
    """The audit database does not exist (a SQLite file that is not there)."""


class DamagedRow(Exception):
    """A row of the audit tables holding a value the planner never writes (SQLite keeps any
    value in any column: text for a sequence, a number for an event); the message names the
    table, the row and the column."""


OUTBOX_PAGE_SQL = (
    "SELECT id, plan_seq, position, subject, data FROM outbox WHERE plan_seq > :plan_seq OR "
    "(plan_seq = :plan_seq AND position > :position) ORDER BY plan_seq, position LIMIT :rows")
"""One page of recorded decisions after the key `(plan_seq, position)`, in publication order."""
K = TypeVar("K")
P = TypeVar("P")


@dataclass(frozen=True)
class EventBatch:
    """A page of audit events: `count` rows, the last `last_seq`, and `data`, a JSON array of
    `[seq, subject, event JSON]` built by the database (`EVENT_BATCH_SQL`), decoded in one call.

    The order of the array is not trusted (see `EVENT_BATCH_SQL`): the reader checks it. `data`
    is empty when SQLite could not build the page (past its limit on one value): the reader
    then reads its `count` rows one by one.
    """

    after_seq: int
    count: int
    last_seq: int
    data: bytes


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
        shape = ": it is a directory" if path.is_dir() else ""
        raise AuditUnavailable(f"no SQLite database at {path}{shape}")
    location = "file:" + quote(str(paths.resolved(path)))
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
        engine = create_async_engine(parsed, connect_args=engines.postgresql_connect_args(
            parsed, {"server_settings": {"default_transaction_read_only": "on"}}))
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
            log = AuditLog(connection)
            try:
                yield log
            finally:
                await log.settle()
            await transaction.rollback()


class AuditLog:
    """Queries on one snapshot connection. Shapes: every list in key order (see each)."""

    def __init__(self, connection: AsyncConnection) -> None:
        self.connection = connection
        self._lock = asyncio.Lock()  # one statement at a time, prefetch included
        self._reads: set[asyncio.Task[Any]] = set()

    async def settle(self) -> None:
        """Wait for reads still in flight (a prefetched page nobody took); ignore their errors.

        Awaited, not cancelled: cancelling a query mid-flight can leave the driver's
        connection unusable for the rollback that ends the snapshot. A cancellation of the
        caller meanwhile still lets them finish, then is raised again.
        """
        if not self._reads:
            return
        reads = asyncio.gather(*self._reads, return_exceptions=True)
        try:
            await asyncio.shield(reads)
        except asyncio.CancelledError:
            await reads
            raise

    async def event_bounds(self) -> tuple[int, int]:
        """`(count, last seq)` of the audit events (`(0, 0)` for an empty log)."""
        audit = tables.audit_events
        row = (await self._execute(
            select(func.count(), func.coalesce(func.max(audit.c.seq), 0))))[0]
        return int(row[0]), _seq(row[1])

    async def event_batches(self, *, after_seq: int = 0, page_rows: int = PAGE_ROWS,
                            page_bytes: int = PAGE_BYTES) -> AsyncIterator[EventBatch]:
        """Pages of audit events with seq > `after_seq` as `EventBatch`es, by seq.

        The next page is read while the caller works on this one (`_prefetched`).
        """
        async def read(after: int) -> EventBatch | None:
            parameters = {"after": after, "rows": page_rows, "bytes": page_bytes}
            try:
                rows = await self._read(EVENT_BATCH_SQL[self.connection.dialect.name],
                                        parameters)
            except (sqlite3.DataError, sqlite3.OperationalError):
                # "string or blob too big", or a row SQLite cannot put in JSON (a subject
                # stored as a BLOB): the caller reads the page row by row (a database that
                # cannot be read fails again there)
                rows = [(*(await self._read(EVENT_BOUNDS_SQL, parameters))[0], b"")]
            count, last_seq, data = rows[0]
            if not count:
                return None
            return EventBatch(after, int(count), _seq(last_seq), bytes(data))

        async for batch in self._prefetched(after_seq, read, lambda batch: batch.last_seq):
            yield batch

    async def event_rows(self, after_seq: int, page_rows: int) -> list[EventRow]:
        """One page of `(seq, subject, data)` with seq > `after_seq` (a batch read row by row)."""
        rows = await self._read(_FIRST_ROWS_SQL, {"after": after_seq, "rows": page_rows})
        return [_event_row(seq, subject, data) for seq, subject, data in rows]

    async def _prefetched(self, first: K, read: Callable[[K], Coroutine[Any, Any, P | None]],
                          key: Callable[[P], K]) -> AsyncIterator[P]:
        """Pages from `read(key)`, starting at `first`; the next page is requested before this
        one is handed out, so the database builds it (SQLite: in the driver's thread with the
        GIL released; PostgreSQL: on the server) while the caller works."""
        fetch = self._spawn(read(first))
        while True:
            page = await fetch
            if page is None:
                return
            fetch = self._spawn(read(key(page)))
            await asyncio.sleep(0)  # let the prefetch send its query before the caller works
            yield page

    def _spawn(self, read: Coroutine[Any, Any, P | None]) -> asyncio.Task[P | None]:
        task = asyncio.create_task(read)
        self._reads.add(task)
        task.add_done_callback(self._reads.discard)
        return task

    async def plan_points(self, *, after_seq: int = 0, page_rows: int = PAGE_ROWS
                          ) -> AsyncIterator[list[tuple[int, str | None]]]:
        """Pages of recorded rounds `(plan_seq, planner)` with plan_seq > `after_seq`, by
        plan_seq (`planner` None: recorded before planners recorded themselves)."""
        rounds = tables.rounds
        while True:
            query = (select(rounds.c.plan_seq, rounds.c.planner)
                     .where(rounds.c.plan_seq > after_seq).order_by(rounds.c.plan_seq))
            rows = await self._page(query, page_rows)
            if not rows:
                return
            points = [_plan_point(plan_seq, planner) for plan_seq, planner in rows]
            yield points
            after_seq = points[-1][0]

    async def outbox(self, *, page_rows: int = PAGE_ROWS) -> AsyncIterator[list[OutboxRecord]]:
        """Pages of recorded decisions, by plan point then position (publication order)."""
        async def read(after: tuple[int, int]) -> list[OutboxRecord] | None:
            rows = await self._read(OUTBOX_PAGE_SQL, {"plan_seq": after[0],
                                                      "position": after[1], "rows": page_rows})
            return [_record(row) for row in rows] or None

        async for page in self._prefetched((-1, -1), read,
                                           lambda page: (page[-1].plan_seq, page[-1].position)):
            yield page

    async def events_on_subjects(self, suffixes: Sequence[str]) -> list[AuditRow]:
        """Every audit event whose subject ends with one of `suffixes`, by seq."""
        if not suffixes:
            return []
        audit = tables.audit_events
        query = (select(audit.c.seq, audit.c.subject, audit.c.type, audit.c.at_ms, audit.c.data)
                 .where(or_(*[_ends_with(audit.c.subject, s) for s in suffixes]))
                 .order_by(audit.c.seq))
        return [_audit_row(*row) for row in await self._execute(query)]

    async def dead_letters(self) -> list[tuple[int, str]]:
        """`(EVENTS seq, reason)` of every event the planner dead-lettered, by seq: messages it
        did not plan on (poisoned, refused by its intake checks, or that its core raised on)."""
        dead = tables.dead_letters
        query = select(dead.c.seq, dead.c.reason).order_by(dead.c.seq)
        return [(_integer(seq, "dead_letters", str(seq), "seq"),
                 _text(reason, "dead_letters", str(seq), "reason"))
                for seq, reason in await self._execute(query)]

    async def outbox_on_subjects(self, suffixes: Sequence[str]) -> list[OutboxRecord]:
        """Every recorded decision whose subject ends with one of `suffixes`, in order."""
        if not suffixes:
            return []
        outbox = tables.outbox
        query = _outbox_query(or_(*[_ends_with(outbox.c.subject, s) for s in suffixes]))
        return [_record(row) for row in await self._execute(query)]

    async def outbox_containing(self, fragment: str) -> list[OutboxRecord]:
        """Every recorded decision whose subject contains `fragment` (e.g. `.decisions.
        Preemption.`: every decision of one type, whatever its group), in order."""
        outbox = tables.outbox
        query = _outbox_query(outbox.c.subject.like(f"%{_escaped(fragment)}%", escape="\\"))
        return [_record(row) for row in await self._execute(query)]

    async def _page(self, query: Select[Any], page_rows: int) -> list[Any]:
        return await self._execute(query.limit(page_rows))

    async def _read(self, sql: str, parameters: dict[str, int]) -> list[Any]:
        """Rows of a constant SELECT of this module with named `parameters`.

        SQLite: run by aiosqlite's thread in ONE hop (query and fetch), on the snapshot's own
        connection and transaction, so a prefetch is under way as soon as it is sent; this
        bypasses the write guard, which is moot for the module's constant reads.
        """
        if self.connection.dialect.name != "sqlite":
            return await self._execute(text(sql).bindparams(**parameters))
        async with self._lock:
            raw = await self.connection.get_raw_connection()
            driver: Any = raw.driver_connection
            return list(await driver.execute_fetchall(sql, parameters))

    async def _execute(self, statement: Executable) -> list[Any]:
        async with self._lock:
            rows: list[Any] = list((await self.connection.execute(statement)).all())
        return rows


def _outbox_query(where: ColumnElement[bool]) -> Select[Any]:
    outbox = tables.outbox
    return (select(outbox.c.id, outbox.c.plan_seq, outbox.c.position, outbox.c.subject,
                   outbox.c.data)
            .where(where).order_by(outbox.c.plan_seq, outbox.c.position))


def _record(row: Any) -> OutboxRecord:
    """One outbox row as an `OutboxRecord`.

    Raises:
        DamagedRow: a value of the wrong type (named by the row's id).
    """
    record_id, plan_seq, position, subject, data = row
    if (type(record_id) is str and type(plan_seq) is int and type(position) is int
            and type(subject) is str and type(data) is bytes):  # every row a planner wrote
        return OutboxRecord(record_id, plan_seq, position, subject, data)
    where = f"id {record_id!r}"
    return OutboxRecord(_text(record_id, "outbox", where, "id"),
                        _integer(plan_seq, "outbox", where, "plan_seq"),
                        _integer(position, "outbox", where, "position"),
                        _text(subject, "outbox", where, "subject"),
                        _blob(data, "outbox", where, "data"))


def _event_row(seq: Any, subject: Any, data: Any) -> EventRow:
    """One audit event row as replay reads it.

    Raises:
        DamagedRow: a value of the wrong type (named by the row's seq).
    """
    number = _seq(seq)
    where = f"seq {number}"
    return (number, _text(subject, "audit_events", where, "subject"),
            _blob(data, "audit_events", where, "data"))


def _audit_row(seq: Any, subject: Any, kind: Any, at_ms: Any, data: Any) -> AuditRow:
    """One audit event row as explain reads it (with its type and time).

    Raises:
        DamagedRow: a value of the wrong type (named by the row's seq).
    """
    number, text_subject, blob = _event_row(seq, subject, data)
    where = f"seq {number}"
    return (number, text_subject, _text(kind, "audit_events", where, "type"),
            _integer(at_ms, "audit_events", where, "at_ms"), blob)


def _seq(value: Any) -> int:
    """`value`, the seq of an audit event.

    Raises:
        DamagedRow: it is no integer (named by that value).
    """
    return _integer(value, "audit_events", f"seq {value!r}", "seq")


def _plan_point(plan_seq: Any, planner: Any) -> tuple[int, str | None]:
    """One rounds row: `(plan_seq, planner or None)`.

    Raises:
        DamagedRow: a value of the wrong type (named by the row's plan_seq).
    """
    number = _integer(plan_seq, "rounds", f"plan_seq {plan_seq!r}", "plan_seq")
    if planner is None:
        return number, None
    return number, _text(planner, "rounds", f"plan_seq {number}", "planner")


def _integer(value: Any, table: str, row: str, column: str) -> int:
    """`value`, an integer read from `column` of the `row` of `table`.

    Raises:
        DamagedRow: it is not one.
    """
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    raise _damaged(value, table, row, column, "an integer")


def _text(value: Any, table: str, row: str, column: str) -> str:
    """`value`, a text read from `column` of the `row` of `table`.

    Raises:
        DamagedRow: it is not one.
    """
    if isinstance(value, str):
        return value
    raise _damaged(value, table, row, column, "text")


def _blob(value: Any, table: str, row: str, column: str) -> bytes:
    """`value`, bytes read from `column` of the `row` of `table`; a text is taken as its
    UTF-8 bytes (as the database's own pages of events take it: `EVENT_BATCH_SQL`).

    Raises:
        DamagedRow: it is neither.
    """
    if isinstance(value, bytes | bytearray | memoryview):
        return bytes(value)
    if isinstance(value, str):
        return value.encode()
    raise _damaged(value, table, row, column, "bytes")


DAMAGED_VALUE_SHOWN = 40
"""How many characters of a damaged value its message shows."""


def _damaged(value: Any, table: str, row: str, column: str, wanted: str) -> DamagedRow:
    """The error for the value of `column` in the `row` of `table` that is not `wanted`."""
    kinds = {int: "an integer", float: "a real number", str: "text", type(None): "NULL"}
    kind = kinds.get(type(value), "bytes")
    shown = "" if value is None else f" {repr(value)[:DAMAGED_VALUE_SHOWN]}"
    return damaged(table, row, f"{column} holds {kind}{shown}, not {wanted}")


def damaged(table: str, row: str, problem: str) -> DamagedRow:
    """The error for the `row` of `table` (e.g. `id '5-0'`) that holds what the planner never
    writes (`problem`), in the words every such error uses."""
    return DamagedRow(f"table {table}, row {row}: {problem}")


def _ends_with(column: Any, suffix: str) -> ColumnElement[bool]:
    """`column LIKE '%<suffix>'` with the LIKE wildcards of `suffix` escaped."""
    condition: ColumnElement[bool] = column.like("%" + _escaped(suffix), escape="\\")
    return condition


def _escaped(text: str) -> str:
    """`text` with the LIKE wildcards (and the escape character) escaped by a backslash."""
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
