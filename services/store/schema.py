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
from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import inspect
from sqlalchemy.engine import Connection, make_url
from sqlalchemy.ext.asyncio import AsyncEngine

from services.store import engines, tables
from services.store.errors import SchemaMismatch

MIGRATIONS_DIR_ENV = "GANGSCHED_MIGRATIONS_DIR"


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
    """The revision recorded in the database (None for a database never migrated)."""
    return (await _state(engine))[0]


async def _state(engine: AsyncEngine) -> tuple[str | None, bool]:
    """`(recorded revision or None, whether any gangsched table exists)`."""
    async with engine.connect() as connection:
        return await connection.run_sync(_state_of)


async def check_schema(engine: AsyncEngine, shown: str | None = None) -> None:
    """Return if the database is at `head_revision()`.

    `shown` is how the user named the database (`--db`, a path): messages name it, and the
    `gangsched migrate` command they suggest uses it; by default the engine's URL.
    Raises:
        SchemaMismatch: the database is empty or behind (run `gangsched migrate` with this
            version), ahead (it was migrated by a newer gangsched; upgrade this one), or holds
            gangsched's tables with no recorded revision (nothing can tell which it is).
    """
    current, has_tables = await _state(engine)
    if current == head_revision():
        return
    raise SchemaMismatch(_mismatch(current, has_tables, _shown(engine, shown)))


def _shown(engine: AsyncEngine, shown: str | None) -> str:
    if shown is None or "://" in shown:
        url = engine.url if shown is None else make_url(shown)
        return url.render_as_string(hide_password=True)
    return shown


def _mismatch(current: str | None, has_tables: bool, where: str) -> str:
    head = head_revision()
    if current is None and has_tables:
        return (f"database {where} holds gangsched's tables but records no schema revision "
                f"(its alembic_version table is missing or empty), so no gangsched can tell "
                f"which revision it is: restore that table (`alembic stamp <revision>`) or "
                f"use a new database")
    if current is None or current in known_revisions():
        url = "<url>" if "***" in where else where  # a hidden password cannot be pasted
        return (f"database {where} is at schema revision {current or 'none'}, behind this "
                f"gangsched's {head}: run `gangsched migrate --db {url}` first")
    return (f"database {where} is at schema revision {current}, ahead of this gangsched's "
            f"{head} (migrated by a newer version): upgrade gangsched, or run `gangsched "
            f"migrate` from the newer version to manage it")


async def migrate(url: str, revision: str = "head", *,
                  make_directory: bool = False) -> str | None:
    """Upgrade the database at `url` to `revision` (default: the newest) in one transaction;
    `make_directory`: as `engines.create_engine`'s. Returns the revision the database was at
    before (None: a database without gangsched's schema).

    Raises:
        SchemaMismatch: the database is ahead of this gangsched, or holds its tables with no
            recorded revision (see `check_schema`); nothing is changed.
        StoreUnavailable: a SQLite file's directory is missing or cannot be created
            (`engines.create_engine`).
    """
    engine = engines.create_engine(url, make_directory=make_directory)
    try:
        current, has_tables = await _state(engine)
        if (current is None and has_tables) or (current is not None
                                                and current not in known_revisions()):
            raise SchemaMismatch(_mismatch(current, has_tables, _shown(engine, url)))
        async with engine.begin() as connection:
            await connection.run_sync(_upgrade, alembic_config(url), revision)
    finally:
        await engine.dispose()
    return current


def migrate_sync(url: str, revision: str = "head", *,
                 make_directory: bool = False) -> str | None:
    """`migrate` for callers without an event loop (the CLI): the revision before."""
    return asyncio.run(migrate(url, revision, make_directory=make_directory))


def _upgrade(connection: Connection, config: Config, revision: str) -> None:
    """Run alembic's upgrade on an open connection (alembic's connection-sharing recipe)."""
    config.attributes["connection"] = connection
    command.upgrade(config, revision)


def _state_of(connection: Connection) -> tuple[str | None, bool]:
    """The alembic revision stamped in the database behind `connection`, and whether any of
    gangsched's tables exists there."""
    revision = MigrationContext.configure(connection).get_current_revision()
    present = set(inspect(connection).get_table_names())
    return revision, bool(present & set(tables.metadata.tables))
