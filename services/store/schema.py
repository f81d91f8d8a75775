"""Schema revisions: check that the database matches this code, and migrate it with alembic.

Layer: store. The alembic scripts live in the top-level `migrations/` directory; this module
builds the alembic configuration programmatically, so migrating works from any working
directory. Services call `check_schema` at start and refuse to run on a mismatch; only
`gangsched migrate` (and `gangsched run` for its embedded SQLite) call `migrate`.
"""

from __future__ import annotations

import asyncio
import os
import sys
from dataclasses import dataclass
from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import inspect
from sqlalchemy.engine import Connection
from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import AsyncEngine

from services.store import engines, tables, urls
from services.store.errors import SchemaMismatch, schema_conflict, unusable_database

MIGRATIONS_DIR_ENV = "GANGSCHED_MIGRATIONS_DIR"
VERSION_TABLE = "alembic_version"
"""Where alembic records the revision a database is at: one row."""


def migrations_dir() -> Path:
    """The directory of the alembic environment (`env.py`, `versions/`).

    Source, in order: `$GANGSCHED_MIGRATIONS_DIR`; `migrations/` next to the `services`
    package (a source checkout or an editable install); `<prefix>/share/gangsched/migrations`
    (a wheel that ships it as data files).
    Raises:
        FileNotFoundError: none of these has an `env.py`.
    """
    candidates = [
        Path(os.environ[MIGRATIONS_DIR_ENV]) if os.environ.get(MIGRATIONS_DIR_ENV) else None,
        Path(__file__).resolve().parents[2] / "migrations",
        Path(sys.prefix) / "share" / "gangsched" / "migrations",
    ]
    for candidate in candidates:
        if candidate is not None and (candidate / "env.py").is_file():
            return candidate
    raise FileNotFoundError("alembic migrations not found; set GANGSCHED_MIGRATIONS_DIR")


def alembic_config(url: str | None = None) -> Config:
    """An alembic `Config` pointing at `migrations_dir()`, with `url` as sqlalchemy.url."""
    config = Config()
    config.set_main_option("script_location", str(migrations_dir()))
    if url is not None:
        config.set_main_option("sqlalchemy.url", str(engines.async_url(url)).replace("%", "%%"))
    return config


def head_revision() -> str:
    """The newest revision this code knows (the one it needs)."""
    head = ScriptDirectory.from_config(alembic_config()).get_current_head()
    assert head is not None, "migrations/versions has no revision"
    return head


def known_revisions() -> set[str]:
    """Every revision in `migrations/versions`."""
    script = ScriptDirectory.from_config(alembic_config())
    return {revision.revision for revision in script.walk_revisions()}


async def current_revision(engine: AsyncEngine) -> str | None:
    """The revision recorded in the database (None for a database never migrated).

    Raises:
        SchemaMismatch: its version table records more than one revision (damaged).
    """
    state = await _state(engine)
    if len(state.revisions) > 1:
        raise SchemaMismatch(_damaged_version_table(state, urls.shown(_given(engine, None))))
    return state.revision


@dataclass(frozen=True)
class _State:
    """What the database holds of a schema: `revisions`, the rows of its alembic_version
    table (one in a migrated database, none in a new one); `ours`, whether any of
    gangsched's tables is there; `others`, the names of a SQLite file's tables that are not
    gangsched's nor alembic's; `missing`, gangsched's tables and columns of the newest
    revision that are not there (`table outbox`, `column rounds.planner`)."""

    revisions: tuple[str, ...]
    ours: bool
    others: tuple[str, ...]
    missing: tuple[str, ...]

    @property
    def revision(self) -> str | None:
        """The one recorded revision, or None (none recorded, or several: see `revisions`)."""
        return self.revisions[0] if len(self.revisions) == 1 else None


async def _state(engine: AsyncEngine) -> _State:
    """What the database behind `engine` holds of a schema (`_State`)."""
    async with engine.connect() as connection:
        return await connection.run_sync(_state_of)


