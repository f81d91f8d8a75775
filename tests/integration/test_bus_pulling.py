"""`Puller` on a real nats-server: what nats-py's fetch returns, in order, nothing lost."""

from __future__ import annotations

import asyncio
import contextlib
import time

import nats.errors
import nats.js.errors
import pytest
from nats.aio.msg import Msg
from nats.js import JetStreamContext
from nats.js.api import AckPolicy, ConsumerConfig, DeliverPolicy

from services.bus import pulling
from services.bus.embedded import EmbeddedNats
from services.bus.publishing import Publisher
from services.bus.pulling import Puller
from services.config.settings import BusSettings
from services.contracts import subjects

pytestmark = pytest.mark.integration


async def publish(js: JetStreamContext, settings: BusSettings, names: list[str]) -> None:
    await Publisher(js).publish_many([
        (subjects.events_subject(settings.prefix, "pod", "ns", name), name.encode(), name)
        for name in names
    ])


async def puller(js: JetStreamContext, settings: BusSettings, name: str = "pull", *,
                 eager: bool = False) -> Puller:
    stream = subjects.stream_name(settings.prefix, "EVENTS")
    await js.add_consumer(stream, ConsumerConfig(
        durable_name=name, ack_policy=AckPolicy.EXPLICIT, deliver_policy=DeliverPolicy.ALL,
        filter_subject=subjects.events_wildcard(settings.prefix), ack_wait=30))
    return await Puller.bind(js, stream, name, eager=eager)


def names(messages: list[Msg]) -> list[str]:
    return [message.data.decode() for message in messages]


async def test_a_fetch_returns_at_most_its_batch_in_order_and_the_rest_next(
    js: JetStreamContext, bus_settings: BusSettings
) -> None:
    await publish(js, bus_settings, [f"m{i}" for i in range(7)])
    pull = await puller(js, bus_settings)
    started = time.monotonic()
    assert names(await pull.fetch(3, 5.0)) == ["m0", "m1", "m2"]
    assert names(await pull.fetch(10, 5.0)) == ["m3", "m4", "m5", "m6"]
    assert time.monotonic() - started < 2.0  # available messages never wait for the timeout
    assert pull._take(1_000) == []  # nothing held back
    await pull.unsubscribe()


async def test_a_waiting_fetch_returns_what_is_published_meanwhile(
    js: JetStreamContext, bus_settings: BusSettings
) -> None:
    pull = await puller(js, bus_settings)
    fetching = asyncio.create_task(pull.fetch(2, 5.0))
    await asyncio.sleep(0.3)
    await publish(js, bus_settings, ["late-a", "late-b"])
    assert names(await asyncio.wait_for(fetching, 10)) == ["late-a", "late-b"]
    await pull.unsubscribe()


async def test_a_fetch_with_nothing_to_deliver_times_out_at_its_timeout(
    js: JetStreamContext, bus_settings: BusSettings
) -> None:
    pull = await puller(js, bus_settings)
    started = time.monotonic()
    with pytest.raises(nats.errors.TimeoutError):
        await pull.fetch(5, 0.5)
    assert 0.45 <= time.monotonic() - started < 1.5
    # the waiting request ended (408) with it: the next one is served at once
    await publish(js, bus_settings, ["after"])
    started = time.monotonic()
    assert names(await pull.fetch(5, 5.0)) == ["after"]
    assert time.monotonic() - started < 1.0
    await pull.unsubscribe()


async def reconnected(js: JetStreamContext) -> None:
    for _ in range(200):
        if js._nc.is_connected:
            return
        await asyncio.sleep(0.05)
    raise AssertionError("not reconnected")


async def left_open(pull: Puller, js: JetStreamContext, settings: BusSettings, *,
                    eager: bool) -> None:
    """An eager puller's fetch that got a message leaves its request open (the next fetch
    waits on it); a plain puller has none open between fetches."""
    if eager:
        first = asyncio.create_task(pull.fetch(10, 5.0))
        await asyncio.sleep(0.2)
        await publish(js, settings, ["open"])
        assert names(await asyncio.wait_for(first, 5)) == ["open"]
        assert pull._waiting() is not None


