"""A NATS store lost (or a stream deleted) under a running consumer, and NATS going away under
a connection: paused retries said once then every tenth time, readiness held down meanwhile,
and released once consuming (or connected) again. A stream made anew is told from one restored
from its backup (`tests.support.stream_backup`) by its content, not its creation time."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import os
import re
import shutil
import signal
import time
from pathlib import Path

import pytest
from nats.aio.client import Client
from nats.js import JetStreamContext
from nats.js.api import StreamConfig

from services.binder import view_feed
from services.bus import connection, consuming, reading, streams
from services.bus.consuming import PullConsumer
from services.bus.embedded import EmbeddedNats
from services.bus.errors import BusUnavailable, StreamGone, StreamRecreated
from services.config.settings import BusSettings
from services.contracts import subjects
from services.runtime.health import ReadyFlag
from tests.integration.test_bus_consuming import fetch_until, publish
from tests.support.stream_backup import backup, restore
from tests.support.waiting import eventually_async

pytestmark = pytest.mark.integration


def events_stream(settings: BusSettings) -> str:
    return subjects.stream_name(settings.prefix, "EVENTS")


async def open_consumer(js: JetStreamContext, settings: BusSettings, *,
                        ready: ReadyFlag | None = None,
                        stream_loss_fatal: bool = False) -> PullConsumer:
    return await PullConsumer.open(
        js, stream=events_stream(settings), durable="test",
        filter_subject=subjects.events_wildcard(settings.prefix), ack_wait_seconds=1,
        ready=ready, stream_loss_fatal=stream_loss_fatal,
    )


def gone_warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [record.getMessage() for record in caplog.records
            if record.levelno == logging.WARNING and record.name == consuming.__name__]


async def fetch_for(consumer: PullConsumer, seconds: float) -> int:
    """Fetch again and again for `seconds`, as a service's loop does; how many fetches."""
    fetches, until = 0, time.monotonic() + seconds
    while time.monotonic() < until:
        assert await consumer.fetch(10, 0.1) == []
        fetches += 1
    return fetches


@pytest.fixture
def quick_retries(monkeypatch: pytest.MonkeyPatch) -> None:
    """Pauses of 0.1 s doubling to 0.2 s: ten failures in a couple of seconds."""
    monkeypatch.setattr(consuming, "FIRST_RETRY_SECONDS", 0.1)
    monkeypatch.setattr(consuming, "MAX_RETRY_SECONDS", 0.2)


async def test_a_deleted_stream_is_waited_for_with_pauses_said_once_then_every_tenth_time(
    js: JetStreamContext, bus_settings: BusSettings, caplog: pytest.LogCaptureFixture,
    quick_retries: None,
) -> None:
    await publish(js, bus_settings, ["a", "b"])
    ready = ReadyFlag("binder")
    ready.set()
    consumer = await open_consumer(js, bus_settings, ready=ready)
    for delivery in await fetch_until(consumer, 2):
        await delivery.msg.ack_sync()
    await js.delete_stream(events_stream(bus_settings))
    caplog.set_level(logging.INFO, logger=consuming.__name__)
    fetches = await fetch_for(consumer, 3.0)
    assert fetches <= 3.0 / 0.1  # paused: it used to spin thousands of times
    warnings = gone_warnings(caplog)
    assert 1 <= len(warnings) <= 3, warnings
    assert warnings[0].startswith(f"stream {events_stream(bus_settings)} is gone (the NATS "
                                  "store was lost or the stream deleted): consumer test")
    assert all("such failures" in warning for warning in warnings[1:])
    assert not ready.is_ready
    assert ready.holds == [f"consumer test: stream {events_stream(bus_settings)} gone"]
    # made anew (as a service's start does): read from its start, positions of the old ignored
    await streams.ensure_streams(js, bus_settings)
    await publish(js, bus_settings, ["c"])
    again = await fetch_until(consumer, 1)
    assert [(delivery.seq, delivery.data) for delivery in again] == [(1, b"c")]
    assert ready.is_ready
    assert any("consuming again" in record.getMessage() for record in caplog.records)
    await consumer.close()


