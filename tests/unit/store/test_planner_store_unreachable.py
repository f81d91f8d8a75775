"""The planner's store says in one error that its database cannot be reached, naming it
without its password and with the driver's reason (`StoreUnavailable`), whatever call met the
failure; an error that is a bug passes unchanged."""

from __future__ import annotations

import asyncio
import socket
import threading
from pathlib import Path

import asyncpg
import pytest
import sqlalchemy

from services.store import engines
from services.store.errors import StoreUnavailable, reaching, unusable_database
from services.store.planner_store import PlannerStore


def free_port() -> int:
    with socket.socket() as unused:  # a port nothing listens on
        unused.bind(("127.0.0.1", 0))
        return int(unused.getsockname()[1])


async def test_a_refused_postgresql_is_named_without_its_password() -> None:
    port = free_port()
    engine = engines.create_engine(f"postgresql+asyncpg://planner:s3cret@127.0.0.1:{port}/db")
    try:
        store = PlannerStore(engine)
        with pytest.raises(StoreUnavailable) as raised:
            await store.load_snapshot()
        with pytest.raises(StoreUnavailable):
            await store.commit_batch([], [], None, None, 1)
        with pytest.raises(StoreUnavailable):
            async for _ in store.catch_up_events(0, 10):
                pass
    finally:
        await engine.dispose()
    message = str(raised.value)
    assert message.startswith(
        f"cannot reach the database postgresql+asyncpg://planner@127.0.0.1:{port}/db: ")
    assert "s3cret" not in message
    assert raised.value.why == message.split(f"{port}/db: ", 1)[1]
    assert "refused" in raised.value.why.lower()


async def test_a_sqlite_file_that_cannot_be_opened_is_store_unavailable(tmp_path: Path) -> None:
    database = tmp_path / "planner.db"
    database.mkdir()  # a directory where the file should be: it cannot be opened
    engine = engines.create_engine(f"sqlite+aiosqlite:///{database}")
    try:
        with pytest.raises(StoreUnavailable, match="cannot reach the database sqlite"):
            await PlannerStore(engine).pending_outbox()
    finally:
        await engine.dispose()
        # aiosqlite's worker thread of the failed connection answers its last future later;
        # with this test's loop closed by then, it raised "Event loop is closed" in the next
        # test's teardown
        await asyncio.to_thread(_join_sqlite_workers)


def _join_sqlite_workers() -> None:
    for thread in threading.enumerate():
        if "_connection_worker_thread" in thread.name:
            thread.join(timeout=5)


def test_an_error_that_is_a_bug_passes_unchanged() -> None:
    with pytest.raises(sqlalchemy.exc.IntegrityError), reaching("sqlite:///x.db"):
        raise sqlalchemy.exc.IntegrityError("INSERT", {}, Exception("UNIQUE constraint"))
    with pytest.raises(KeyError), reaching("sqlite:///x.db"):
        raise KeyError("a bug")


class Error(Exception):
    """SQLAlchemy's asyncpg adapter's error, with asyncpg's behind it."""


def through_sqlalchemy(driver_error: Exception) -> sqlalchemy.exc.DBAPIError:
    adapted = Error(str(driver_error))
    adapted.__cause__ = driver_error
    return sqlalchemy.exc.DBAPIError("SELECT 1", {}, adapted)


def test_a_postgresql_stopping_or_refusing_the_login_is_unreachable_not_a_bug() -> None:
    shutdown = asyncpg.exceptions.AdminShutdownError(
        "terminating connection due to administrator command")
    with pytest.raises(StoreUnavailable, match="AdminShutdownError: terminating connection"), \
            reaching("postgresql+asyncpg://u@h/db"):
        raise through_sqlalchemy(shutdown)
    for error in (asyncpg.exceptions.CannotConnectNowError("the database system is starting up"),
                  asyncpg.exceptions.InvalidPasswordError("password authentication failed"),
                  asyncpg.exceptions.TooManyConnectionsError("too many clients")):
        assert unusable_database(through_sqlalchemy(error)) == f"{type(error).__name__}: {error}"
    assert unusable_database(through_sqlalchemy(
        asyncpg.exceptions.DivisionByZeroError("division by zero"))) is None