@pytest.mark.parametrize("eager", [False, True])
async def test_a_request_lost_with_the_connection_does_not_hold_up_the_next_fetch(
    js: JetStreamContext, bus_settings: BusSettings, nats_server: EmbeddedNats, eager: bool
) -> None:
    """A killed server sends no status for a waiting request (no 409 Server Shutdown): after
    the reconnect the next fetch asks afresh at once, as nats-py's does."""
    pull = await puller(js, bus_settings, eager=eager)
    await left_open(pull, js, bus_settings, eager=eager)
    fetching = asyncio.create_task(pull.fetch(5, 2.0))
    await asyncio.sleep(0.3)
    await nats_server.kill()
    await nats_server.start()
    await reconnected(js)
    with pytest.raises(nats.errors.TimeoutError):
        await fetching
    await publish(js, bus_settings, ["after"])
    started = time.monotonic()
    assert names(await pull.fetch(5, 2.0)) == ["after"]
    assert time.monotonic() - started < 1.0
    await pull.unsubscribe()


@pytest.mark.parametrize("eager", [False, True])
async def test_a_cancelled_fetch_loses_nothing(
    js: JetStreamContext, bus_settings: BusSettings, eager: bool
) -> None:
    pull = await puller(js, bus_settings, eager=eager)
    await left_open(pull, js, bus_settings, eager=eager)
    fetching = asyncio.create_task(pull.fetch(5, 5.0))
    await asyncio.sleep(0.3)
    fetching.cancel()
    with pytest.raises(asyncio.CancelledError):
        await fetching
    await publish(js, bus_settings, ["x", "y"])
    got: list[str] = []
    while len(got) < 2:
        got += names(await pull.fetch(5, 1.0))
    assert got == ["x", "y"]
    await pull.unsubscribe()


@pytest.mark.parametrize("eager", [False, True])
async def test_unsubscribe_ends_a_waiting_fetch_at_once(
    js: JetStreamContext, bus_settings: BusSettings, eager: bool
) -> None:
    pull = await puller(js, bus_settings, eager=eager)
    await left_open(pull, js, bus_settings, eager=eager)
    fetching = asyncio.create_task(pull.fetch(5, 5.0))
    await asyncio.sleep(0.3)
    started = time.monotonic()
    await pull.unsubscribe()
    with pytest.raises(nats.errors.TimeoutError):
        await fetching
    assert time.monotonic() - started < 0.5


@pytest.mark.parametrize("eager", [False, True])
async def test_a_consumer_deleted_under_a_waiting_fetch_ends_it_then_is_an_error(
    js: JetStreamContext, bus_settings: BusSettings, eager: bool
) -> None:
    """The server ends the waiting request with 409 Consumer Deleted (no error, as nats-py);
    then no consumer answers a request (503), which callers recover from. A plain fetch
    stops at the 409; an eager one, waiting on a request left open, asks again at once."""
    pull = await puller(js, bus_settings, "doomed", eager=eager)
    await left_open(pull, js, bus_settings, eager=eager)
    fetching = asyncio.create_task(pull.fetch(5, 3.0))
    await asyncio.sleep(0.3)
    started = time.monotonic()
    await js.delete_consumer(subjects.stream_name(bus_settings.prefix, "EVENTS"), "doomed")
    with pytest.raises(nats.js.errors.ServiceUnavailableError if eager
                       else nats.errors.TimeoutError):
        await fetching
    assert time.monotonic() - started < 1.0
    with pytest.raises(nats.js.errors.ServiceUnavailableError):
        await pull.fetch(5, 1.0)
    await pull.unsubscribe()


async def test_a_partial_batch_comes_back_at_the_deadline_and_nothing_is_lost(
    js: JetStreamContext, bus_settings: BusSettings
) -> None:
    """A waiting request asking 10 gets 1: it is returned when the request expires; messages
    published after that are the next fetch's, in order, each once."""
    pull = await puller(js, bus_settings)
    fetching = asyncio.create_task(pull.fetch(10, 0.6))
    await asyncio.sleep(0.2)
    await publish(js, bus_settings, ["x0"])
    assert names(await asyncio.wait_for(fetching, 5)) == ["x0"]
    await publish(js, bus_settings, ["x1", "x2"])
    got: list[str] = []
    while len(got) < 2:
        got += names(await pull.fetch(10, 0.6))
    assert got == ["x1", "x2"]
    await pull.unsubscribe()


