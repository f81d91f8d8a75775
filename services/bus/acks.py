"""Pipelined JetStream publishes, their acknowledgements collected by one subscription callback.

Layer: bus. What nats-py's `JetStreamContext.publish_async` does, at about two thirds of its
CPU per message (`python -m bench.nats_client`): nats-py takes a semaphore through
`asyncio.wait_for`, draws random bytes and a NUID for each reply token, and decodes each ack
with the stdlib JSON into a dataclass of every PubAck field. Here a message's reply subject is
`<inbox>.<n>` (a counter), its future is resolved from the callback of one subscription to
`<inbox>.*`, and the ack is decoded by msgspec into the three fields the publisher reads.
The caller bounds how many are in flight (`publishing.MAX_IN_FLIGHT`).
"""

from __future__ import annotations

import asyncio

import msgspec
import nats.errors
import nats.js.errors
from nats.aio.client import Client
from nats.aio.msg import Msg
from nats.aio.subscription import Subscription
from nats.js.api import PubAck

from services.bus.connection import JetStream

STATUS_HEADER = "Status"
NO_RESPONDERS = "503"


class _Ack(msgspec.Struct):
    """The fields of JetStream's publish answer that a publisher reads."""

    stream: str = ""
    seq: int = 0
    duplicate: bool = False
    error: dict[str, object] | None = None


_decoder = msgspec.json.Decoder(_Ack)


class AckWaiter:
    """Publishes messages with a reply subject each and hands back futures of their PubAcks;
    `open` makes one."""

    def __init__(self, js: JetStream) -> None:
        self._client: Client = js._nc  # nats-py keeps the connection there; no accessor
        self._inbox = self._client.new_inbox()
        self._futures: dict[str, asyncio.Future[PubAck]] = {}
        self._count = 0
        self._subscription: Subscription | None = None

    @classmethod
    async def open(cls, js: JetStream) -> AckWaiter:
        """Subscribe to the acks' inbox.

        Raises:
            nats.errors.Error: the subscription failed (the connection is closed).
        """
        waiter = cls(js)
        waiter._subscription = await waiter._client.subscribe(f"{waiter._inbox}.*",
                                                              cb=waiter._answer)
        return waiter

    async def publish(self, subject: str, data: bytes,
                      headers: dict[str, str]) -> asyncio.Future[PubAck]:
        """Publish one message; the future gets its PubAck, or the error JetStream answered
        (`nats.js.errors.APIError`; `NoStreamResponseError` when no stream takes `subject`).
        A cancelled future is forgotten (its late ack is ignored).

        Raises:
            nats.errors.Error: the message could not be sent (connection closed, buffer full).
        """
        self._count += 1
        token = str(self._count)
        future: asyncio.Future[PubAck] = asyncio.get_running_loop().create_future()
        self._futures[token] = future
        future.add_done_callback(lambda _: self._futures.pop(token, None))
        try:
            await self._client.publish(subject, data, reply=f"{self._inbox}.{token}",
                                       headers=headers)
        except BaseException:
            future.cancel()
            raise
        return future

    async def close(self) -> None:
        """Unsubscribe and cancel the futures still waiting."""
        for future in list(self._futures.values()):
            future.cancel()
        if self._subscription is not None:
            subscription, self._subscription = self._subscription, None
            await subscription.unsubscribe()

    async def _answer(self, message: Msg) -> None:
        """The subscription's callback: resolve the future of the message the ack is for."""
        future = self._futures.get(message.subject[len(self._inbox) + 1:])
        if future is None or future.done():
            return
        if message.headers and message.headers.get(STATUS_HEADER) == NO_RESPONDERS:
            future.set_exception(nats.js.errors.NoStreamResponseError())
            return
        try:
            ack = _decoder.decode(message.data)
        except msgspec.DecodeError as error:
            future.set_exception(nats.errors.Error(f"unreadable publish ack: {error}"))
            return
        if ack.error is not None:
            future.set_exception(_refusal(ack.error))
            return
        future.set_result(PubAck(stream=ack.stream, seq=ack.seq, duplicate=ack.duplicate))


def _refusal(error: dict[str, object]) -> nats.js.errors.APIError:
    """The nats-py error of an ack's `error` object (`APIError.from_error` raises it)."""
    try:
        nats.js.errors.APIError.from_error(error)
    except nats.js.errors.APIError as refusal:
        return refusal
    except (KeyError, TypeError, ValueError):  # no or an odd `code`: say what came
        pass
    return nats.js.errors.APIError(description=str(error))
