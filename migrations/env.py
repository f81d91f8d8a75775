"""Alembic environment of gangsched (async engines: aiosqlite, asyncpg).

Layer: store migrations. Two ways in:
- programmatic (`services.store.schema.migrate`): the caller passes an open connection in
  `config.attributes["connection"]` (alembic's connection-sharing recipe);
- the `alembic` command with `alembic.ini` at the repository root: the URL comes from
  `-x db=URL`, else `$GANGSCHED_DB`, else `sqlalchemy.url`.
"""

from __future__ import annotations

import asyncio
import os

from alembic import context
from sqlalchemy.engine import Connection

from services.store import engines, tables

config = context.config
target_metadata = tables.metadata


def database_url() -> str:
    """The URL to migrate when alembic runs from the command line."""
    url = context.get_x_argument(as_dictionary=True).get("db") or os.environ.get("GANGSCHED_DB")
    url = url or config.get_main_option("sqlalchemy.url")
    if not url:
        raise SystemExit("no database URL: pass -x db=URL or set GANGSCHED_DB")
    return str(engines.async_url(url))


def run_migrations(connection: Connection) -> None:
    """Run the migrations on `connection` in a transaction (SQLite DDL is transactional)."""
    context.configure(
        connection=connection,
        target_metadata=target_metadata,
        render_as_batch=connection.dialect.name == "sqlite",
    )
    with context.begin_transaction():
        context.run_migrations()


async def run_with_new_engine() -> None:
    """Open an engine for `database_url()` and run the migrations on it."""
    engine = engines.create_engine(database_url())
    try:
        async with engine.begin() as connection:
            await connection.run_sync(run_migrations)
    finally:
        await engine.dispose()


def run_offline() -> None:
    """Emit SQL instead of running it (`alembic upgrade head --sql`)."""
    context.configure(url=database_url(), target_metadata=target_metadata, literal_binds=True)
    with context.begin_transaction():
        context.run_migrations()


if context.is_offline_mode():
    run_offline()
elif (shared := config.attributes.get("connection")) is not None:
    run_migrations(shared)
else:
    asyncio.run(run_with_new_engine())