async def test_a_consumer_tracking_positions_raises_when_its_stream_is_gone(
    js: JetStreamContext, bus_settings: BusSettings, quick_retries: None,
) -> None:
    await publish(js, bus_settings, ["a"])
    consumer = await open_consumer(js, bus_settings, stream_loss_fatal=True)
    await (await fetch_until(consumer, 1))[0].msg.ack_sync()
    await js.delete_stream(events_stream(bus_settings))

    async def raises() -> bool:
        await consumer.fetch(10, 0.1)
        return False

    with pytest.raises(StreamGone, match="is gone"):
        await eventually_async(raises, timeout=10, what="StreamGone")
    await consumer.close()


async def recreate_events(js: JetStreamContext, settings: BusSettings) -> tuple[str, str]:
    """Delete the EVENTS stream and make it anew, as a service's start does; the identities
    (`reading.identity`) of the old and the new one."""
    stream = events_stream(settings)
    was = (await reading.stream_state(js, stream)).created
    await js.delete_stream(stream)
    await streams.ensure_streams(js, settings)
    now = (await reading.stream_state(js, stream)).created
    assert was is not None and now is not None and now != was
    return was, now


async def test_a_stream_made_anew_before_the_consumer_saw_it_gone_is_read_from_its_start(
    js: JetStreamContext, bus_settings: BusSettings, caplog: pytest.LogCaptureFixture,
    quick_retries: None,
) -> None:
    await publish(js, bus_settings, ["a", "b", "c"])
    consumer = await open_consumer(js, bus_settings)
    for delivery in await fetch_until(consumer, 3):
        await delivery.ack()  # settled: the consumer would resume after seq 3
    was, now = await recreate_events(js, bus_settings)
    assert consumer.stream_created == was
    await publish(js, bus_settings, ["d", "e", "f", "g"])  # more than the positions seen
    caplog.set_level(logging.INFO, logger=consuming.__name__)
    again = await fetch_until(consumer, 4)
    assert [(delivery.seq, delivery.data) for delivery in again] == [
        (1, b"d"), (2, b"e"), (3, b"f"), (4, b"g")]
    assert consumer.stream_created == now
    assert (f"stream {events_stream(bus_settings)} was created anew at {now} (the one consumer "
            f"test read was created at {was}): reading it from its start") in gone_warnings(caplog)
    await consumer.close()


async def test_a_consumer_tracking_positions_raises_when_its_stream_is_made_anew(
    js: JetStreamContext, bus_settings: BusSettings, quick_retries: None,
) -> None:
    await publish(js, bus_settings, ["a"])
    consumer = await open_consumer(js, bus_settings, stream_loss_fatal=True)
    await (await fetch_until(consumer, 1))[0].ack()
    was, now = await recreate_events(js, bus_settings)
    await publish(js, bus_settings, ["b", "c"])

    async def raises() -> bool:
        await consumer.fetch(10, 0.1)
        return False

    with pytest.raises(StreamRecreated) as raised:
        await eventually_async(raises, timeout=10, what="StreamRecreated")
    assert (raised.value.stream, raised.value.was, raised.value.now) == (
        events_stream(bus_settings), was, now)
    await consumer.close()


async def test_a_consumer_opened_at_a_position_of_a_stream_made_anew_since_raises(
    js: JetStreamContext, bus_settings: BusSettings,
) -> None:
    await publish(js, bus_settings, ["a", "b"])
    was, now = await recreate_events(js, bus_settings)
    await publish(js, bus_settings, ["c", "d", "e"])
    with pytest.raises(StreamRecreated) as raised:
        await PullConsumer.open(
            js, stream=events_stream(bus_settings), durable="test",
            filter_subject=subjects.events_wildcard(bus_settings.prefix), start_seq=3,
            stream_loss_fatal=True, stream_created=was,
            landmark=reading.Landmark(
                2, subjects.events_subject(bus_settings.prefix, "pod", "ns", "b"), b"b"))
    assert str(raised.value) == (
        f"stream {events_stream(bus_settings)} was created anew at {now} and holds another "
        f"message at seq 2, the position read up to in the one created at {was}")


