"""How the binder takes decisions off the bus: deliveries, per-group order, in-progress beats.

Layer: binder shell. Decisions of one group are handled one at a time in stream order (FIFO
locks); a decision being worked on is reported in progress to JetStream so its ack wait never
runs out and no second binder takes it while the first still binds.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any, Protocol

from services.runtime.cancellation import cancel_and_wait


class Delivery(Protocol):
    """One decision as fetched (`services.bus.consuming.Delivery`)."""

    seq: int
    subject: str
    data: bytes
    headers: dict[str, str]
    num_delivered: int
    num_pending: int

    async def ack(self) -> None: ...

    async def nak(self, delay_seconds: float | None = None) -> None: ...

    async def term(self) -> None: ...

    async def in_progress(self) -> None: ...


class Consumer(Protocol):
    """The decisions consumer (`services.bus.consuming.PullConsumer`)."""

    async def fetch(self, batch: int, timeout_seconds: float) -> list[Any]: ...


class GroupLocks:
    """One FIFO lock per group, dropped when no decision of the group is in flight."""

    def __init__(self) -> None:
        self._locks: dict[str, tuple[asyncio.Lock, int]] = {}

    @contextlib.asynccontextmanager
    async def hold(self, group: str) -> AsyncIterator[None]:
        """Hold `group`'s lock for the body; waiters get it in the order they asked."""
        lock, users = self._locks.get(group, (asyncio.Lock(), 0))
        self._locks[group] = (lock, users + 1)
        try:
            async with lock:
                yield
        finally:
            lock, users = self._locks[group]
            if users <= 1:
                del self._locks[group]
            else:
                self._locks[group] = (lock, users - 1)


@contextlib.asynccontextmanager
async def heartbeat(delivery: Delivery, interval_seconds: float) -> AsyncIterator[None]:
    """While the body runs, tell JetStream every `interval_seconds` the decision is in progress
    (`Delivery.in_progress`, which ends in CancelledError once the beat is stopped, even
    when nats-py lost that cancellation)."""

    async def beat() -> None:
        while True:
            await asyncio.sleep(interval_seconds)
            with contextlib.suppress(Exception):
                await delivery.in_progress()

    task = asyncio.create_task(beat())
    try:
        yield
    finally:
        await cancel_and_wait(task)
