"""`AckWaiter` on a real nats-server: each future gets its own message's ack, or its refusal."""

from __future__ import annotations

import asyncio

import nats.errors
import nats.js.errors
import pytest
from nats.aio.msg import Msg
from nats.js import JetStreamContext

from services.bus.acks import AckWaiter
from services.config.settings import BusSettings
from services.contracts import subjects

pytestmark = pytest.mark.integration


def subject(settings: BusSettings, name: str) -> str:
    return subjects.events_subject(settings.prefix, "node", "", name)


async def test_each_future_gets_the_sequence_of_its_message_and_duplicates_are_said(
    js: JetStreamContext, bus_settings: BusSettings
) -> None:
    waiter = await AckWaiter.open(js)
    futures = [await waiter.publish(subject(bus_settings, f"n{i}"), b"%d" % i,
                                    {"Nats-Msg-Id": f"id-{i}"}) for i in range(20)]
    again = await waiter.publish(subject(bus_settings, "n3"), b"3", {"Nats-Msg-Id": "id-3"})
    acks = await asyncio.wait_for(asyncio.gather(*futures, again), 10)
    stream = subjects.stream_name(bus_settings.prefix, "EVENTS")
    assert [(ack.stream, ack.seq, bool(ack.duplicate)) for ack in acks] == [
        (stream, i + 1, False) for i in range(20)] + [(stream, 4, True)]
    stored = await js.get_msg(stream, 8)
    assert stored.data == b"7"
    await waiter.close()


async def test_a_subject_no_stream_takes_is_a_no_stream_error(
    js: JetStreamContext, bus_settings: BusSettings
) -> None:
    waiter = await AckWaiter.open(js)
    future = await waiter.publish(f"{bus_settings.prefix}-nowhere.x", b"x", {"Nats-Msg-Id": "x"})
    with pytest.raises(nats.js.errors.NoStreamResponseError):
        await asyncio.wait_for(future, 10)
    await waiter.close()


async def test_a_refused_publish_is_its_api_error(
    js: JetStreamContext, bus_settings: BusSettings
) -> None:
    """JetStream refuses a message whose expected stream is another: the error code comes."""
    waiter = await AckWaiter.open(js)
    future = await waiter.publish(subject(bus_settings, "a"), b"a", {
        "Nats-Msg-Id": "a", "Nats-Expected-Stream": "SOMETHING_ELSE"})
    with pytest.raises(nats.js.errors.APIError) as refused:
        await asyncio.wait_for(future, 10)
    assert refused.value.code == 400
    await waiter.close()


async def test_a_late_or_unknown_ack_touches_no_future_and_a_cancelled_one_is_forgotten(
    js: JetStreamContext, bus_settings: BusSettings
) -> None:
    waiter = await AckWaiter.open(js)
    client = js._nc
    future = await waiter.publish(subject(bus_settings, "b"), b"b", {"Nats-Msg-Id": "b"})
    await asyncio.wait_for(future, 10)
    assert waiter._futures == {}  # settled futures are dropped
    await waiter._answer(Msg(client, subject=f"{waiter._inbox}.999", data=b'{"seq": 1}'))
    pending = await waiter.publish(f"{bus_settings.prefix}-nowhere.y", b"y", {"Nats-Msg-Id": "y"})
    pending.cancel()
    await asyncio.sleep(0.5)  # its 503 arrives for nobody
    assert waiter._futures == {}
    await waiter.close()


async def test_an_unreadable_ack_is_an_error_of_its_future_only(
    js: JetStreamContext, bus_settings: BusSettings
) -> None:
    waiter = await AckWaiter.open(js)
    loop = asyncio.get_running_loop()
    future: asyncio.Future[object] = loop.create_future()
    waiter._futures["77"] = future  # type: ignore[assignment]
    await waiter._answer(Msg(js._nc, subject=f"{waiter._inbox}.77", data=b"not json"))
    with pytest.raises(nats.errors.Error, match="unreadable publish ack"):
        future.result()
    await waiter.close()