async def test_a_consumer_resumes_a_stream_restored_without_its_consumer(
    nc: Client, js: JetStreamContext, bus_settings: BusSettings,
    caplog: pytest.LogCaptureFixture, quick_retries: None,
) -> None:
    """The binder's durables: a stream restored from a backup taken without consumers holds
    the same messages at the same sequences under a new creation time; the consumer made again
    resumes after what it acknowledged (it re-delivered all of it, taking the stream for
    another, when only the creation time was compared)."""
    stream = events_stream(bus_settings)
    await publish(js, bus_settings, ["a", "b", "c"])
    consumer = await open_consumer(js, bus_settings)
    for delivery in await fetch_until(consumer, 3):
        await delivery.ack()
    was = consumer.stream_created
    saved = await backup(nc, stream, consumers=False)
    await js.delete_stream(stream)
    await restore(nc, stream, saved)
    now = (await reading.stream_state(js, stream)).created
    await publish(js, bus_settings, ["d"])
    caplog.set_level(logging.INFO, logger=consuming.__name__)
    again = await fetch_until(consumer, 1)
    assert [(delivery.seq, delivery.data) for delivery in again] == [(4, b"d")]
    assert consumer.stream_created == now != was
    assert [record.getMessage() for record in caplog.records
            if record.name == consuming.__name__ and record.levelno == logging.INFO] == [
        f"stream {stream} was created anew at {now} (restored from a backup?) and holds the "
        f"message consumer test read at seq 3 in the one created at {was}: going on"]
    await consumer.close()


async def test_a_restore_keeps_the_time_each_message_was_stored(
    nc: Client, js: JetStreamContext, bus_settings: BusSettings,
) -> None:
    """What the content check stands on: a stream restored from its backup keeps each
    message's subject, bytes and stored time (to the microsecond nats-py keeps)."""
    stream = events_stream(bus_settings)
    await publish(js, bus_settings, ["a", "b", "c", "d"])
    before = [await js.get_msg(stream, seq) for seq in range(1, 5)]
    saved = await backup(nc, stream)
    await js.delete_stream(stream)
    await restore(nc, stream, saved)
    after = [await js.get_msg(stream, seq) for seq in range(1, 5)]
    assert [(m.seq, m.subject, m.data, m.time) for m in after] == [
        (m.seq, m.subject, m.data, m.time) for m in before]


async def test_a_consumer_reads_anew_a_stream_with_its_message_published_again(
    nc: Client, js: JetStreamContext, bus_settings: BusSettings, quick_retries: None,
) -> None:
    """The binder's durables: restored from an older backup (ending at seq 1), the stream gets
    "x" at seq 2 and the very message the consumer read at seq 3 again ("c", a publish
    retried across the restore). Same subject and bytes, another stored time: the stream is
    read from its start (it went on after seq 3, never delivering "x")."""
    stream = events_stream(bus_settings)
    await publish(js, bus_settings, ["a"])
    saved = await backup(nc, stream, consumers=False)  # ends at seq 1
    await publish(js, bus_settings, ["b", "c"])
    consumer = await open_consumer(js, bus_settings)
    for delivery in await fetch_until(consumer, 3):
        await delivery.ack()
    await js.delete_stream(stream)
    await restore(nc, stream, saved)
    for name in ("x", "c", "d"):  # seqs 2, 3, 4
        await publish(js, bus_settings, [name])
    again = await fetch_until(consumer, 4)
    assert [(delivery.seq, delivery.data) for delivery in again] == [
        (1, b"a"), (2, b"x"), (3, b"c"), (4, b"d")]
    await consumer.close()