async def test_a_deleted_consumer_is_an_api_error_at_once(
    js: JetStreamContext, bus_settings: BusSettings
) -> None:
    pull = await puller(js, bus_settings, "doomed")
    await js.delete_consumer(subjects.stream_name(bus_settings.prefix, "EVENTS"), "doomed")
    started = time.monotonic()
    with pytest.raises(nats.js.errors.ServiceUnavailableError):  # no one answers for it
        await pull.fetch(5, 1.0)
    assert time.monotonic() - started < 0.9  # said at once, not after the timeout
    await pull.unsubscribe()


async def test_a_late_status_of_an_earlier_request_does_not_end_the_current_one(
    js: JetStreamContext, bus_settings: BusSettings
) -> None:
    """Only the status sent to a request's own reply subject ends it; a message of any
    request is buffered, in arrival order."""
    pull = await puller(js, bus_settings)
    client = js._nc
    current = "_INBOX.x.2"
    request = pulling._Request(2, reconnects=0, due=time.monotonic() + 60)
    pull._current = (current, request)
    await pull._receive(Msg(client, subject="_INBOX.x.1", headers={"Status": "408"}))
    assert not request.ended.is_set()
    await pull._receive(Msg(client, subject="s.one", data=b"one"))
    assert not request.ended.is_set() and request.received == 1
    await pull._receive(Msg(client, subject=current, headers={"Status": "100"}))  # heartbeat
    assert not request.ended.is_set()
    await pull._receive(Msg(client, subject="s.two", data=b"two"))
    assert request.ended.is_set() and pull._current is None  # all it asked for came
    await pull._receive(Msg(client, subject="s.three", data=b"three"))  # a late message
    assert names(pull._take(10)) == ["one", "two", "three"]
    await pull.unsubscribe()


@pytest.mark.parametrize(("headers", "code"), [
    ({"Status": "400"}, 400),  # no description: nats-py's from_msg raises KeyError
    ({"Status": "400", "Description": "Bad Request"}, 400),
    ({"Status": "odd"}, None),
])
async def test_an_error_status_ends_the_request_with_an_api_error(
    js: JetStreamContext, bus_settings: BusSettings, headers: dict[str, str], code: int | None
) -> None:
    pull = await puller(js, bus_settings)
    request = pulling._Request(5, reconnects=0, due=time.monotonic() + 60)
    pull._current = ("_INBOX.x.1", request)
    await pull._receive(Msg(js._nc, subject="_INBOX.x.1", headers=headers))
    assert request.ended.is_set()
    assert isinstance(request.error, nats.js.errors.APIError) and request.error.code == code
    await pull.unsubscribe()


async def test_acks_from_fetched_messages_settle_them(
    js: JetStreamContext, bus_settings: BusSettings
) -> None:
    await publish(js, bus_settings, ["a", "b"])
    pull = await puller(js, bus_settings)
    first, second = await pull.fetch(2, 5.0)
    await first.ack()
    await second.ack()
    stream = subjects.stream_name(bus_settings.prefix, "EVENTS")

    async def settled() -> bool:
        info = await pull.consumer_info()
        assert info.ack_floor is not None
        return info.num_ack_pending == 0 and info.ack_floor.stream_seq == 2

    for _ in range(50):
        if await settled():
            break
        await asyncio.sleep(0.1)
    assert await settled(), await js.consumer_info(stream, "pull")
    await pull.unsubscribe()


async def test_an_eager_fetch_returns_what_comes_at_once_and_its_request_serves_the_next(
    js: JetStreamContext, bus_settings: BusSettings
) -> None:
    """A follower (the binder's view) must not lag a busy stream by a timeout: the waiting
    request's first messages come back at once; its later ones feed the next fetches, in
    order, each once."""
    pull = await puller(js, bus_settings, eager=True)
    fetching = asyncio.create_task(pull.fetch(10, 3.0))
    await asyncio.sleep(0.2)
    started = time.monotonic()
    await publish(js, bus_settings, ["e0"])
    assert names(await asyncio.wait_for(fetching, 5)) == ["e0"]
    assert time.monotonic() - started < 1.0
    got: list[str] = []
    for batch in (["e1"], ["e2", "e3"]):
        fetching = asyncio.create_task(pull.fetch(10, 3.0))
        await asyncio.sleep(0.1)
        started = time.monotonic()
        await publish(js, bus_settings, batch)
        got += names(await asyncio.wait_for(fetching, 5))
        while len(got) < int(batch[-1][1:]):
            got += names(await pull.fetch(10, 3.0))
        assert time.monotonic() - started < 1.0
    assert got == ["e1", "e2", "e3"]
    await pull.unsubscribe()


