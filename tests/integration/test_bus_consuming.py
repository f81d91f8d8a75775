"""Durable pull consumers on a real nats-server: batches, acks, restarts, vanished consumers."""

from __future__ import annotations

import asyncio

import pytest
from nats.js import JetStreamContext

from services.bus.consuming import Delivery, PullConsumer
from services.bus.embedded import EmbeddedNats
from services.bus.publishing import Publisher
from services.config.settings import BusSettings
from services.contracts import subjects
from tests.support.waiting import eventually_async

pytestmark = pytest.mark.integration


async def publish(js: JetStreamContext, settings: BusSettings, names: list[str]) -> None:
    await Publisher(js).publish_many([
        (subjects.events_subject(settings.prefix, "pod", "ns", name), name.encode(), name)
        for name in names
    ])


async def open_consumer(
    js: JetStreamContext, settings: BusSettings, start_seq: int | None = None
) -> PullConsumer:
    return await PullConsumer.open(
        js, stream=subjects.stream_name(settings.prefix, "EVENTS"), durable="test",
        filter_subject=subjects.events_wildcard(settings.prefix), ack_wait_seconds=1,
        start_seq=start_seq,
    )


async def fetch_until(consumer: PullConsumer, count: int) -> list[Delivery]:
    got: list[Delivery] = []

    async def enough() -> bool:
        got.extend(await consumer.fetch(10, 0.2))
        return len(got) >= count

    await eventually_async(enough, timeout=30, what=f"{count} deliveries")
    return got


async def test_fetch_returns_a_batch_in_stream_order_with_positions(
    js: JetStreamContext, bus_settings: BusSettings
) -> None:
    await publish(js, bus_settings, ["a", "b", "c"])
    consumer = await open_consumer(js, bus_settings)
    batch = await consumer.fetch(10, 1.0)
    assert [(d.seq, d.data, d.num_delivered) for d in batch] == [
        (1, b"a", 1), (2, b"b", 1), (3, b"c", 1)
    ]
    assert batch[0].headers["Nats-Msg-Id"] == "a"
    assert batch[-1].num_pending == 0
    await consumer.close()


async def test_fetch_on_an_idle_stream_returns_nothing(
    js: JetStreamContext, bus_settings: BusSettings
) -> None:
    consumer = await open_consumer(js, bus_settings)
    assert await consumer.fetch(10, 0.2) == []
    await consumer.close()


async def test_acked_messages_are_not_redelivered_and_nakked_ones_are(
    js: JetStreamContext, bus_settings: BusSettings
) -> None:
    await publish(js, bus_settings, ["a", "b"])
    consumer = await open_consumer(js, bus_settings)
    first, second = await consumer.fetch(10, 1.0)
    await first.ack()
    await second.nak()
    again = await fetch_until(consumer, 1)
    assert [(d.seq, d.num_delivered) for d in again] == [(2, 2)]
    await again[0].ack()
    assert await consumer.fetch(10, 0.3) == []
    await consumer.close()


async def test_consumer_keeps_its_position_across_a_nats_restart(
    js: JetStreamContext, bus_settings: BusSettings, nats_server: EmbeddedNats
) -> None:
    await publish(js, bus_settings, ["a", "b", "c"])
    consumer = await open_consumer(js, bus_settings)
    # all three (one fetch may hand over fewer under load), each ack confirmed by the server:
    # the position is what the server recorded, and a plain ack lost on the way would rightly
    # mean a redelivery
    for delivery in await fetch_until(consumer, 3):
        await delivery.msg.ack_sync()
    await nats_server.restart()
    await publish(js, bus_settings, ["d", "e"])
    after = await fetch_until(consumer, 2)
    assert [d.seq for d in after] == [4, 5]
    await consumer.close()


async def test_a_vanished_consumer_is_recreated_from_the_first_unacked_message(
    js: JetStreamContext, bus_settings: BusSettings
) -> None:
    await publish(js, bus_settings, ["a", "b", "c", "d"])
    consumer = await open_consumer(js, bus_settings)
    a, _b = await consumer.fetch(2, 1.0)
    await a.ack()
    await js.delete_consumer(subjects.stream_name(bus_settings.prefix, "EVENTS"), "test")
    redelivered = await fetch_until(consumer, 3)
    assert [d.seq for d in redelivered] == [2, 3, 4]
    await consumer.close()


async def test_start_seq_replaces_the_consumer_and_delivers_from_there(
    js: JetStreamContext, bus_settings: BusSettings
) -> None:
    await publish(js, bus_settings, ["a", "b", "c", "d"])
    consumer = await open_consumer(js, bus_settings)
    await consumer.fetch(4, 1.0)  # delivered, never acked: pending redelivery
    await consumer.close()
    resumed = await open_consumer(js, bus_settings, start_seq=3)
    batch = await resumed.fetch(10, 1.0)
    assert [d.seq for d in batch] == [3, 4]
    await resumed.close()


async def test_cancelling_a_fetch_loop_stops_it_even_while_messages_arrive(
    js: JetStreamContext, bus_settings: BusSettings
) -> None:
    # nats-py's wait_for on Python 3.11 can swallow a cancellation that coincides with a
    # message; a consumer loop cancelled for shutdown must stop anyway.
    consumer = await open_consumer(js, bus_settings)
    stop = asyncio.Event()

    async def produce() -> None:
        sequence = 0
        while not stop.is_set():
            await publish(js, bus_settings, [f"p{sequence}"])
            sequence += 1

    async def consume() -> None:
        while True:
            for delivery in await consumer.fetch(64, 1.0):
                await delivery.ack()

    producer = asyncio.create_task(produce())
    try:
        for attempt in range(60):
            loop = asyncio.create_task(consume())
            await asyncio.sleep(0.001 * (attempt % 20))
            loop.cancel()
            done, _ = await asyncio.wait({loop}, timeout=2)
            assert done, f"cancellation {attempt} was lost"
    finally:
        stop.set()
        await producer
        await consumer.close()