async def check_schema(engine: AsyncEngine, shown: str | None = None) -> None:
    """Return if the database is at `head_revision()`, with all of its tables and columns.

    `shown` is how the user named the database (`--db`, a path): messages name it (without
    its secrets, `urls.shown`), and the `gangsched migrate` command they suggest uses it; by
    default the engine's URL.
    Raises:
        SchemaMismatch: the database is empty or behind (run `gangsched migrate` with this
            version), ahead (it was migrated by a newer gangsched; upgrade this one), holds
            gangsched's tables with no recorded revision or several (nothing can tell which it
            is), lacks tables or columns of its revision (damaged), or holds only another
            application's tables.
    """
    state = await _state(engine)
    if state.revision == head_revision() and not state.missing:
        return
    raise SchemaMismatch(_mismatch(state, _given(engine, shown)))


def _given(engine: AsyncEngine, shown: str | None) -> str:
    """The database as the user named it: `shown` (a path, or a URL), else the engine's URL,
    secrets and all (messages show it through `urls.shown`)."""
    return engine.url.render_as_string(hide_password=False) if shown is None else shown


def _mismatch(state: _State, given: str) -> str:
    """Why the database the user named `given` is not one this gangsched can use as it is
    (named without its secrets; the `gangsched migrate` it suggests says `<url>` where the
    URL shown would lack them)."""
    where = urls.shown(given)
    refused = _refusal(state, where)
    if refused is not None:
        return refused
    url = "<url>" if urls.hides_secrets(given) else where
    return (f"database {where} is at schema revision {state.revision or 'none'}, behind this "
            f"gangsched's {head_revision()}: run `gangsched migrate --db {url}` first")


def _refusal(state: _State, where: str) -> str | None:
    """Why `gangsched migrate` must leave the database `where` alone, or None when it may
    upgrade it (it is new and empty, or at a revision this gangsched knows)."""
    current = state.revision
    if len(state.revisions) > 1:
        return _damaged_version_table(state, where)
    if current is None and state.ours:
        return (f"database {where} holds gangsched's tables but records no schema revision "
                f"(its alembic_version table is missing or empty), so no gangsched can tell "
                f"which revision it is: restore that table (`alembic stamp <revision>`) or "
                f"use a new database")
    if current is None and state.others:
        return _foreign(state, where)
    if current is not None and current not in known_revisions():
        return (f"database {where} is at schema revision {current}, ahead of this gangsched's "
                f"{head_revision()} (migrated by a newer version): upgrade gangsched, or run "
                f"`gangsched migrate` from the newer version to manage it")
    if current == head_revision() and state.missing:
        return (f"database {where} is at schema revision {current} but lacks "
                f"{', '.join(state.missing)}: it is damaged; restore it from a backup or use a "
                f"new database")
    return None


def _damaged_version_table(state: _State, where: str) -> str:
    """A version table that records several revisions, told with what to do about it."""
    revisions = ", ".join(sorted(state.revisions))
    return (f"database {where} has a damaged version table: alembic_version records "
            f"{len(state.revisions)} revisions ({revisions}) instead of one, so no gangsched can "
            f"tell which revision the database is at: keep only the row of the revision it is "
            f"at (`DELETE FROM alembic_version WHERE version_num = '<other revision>'`), or use "
            f"a new database")


FOREIGN_NAMES_SHOWN = 5
"""How many of another application's tables a refusal names."""


def _foreign(state: _State, where: str) -> str:
    """A database holding another application's tables (and nothing of gangsched's)."""
    names = ", ".join(state.others[:FOREIGN_NAMES_SHOWN])
    more = len(state.others) - FOREIGN_NAMES_SHOWN
    listed = names + (f" and {more} more" if more > 0 else "")
    return (f"database {where} is not gangsched's: it holds other tables ({listed}) and no "
            f"gangsched schema, and gangsched adds its tables only to an empty database: give "
            f"it a database of its own")


