"""Create async SQLAlchemy engines for SQLite (aiosqlite) and PostgreSQL (asyncpg).

Layer: store. SQLite gets WAL and `BEGIN IMMEDIATE` (one writer at a time, no lock upgrade
deadlocks); PostgreSQL uses its defaults (read committed; the planner is the only writer).
"""

from __future__ import annotations

import errno
import math
import os
import re
from pathlib import Path
from typing import Any

from sqlalchemy import event
from sqlalchemy.engine import URL, make_url
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine

from services.config import file_kinds
from services.contracts import names
from services.runtime.private_files import create_private, make_private_directory
from services.store.errors import StoreUnavailable

SQLITE_BUSY_TIMEOUT_MS = 30_000

CONNECT_TIMEOUT_SECONDS = 10.0
"""How long a PostgreSQL connection may take to be made, in seconds, unless the URL's
`?timeout=` says otherwise: asyncpg's own 60 s held `migrate`, `replay` and each start of a
service a minute on an address where something listens but no PostgreSQL answers (a wrong
port, a proxy whose backend is down), and then said only `TimeoutError`."""
_ASYNC_DRIVERS = {"sqlite": "sqlite+aiosqlite", "postgresql": "postgresql+asyncpg",
                  "postgres": "postgresql+asyncpg"}
"""Backend name → the driver gangsched uses. `postgres://` is the spelling libpq, Heroku and
most operators' secrets use; SQLAlchemy 2 dropped it as an alias, gangsched keeps it."""


POSTGRESQL_PARAMETERS = ("ssl", "direct_tls", "passfile", "service", "servicefile", "timeout",
                         "command_timeout", "statement_cache_size",
                         "max_cached_statement_lifetime", "max_cacheable_statement_size",
                         "target_session_attrs", "krbsrvname", "gsslib", "host", "port", "user",
                         "password", "database", "prepared_statement_cache_size")
"""The query parameters of a PostgreSQL URL that asyncpg's `connect` (through SQLAlchemy)
takes; any other (libpq's `sslmode`, a typo) fails at the first connection."""


def async_url(url: str) -> URL:
    """`url` with the async driver gangsched uses (`sqlite://` → `sqlite+aiosqlite://`,
    `postgres://` and `postgresql://` → `postgresql+asyncpg://`).

    Raises:
        ValueError: a database other than SQLite or PostgreSQL, a host or port that cannot
            be one (`postgresql://u@[bad`, `postgresql://u@a..b`, a port beyond 65535), which
            would otherwise surface as a name-resolution error (or a crash) at the first
            connection, or a query parameter asyncpg does not take (`POSTGRESQL_PARAMETERS`),
            which would surface as a crash there; so is a `?host=` query value that cannot be
            a host (`_check_query_hosts`), as the netloc's.
    """
    parsed = make_url(url)
    backend = parsed.get_backend_name()
    if backend not in _ASYNC_DRIVERS:
        raise ValueError(f"unsupported database {backend!r}: use sqlite or postgresql")
    host = parsed.host or ""
    if backend != "sqlite" and ("[" in host or "]" in host):  # `[::1]` arrives as `::1`
        # a host holding `@` holds the end of a password (`u:p@[s@h`): not shown
        raise ValueError(f"malformed host {host.rpartition('@')[2]!r}")
    if backend != "sqlite" and host and not host.startswith("/") and not names.is_host(host):
        raise ValueError(f"{host!r} is not a host name or IP address")  # `/dir`: a socket's
    if backend != "sqlite" and parsed.port is not None and not 0 < parsed.port < 65536:
        raise ValueError(f"port {parsed.port} out of range 1-65535")
    if backend != "sqlite":
        _check_parameters(parsed)
        _check_query_hosts(parsed)
    return parsed.set(drivername=_ASYNC_DRIVERS[backend])


def _check_parameters(url: URL) -> None:
    """Return if every query parameter of the PostgreSQL `url` is one asyncpg takes.

    Raises:
        ValueError: one is not, named (never its value, which may be a secret).
    """
    for name in url.query:
        if name not in POSTGRESQL_PARAMETERS:
            hint = " (asyncpg's is ssl, e.g. ssl=require)" if name == "sslmode" else ""
            raise ValueError(f"query parameter {name!r} is not one asyncpg takes{hint}")
    _numbers(url)


NUMBER_PARAMETERS: dict[str, tuple[type[int] | type[float], bool]] = {
    "timeout": (float, True), "command_timeout": (float, True),
    "statement_cache_size": (int, False), "max_cached_statement_lifetime": (int, False),
    "max_cacheable_statement_size": (int, False), "prepared_statement_cache_size": (int, False)}
