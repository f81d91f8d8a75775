"""Reports of one lane run one at a time, and only the newest waiting one runs at all.

Layer: binder shell. A Rejection or StatusUpdate says what is true *now* about a group; when a
newer one of the same lane arrives before an older one was written, writing the older one is
wasted API work (and, under contention, the reason placements once starved behind thousands of
stale reports). So each lane (report type and group) holds at most one running item and one
waiting item; a newer arrival replaces the waiting one, which is handed to `supersede` (the
binder acknowledges it). An item waits a settle time before it runs, so a burst collapses into
one write; while its lane stays busy, each next wait doubles up to a longest one, as
kube-scheduler backs off a pod that keeps failing (1 s doubling to 10 s), so a gang rejected
again and again is written a few times, not once a second. Items older than one already started
are superseded on arrival, so a redelivered old report never overwrites a newer one.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Generic, TypeVar

log = logging.getLogger(__name__)

T = TypeVar("T")

REMEMBERED_LANES = 16384
"""Idle lanes whose last started sequence is kept, so an old redelivery is not written late."""


@dataclass
class _Lane(Generic[T]):
    started_seq: int = 0
    waiting: tuple[int, T] | None = None


class Coalescer(Generic[T]):
    """Runs `run(item)` per lane in order of arrival, newest-wins, at most `concurrency` at once.

    Shapes: items are submitted with the lane key and a sequence number (the stream sequence):
    a higher sequence is newer. `run` and `supersede` must not raise (exceptions are logged).
    Units: `settle_seconds` is how long an item waits in its lane before it runs, so a burst
    (a gang's members arriving one by one, each changing its status) is written once; each
    next wait of a lane that stays busy doubles, up to `max_settle_seconds` (default: no
    growth). A lane idle for its whole wait is dropped, and starts again at `settle_seconds`.
    """

    def __init__(
        self,
        run: Callable[[T], Awaitable[None]],
        supersede: Callable[[T], Awaitable[None]],
        concurrency: int,
        settle_seconds: float = 0.0,
        max_settle_seconds: float | None = None,
    ) -> None:
        self._run = run
        self._supersede = supersede
        self._settle_seconds = settle_seconds
        self._max_settle_seconds = max(settle_seconds, max_settle_seconds or 0.0)
        self._gate = asyncio.Semaphore(concurrency)
        self._lanes: dict[str, _Lane[T]] = {}
        self._started: dict[str, int] = {}
        self._tasks: set[asyncio.Task[None]] = set()

    def __len__(self) -> int:
        """Lanes with an item running or waiting."""
        return len(self._lanes)

    def submit(self, key: str, seq: int, item: T) -> None:
        """Queue `item` as its lane's next (newest wins); the lane runs it after settling.

        A redelivery of the waiting item (same `seq`) replaces it: the newer handle is the one
        to settle. An item not newer than one already started in the lane (recently) is
        superseded at once.
        """
        lane = self._lanes.get(key)
        if lane is None:
            if key in self._started and seq <= self._started[key]:
                self._spawn(self._supersede_logged(item))
                return
            self._lanes[key] = _Lane(started_seq=self._started.pop(key, 0), waiting=(seq, item))
            self._spawn(self._drain(key))
            return
        waiting = lane.waiting
        if waiting is not None and seq == waiting[0]:
            lane.waiting = (seq, item)
            return
        if seq <= lane.started_seq or (waiting is not None and seq < waiting[0]):
            self._spawn(self._supersede_logged(item))
            return
        if waiting is not None:
            self._spawn(self._supersede_logged(waiting[1]))
        lane.waiting = (seq, item)

    async def close(self) -> None:
        """Cancel everything running or waiting (their deliveries stay unacknowledged)."""
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self._lanes.clear()

    async def idle(self) -> None:
        """Wait until nothing runs or waits (for tests and orderly shutdown)."""
        while self._tasks:
            await asyncio.gather(*list(self._tasks), return_exceptions=True)

    async def _drain(self, key: str) -> None:
        """Run the lane's waiting item (after the settle time) until none is left; the lane
        is dropped however this ends (its last started sequence remembered)."""
        lane = self._lanes[key]
        wait = self._settle_seconds
        try:
            while True:
                if wait > 0:
                    await asyncio.sleep(wait)
                if lane.waiting is None:
                    return
                lane.started_seq, item = lane.waiting
                lane.waiting = None
                async with self._gate:
                    try:
                        await self._run(item)
                    except Exception:
                        log.exception("report in lane %s failed", key)
                wait = min(wait * 2, self._max_settle_seconds)
        finally:
            if self._lanes.get(key) is lane:
                del self._lanes[key]
            self._remember(key, lane.started_seq)

    def _remember(self, key: str, seq: int) -> None:
        """Remember the lane's last started sequence (bounded, oldest forgotten first)."""
        self._started.pop(key, None)
        self._started[key] = seq
        while len(self._started) > REMEMBERED_LANES:
            del self._started[next(iter(self._started))]

    async def _supersede_logged(self, item: T) -> None:
        try:
            await self._supersede(item)
        except Exception:
            log.exception("settling a superseded report failed")

    def _spawn(self, work: Awaitable[None]) -> None:
        task: asyncio.Task[None] = asyncio.ensure_future(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