async def test_a_durable_restored_from_an_older_backup_delivers_the_messages_as_they_were(
    nc: Client, js: JetStreamContext, bus_settings: BusSettings,
) -> None:
    """The binder's durables hold their positions in NATS only: a stream restored with them
    from an older backup delivers again what they acknowledged since, the very messages (same
    sequence, bytes and msg-id), on which the binder's outcome checks make it act once
    (`test_binder_service.test_a_copy_of_a_settled_placement_published_again_is_not_carried_out`:
    a settled placement delivered anew is only acked)."""
    stream = events_stream(bus_settings)
    await publish(js, bus_settings, ["a", "b", "c"])
    consumer = await open_consumer(js, bus_settings)
    first, *rest = await fetch_until(consumer, 3)
    await first.msg.ack_sync()
    saved = await backup(nc, stream)  # the stream at seq 3, the durable's ack floor at 1
    for delivery in rest:
        await delivery.msg.ack_sync()
    await js.delete_stream(stream)
    await restore(nc, stream, saved)
    again = await fetch_until(consumer, 2)
    assert [(delivery.seq, delivery.data, delivery.headers.get(reading.MSG_ID_HEADER))
            for delivery in again] == [(2, b"b", "b"), (3, b"c", "c")]
    await consumer.close()


async def test_a_batch_a_failed_check_drops_is_delivered_again_first(
    nc: Client, js: JetStreamContext, bus_settings: BusSettings, quick_retries: None,
) -> None:
    """A tracking consumer (the planner's: ack policy ALL) gets a batch at or below its
    position and cannot check its stream then: the batch it drops is naked, so the next
    fetches bring it again first (the server counted it delivered until its ack wait ended
    and the next fetch brought seqs 6.., a gap the planner took for its consumer changed
    behind its back)."""
    await publish(js, bus_settings, [f"m{n}" for n in range(1, 11)])
    consumer = await PullConsumer.open(
        js, stream=events_stream(bus_settings), durable="test",
        filter_subject=subjects.events_wildcard(bus_settings.prefix), start_seq=1,
        ack_policy=consuming.ACK_ALL, stream_loss_fatal=True, ack_wait_seconds=30)
    first = await consumer.fetch(5, 2)
    assert [delivery.seq for delivery in first] == [1, 2, 3, 4, 5]
    for delivery in first:  # redelivered at once, at or below the position (5); a nak
        await nc.request(delivery.msg.reply, b"-NAK")  # answered once the server took it
    consumer._js = nc.jetstream(timeout=0.000001)  # its stream info times out
    assert await consumer.fetch(5, 2) == []
    consumer._js = js  # NATS answers again
    again = await fetch_until(consumer, 10)
    assert [delivery.seq for delivery in again] == [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]
    await consumer.close()


async def test_a_position_retention_removed_is_told_by_the_creation_time_alone(
    js: JetStreamContext,
) -> None:
    """The message at the position gone (the stream starts after it), a stream of another
    creation time cannot be told to hold the same messages: a tracking consumer refuses it."""
    await js.add_stream(StreamConfig(name="SHORT", subjects=["short.>"], max_msgs=2))
    for data in (b"a", b"b", b"c", b"d"):
        await js.publish("short.x", data)
    with pytest.raises(StreamRecreated) as raised:
        await PullConsumer.open(js, stream="SHORT", durable="test", filter_subject="short.>",
                                start_seq=2, stream_loss_fatal=True,
                                stream_created="2026-01-01T00:00:00.000000Z",
                                landmark=reading.Landmark(1, "short.x", b"a"))
    now = (await reading.stream_state(js, "SHORT")).created
    assert (raised.value.found, str(raised.value)) == ("removed", (
        f"stream SHORT was created anew at {now} and no longer holds seq 1 (retention removed "
        "it: it starts at seq 3), the position read up to in the one created at "
        "2026-01-01T00:00:00.000000Z"))
    await js.delete_stream("SHORT")