"""The query parameters of a PostgreSQL URL that are numbers: their type, and whether 0 is
refused (the timeouts, in seconds; the others are counts, sizes in bytes, or lifetimes in
seconds, which may be 0). The driver takes the URL's text as it is, so `?timeout=5` reached
asyncpg as the string "5" and failed inside it (a TypeError traceback): they are checked here
and given to it as numbers (`postgresql_connect_args`)."""
LONGEST_SECONDS = 1e9
"""The longest timeout a URL may set, in seconds (about 31 years, as every duration option)."""
DRIVER_ONLY = frozenset({"prepared_statement_cache_size"})
"""Number parameters SQLAlchemy's dialect reads (and turns into a number) itself, which
asyncpg's `connect` does not take."""


def _numbers(url: URL) -> dict[str, int | float]:
    """The number parameters of the PostgreSQL `url`'s query (`NUMBER_PARAMETERS`), as numbers.

    Raises:
        ValueError: one is given twice, or is no number of its kind in range (named with its
            value: none of these is a secret).
    """
    numbers: dict[str, int | float] = {}
    for name, (kind, positive) in NUMBER_PARAMETERS.items():
        given = url.query.get(name)
        if given is None:
            continue
        if not isinstance(given, str):
            raise ValueError(f"query parameter {name!r} given more than once")
        try:
            number = kind(given)
        except ValueError:
            number = math.nan
        what = "a number more than 0 and" if positive else "an integer, 0 or more, and"
        in_range = (number > 0 if positive else number >= 0) and number <= LONGEST_SECONDS
        if not in_range:
            raise ValueError(f"query parameter {name}={given!r} is not {what} at most "
                             f"{LONGEST_SECONDS:.0f}")
        numbers[name] = number
    return numbers


_BRACKETED = re.compile(r"\[([^\[\]]*)\](?::\d*)?")
"""A host given as `[address]` or `[address]:port` (an IPv6 literal)."""


def _check_query_hosts(url: URL) -> None:
    """Return if every host a PostgreSQL `url` names in its query (`?host=h`, `?host=h1:p1&
    host=h2:p2`, `?host=h1,h2`, as asyncpg and SQLAlchemy take them) can be one, as the
    netloc's host is checked (`names.is_host`); a unix socket's directory (`/run/pg`) is
    no host name and is not checked.

    Raises:
        ValueError: one cannot (`a..b`, a 64-character label), named.
    """
    given = url.query.get("host", ())
    for value in (given,) if isinstance(given, str) else given:
        for spec in value.split(","):
            if not spec or spec.startswith("/"):
                continue
            host = _without_port(spec)
            if host is None:
                raise ValueError(f"malformed host {spec!r}")
            if not names.is_host(host):
                raise ValueError(f"{host!r} is not a host name or IP address")


def _without_port(spec: str) -> str | None:
    """The host of a query `host` value `spec` without its `:port`: `h:5432` → `h`,
    `[::1]:5432` → `::1`, `::1` (no brackets: no port can be told apart) → `::1`; None for a
    bracket that does not close around the whole host (`[::1`, `a]`)."""
    if "[" in spec or "]" in spec:
        bracketed = _BRACKETED.fullmatch(spec)
        return None if bracketed is None else bracketed.group(1)
    if spec.count(":") == 1:
        return spec.partition(":")[0]
    return spec


def create_engine(url: str, *, make_directory: bool = False, **options: Any) -> AsyncEngine:
    """An async engine for `url`.

    A SQLite file's directory must exist: a mistyped path must not silently become a new tree
    of directories. With `make_directory` it is created instead (with its parents, itself
    0700): only for the database gangsched keeps in its own data directory, which it makes
    itself. A new SQLite file is created 0600 (its -wal and -shm files take its mode): it
    holds the whole event log and every decision.
    Raises:
        ValueError: as `async_url`.
        StoreUnavailable: that directory does not exist or is no directory, or (with
            `make_directory`) cannot be created (a file stands in its way, no permission,
            read-only file system); the file is a loop of symbolic links, a pipe, a device or
            a socket.
    """
    parsed = async_url(url)
    database = sqlite_file(parsed)
    if database is not None:
        _sqlite_directory(database, make_directory)
        _not_a_loop(database)
        _not_special(database)
    is_sqlite = parsed.get_backend_name() == "sqlite"
    # a pooled PostgreSQL connection may have been dropped (server restart, idle timeout,
    # a proxy): pinged before use. A SQLite connection is a file handle in this process:
    # nothing can drop it, and its ping (a round trip to aiosqlite's thread per checkout) was
    # 4% of the planner's CPU in the cluster benchmark
    if not is_sqlite:
        options["connect_args"] = postgresql_connect_args(parsed,
                                                          options.get("connect_args", {}))
    engine = create_async_engine(parsed, pool_pre_ping=not is_sqlite, **options)
    if is_sqlite:
        _configure_sqlite(engine)
    return engine


