"""The planner when its NATS store is lost mid-run (one fatal line, not a hot loop) and while
NATS is down (not ready, ready again once reconnected)."""

from __future__ import annotations

import asyncio
import contextlib
import shutil
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from nats.js import JetStreamContext
from sqlalchemy.ext.asyncio import AsyncEngine

from services.bus import connection, consuming
from services.bus.embedded import EmbeddedNats
from services.config.settings import BusSettings
from services.contracts import subjects
from services.planner.service import StreamBehindTracking
from services.runtime.health import ReadyFlag
from services.runtime.supervision import Fatal
from tests.integration.planner_harness import (
    gang_events,
    planner_settings,
    publish_events,
    running_planner,
)
from tests.integration.test_planner_service import wait_for_tracked
from tests.support.waiting import eventually_async

pytestmark = pytest.mark.integration


@contextlib.asynccontextmanager
async def planner(js: JetStreamContext, bus_settings: BusSettings, engine: AsyncEngine,
                  tmp_path: Path) -> AsyncIterator[tuple[asyncio.Task[None], ReadyFlag]]:
    """The planner running until the block ends, and its readiness; it may end lost."""
    ready = ReadyFlag("planner")
    async with running_planner(planner_settings(bus_settings, tmp_path), js, engine, ready,
                               ends_with=(StreamBehindTracking,)) as task:
        yield task, ready


async def test_the_events_stream_gone_mid_run_ends_the_planner_with_one_fatal_error(
    js: JetStreamContext, bus_settings: BusSettings, engine: AsyncEngine, tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(consuming, "FIRST_RETRY_SECONDS", 0.1)
    async with planner(js, bus_settings, engine, tmp_path) as (task, _ready):
        await publish_events(js, bus_settings.prefix, gang_events("pg1", min_member=1, pods=1))
        await wait_for_tracked(engine, 2)
        await js.delete_stream(subjects.stream_name(bus_settings.prefix, "EVENTS"))
        with pytest.raises(StreamBehindTracking) as raised:
            await asyncio.wait_for(asyncio.shield(task), 15)
    assert isinstance(raised.value, Fatal)  # the supervisor does not restart it
    said = str(raised.value)
    assert "is gone (the NATS store was lost or the stream deleted)" in said
    assert "applied up to seq" in said and "\n" not in said


async def test_the_store_wiped_across_a_nats_restart_ends_the_planner_with_one_fatal_error(
    js: JetStreamContext, bus_settings: BusSettings, engine: AsyncEngine, tmp_path: Path,
    nats_server: EmbeddedNats, monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(consuming, "FIRST_RETRY_SECONDS", 0.1)
    async with planner(js, bus_settings, engine, tmp_path) as (task, _ready):
        await publish_events(js, bus_settings.prefix, gang_events("pg1", min_member=1, pods=1))
        await wait_for_tracked(engine, 2)
        await nats_server.stop()
        shutil.rmtree(nats_server.data_dir / "jetstream")
        await nats_server.start()
        with pytest.raises(StreamBehindTracking, match="is gone"):
            await asyncio.wait_for(asyncio.shield(task), 20)


async def test_the_planner_is_not_ready_while_nats_is_down_and_ready_again_after(
    js: JetStreamContext, bus_settings: BusSettings, engine: AsyncEngine, tmp_path: Path,
    nats_server: EmbeddedNats,
) -> None:
    async with planner(js, bus_settings, engine, tmp_path) as (task, ready):
        await nats_server.stop()

        async def not_ready() -> bool:
            return not ready.is_ready

        await eventually_async(not_ready, timeout=15, what="planner not ready")
        assert connection.NATS_DISCONNECTED in ready.holds
        await asyncio.sleep(1.5)
        assert not ready.is_ready and not task.done()
        await nats_server.start()

        async def is_ready() -> bool:
            return ready.is_ready

        await eventually_async(is_ready, timeout=20, what="planner ready again")
        await publish_events(js, bus_settings.prefix, gang_events("pg1", min_member=1, pods=1))
        await wait_for_tracked(engine, 2)
