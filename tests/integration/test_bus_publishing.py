"""Publishing with Msg-Id on a real nats-server: dedup, order, never drop across a restart."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from nats.js import JetStreamContext
from nats.js.api import PubAck

from services.bus import collisions, streams
from services.bus.embedded import EmbeddedNats
from services.bus.publishing import Publisher
from services.config.settings import BusSettings
from services.contracts import subjects
from services.runtime import metrics
from services.runtime.health import ReadyFlag

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


def collisions_counted(check: str) -> float:
    return metrics.REGISTRY.get_sample_value(
        "gangsched_msg_id_collisions_total", {"check": check}) or 0.0


async def test_an_id_taken_by_another_message_does_not_make_ours_vanish(
    js: JetStreamContext, bus_settings: BusSettings
) -> None:
    tick = subjects.events_subject(bus_settings.prefix, "clock", "", "tick")
    outcome = subjects.events_subject(bus_settings.prefix, "outcome", "default", "train")
    before = collisions_counted(collisions.DIFFERS)
    forged = await Publisher(js).publish(outcome, b"forged", msg_id="clock/5")
    real = await Publisher(js).publish(tick, b"tick 5", msg_id="clock/5")
    again = await Publisher(js).publish(tick, b"tick 5", msg_id="clock/5")
    stored = await js.get_msg(subjects.stream_name(bus_settings.prefix, "EVENTS"), real)
    assert (forged, real, again) == (1, 2, 2)
    assert (stored.subject, stored.data) == (tick, b"tick 5")
    assert collisions_counted(collisions.DIFFERS) == before + 2


async def test_publish_many_stores_the_items_whose_ids_were_taken(
    js: JetStreamContext, bus_settings: BusSettings
) -> None:
    outcome = subjects.events_subject(bus_settings.prefix, "outcome", "default", "train")
    for i in (3, 4):
        await Publisher(js).publish(outcome, b"forged", msg_id=f"id-{i}")
    items = [(subject(bus_settings, f"n{i}"), b"%d" % i, f"id-{i}") for i in range(6)]
    await Publisher(js, max_in_flight=4).publish_many(items)
    stream = subjects.stream_name(bus_settings.prefix, "EVENTS")
    stored = [await js.get_msg(stream, seq) for seq in range(3, 9)]
    assert sorted(message.data or b"" for message in stored) == [b"%d" % i for i in range(6)]


async def test_close_leaves_no_ack_subscription_behind_and_publishing_can_resume(
    js: JetStreamContext, bus_settings: BusSettings
) -> None:
    subscriptions = js._nc._subs  # nats-py's table of this connection's subscriptions
    before = len(subscriptions)
    publisher = Publisher(js)
    await publisher.publish_many([(subject(bus_settings, "a"), b"1", "a")])
    assert len(subscriptions) == before + 1  # the acks' inbox
    await publisher.close()
    assert len(subscriptions) == before
    await publisher.close()  # twice: nothing left to close
    await publisher.publish_many([(subject(bus_settings, "b"), b"2", "b")])
    assert await stream_messages(js, bus_settings) == 2
    await publisher.close()
    assert len(subscriptions) == before


class HeldFlag(ReadyFlag):
    """A readiness flag that says when it is held down and when released."""

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.changed = asyncio.Event()

    def hold(self, reason: str) -> None:
        super().hold(reason)
        self.changed.set()

    def release(self, reason: str) -> None:
        super().release(reason)
        self.changed.set()

    async def next_change(self) -> list[str]:
        """Wait for the next hold or release; the holds then."""
        await asyncio.wait_for(self.changed.wait(), 30)
        self.changed.clear()
        return self.holds


async def test_a_stream_gone_holds_readiness_down_until_a_publish_is_stored(
    js: JetStreamContext, bus_settings: BusSettings
) -> None:
    stream = subjects.stream_name(bus_settings.prefix, "EVENTS")
    ready = HeldFlag("watcher")
    ready.set()
    publisher = Publisher(js, ready=ready, stream_of=streams.stream_of(bus_settings))
    await publisher.publish_many([(subject(bus_settings, "a"), b"1", "a")])
    assert ready.holds == []
    await js.delete_stream(stream)
    pending = asyncio.create_task(
        publisher.publish_many([(subject(bus_settings, "b"), b"2", "b")]))
    assert await ready.next_change() == [f"publishing: stream {stream} gone or leaderless"]
    assert not pending.done()  # its retries back off meanwhile
    await streams.ensure_streams(js, bus_settings)
    assert await ready.next_change() == []
    await asyncio.wait_for(pending, 30)
    assert ready.is_ready
    assert await stream_messages(js, bus_settings) == 1  # the stream made anew holds "b"
    await publisher.close()


class CountedPublishes:
    """A JetStream context whose `publish` calls are counted (each sets `called`)."""

    def __init__(self, js: JetStreamContext) -> None:
        self._js = js
        self.called = asyncio.Event()

    async def publish(self, *args: Any, **kwargs: Any) -> PubAck:
        self.called.set()
        return await self._js.publish(*args, **kwargs)

    async def attempts(self, count: int) -> None:
        """Wait for `count` more publish attempts."""
        for _ in range(count):
            self.called.clear()
            await asyncio.wait_for(self.called.wait(), 30)


async def test_closing_a_publisher_releases_its_stream_gone_hold_for_good(
    js: JetStreamContext, bus_settings: BusSettings
) -> None:
    """Closed while a publish still retries (its owner stopping), the hold is released and
    never put back by the later retries; cancelling the publish then leaves nothing held."""
    stream = subjects.stream_name(bus_settings.prefix, "EVENTS")
    ready = HeldFlag("watcher")
    ready.set()
    counted = CountedPublishes(js)
    publisher = Publisher(counted, ready=ready,  # type: ignore[arg-type]
                          stream_of=streams.stream_of(bus_settings))
    await js.delete_stream(stream)
    pending = asyncio.create_task(publisher.publish(subject(bus_settings, "a"), b"1",
                                                    msg_id="a"))
    assert await ready.next_change() == [f"publishing: stream {stream} gone or leaderless"]
    await publisher.close()
    assert ready.holds == []
    await counted.attempts(2)  # the first failed again and was backed off from: no hold
    held_after_close = ready.holds
    pending.cancel()
    with pytest.raises(asyncio.CancelledError):
        await pending
    assert (held_after_close, ready.holds, ready.is_ready) == ([], [], True)


async def test_a_cancelled_publish_releases_its_stream_gone_hold(
    js: JetStreamContext, bus_settings: BusSettings
) -> None:
    stream = subjects.stream_name(bus_settings.prefix, "EVENTS")
    ready = HeldFlag("watcher")
    ready.set()
    publisher = Publisher(js, ready=ready, stream_of=streams.stream_of(bus_settings))
    await js.delete_stream(stream)
    pending = asyncio.create_task(publisher.publish(subject(bus_settings, "a"), b"1",
                                                    msg_id="a"))
    assert await ready.next_change() == [f"publishing: stream {stream} gone or leaderless"]
    pending.cancel()
    with pytest.raises(asyncio.CancelledError):
        await pending
    assert (ready.holds, ready.is_ready) == ([], True)
    await publisher.close()


async def test_each_stream_gone_is_held_by_its_own_name_until_its_publishes_are_stored(
    js: JetStreamContext, bus_settings: BusSettings
) -> None:
    """A planner or binder publishes decisions and dead letters: only DEADLETTER gone, a
    dead letter holds the readiness naming it, and decisions still stored do not release it."""
    prefix = bus_settings.prefix
    dead_letters = subjects.stream_name(prefix, "DEADLETTER")
    ready = HeldFlag("planner")
    ready.set()
    publisher = Publisher(js, ready=ready, stream_of=streams.stream_of(bus_settings))
    await js.delete_stream(dead_letters)
    letter = asyncio.create_task(publisher.publish(
        subjects.dead_letter_subject(prefix), b"poison", msg_id="deadletter/planner/1"))
    assert await ready.next_change() == [f"publishing: stream {dead_letters} gone or leaderless"]
    assert await publisher.publish(subjects.decisions_subject(prefix, "Placement", "ml", "g"),
                                   b"d", msg_id="d1") == 1
    assert ready.holds == [f"publishing: stream {dead_letters} gone or leaderless"]
    await streams.ensure_streams(js, bus_settings)
    assert await ready.next_change() == []
    assert await asyncio.wait_for(letter, 30) == 1
    await publisher.close()
