"""Read a stream without disturbing anyone: an ephemeral ordered consumer, nothing ever acked.

Layer: bus. For audits and subscribers (`gangsched replay --source nats`, `gangsched
decisions`): the consumer is ephemeral (no durable name; the server forgets it shortly after
the reader goes), ordered (ack policy none, flow control, recreated from the last sequence seen
on a gap), and in memory. Never acks, naks or terms a message, and never touches the durable
consumers of the planner and the binder.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass

import nats
from nats.aio.msg import Msg
from nats.js import JetStreamContext
from nats.js.api import ConsumerConfig, DeliverPolicy

WAIT_SECONDS = 1.0
INACTIVE_THRESHOLD_SECONDS = 10.0
"""The server deletes the ephemeral consumer this long after the reader stops pulling."""


@dataclass(frozen=True)
class StoredMessage:
    """One message as the stream stored it. Units: `stored_at_ms` UTC epoch milliseconds."""

    seq: int
    subject: str
    data: bytes
    headers: dict[str, str]
    stored_at_ms: int


async def read(
    js: JetStreamContext,
    stream: str,
    filter_subject: str,
    *,
    start_seq: int = 1,
    follow: bool = False,
    end_seq: int | None = None,
) -> AsyncIterator[StoredMessage]:
    """Yield the stream's messages matching `filter_subject` from `start_seq` on, in order.

    Without `follow`, stops at the end of the stream as it was when reading began (or at
    `end_seq`, if earlier); with it, keeps waiting for new messages until the caller stops.
    Raises:
        nats.js.errors.NotFoundError: no such stream.
        nats.errors.Error: NATS failed (connection closed, timeouts on the API).
    """
    info = await js.stream_info(stream)
    last = info.state.last_seq if end_seq is None else min(end_seq, info.state.last_seq)
    if not follow and (info.state.messages == 0 or last < max(start_seq, info.state.first_seq)):
        return
    config = ConsumerConfig(deliver_policy=DeliverPolicy.BY_START_SEQUENCE,
                            opt_start_seq=max(start_seq, 1),
                            inactive_threshold=INACTIVE_THRESHOLD_SECONDS)
    subscription = await js.subscribe(filter_subject, stream=stream, ordered_consumer=True,
                                      config=config)
    try:
        async for message in _messages(subscription, follow):
            stored = _stored(message)
            if not follow and stored.seq > last:
                return
            yield stored
            if not follow and (stored.seq >= last or message.metadata.num_pending == 0):
                return
    finally:
        with contextlib.suppress(nats.errors.Error):
            await subscription.unsubscribe()


async def _messages(subscription: JetStreamContext.PushSubscription,
                    follow: bool) -> AsyncIterator[Msg]:
    """Messages as they arrive; without `follow`, ends once nothing is pending any more."""
    while True:
        try:
            yield await subscription.next_msg(timeout=WAIT_SECONDS)
        except nats.errors.TimeoutError:
            if not follow and (await subscription.consumer_info()).num_pending == 0:
                return


def _stored(message: Msg) -> StoredMessage:
    metadata = message.metadata
    stamp = metadata.timestamp
    return StoredMessage(
        seq=int(metadata.sequence.stream),
        subject=message.subject,
        data=message.data,
        headers=dict(message.headers or {}),
        stored_at_ms=round(stamp.timestamp() * 1000) if stamp is not None else 0,
    )
