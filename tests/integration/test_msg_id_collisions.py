"""The security review's collision attack with the chart's NATS users (docs/design-notes.md,
"Message ids that another user takes first"): the binder user publishes outcomes under the
watcher's next tick ids first; every real tick is still stored in EVENTS, and the collisions are
counted (each producer may read back what its stream stored, `$JS.API.STREAM.MSG.GET`, to tell a
collision from its own duplicate).

Renders the chart with the testbed's helm (`tests/cluster/testbed build`, as `make test` does).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import nats
import pytest
from nats.aio.client import Client

from services.bus import reading, streams
from services.bus.publishing import Publisher
from services.config.settings import BusSettings
from services.contracts import subjects
from services.runtime import metrics
from tests.support.chart_nats import ChartNats
from tests.unit.deploy import chart

pytestmark = pytest.mark.integration

PREFIX = "gangsched"


@pytest.fixture
async def chart_nats(tmp_path: Path) -> AsyncIterator[ChartNats]:
    async with ChartNats(chart.render(), tmp_path / "nats") as server:
        yield server


async def connect(server: ChartNats, user: str) -> Client:
    return await nats.connect(server.url, user=user, password=server.passwords[user],
                              inbox_prefix=f"_INBOX_{user}", allow_reconnect=False)


def collisions_counted(checks: tuple[str, ...] = ("differs", "unreadable")) -> float:
    return sum(metrics.REGISTRY.get_sample_value(
        "gangsched_msg_id_collisions_total", {"check": check}) or 0.0
        for check in checks)


async def test_ticks_under_ids_the_binder_took_first_are_still_stored(
        chart_nats: ChartNats) -> None:
    watcher, binder = await connect(chart_nats, "watcher"), await connect(chart_nats, "binder")
    try:
        settings = BusSettings(url=chart_nats.url, prefix=PREFIX, user="watcher",
                               password=chart_nats.passwords["watcher"])
        await streams.ensure_streams(watcher.jetstream(timeout=1), settings)
        outcome = subjects.events_subject(PREFIX, "outcome", "default", "train")
        for second in range(1, 6):
            await Publisher(binder.jetstream(timeout=1)).publish(
                outcome, b"forged", msg_id=f"clock/{second}")
        before = collisions_counted()
        tick = subjects.events_subject(PREFIX, "clock", "", "tick")
        publisher = Publisher(watcher.jetstream(timeout=1), ack_timeout_seconds=2)
        for second in range(1, 6):
            await publisher.publish(tick, b"tick %d" % second, msg_id=f"clock/{second}")
        stored = [message.data async for message in reading.read(
            watcher.jetstream(timeout=1), subjects.stream_name(PREFIX, "EVENTS"),
            subjects.events_wildcard(PREFIX)) if message.subject == tick]
        assert stored == [b"tick %d" % second for second in range(1, 6)]
        assert collisions_counted() == before + 5
        assert collisions_counted(("unreadable",)) == 0  # the watcher may read EVENTS back
    finally:
        await watcher.close()
        await binder.close()


async def test_a_producers_own_duplicate_is_stored_once_with_the_charts_users(
        chart_nats: ChartNats) -> None:
    planner = await connect(chart_nats, "planner")
    try:
        settings = BusSettings(url=chart_nats.url, prefix=PREFIX, user="planner",
                               password=chart_nats.passwords["planner"])
        js = planner.jetstream(timeout=1)
        await streams.ensure_streams(js, settings)
        subject = subjects.decisions_subject(PREFIX, "Rejection", "default", "g")
        before = collisions_counted()
        publisher = Publisher(js, ack_timeout_seconds=2)
        first = await publisher.publish(subject, b"decision", msg_id="7-0")
        again = await publisher.publish(subject, b"decision", msg_id="7-0")  # a re-publish
        assert again == first
        assert collisions_counted() == before
    finally:
        await planner.close()
