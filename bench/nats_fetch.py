"""CPU per fetched message of a JetStream pull consumer: nats-py's fetch against `Puller`.

Issue 14: the planner reads every event, and the binder every event (its view) and every
decision, through pull consumers; nats-py's `PullSubscription.fetch` awaits each message of a
batch through `Subscription.next_msg` (a task, a uuid, an `asyncio.wait_for` per message).
`services.bus.pulling.Puller` buffers them from a subscription callback instead. This
publishes `--messages` events to a private nats-server, then reads them back in batches of
`--batch` through two durable consumers, one per client, taking turns chunk by chunk so both
see the same machine load, and prints this process's CPU time per message
(`resource.getrusage(RUSAGE_SELF)`: the nats-server's own CPU is not counted), the median
over chunks and the ratio. Not a test: nothing is asserted.

    python -m bench.nats_fetch                          # 40,000 messages, batches of 512
    python -m bench.nats_fetch --messages 4000 --batch 64
"""

from __future__ import annotations

import argparse
import asyncio
import resource
import statistics
import tempfile
from collections.abc import Awaitable, Callable
from pathlib import Path

from nats.aio.msg import Msg
from nats.js import JetStreamContext
from nats.js.api import AckPolicy, ConsumerConfig, DeliverPolicy

from services.bus import connection, pulling, streams
from services.bus.embedded import EmbeddedNats
from services.bus.publishing import Publisher
from services.config.settings import BusSettings
from services.contracts import subjects

PREFIX = "gangsched"
PAYLOAD = b"x" * 700
"""About the size of a slim PodObserved event."""

Fetch = Callable[[int, float], Awaitable[list[Msg]]]


def _cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


async def _consumer(js: JetStreamContext, stream: str, name: str) -> None:
    await js.add_consumer(stream, ConsumerConfig(
        durable_name=name, ack_policy=AckPolicy.ALL, deliver_policy=DeliverPolicy.ALL,
        filter_subject=f"{PREFIX}.events.>"))


async def _read(fetch: Fetch, count: int, batch: int) -> float:
    """Fetch and ack `count` messages; the CPU seconds it took."""
    started, got = _cpu_seconds(), 0
    while got < count:
        messages = await fetch(min(batch, count - got), 5.0)
        got += len(messages)
        await messages[-1].ack()
    return _cpu_seconds() - started


async def run(messages: int, batch: int, chunks: int) -> None:
    """Publish, then read back through both clients in turns; print the table."""
    with tempfile.TemporaryDirectory() as directory:
        server = EmbeddedNats(Path(directory) / "nats")
        await server.start()
        try:
            settings = BusSettings(url=server.url, prefix=PREFIX)
            nc = await connection.connect(settings, name="bench")
            js = nc.jetstream()
            await streams.ensure_streams(js, settings)
            stream = subjects.stream_name(PREFIX, "EVENTS")
            publisher = Publisher(js)
            items = [(f"{PREFIX}.events.pod.bench.p{i}", PAYLOAD, f"bench/{i}")
                     for i in range(messages)]
            for start in range(0, messages, 512):
                await publisher.publish_many(items[start:start + 512])
            await _consumer(js, stream, "nats-py")
            await _consumer(js, stream, "puller")
            library = await js.pull_subscribe_bind(durable="nats-py", stream=stream)
            ours = await pulling.Puller.bind(js, stream, "puller")
            per_chunk = messages // chunks
            old: list[float] = []
            new: list[float] = []
            for _ in range(chunks):
                old.append(await _read(
                    lambda n, t: library.fetch(n, timeout=t), per_chunk, batch) / per_chunk)
                new.append(await _read(ours.fetch, per_chunk, batch) / per_chunk)
            await library.unsubscribe()
            await ours.unsubscribe()
            await nc.close()
        finally:
            await server.stop()
    old_us, new_us = statistics.median(old) * 1e6, statistics.median(new) * 1e6
    print(f"pull consumer CPU per message: {messages} messages of {len(PAYLOAD)} bytes, "
          f"batches of {batch}, median of {chunks} chunks")
    print("| client | CPU µs/message |")
    print("|---|---|")
    print(f"| nats-py PullSubscription.fetch | {old_us:.1f} |")
    print(f"| services.bus.pulling.Puller.fetch | {new_us:.1f} |")
    print(f"| ratio | {new_us / old_us:.2f} |")


def main() -> None:
    """Parse the flags and run."""
    parser = argparse.ArgumentParser(prog="python -m bench.nats_fetch", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--messages", type=int, default=40_000)
    parser.add_argument("--batch", type=int, default=512)
    parser.add_argument("--chunks", type=int, default=10)
    options = parser.parse_args()
    if options.messages < options.chunks or options.batch < 1 or options.chunks < 1:
        parser.error("--messages must be at least --chunks, and both and --batch positive")
    asyncio.run(run(options.messages, options.batch, options.chunks))


if __name__ == "__main__":
    main()
