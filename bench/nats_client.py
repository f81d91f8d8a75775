"""CPU per message of gangsched's NATS paths against nats-py's own (not a test).

Issue 14: the watcher publishes every change it sees, the planner every decision and the binder
every outcome, pipelined (`services.bus.publishing.Publisher.publish_many`); the planner reads
every event, and the binder every event (its view) and every decision, through pull consumers.

- Fetch: nats-py's `PullSubscription.fetch` awaits each message of a batch through
  `Subscription.next_msg` (a task, a uuid and an `asyncio.wait_for` per message);
  `services.bus.pulling.Puller` buffers them from a subscription callback instead.
- Publish: nats-py's `publish_async` takes a semaphore through `asyncio.wait_for`, draws random
  bytes for each reply token and decodes each ack with the stdlib JSON;
  `services.bus.acks.AckWaiter` numbers the replies and decodes acks with msgspec.

- Follow lag: a reader that follows a busy stream (the binder's view, `binder.view_feed`) with
  nats-py's fetch semantics sees a new message only when its batch is full or its wait
  expires; an eager `Puller` sees it as it comes. Measured as how long the follower takes to
  reach the sequence just published, with 25 messages published every 50 ms.

Against a private nats-server, `--messages` messages of 700 bytes with message ids are
published in windows of `--window` (every ack awaited) and read back through durable
consumers in batches of `--batch` (the last of each acked), by each client in turn, chunk by
chunk, so both see the same machine load. Printed: this process's CPU time per message
(`resource.getrusage(RUSAGE_SELF)`: not the nats-server's), the median over chunks, and the
ratio. Nothing is asserted.

    python -m bench.nats_client                         # 40,000 messages
    python -m bench.nats_client --messages 4000 --window 64 --batch 64
"""

from __future__ import annotations

import argparse
import asyncio
import resource
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

from nats.aio.msg import Msg
from nats.js import JetStreamContext
from nats.js.api import AckPolicy, ConsumerConfig, DeliverPolicy, PubAck

from services.bus import connection, pulling, reading, streams
from services.bus.acks import AckWaiter
from services.bus.embedded import EmbeddedNats
from services.bus.publishing import Publisher
from services.config.settings import BusSettings
from services.contracts import subjects

PREFIX = "gangsched"
FOLLOW_BATCH = 512
FOLLOW_WAIT_SECONDS = 1.0
"""How the binder's view fetches (`binder.view_feed`)."""
PAYLOAD = b"x" * 700
"""About the size of a slim PodObserved event."""

Send = Callable[[str, bytes, dict[str, str]], Awaitable["asyncio.Future[PubAck]"]]
Fetch = Callable[[int, float], Awaitable[list[Msg]]]


def _cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


async def _publish(send: Send, tag: str, first: int, count: int, window: int) -> float:
    """Publish `count` messages in windows, waiting for each window's acks; CPU seconds."""
    started = _cpu_seconds()
    for start in range(first, first + count, window):
        futures = [await send(f"{PREFIX}.events.pod.bench.{tag}{i}", PAYLOAD,
                              {"Nats-Msg-Id": f"{tag}/{i}"})
                   for i in range(start, min(start + window, first + count))]
        await asyncio.gather(*futures)
    return _cpu_seconds() - started


async def _read(fetch: Fetch, count: int, batch: int) -> float:
    """Fetch `count` messages, acking the last of each batch; CPU seconds."""
    started, got = _cpu_seconds(), 0
    while got < count:
        messages = await fetch(min(batch, count - got), 5.0)
        got += len(messages)
        await messages[-1].ack()
    return _cpu_seconds() - started


async def _consumer(js: JetStreamContext, stream: str, name: str) -> None:
    await js.add_consumer(stream, ConsumerConfig(
        durable_name=name, ack_policy=AckPolicy.ALL, deliver_policy=DeliverPolicy.ALL,
        filter_subject=f"{PREFIX}.events.>"))


async def _follow_lag(js: JetStreamContext, *, eager: bool, seconds: float) -> list[float]:
    """How long a follower of EVENTS fetching as the binder's view does (batches of 512, 1 s
    wait) takes to reach the sequence just published (seconds, each time), with 25 messages
    published every 50 ms for `seconds`."""
    stream = subjects.stream_name(PREFIX, "EVENTS")
    reader = await reading.OrderedReader.open(js, stream, f"{PREFIX}.events.>", owner="bench",
                                              start_seq=1, eager=eager)
    advanced = asyncio.Condition()
    applied, published, waits = 0, 0, []

    async def follow() -> None:
        nonlocal applied
        while True:
            messages = await reader.fetch(FOLLOW_BATCH, FOLLOW_WAIT_SECONDS)
            if messages:
                applied = messages[-1].seq
                async with advanced:
                    advanced.notify_all()

    async def wait_for_each() -> None:
        while True:
            await asyncio.sleep(0.05)
            target, started = published, time.monotonic()
            async with advanced:
                await advanced.wait_for(lambda target=target: applied >= target)  # type: ignore[misc]
            waits.append(time.monotonic() - started)

    tasks = [asyncio.create_task(follow()), asyncio.create_task(wait_for_each())]
    publisher = Publisher(js)
    stop = time.monotonic() + seconds
    while time.monotonic() < stop:
        await publisher.publish_many([
            (f"{PREFIX}.events.outcome.bench.g{i}", b"{}", f"lag-{eager}/{published}/{i}")
            for i in range(25)])
        published = (await reading.stream_state(js, stream)).last_seq
        await asyncio.sleep(0.05)
    for task in tasks:
        task.cancel()
    await reader.close()
    return waits


