"""The planner SIGKILLed between commit and publish publishes each decision exactly once after
restart (real subprocess, real nats-server, both database backends)."""

from __future__ import annotations

import asyncio
import signal
from collections import Counter
from pathlib import Path

import pytest
import sqlalchemy
from nats.js import JetStreamContext
from sqlalchemy.ext.asyncio import AsyncEngine

from services.config.settings import BusSettings
from services.contracts import subjects
from services.store import tables
from services.store.planner_store import PlannerStore
from tests.integration.planner_harness import (
    gang_events,
    publish_events,
    read_stream,
    start_planner_process,
    wait_ready,
)
from tests.support.waiting import eventually_async

pytestmark = pytest.mark.integration


async def outbox(engine: AsyncEngine) -> list[sqlalchemy.Row[object]]:
    async with engine.connect() as connection:
        return list((await connection.execute(sqlalchemy.select(tables.outbox))).all())


async def stop(process: asyncio.subprocess.Process) -> int:
    if process.returncode is None:
        process.send_signal(signal.SIGTERM)
    return await asyncio.wait_for(process.wait(), 30)


async def test_a_planner_killed_after_commit_publishes_each_decision_once_after_restart(
    js: JetStreamContext, bus_settings: BusSettings, engine: AsyncEngine, migrated_db_url: str,
    tmp_path: Path,
) -> None:
    prefix = bus_settings.prefix
    decisions_stream = subjects.stream_name(prefix, "DECISIONS")
    log = tmp_path / "planner.log"
    await publish_events(js, prefix, gang_events("pg1", min_member=2, pods=2))

    crashing = await start_planner_process(bus_settings, migrated_db_url, log,
                                           crash_after_commit=True)
    try:
        assert await asyncio.wait_for(crashing.wait(), 60) == -signal.SIGKILL, log.read_text()
    finally:
        await stop(crashing)
    committed = await outbox(engine)
    assert committed and all(row.published_at_ms is None for row in committed)
    assert (await PlannerStore(engine).load())[1] == 4
    assert await read_stream(js, decisions_stream) == []

    for _ in range(2):  # the second restart must not publish anything again
        restarted = await start_planner_process(bus_settings, migrated_db_url, log)
        try:
            await wait_ready(restarted, log)
            async def all_published() -> bool:
                return all(row.published_at_ms is not None for row in await outbox(engine))

            await eventually_async(all_published, timeout=60, what="outbox published")
        finally:
            assert await stop(restarted) == 0, log.read_text()

    published = await read_stream(js, decisions_stream)
    ids = Counter(message.headers["Nats-Msg-Id"] for message in published if message.headers)
    assert ids == Counter(row.id for row in committed)
    assert set(ids.values()) == {1}
