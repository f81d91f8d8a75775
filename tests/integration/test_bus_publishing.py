"""Publishing with Msg-Id on a real nats-server: dedup, order, never drop across a restart."""

from __future__ import annotations

import asyncio

import pytest
from nats.js import JetStreamContext

from services.bus.embedded import EmbeddedNats
from services.bus.publishing import Publisher
from services.config.settings import BusSettings
from services.contracts import subjects

pytestmark = pytest.mark.integration


def subject(settings: BusSettings, name: str) -> str:
    return subjects.events_subject(settings.prefix, "node", "", name)


async def stream_messages(js: JetStreamContext, settings: BusSettings) -> int:
    info = await js.stream_info(subjects.stream_name(settings.prefix, "EVENTS"))
    return int(info.state.messages)


async def test_publish_with_the_same_msg_id_stores_once_and_returns_the_first_seq(
    js: JetStreamContext, bus_settings: BusSettings
) -> None:
    publisher = Publisher(js)
    first = await publisher.publish(subject(bus_settings, "a"), b"1", msg_id="node/a/1")
    again = await publisher.publish(subject(bus_settings, "a"), b"1", msg_id="node/a/1")
    other = await publisher.publish(subject(bus_settings, "a"), b"2", msg_id="node/a/2")
    assert (first, again, other) == (1, 1, 2)
    assert await stream_messages(js, bus_settings) == 2


async def test_publish_many_stores_in_order_and_drops_duplicates(
    js: JetStreamContext, bus_settings: BusSettings
) -> None:
    publisher = Publisher(js, max_in_flight=7)
    items = [(subject(bus_settings, f"n{i}"), b"%d" % i, f"id-{i}") for i in range(50)]
    await publisher.publish_many(items)
    await publisher.publish_many(items[10:20])
    assert await stream_messages(js, bus_settings) == 50
    stored = [await js.get_msg(subjects.stream_name(bus_settings.prefix, "EVENTS"), seq)
              for seq in (1, 25, 50)]
    assert [message.data for message in stored] == [b"0", b"24", b"49"]


async def test_publish_waits_out_a_nats_restart_instead_of_dropping(
    js: JetStreamContext, bus_settings: BusSettings, nats_server: EmbeddedNats
) -> None:
    publisher = Publisher(js, ack_timeout_seconds=0.5)
    await publisher.publish(subject(bus_settings, "before"), b"0", msg_id="before")
    await nats_server.stop()
    pending = asyncio.create_task(
        publisher.publish(subject(bus_settings, "during"), b"1", msg_id="during")
    )
    await asyncio.sleep(1.5)
    assert not pending.done()
    await nats_server.start()
    assert await asyncio.wait_for(pending, 30) == 2
    assert await stream_messages(js, bus_settings) == 2