def _row(what: str, old: list[float], new: list[float], library: str, ours: str) -> str:
    old_us, new_us = statistics.median(old) * 1e6, statistics.median(new) * 1e6
    return f"| {what} | {library} | {old_us:.1f} | {ours} | {new_us:.1f} | {new_us / old_us:.2f} |"


async def run(messages: int, window: int, batch: int, chunks: int) -> None:
    """Publish, then read back, through both clients in turns; print the table."""
    per_chunk = messages // chunks
    with tempfile.TemporaryDirectory() as directory:
        server = EmbeddedNats(Path(directory) / "nats")
        await server.start()
        try:
            settings = BusSettings(url=server.url, prefix=PREFIX)
            nc = await connection.connect(settings, name="bench")
            js = nc.jetstream()
            await streams.ensure_streams(js, settings)
            stream = subjects.stream_name(PREFIX, "EVENTS")
            waiter = await AckWaiter.open(js)

            async def publish_async(subject: str, data: bytes,
                                    headers: dict[str, str]) -> asyncio.Future[PubAck]:
                return await js.publish_async(subject, data, headers=headers)

            sent: tuple[list[float], list[float]] = ([], [])
            for chunk in range(chunks):
                first = chunk * per_chunk
                sent[0].append(await _publish(publish_async, "a", first, per_chunk, window)
                               / per_chunk)
                sent[1].append(await _publish(waiter.publish, "b", first, per_chunk, window)
                               / per_chunk)
            await _consumer(js, stream, "nats-py")
            await _consumer(js, stream, "puller")
            library = await js.pull_subscribe_bind(durable="nats-py", stream=stream)
            puller = await pulling.Puller.bind(js, stream, "puller")
            read: tuple[list[float], list[float]] = ([], [])
            for _ in range(chunks):  # both consumers read all 2 x messages, in 2 x chunks
                for _ in range(2):
                    read[0].append(await _read(lambda n, t: library.fetch(n, timeout=t),
                                               per_chunk, batch) / per_chunk)
                    read[1].append(await _read(puller.fetch, per_chunk, batch) / per_chunk)
            await library.unsubscribe()
            await puller.unsubscribe()
            lag = (await _follow_lag(js, eager=False, seconds=5.0),
                   await _follow_lag(js, eager=True, seconds=5.0))
            await waiter.close()
            await nc.close()
        finally:
            await server.stop()
    print(f"NATS client CPU per message: {messages} messages of {len(PAYLOAD)} bytes published "
          f"per client (windows of {window}), fetched in batches of {batch}; median of "
          f"{chunks} chunks")
    print("| path | nats-py | CPU µs/msg | gangsched | CPU µs/msg | ratio |")
    print("|---|---|---|---|---|---|")
    print(_row("publish with ack", *sent, "JetStreamContext.publish_async",
               "acks.AckWaiter.publish"))
    print(_row("pull consumer fetch", *read, "PullSubscription.fetch", "pulling.Puller.fetch"))
    print()
    print("| follower (as the binder view) | reaching the sequence just published: p50 ms "
          "| p90 ms | samples |")
    print("|---|---|---|---|")
    for name, waits in zip(("batch or timeout (nats-py's fetch)", "eager Puller"), lag,
                           strict=True):
        ordered = sorted(waits)
        print(f"| {name} | {statistics.median(ordered) * 1000:.0f} | "
              f"{ordered[int(len(ordered) * 0.9)] * 1000:.0f} | {len(ordered)} |")


def main() -> None:
    """Parse the flags and run."""
    parser = argparse.ArgumentParser(prog="python -m bench.nats_client", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--messages", type=int, default=40_000)
    parser.add_argument("--window", type=int, default=256)
    parser.add_argument("--batch", type=int, default=512)
    parser.add_argument("--chunks", type=int, default=10)
    options = parser.parse_args()
    if min(options.window, options.batch, options.chunks) < 1 or (
            options.messages < options.chunks):
        parser.error("--window, --batch and --chunks must be positive, --messages at least "
                     "--chunks")
    asyncio.run(run(options.messages, options.window, options.batch, options.chunks))


if __name__ == "__main__":
    main()