async def stopped(pid: int) -> None:
    """Wait until the process `pid` is stopped (state T), its SIGSTOP taken."""
    stat = Path(f"/proc/{pid}/stat")
    for _ in range(200):
        if stat.read_text().rsplit(")", 1)[1].split()[0] in ("T", "t"):
            return
        await asyncio.sleep(0.005)
    raise AssertionError(f"process {pid} did not stop")


async def test_a_tracking_consumer_is_not_fooled_by_a_stream_info_that_failed_once(
    nats_server: EmbeddedNats, nc: Client, js: JetStreamContext, bus_settings: BusSettings,
    monkeypatch: pytest.MonkeyPatch, quick_retries: None,
) -> None:
    """Recreating a vanished consumer, a stream info that fails (here the server stalls,
    SIGSTOP, while that one request is out) leaves the consumer unbound: nothing is consumed
    until its stream was checked, and the stream made anew meanwhile is found out (it read
    the new stream's seqs 4 and 5 as if they followed "c", when the failure skipped the
    check)."""
    stream = events_stream(bus_settings)
    slow_js = nc.jetstream(timeout=1.0)
    await publish(js, bus_settings, ["a", "b", "c"])
    consumer = await PullConsumer.open(
        slow_js, stream=stream, durable="test",
        filter_subject=subjects.events_wildcard(bus_settings.prefix), ack_wait_seconds=1,
        stream_loss_fatal=True)
    for delivery in await fetch_until(consumer, 3):
        await delivery.ack()
    await js.delete_stream(stream)
    await streams.ensure_streams(js, bus_settings)
    await publish(js, bus_settings, ["d", "e", "f", "g", "h"])  # the new stream: seqs 1..5
    pid = nats_server.pid
    assert pid is not None
    real_stream_info = slow_js.stream_info
    stalled: list[str] = []

    async def stalled_once(name: str, *args, **kwargs):  # type: ignore[no-untyped-def]
        if not stalled:  # the first stream info after the consumer vanished: a busy server
            stalled.append(name)
            os.kill(pid, signal.SIGSTOP)  # this request times out (1 s) ...
            await stopped(pid)
            try:
                return await real_stream_info(name, *args, **kwargs)
            finally:
                os.kill(pid, signal.SIGCONT)  # ... and the server answers again right after
        return await real_stream_info(name, *args, **kwargs)

    monkeypatch.setattr(slow_js, "stream_info", stalled_once)
    got: list[tuple[int, bytes]] = []

    async def outcome() -> bool:
        got.extend((delivery.seq, delivery.data) for delivery in await consumer.fetch(10, 0.2))
        return bool(got)

    with pytest.raises(StreamRecreated) as raised:
        await eventually_async(outcome, timeout=20, what="a delivery or StreamRecreated")
    assert (stalled, got, raised.value.seq, raised.value.found) == ([stream], [], 3, "other")
    await consumer.close()


async def test_a_stream_keeps_its_identity_across_a_nats_restart_and_an_update(
    js: JetStreamContext, bus_settings: BusSettings, nats_server: EmbeddedNats,
) -> None:
    stream = events_stream(bus_settings)
    created = (await reading.stream_state(js, stream)).created
    assert created is not None and re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z",
                                                created)
    await nats_server.restart()
    longer = dataclasses.replace(bus_settings, max_age_seconds=bus_settings.max_age_seconds * 2)

    async def updated() -> bool:  # once the client has reconnected
        with contextlib.suppress(BusUnavailable):
            await streams.ensure_streams(js, longer)
            return True
        return False

    await eventually_async(updated, timeout=15, what="the stream updated")
    assert (await js.stream_info(stream)).config.max_age == longer.max_age_seconds
    assert (await reading.stream_state(js, stream)).created == created


