"""The planner is not ready while its DECISIONS stream is gone (its publishes back off),
/readyz naming the stream, and ready again once a decision is stored: a real nats-server."""

from __future__ import annotations

from pathlib import Path

import pytest
from nats.js import JetStreamContext
from sqlalchemy.ext.asyncio import AsyncEngine

from services.bus import streams
from services.config.settings import BusSettings
from services.contracts import subjects
from services.contracts.decisions import Placement
from services.contracts.events import NodeObserved
from services.runtime.health import Readiness
from tests.integration.planner_harness import (
    gang_events,
    planner_settings,
    publish_events,
    published_decisions,
    running_planner,
)
from tests.support.waiting import eventually_async

pytestmark = pytest.mark.integration


@pytest.mark.timeout(90)
async def test_the_planner_is_not_ready_while_its_decisions_stream_is_gone(
        js: JetStreamContext, bus_settings: BusSettings, engine: AsyncEngine,
        tmp_path: Path) -> None:
    prefix = bus_settings.prefix
    stream = subjects.stream_name(prefix, "DECISIONS")
    readiness = Readiness()

    async def described(expected: list[str]) -> bool:
        return readiness.described() == expected

    async def placed(groups: list[str]) -> bool:
        return [d.group.rsplit("/", 1)[-1] for d in await published_decisions(js, prefix)
                if isinstance(d, Placement)] == groups

    async with running_planner(planner_settings(bus_settings, tmp_path), js, engine,
                               readiness.flag("planner")):
        await publish_events(js, prefix, gang_events("pg1"))
        await eventually_async(lambda: placed(["pg1"]), timeout=30, what="pg1 placed")
        await js.delete_stream(stream)
        await publish_events(js, prefix, [event for event in gang_events("pg2")
                                          if not isinstance(event, NodeObserved)])
        await eventually_async(
            lambda: described([f"planner (publishing: stream {stream} gone or leaderless)"]),
            timeout=30, interval=0.05, what="not ready, naming the stream")
        await streams.ensure_streams(js, bus_settings)
        await eventually_async(lambda: described([]), timeout=30, interval=0.05,
                               what="ready again once a decision is stored")
        await eventually_async(lambda: placed(["pg2"]), timeout=30, what="pg2 placed")
