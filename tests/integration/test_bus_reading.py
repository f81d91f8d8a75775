"""`reading.read` against a real nats-server: what it yields, and that it never waits for
messages that cannot come."""

from __future__ import annotations

import pytest
from nats.js import JetStreamContext

from services.bus import reading
from services.bus.publishing import Publisher
from services.config.settings import BusSettings
from services.contracts import subjects

pytestmark = pytest.mark.integration


async def test_a_read_yields_the_filters_messages_in_order(
        js: JetStreamContext, bus_settings: BusSettings) -> None:
    stream = subjects.stream_name(bus_settings.prefix, "EVENTS")
    wanted = subjects.events_subject(bus_settings.prefix, "clock", "", "tick")
    other = subjects.events_subject(bus_settings.prefix, "outcome", "default", "g")
    publisher = Publisher(js)
    for n in range(3):
        await publisher.publish(wanted, b"tick %d" % n, msg_id=f"tick/{n}")
        await publisher.publish(other, b"outcome %d" % n, msg_id=f"outcome/{n}")
    assert [m.data async for m in reading.read(js, stream, wanted)] == [
        b"tick 0", b"tick 1", b"tick 2"]


async def test_a_read_of_a_filter_nothing_matches_ends_without_fetching(
        js: JetStreamContext, bus_settings: BusSettings,
        monkeypatch: pytest.MonkeyPatch) -> None:
    stream = subjects.stream_name(bus_settings.prefix, "EVENTS")
    await Publisher(js).publish(
        subjects.events_subject(bus_settings.prefix, "clock", "", "tick"), b"t", msg_id="t/1")
    fetches: list[int] = []
    fetch = reading.OrderedReader.fetch

    async def counted(self: reading.OrderedReader, batch: int,
                      timeout_seconds: float) -> list[reading.StoredMessage]:
        fetches.append(batch)
        return await fetch(self, batch, timeout_seconds)

    monkeypatch.setattr(reading.OrderedReader, "fetch", counted)
    outcomes = subjects.events_subject(bus_settings.prefix, "outcome", "default", "none")
    # a fetch on it would wait its whole WAIT_SECONDS for a message that cannot come
    assert [m async for m in reading.read(js, stream, outcomes)] == []
    assert fetches == []