async def migrate(url: str, revision: str = "head", *,
                  make_directory: bool = False) -> str | None:
    """Upgrade the database at `url` to `revision` (default: the newest) in one transaction;
    `make_directory`: as `engines.create_engine`'s. Returns the revision the database was at
    before (None: an empty database).

    Raises:
        SchemaMismatch: the database is ahead of this gangsched, holds its tables with no
            recorded revision or several, lacks tables or columns of the newest revision it is
            at, or is not empty and not gangsched's (another application's tables, no version
            recorded) (see `check_schema`); nothing is changed.
            Also a migration step the database refuses: told as its tables not being those
            of the revision it records when it finds a table or column it adds already there
            or one it changes missing (`errors.schema_conflict`), else by the database's
            reason alone (no privilege, a full disk, a lock timeout); the upgrade runs in one
            transaction, so nothing is changed.
        StoreUnavailable: a SQLite file's directory is missing or cannot be created
            (`engines.create_engine`).
    """
    engine = engines.create_engine(url, make_directory=make_directory)
    try:
        state = await _state(engine)
        refused = _refusal(state, urls.shown(url))
        if refused is not None:
            raise SchemaMismatch(refused)
        try:
            async with engine.begin() as connection:
                await connection.run_sync(_upgrade, alembic_config(url), revision)
        except DBAPIError as error:
            if unusable_database(error) is not None:
                raise  # unreachable or unreadable: the caller names the database and why
            target = head_revision() if revision == "head" else revision
            raise SchemaMismatch(_failed_upgrade(state, urls.shown(url), target,
                                                 error)) from error
    finally:
        await engine.dispose()
    return state.revision


def _failed_upgrade(state: _State, where: str, target: str, error: DBAPIError) -> str:
    """A migration step to `target` the database refused (`error`). A column or table it adds
    already there, or one it changes missing (`schema_conflict`): its tables are not those of
    the revision it records. Anything else (no privilege, a full disk, a lock timeout) says
    nothing of its tables: told by the database's reason alone."""
    said = str(error.orig).strip().splitlines()[0] if str(error.orig).strip() else repr(error)
    failed = (f"database {where} records schema revision {state.revision or 'none'}, but "
              f"upgrading it to {target} failed ({said})")
    if not schema_conflict(error):
        return f"{failed}; nothing was changed"
    return (f"{failed}: its tables are not those of that revision (changed by hand, or its "
            f"alembic_version table edited); nothing was changed: restore it from a backup "
            f"or use a new database")


def migrate_sync(url: str, revision: str = "head", *,
                 make_directory: bool = False) -> str | None:
    """`migrate` for callers without an event loop (the CLI): the revision before."""
    return asyncio.run(migrate(url, revision, make_directory=make_directory))


def _upgrade(connection: Connection, config: Config, revision: str) -> None:
    """Run alembic's upgrade on an open connection (alembic's connection-sharing recipe)."""
    config.attributes["connection"] = connection
    command.upgrade(config, revision)


def _state_of(connection: Connection) -> _State:
    """What the database behind `connection` holds of a schema (`_State`)."""
    revisions = MigrationContext.configure(connection).get_current_heads()
    inspector = inspect(connection)
    present = set(inspector.get_table_names())
    ours = set(tables.metadata.tables)
    # another application's tables are looked for in a SQLite file only (a --db pointed at
    # the wrong file): a PostgreSQL database a DBA prepared may hold extensions' tables and
    # views (PostGIS's spatial_ref_sys, pg_stat_statements) beside gangsched's, as before
    is_sqlite = connection.dialect.name == "sqlite"
    others = sorted(present - ours - {VERSION_TABLE}) if is_sqlite else []
    missing = [f"table {name}" for name in sorted(ours - present)]
    for table in tables.metadata.sorted_tables:
        if table.name in present:
            there = {column["name"] for column in inspector.get_columns(table.name)}
            missing += [f"column {table.name}.{column.name}" for column in table.columns
                        if column.name not in there]
    return _State(tuple(str(revision) for revision in revisions), bool(present & ours),
                  tuple(others), tuple(missing))
