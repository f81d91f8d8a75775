"""Feeds the binder's `ClusterView` from the EVENTS stream and says when it has caught up.

Layer: binder shell. An ephemeral ordered consumer on the whole EVENTS stream, starting with the
last message of every subject (the newest state of every object, without replaying history) and
then following new messages; nothing is acknowledged, so no one else is disturbed. Pod and node
events are decoded and applied; every other message only advances the applied sequence. A
message that does not decode is skipped (the planner dead-letters it).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging

import nats
from nats.aio.msg import Msg
from nats.js import JetStreamContext
from nats.js.api import ConsumerConfig, DeliverPolicy

from services.binder.view import ClusterView
from services.contracts import codec, subjects

log = logging.getLogger(__name__)

VIEW_KINDS = frozenset({"pod", "node"})
INACTIVE_THRESHOLD_SECONDS = 30.0


class ViewFeed:
    """Keeps `view` current from EVENTS; `caught_up(seq)` waits until it has applied `seq`."""

    def __init__(self, js: JetStreamContext, prefix: str, view: ClusterView | None = None) -> None:
        self.view = view or ClusterView()
        self._js = js
        self._prefix = prefix
        self._advanced = asyncio.Condition()
        self._subscription: JetStreamContext.PushSubscription | None = None

    async def start(self) -> None:
        """Subscribe (messages are applied as they arrive, on the NATS client's task).

        Raises:
            nats.js.errors.NotFoundError: no EVENTS stream. nats.errors.Error: NATS failed.
        """
        config = ConsumerConfig(deliver_policy=DeliverPolicy.LAST_PER_SUBJECT,
                                inactive_threshold=INACTIVE_THRESHOLD_SECONDS)
        self._subscription = await self._js.subscribe(
            subjects.events_wildcard(self._prefix),
            stream=subjects.stream_name(self._prefix, "EVENTS"),
            ordered_consumer=True, config=config, cb=self._on_message,
            # never drop a message as a slow consumer (it would leave the view silently stale
            # while its sequence moves on); the ordered consumer's flow control bounds memory
            pending_msgs_limit=0, pending_bytes_limit=0,
        )

    async def stop(self) -> None:
        """Unsubscribe (the server then forgets the ephemeral consumer)."""
        if self._subscription is not None:
            with contextlib.suppress(nats.errors.Error):
                await self._subscription.unsubscribe()
            self._subscription = None

    async def caught_up(self, seq: int, timeout_seconds: float) -> bool:
        """Whether the view has applied EVENTS up to `seq`, waiting at most `timeout_seconds`."""
        if self.view.applied_seq >= seq:
            return True
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(timeout_seconds), self._advanced:
                await self._advanced.wait_for(lambda: self.view.applied_seq >= seq)
        return self.view.applied_seq >= seq

    async def _on_message(self, message: Msg) -> None:
        seq = int(message.metadata.sequence.stream)
        kind = message.subject[len(self._prefix) + len(".events."):].split(".", 1)[0]
        if kind in VIEW_KINDS:
            try:
                self.view.apply(seq, codec.decode_event(message.data))
            except codec.PoisonedMessage:
                log.debug("view: skipping undecodable event seq %d", seq)
                self.view.applied_seq = max(self.view.applied_seq, seq)
        else:
            self.view.applied_seq = max(self.view.applied_seq, seq)
        async with self._advanced:
            self._advanced.notify_all()
