"""`reading.read` against a real nats-server: what it yields, and that it never waits for
messages that cannot come."""

from __future__ import annotations

from typing import Any

import pytest
from nats.aio.client import Client
from nats.js import JetStreamContext
from nats.js.api import StreamInfo

from services.bus import latest, pulling, reading, streams
from services.bus.errors import BusUnavailable
from services.bus.publishing import Publisher
from services.config.settings import BusSettings
from services.contracts import subjects
from tests.integration.test_bus_consuming import publish
from tests.support.stream_backup import backup, restore
from tests.support.waiting import eventually_async

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


async def test_one_read_asks_for_the_stream_info_before_and_after_its_consumer_exists(
        js: JetStreamContext, bus_settings: BusSettings,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """`read` asks the stream's extent and identity once, and its reader asks the identity
    once more when its consumer exists (`OrderedReader.open(created=...)`: a stream made anew
    in between is not read as the old one), nothing more. Counted on the JetStream context
    the read is given (every stream info of the read goes through it)."""
    stream = subjects.stream_name(bus_settings.prefix, "EVENTS")
    await publish(js, bus_settings, ["a", "b", "c"])
    asked: list[str] = []
    stream_info = js.stream_info

    async def counted(name: str, *args: Any, **kwargs: Any) -> StreamInfo:
        asked.append(name)
        return await stream_info(name, *args, **kwargs)

    monkeypatch.setattr(js, "stream_info", counted)
    read = [m.seq async for m in reading.read(
        js, stream, subjects.events_wildcard(bus_settings.prefix))]
    assert read == [1, 2, 3]
    assert asked == [stream, stream]


async def test_a_bounded_read_ends_when_its_stream_is_made_anew(
        js: JetStreamContext, bus_settings: BusSettings,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The end a bounded read stops at is the old stream's: it yields nothing of a stream made
    anew meanwhile (it yielded the new stream's seqs after the old one's, going backwards)."""
    monkeypatch.setattr(reading, "FETCH_BATCH", 1)
    stream = subjects.stream_name(bus_settings.prefix, "EVENTS")
    await publish(js, bus_settings, ["a", "b", "c"])
    read: list[tuple[int, bytes]] = []
    async for message in reading.read(js, stream, subjects.events_wildcard(bus_settings.prefix)):
        read.append((message.seq, message.data))
        if message.seq == 1:
            await js.delete_stream(stream)
            await streams.ensure_streams(js, bus_settings)
            await publish(js, bus_settings, ["x", "y", "z"])
    assert read == [(1, b"a")]


async def fetched_after_a_restore(
        nc: Client, js: JetStreamContext, bus_settings: BusSettings, older: bool,
        published: list[str]) -> tuple[reading.OrderedReader, list[tuple[int, bytes]]]:
    """A reader of "a", "b", "c"; the stream restored from its backup (`older`: one taken at
    seq 1), then `published`: what the reader fetches after (at least one message)."""
    stream = subjects.stream_name(bus_settings.prefix, "EVENTS")
    await publish(js, bus_settings, ["a"])
    saved = await backup(nc, stream, consumers=False) if older else None
    await publish(js, bus_settings, ["b", "c"])
    reader = await reading.OrderedReader.open(
        js, stream, subjects.events_wildcard(bus_settings.prefix), owner="test", start_seq=1)
    got = [(message.seq, message.data) for message in await reader.fetch(10, 1)]
    assert got == [(1, b"a"), (2, b"b"), (3, b"c")]
    saved = saved or await backup(nc, stream, consumers=False)
    await js.delete_stream(stream)
    await restore(nc, stream, saved)
    for name in published:  # one by one: each its own msg-id, stored in this order
        await publish(js, bus_settings, [name])
    after: list[tuple[int, bytes]] = []

    async def fetched() -> bool:
        after.extend((message.seq, message.data) for message in await reader.fetch(10, 0.2))
        return bool(after)

    await eventually_async(fetched, timeout=10, what="messages after the restore")
    return reader, after


async def test_a_following_reader_reads_on_after_its_stream_restored_from_a_backup(
        nc: Client, js: JetStreamContext, bus_settings: BusSettings) -> None:
    """The stream restored holds "c" at seq 3 as it was stored: the reader goes on after it
    (it read everything again when only creation times were compared)."""
    reader, after = await fetched_after_a_restore(nc, js, bus_settings, False, ["d"])
    assert (after, reader.streams_read) == ([(4, b"d")], 1)
    await reader.close()


async def test_a_following_reader_reads_afresh_a_stream_with_its_message_published_again(
        nc: Client, js: JetStreamContext, bus_settings: BusSettings) -> None:
    """Restored from an older backup (ending at seq 1), the stream gets "x" and the very "c"
    again at seq 3, stored at another time: another stream, read from its start."""
    reader, after = await fetched_after_a_restore(nc, js, bus_settings, True, ["x", "c"])
    assert (after, reader.streams_read) == ([(1, b"a"), (2, b"x"), (3, b"c")], 2)
    await reader.close()


def losing_the_second_then_made_anew(js: JetStreamContext, bus_settings: BusSettings,
                                     monkeypatch: pytest.MonkeyPatch,
                                     published: list[str]) -> None:
    """The next pull (`pulling.Puller.fetch`) loses its second message in transit, and before
    it returns the EVENTS stream is deleted, made anew and given `published`."""
    real_fetch = pulling.Puller.fetch

    async def losing(puller: pulling.Puller, batch: int, timeout: float) -> list[Any]:
        monkeypatch.setattr(pulling.Puller, "fetch", real_fetch)  # once
        messages = await real_fetch(puller, batch, timeout)
        assert len(messages) >= 2, "the pull must bring more than the message kept"
        await remake(js, bus_settings, published)
        return [messages[0], *messages[2:]]

    monkeypatch.setattr(pulling.Puller, "fetch", losing)


async def remake(js: JetStreamContext, bus_settings: BusSettings, published: list[str]) -> None:
    """Delete the EVENTS stream, make it anew and publish `published` to it."""
    await js.delete_stream(subjects.stream_name(bus_settings.prefix, "EVENTS"))
    await streams.ensure_streams(js, bus_settings)
    await publish(js, bus_settings, published)


async def test_what_came_before_a_gap_is_returned_as_the_old_streams_before_a_new_one(
        js: JetStreamContext, bus_settings: BusSettings,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A message lost in transit in the batch bringing a stream's last messages, the stream
    deleted and made anew meanwhile: the reader returns what came before the loss while it
    still counts the old stream, and the new stream's messages, counted, from the next call
    (it counted the new stream in the call returning the old one's "a", so a follower
    starting afresh built its new state from a message of the stream deleted)."""
    stream = subjects.stream_name(bus_settings.prefix, "EVENTS")
    await publish(js, bus_settings, ["a", "b", "c"])
    reader = await reading.OrderedReader.open(
        js, stream, subjects.events_wildcard(bus_settings.prefix), owner="test", start_seq=1)
    losing_the_second_then_made_anew(js, bus_settings, monkeypatch, ["x", "y"])
    try:
        first = [(message.seq, message.data) for message in await reader.fetch(10, 1)]
        assert (first, reader.streams_read) == ([(1, b"a")], 1)
        then = [(message.seq, message.data) for message in await reader.fetch(10, 1)]
        assert (then, reader.streams_read) == ([(1, b"x"), (2, b"y")], 2)
    finally:
        await reader.close()


async def test_a_bounded_read_losing_a_message_as_its_stream_is_made_anew_ends_there(
        js: JetStreamContext, bus_settings: BusSettings,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """What came before the loss is the old stream's, and its end the one to stop at: nothing
    of the new stream follows (it yielded "x" and "y" at seqs 1 and 2 after "a" at 1)."""
    monkeypatch.setattr(reading, "FETCH_BATCH", 10)
    stream = subjects.stream_name(bus_settings.prefix, "EVENTS")
    await publish(js, bus_settings, ["a", "b", "c"])
    losing_the_second_then_made_anew(js, bus_settings, monkeypatch, ["x", "y"])
    read = [(message.seq, message.data) async for message in
            reading.read(js, stream, subjects.events_wildcard(bus_settings.prefix))]
    assert read == [(1, b"a")]


async def test_a_stream_made_anew_while_a_reader_recreates_its_consumer_is_read_afresh(
        js: JetStreamContext, bus_settings: BusSettings,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Made anew after the reader asked which stream it reads and before its new consumer
    exists: the reader counts it and reads it from its start (it read on from seq 4, the old
    stream's, and never returned "x" and "y")."""
    stream = subjects.stream_name(bus_settings.prefix, "EVENTS")
    await publish(js, bus_settings, ["a", "b", "c"])
    reader = await reading.OrderedReader.open(
        js, stream, subjects.events_wildcard(bus_settings.prefix), owner="test", start_seq=1)
    try:
        assert [message.data for message in await reader.fetch(10, 1)] == [b"a", b"b", b"c"]
        await reader.close()  # the next fetch recreates its consumer
        real_create = reader._create

        async def remade_first(start_seq: int | None) -> None:
            monkeypatch.setattr(reader, "_create", real_create)  # once
            await remake(js, bus_settings, ["x", "y"])
            await real_create(start_seq)

        monkeypatch.setattr(reader, "_create", remade_first)
        fetched = [(message.seq, message.data) for message in await reader.fetch(10, 1)]
        assert (fetched, reader.streams_read) == ([(1, b"x"), (2, b"y")], 2)
    finally:
        await reader.close()


async def test_the_newest_messages_read_as_their_stream_is_made_anew_are_refused(
        js: JetStreamContext, bus_settings: BusSettings,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """`latest.latest` (the watcher's recovery) yields "a" of the old stream, then finds the
    stream made anew: it says so instead of going on with the new stream's "x", a state
    mixed of two streams' messages."""
    stream = subjects.stream_name(bus_settings.prefix, "EVENTS")
    await publish(js, bus_settings, ["a", "b", "c"])
    losing_the_second_then_made_anew(js, bus_settings, monkeypatch, ["x"])
    read: list[bytes] = []
    with pytest.raises(BusUnavailable, match="made anew while its newest messages were read"):
        async for message in latest.latest(
                js, stream, subjects.events_wildcard(bus_settings.prefix), owner="test",
                inactive_threshold_seconds=10, batch=10, timeout_seconds=1):
            read.append(message.data)
    assert read == [b"a"]


async def test_a_bounded_read_of_a_stream_made_anew_as_it_opens_yields_nothing_of_it(
        js: JetStreamContext, bus_settings: BusSettings,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Made anew after the read took the stream's extent and identity, before its consumer
    existed: the end to stop at was the old stream's, so nothing is yielded (it yielded the
    new stream's "x" and "y", counted as the old one's)."""
    stream = subjects.stream_name(bus_settings.prefix, "EVENTS")
    await publish(js, bus_settings, ["a", "b", "c"])
    real_state = reading.stream_state

    async def remade_after(js_: JetStreamContext, name: str) -> reading.StreamState:
        state = await real_state(js_, name)
        await remake(js, bus_settings, ["x", "y"])
        return state

    monkeypatch.setattr(reading, "stream_state", remade_after)
    read = [(message.seq, message.data) async for message in
            reading.read(js, stream, subjects.events_wildcard(bus_settings.prefix))]
    assert read == []