async def test_a_store_lost_across_a_nats_restart_is_said_once_and_not_spun_on(
    js: JetStreamContext, bus_settings: BusSettings, nats_server: EmbeddedNats,
    caplog: pytest.LogCaptureFixture, quick_retries: None,
) -> None:
    await publish(js, bus_settings, ["a", "b", "c"])
    ready = ReadyFlag("planner")
    ready.set()
    consumer = await open_consumer(js, bus_settings, ready=ready)
    for delivery in await fetch_until(consumer, 3):
        await delivery.msg.ack_sync()
    await nats_server.stop()
    shutil.rmtree(nats_server.data_dir / "jetstream")
    await nats_server.start()
    caplog.set_level(logging.INFO, logger=consuming.__name__)
    fetches = await fetch_for(consumer, 4.0)
    assert fetches <= 4.0 / 0.1
    assert not ready.is_ready
    warnings = gone_warnings(caplog)
    assert any(" is gone (the NATS store was lost" in warning for warning in warnings)
    assert not any("vanished" in warning for warning in warnings)
    assert len(warnings) <= 4, warnings
    await consumer.close()


async def _held(ready: ReadyFlag) -> bool:
    return not ready.is_ready


async def test_readiness_is_held_down_while_the_connection_is_lost(
    nc: Client, nats_server: EmbeddedNats,
) -> None:
    ready = ReadyFlag("watcher")
    ready.set()
    stop = connection.hold_while_disconnected(nc, ready)
    assert ready.is_ready
    await nats_server.kill()
    await eventually_async(lambda: _held(ready), timeout=15, what="readiness held down")
    assert ready.holds == [connection.NATS_DISCONNECTED]
    await asyncio.sleep(1.5)  # reconnect attempts fail meanwhile: still held
    assert not ready.is_ready
    await nats_server.start()

    async def released() -> bool:
        return ready.is_ready

    await eventually_async(released, timeout=15, what="readiness released")
    stop()
    await nats_server.kill()
    await eventually_async(lambda: _connected_is(nc, False), timeout=15, what="disconnect")
    assert ready.is_ready  # no longer followed


async def test_a_readiness_followed_twice_stays_held_until_its_first_follower_stops(
    nc: Client, nats_server: EmbeddedNats,
) -> None:
    """A planner's readiness is followed by its leader election and again by the planner
    while it leads: the planner stepping down (NATS lost) must not release the hold that
    its standby still needs."""
    ready = ReadyFlag("planner")
    ready.set()
    stop_election = connection.hold_while_disconnected(nc, ready)
    stop_planner = connection.hold_while_disconnected(nc, ready)
    await nats_server.kill()
    await eventually_async(lambda: _held(ready), timeout=15, what="readiness held down")
    stop_planner()  # the leader steps down, its standby stays
    assert ready.holds == [connection.NATS_DISCONNECTED]
    await nats_server.start()

    async def released() -> bool:
        return ready.is_ready

    await eventually_async(released, timeout=15, what="readiness released")
    stop_election()
    await nats_server.kill()
    await eventually_async(lambda: _connected_is(nc, False), timeout=15, what="disconnect")
    assert ready.holds == []  # no longer followed


async def _connected_is(nc: Client, connected: bool) -> bool:
    return nc.is_connected == connected


async def test_the_binder_view_says_a_gone_stream_once_then_every_tenth_time(
    js: JetStreamContext, bus_settings: BusSettings, caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(view_feed, "WAIT_SECONDS", 0.05)
    feed = view_feed.ViewFeed(js, bus_settings.prefix)
    await feed.start()
    try:
        await js.delete_stream(events_stream(bus_settings))
        await asyncio.sleep(2.5)  # some 25 to 50 failed fetches
        warnings = [record.getMessage() for record in caplog.records
                    if record.name == view_feed.__name__ and record.levelno == logging.WARNING]
        assert 1 <= len(warnings) <= 6, warnings
        assert all("such failures" in warning for warning in warnings[1:])
    finally:
        await feed.stop()
