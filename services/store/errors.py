"""Errors the store raises.

Layer: store.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator


class SchemaMismatch(Exception):
    """The database schema revision differs from the one this code needs.

    Permanent until an operator runs `gangsched migrate`; the message says so and names both
    revisions.
    """


class StoreUnavailable(Exception):
    """The database cannot be reached, read or written (refused, unknown host, authentication,
    not a database file, a full disk); the message names it, without its password, and the
    driver's reason.

    `why` is the driver's reason alone (`unusable_database`), by which a caller retrying
    tells one kind of failure from another (defaults to the message).
    """

    def __init__(self, message: str, *, why: str = "") -> None:
        super().__init__(message)
        self.why = why or message


@contextlib.contextmanager
def reaching(shown_url: str) -> Iterator[None]:
    """Raise the errors that say the database cannot be reached or read (`unusable_database`)
    as `StoreUnavailable`: `cannot reach the database <shown_url>: <driver error>` (or `cannot
    write to`, `cannot read`: `failing`); any other error (a bug, an integrity error) passes
    unchanged. `shown_url` is the URL without its password (`services.store.urls.shown`)."""
    try:
        yield
    except Exception as error:
        why = unusable_database(error)
        if why is None:
            raise
        raise StoreUnavailable(f"{failing(why)} the database {shown_url}: {why}",
                               why=why) from error


WRITE_REFUSALS = ("database or disk is full", "readonly database", "read-only")
"""What a reason says (lower case) when the database answers but takes no write: a full disk
(SQLite's `database or disk is full`), a read-only file or file system."""

NOT_A_DATABASE = ("file is not a database", "not a sqlite database file",
                  "disk image is malformed")
"""What a reason says (lower case) when the file is there but holds no database, or a damaged
one (SQLite's words, and `services.cli.databases`'s plain ones)."""


def failing(why: str) -> str:
    """What cannot be done with a database that is unusable for the reason `why` (the driver's,
    or the file's in plain words), as the start of the line telling it: `cannot write to`
    (`WRITE_REFUSALS`), `cannot read` (`NOT_A_DATABASE`), else `cannot reach` (a server that
    refuses or does not answer, a file that cannot be opened)."""
    said = why.lower()
    if any(part in said for part in WRITE_REFUSALS):
        return "cannot write to"
    if any(part in said for part in NOT_A_DATABASE):
        return "cannot read"
    return "cannot reach"


NO_ANSWER = "no answer in time (is a PostgreSQL server at that host and port?)"
"""What a timeout that says nothing itself (asyncpg's connection timeout) is told as."""


def unusable_database(error: BaseException) -> str | None:
    """`"<DriverError>: <message>"` when `error` says the database cannot be reached or read
    (connection refused or lost, unknown host, a PostgreSQL Unix socket that is missing or not
    permitted, not a database file, authentication, no such database, the server shutting
    down: `UNREACHABLE_SQLSTATES`), else None: an error of a
    query itself (a bug) is not one of these.

    Shapes: `error` as raised through SQLAlchemy (its driver error in `orig`) or by the driver
    or the network directly.
    """
    import socket
    import sqlite3

    from sqlalchemy.exc import DatabaseError, DBAPIError, InterfaceError, OperationalError

    if isinstance(error, ConnectionError | socket.gaierror | TimeoutError) or _socket_refused(
            error):
        return _told(error)
    if isinstance(error, sqlite3.OperationalError) or type(error) is sqlite3.DatabaseError:
        # from the driver itself (the audit's pages)
        return f"{type(error).__name__}: {error}" if _sqlite_unusable(error) else None
    cause = _driver_error(error)
    if isinstance(error, DBAPIError) and _unreachable_state(cause):
        return _told(cause)  # SQLAlchemy's generic DBAPIError
    if not isinstance(error, OperationalError | InterfaceError) and type(error) is not (
            DatabaseError):  # plain DatabaseError: SQLite's "file is not a database"
        return None
    if isinstance(cause, sqlite3.Error) and not _sqlite_unusable(cause):
        return None  # a query's own mistake: no such column, a syntax error
    if type(cause).__module__.startswith("asyncpg") and not (
            isinstance(cause, ConnectionError | OSError | TimeoutError)
            or ("connection" in str(cause).lower() and "in progress" not in str(cause))):
        return None  # e.g. invalid input for a query argument, a connection used twice
    return _told(cause)


def _told(error: BaseException) -> str:
    """`"<ErrorType>: <message>"`; a timeout that says nothing (asyncpg's connection timeout)
    told as `NO_ANSWER`, not as `TimeoutError: ` and nothing."""
    said = str(error) or (NO_ANSWER if isinstance(error, TimeoutError) else "")
    return f"{type(error).__name__}: {said}"


UNREACHABLE_SQLSTATES = ("08", "28", "57", "53300", "3D000")
"""SQLSTATEs (classes, or codes) of a PostgreSQL server that cannot serve this client now or
at all, not of a query's mistake: 08 connection exception, 28 invalid authorization (a wrong
password), 57 operator intervention (`terminating connection due to administrator command`
when it stops, `the database system is starting up`, a statement timeout), 53300 too many
connections, 3D000 no such database. SQLAlchemy raises these from asyncpg as its generic
`DBAPIError`, not as `OperationalError`."""


SQLITE_UNUSABLE = ("unable to open", "disk i/o error", "database is locked",
                   "readonly database", "database or disk is full", "file is not a database",
                   "disk image is malformed", "no such table")
"""What an SQLite error says (lower case) when the file cannot be opened, read or written, or
lacks gangsched's tables, rather than a query being wrong (`no such column`, a syntax error:
bugs, which keep their traceback)."""


def _sqlite_unusable(error: BaseException) -> bool:
    """Whether an SQLite driver error says the database itself is unusable (`SQLITE_UNUSABLE`)."""
    message = str(error).lower()
    return any(part in message for part in SQLITE_UNUSABLE)


def _socket_refused(error: BaseException) -> bool:
    """Whether `error` is a Unix socket's `connect()` failing (`postgresql://u@/db?host=/run/
    postgresql` while PostgreSQL is down: no socket file, or one this user may not use).
    Such an error carries an errno and no file name, where opening a file names it."""
    return (isinstance(error, FileNotFoundError | PermissionError) and error.errno is not None
            and error.filename is None)


def _unreachable_state(cause: BaseException) -> bool:
    """Whether a driver error carries one of `UNREACHABLE_SQLSTATES` (`sqlstate`)."""
    state = sqlstate(cause)
    return state is not None and state.startswith(UNREACHABLE_SQLSTATES)


def _driver_error(error: BaseException) -> BaseException:
    """The driver's own error behind `error`: SQLAlchemy's `orig`, and asyncpg's error behind
    SQLAlchemy's adapter of it; `error` itself when raised by the driver directly."""
    cause: BaseException = getattr(error, "orig", None) or error
    if type(cause).__name__ == "Error" and cause.__cause__ is not None:
        cause = cause.__cause__  # asyncpg's own error behind SQLAlchemy's adapter
    return cause


def sqlstate(error: BaseException) -> str | None:
    """The PostgreSQL SQLSTATE `error` carries (asyncpg's `sqlstate`, which SQLAlchemy's
    adapter copies), raised through SQLAlchemy or by asyncpg directly; None for an error
    without one (SQLite's, the network's)."""
    cause = _driver_error(error)
    for carrier in (cause, cause.__cause__):
        state = getattr(carrier, "sqlstate", None)
        if isinstance(state, str):
            return state
    return None


SCHEMA_CONFLICT_SQLSTATES = ("42701", "42P07", "42703", "42P01", "42704", "42710")
"""PostgreSQL SQLSTATEs of a statement finding a table, column or other object it makes
already there, or one it uses missing: 42701 duplicate_column, 42P07 duplicate_table, 42703
undefined_column, 42P01 undefined_table, 42704 undefined_object, 42710 duplicate_object."""

SQLITE_SCHEMA_CONFLICTS = ("duplicate column name", "already exists", "no such column",
                           "no such table")
"""What an SQLite error says (lower case) for the same (`SCHEMA_CONFLICT_SQLSTATES`)."""


def schema_conflict(error: BaseException) -> bool:
    """Whether `error` (raised through SQLAlchemy or by the driver) says a statement found a
    table, column or other object it makes already there, or one it uses missing: a schema
    that is not what the statement expects (`SCHEMA_CONFLICT_SQLSTATES`,
    `SQLITE_SCHEMA_CONFLICTS`), not a refusal for another reason (privileges, a full disk, a
    lock timeout)."""
    import sqlite3

    state = sqlstate(error)
    if state is not None:
        return state in SCHEMA_CONFLICT_SQLSTATES
    cause = _driver_error(error)
    return isinstance(cause, sqlite3.Error) and any(
        part in str(cause).lower() for part in SQLITE_SCHEMA_CONFLICTS)
