"""The binder's post-bind node checks of concurrent placements, answered by shared LISTs.

Layer: kube. Every placement asks, once its binds are done, which of its nodes the API server
still has (`nodes.listed_by_hostname`, one LIST by hostname label). Under load dozens of
placements finish at once, and each LIST is a consistent read that the API server filters over
every node: in the cluster benchmark they were one request per gang, and one per pod for
singletons (a quarter of a request per bound pod in workload b). Here at most one LIST is in
flight; the names asked meanwhile wait and go together in the next one. A question is never
answered by a LIST sent before it was asked, so a caller's own binds always precede the read
that checks their nodes. With no LIST in flight a question is sent at once: a lone placement
waits no longer than before.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterable

from services.kube import nodes
from services.kube.client import KubeClient


class NodeListing:
    """`listed(names)`: as `nodes.listed_by_hostname`, coalesced with concurrent callers.

    Shapes: the answer to one caller holds only names that caller asked. Units: none (no
    timer: a batch is whatever was asked while the previous LIST was in flight).
    """

    def __init__(self, client: KubeClient) -> None:
        self._client = client
        self._asked: set[str] = set()
        self._answer: asyncio.Future[frozenset[str]] | None = None
        self._sender: asyncio.Task[None] | None = None

    async def listed(self, names: Iterable[str]) -> frozenset[str]:
        """Those of `names` a LIST sent after this call finds (`nodes.listed_by_hostname`).

        Raises:
            KubeError subclasses: the shared LIST failed (every caller of that batch gets it).
        """
        wanted = frozenset(names)
        if not wanted:
            return frozenset()
        if self._sender is not None and self._sender.get_loop() is not asyncio.get_running_loop():
            # left behind by an event loop that has ended: its batch can never be answered
            self._asked, self._answer, self._sender = set(), None, None
        if self._answer is None:
            self._answer = asyncio.get_running_loop().create_future()
            self._answer.add_done_callback(_consume)
        answer = self._answer
        self._asked |= wanted
        if self._sender is None or self._sender.done():
            self._sender = asyncio.create_task(self._send(), name="node listing")
        # shielded: a caller that gives up must not cancel the others' answer
        found = await asyncio.shield(answer)
        return found & wanted

    async def _send(self) -> None:
        """Send the waiting batch, then the one gathered meanwhile, until none waits."""
        while self._answer is not None:
            asked, answer = self._asked, self._answer
            self._asked, self._answer = set(), None
            try:
                found = await nodes.listed_by_hostname(self._client, asked)
            except asyncio.CancelledError:  # shutting down: no one gets this batch nor the next
                answer.cancel()
                if self._answer is not None:
                    self._answer.cancel()
                self._asked, self._answer = set(), None
                raise
            except Exception as error:  # a KubeError: each waiting caller decides
                answer.set_exception(error)
            else:
                answer.set_result(found)


def _consume(answer: asyncio.Future[frozenset[str]]) -> None:
    """Mark a failed answer's error retrieved (every caller may have given up on it)."""
    if not answer.cancelled():
        with contextlib.suppress(Exception):
            answer.exception()