def postgresql_connect_args(url: URL, given: dict[str, Any]) -> dict[str, Any]:
    """asyncpg's `connect` arguments for the PostgreSQL `url`: `given`, the URL's number
    parameters as numbers (`NUMBER_PARAMETERS`), and a connection timeout of
    `CONNECT_TIMEOUT_SECONDS` unless either sets one.

    Raises:
        ValueError: a number parameter is not one (as `async_url`).
    """
    numbers = {name: number for name, number in _numbers(url).items()
               if name not in DRIVER_ONLY}
    return {"timeout": CONNECT_TIMEOUT_SECONDS, **numbers, **given}


def sqlite_file(url: URL) -> Path | None:
    """The file a SQLite `url` opens, as SQLite takes its name (no `~` expanded, relative to
    the working directory); None for another database, an in-memory one, or a URI filename
    (`sqlite:///file:...?uri=true`), whose file SQLite finds by its own rules and gangsched
    neither checks nor creates."""
    if url.get_backend_name() != "sqlite" or url.database in (None, "", ":memory:"):
        return None
    if url.query.get("uri") in ("true", "1") or str(url.database).startswith("file:"):
        return None
    return Path(str(url.database))


def _not_a_loop(database: Path) -> None:
    """Refuse a SQLite file name that is a loop of symbolic links: SQLite can never open it,
    and its failure in the driver's thread may come after the event loop awaiting it closed.

    Raises:
        StoreUnavailable: it is one.
    """
    try:
        os.stat(database)
    except OSError as error:
        if error.errno == errno.ELOOP:
            raise StoreUnavailable(f"cannot open the SQLite database {database}: it is a loop "
                                   "of symbolic links") from None


def _not_special(database: Path) -> None:
    """Refuse a SQLite file name that leads to a pipe, a device or a socket before SQLite opens
    it: it would wait on a pipe for a writer, and write its journal beside a device (as root,
    `/dev/zero-journal`).

    Raises:
        StoreUnavailable: it is one.
    """
    special = file_kinds.special_kind(database)
    if special is not None:
        raise StoreUnavailable(f"cannot open the SQLite database {database}: it is {special}, "
                               "not a SQLite database file")


def _sqlite_directory(database: Path, make: bool) -> None:
    """Check (or, with `make`, create) the directory of the SQLite file `database`.

    Raises:
        StoreUnavailable: see `create_engine`.
    """
    directory = database.parent
    if make:
        try:
            make_private_directory(directory)
        except OSError as error:
            raise StoreUnavailable(
                f"cannot create the directory {directory} of the SQLite database "
                f"{database}: {error.strerror or error}") from None
    elif not directory.is_dir():
        missing = directory
        while not missing.parent.is_dir() and missing.parent != missing:
            missing = missing.parent  # name the first directory that is not there
        why = (f"{missing} is not a directory" if missing.exists() else
               f"directory {missing} does not exist (gangsched makes none for a --db it is "
               "given: create it first)")
        raise StoreUnavailable(f"cannot open the SQLite database {database}: {why}")


def _configure_sqlite(engine: AsyncEngine) -> None:
    """A new file made 0600, WAL, a busy timeout, and SQLAlchemy (not sqlite3) emitting
    `BEGIN IMMEDIATE`.

    Source: the SQLAlchemy SQLite dialect docs, "Serializable isolation / Savepoints /
    Transactional DDL (asyncio version)": disable the driver's BEGIN, emit our own. SQLite
    makes a new database file with the umask's mode (0644), and its -wal and -shm files with
    the database file's mode (`findCreateFileMode`): made empty first (a database SQLite
    takes as new), all three are 0600.
    """
    database = sqlite_file(engine.url)

    @event.listens_for(engine.sync_engine, "do_connect")
    def on_do_connect(dialect: Any, connection_record: Any, cargs: Any, cparams: Any) -> None:
        if database is not None:
            create_private(database)

    @event.listens_for(engine.sync_engine, "connect")
    def on_connect(dbapi_connection: Any, connection_record: Any) -> None:
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_TIMEOUT_MS}")
        cursor.close()

    @event.listens_for(engine.sync_engine, "begin")
    def on_begin(connection: Any) -> None:
        connection.exec_driver_sql("BEGIN IMMEDIATE")