async def test_an_eager_fetch_with_nothing_to_deliver_times_out_and_then_asks_again(
    js: JetStreamContext, bus_settings: BusSettings
) -> None:
    pull = await puller(js, bus_settings, eager=True)
    started = time.monotonic()
    with pytest.raises(nats.errors.TimeoutError):
        await pull.fetch(5, 0.5)
    assert 0.45 <= time.monotonic() - started < 1.5
    await publish(js, bus_settings, ["later"])
    started = time.monotonic()
    assert names(await pull.fetch(5, 3.0)) == ["later"]
    assert time.monotonic() - started < 1.0
    await pull.unsubscribe()


async def test_an_eager_puller_takes_a_backlog_in_batches_in_order(
    js: JetStreamContext, bus_settings: BusSettings
) -> None:
    await publish(js, bus_settings, [f"b{i}" for i in range(25)])
    pull = await puller(js, bus_settings, eager=True)
    got: list[str] = []
    while len(got) < 25:
        batch = names(await pull.fetch(10, 3.0))
        assert 0 < len(batch) <= 10
        got += batch
    assert got == [f"b{i}" for i in range(25)]
    await pull.unsubscribe()


@pytest.mark.parametrize("eager", [False, True])
async def test_a_request_whose_408_is_lost_is_given_up(
    js: JetStreamContext, bus_settings: BusSettings, eager: bool
) -> None:
    """A waiting request whose ending status never reaches us (simulated by dropping 408s:
    a slow-consumer drop, a request lost server-side without a status) must not stall the
    puller for good: the non-eager puller gives it up at the next fetch's deadline."""
    pull = await puller(js, bus_settings, eager=eager)
    assert pull._subscription is not None
    deliver = pull._subscription._cb
    assert deliver is not None

    async def dropping_408(message: Msg) -> None:
        if message.headers and message.headers.get("Status") == "408":
            return
        await deliver(message)

    pull._subscription._cb = dropping_408
    first = asyncio.create_task(pull.fetch(5, 0.5))
    await asyncio.sleep(0.1)
    await publish(js, bus_settings, ["m0"])
    assert names(await first) == ["m0"]
    await asyncio.sleep(0.6)  # the request expired on the server; its 408 was lost
    await publish(js, bus_settings, ["m1"])
    got: list[str] = []
    started = time.monotonic()
    while time.monotonic() - started < 5.0 and not got:
        with contextlib.suppress(nats.errors.TimeoutError):
            got = names(await pull.fetch(5, 0.5))
    assert got == ["m1"], f"nothing fetched in {time.monotonic() - started:.1f}s"
    await pull.unsubscribe()


async def test_a_binder_like_loop_never_holds_more_than_its_free_slots(
    js: JetStreamContext, bus_settings: BusSettings
) -> None:
    """consume_placements: fetch(min(64, free)); deliveries held (buffer + in work) <= 32."""
    pull = await puller(js, bus_settings, eager=True)
    held: set[asyncio.Task[None]] = set()
    worst = 0
    done = 0

    async def work() -> None:
        nonlocal done
        await asyncio.sleep(0.05)
        done += 1

    async def producer() -> None:
        for i in range(20):
            await publish(js, bus_settings, [f"p{i}-{j}" for j in range(10)])
            await asyncio.sleep(0.02)

    prod = asyncio.create_task(producer())
    got = 0
    deadline = time.monotonic() + 20
    while got < 200 and time.monotonic() < deadline:
        free = 32 - len(held)
        if free <= 0:
            worst = max(worst, len(held) + len(pull._buffer))
            await asyncio.wait(set(held), return_when=asyncio.FIRST_COMPLETED)
            continue
        try:
            batch = await pull.fetch(min(64, free), 1.0)
        except nats.errors.TimeoutError:
            continue
        for message in batch:
            await message.ack()
            got += 1
            task = asyncio.create_task(work())
            held.add(task)
            task.add_done_callback(held.discard)
        worst = max(worst, len(held) + len(pull._buffer))
    await prod
    await asyncio.gather(*held)
    assert got == 200
    assert worst <= 32, worst
    await pull.unsubscribe()
