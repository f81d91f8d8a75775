"""How many members the binder binds at once: a first-come weighted semaphore over placements.

Layer: binder shell. A binder holds many placements (so that the time one spends between
requests, on its NATS reads, its post-bind node check and its outcome's publish ack, is not
time the API server idles), but lets them bind only while the members they bind together fit
a budget. The budget is what keeps the API server serving the oldest placements first: with
a thousand gangs' binds at once every placement would progress at the same slow pace and all of
them would miss their deadline together. Placements are let in in the order they asked (about
the stream's order: each asks once its group's earlier decisions are done and its own checks
read), never overtaken by smaller ones, so a large gang is not starved by a stream of
singletons. A placement larger than the whole budget binds alone.
kube-scheduler has no such bound (each pod's binding cycle runs in its own goroutine); the
API server's priority and fairness queues its requests instead.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
from collections.abc import AsyncIterator


class MemberBudget:
    """A first-come weighted semaphore: `take(n)` holds `n` members of `limit`.

    Units: members (pods a placement binds). Raises ValueError for a `limit` below 1 or a
    negative `n`. Cancelling a waiting `take` gives nothing up and lets the next in line in.
    """

    def __init__(self, limit: int) -> None:
        if limit < 1:
            raise ValueError(f"a member budget needs a limit of at least 1, not {limit}")
        self._limit = limit
        self._used = 0
        self._waiters: collections.deque[tuple[int, asyncio.Future[None]]] = collections.deque()

    @property
    def in_use(self) -> int:
        """Members held now (may exceed `limit` only by one placement larger than it)."""
        return self._used

    @property
    def waiting(self) -> int:
        """Placements waiting for room."""
        return len(self._waiters)

    @contextlib.asynccontextmanager
    async def take(self, members: int) -> AsyncIterator[None]:
        """Wait until `members` fit behind everyone who asked earlier, hold them while the
        block runs, then give them back."""
        if members < 0:
            raise ValueError(f"cannot take {members} members")
        await self._acquire(members)
        try:
            yield
        finally:
            self._release(members)

    def _fits(self, members: int) -> bool:
        return self._used == 0 or self._used + members <= self._limit

    async def _acquire(self, members: int) -> None:
        if not self._waiters and self._fits(members):
            self._used += members
            return
        entry = (members, asyncio.get_running_loop().create_future())
        self._waiters.append(entry)
        try:
            await entry[1]
        except asyncio.CancelledError:
            if entry[1].done() and not entry[1].cancelled():
                self._release(members)  # let in, then cancelled before it could run
            else:
                with contextlib.suppress(ValueError):
                    self._waiters.remove(entry)
                self._wake()  # the head may have changed
            raise

    def _release(self, members: int) -> None:
        self._used -= members
        self._wake()

    def _wake(self) -> None:
        while self._waiters:
            members, future = self._waiters[0]
            if future.done():  # cancelled while queued; its task removes nothing more
                self._waiters.popleft()
                continue
            if not self._fits(members):
                return
            self._waiters.popleft()
            self._used += members
            future.set_result(None)
