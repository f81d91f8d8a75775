"""Pull requests to a JetStream consumer, with the messages taken off the socket in bulk.

Layer: bus. What nats-py's `PullSubscription.fetch` does, at a third of its CPU per message:
nats-py awaits every message of a batch through `Subscription.next_msg`, which makes a task,
a uuid and an `asyncio.wait_for` (another task and a timer) per message, about 35 µs of CPU
each (`python -m bench.nats_client`); the planner, the binder's consumers and its view read
every event that way. Here the subscription has a callback that appends each message to a
buffer, and a fetch waits once for its pull request to end.

The protocol is JetStream's pull request, as nats-py and nats.go send it: a JSON
`{"batch": n, "no_wait": true}` or `{"batch": n, "expires": <ns>}` published to
`$JS.API.CONSUMER.MSG.NEXT.<stream>.<consumer>` with a reply subject the server delivers the
messages to. One request is in flight at a time, so every message that comes is its own; it
ends with all its messages delivered, or with a status sent to its reply subject (404 no
messages, 408 request expired, 409 a conflict such as a deleted consumer). Each request has a
reply subject of its own (`<inbox>.<n>`), so a late status of an earlier request is never taken
for the current one's. Messages are kept in the order they arrived (the consumer's delivery
order); those that came after a fetch returned wait in the buffer for the next fetch, as
nats-py keeps them in its subscription's queue.

An `eager` puller (for readers that must follow a stream closely, such as the binder's view)
returns a waiting fetch as soon as messages come, instead of when its whole batch came or the
request expired (nats-py's behaviour, which held a reader caught up with a busy stream a full
timeout behind it); its waiting request stays open, and the next fetch takes what it brings.
"""

from __future__ import annotations

import asyncio
import json
import time
from dataclasses import dataclass, field

import nats
import nats.errors
import nats.js.errors
from nats.aio.client import Client
from nats.aio.msg import Msg
from nats.aio.subscription import Subscription
from nats.js.api import ConsumerInfo

from services.bus.connection import JetStream

STATUS_HEADER = "Status"
NO_MESSAGES = "404"
REQUEST_TIMEOUT = "408"
CONFLICT = "409"
HEARTBEAT = "100"
ENDING = frozenset({NO_MESSAGES, REQUEST_TIMEOUT, CONFLICT})
"""Statuses that end a pull request without an error (nats-py's temporary errors)."""
EXPIRES_MARGIN_NS = 100_000
"""A waiting request expires this much before the fetch's deadline, so the server's 408
arrives before the fetch gives up (nats-py's margin): no request outlives its fetch."""
GIVE_UP_SECONDS = 1.0
"""A request whose end has not come this long after it was due (its status lost: dropped by a
slow subscription, or never sent) is given up, so the next fetch asks afresh."""
PENDING_MSGS_LIMIT = 512 * 1024
"""Messages the subscription may hold undelivered to the callback (nats-py's limit for
JetStream subscriptions)."""


@dataclass
class _Request:
    """One pull request in flight: how many messages it asked, how many came, and whether it
    ended (a status, or all of them delivered)."""

    wanted: int
    reconnects: int
    """The connection's reconnect count when the request was sent: once it changed, the
    request was lost with the old connection and no status will end it."""
    due: float
    """When (`time.monotonic`) the server ends it at the latest: its fetch's deadline."""
    received: int = 0
    ended: asyncio.Event = field(default_factory=asyncio.Event)
    error: nats.js.errors.APIError | None = None


class Puller:
    """Fetches batches from one pull consumer; `bind` makes one, `unsubscribe` ends it."""

    def __init__(self, js: JetStream, stream: str, consumer: str, *, eager: bool = False) -> None:
        self._js = js
        self._eager = eager
        self._arrived = asyncio.Event()
        """Set when a message is buffered or the request in flight ends."""
        self._client: Client = js._nc  # nats-py keeps the connection there; no accessor
        self._next_subject = f"{js._prefix}.CONSUMER.MSG.NEXT.{stream}.{consumer}"
        self._stream = stream
        self._consumer = consumer
        self._inbox = self._client.new_inbox()
        self._buffer: list[Msg] = []
        self._current: tuple[str, _Request] | None = None
        """The reply subject and state of the request in flight, if any."""
        self._count = 0
        self._subscription: Subscription | None = None

    @classmethod
    async def bind(cls, js: JetStream, stream: str, consumer: str, *,
                   eager: bool = False) -> Puller:
        """Subscribe to the replies of pull requests to `consumer` of `stream` (it must exist);
        `eager`: a waiting fetch returns as soon as messages come (module docstring).

        Raises:
            nats.errors.Error: the subscription failed (connection closed).
        """
        puller = cls(js, stream, consumer, eager=eager)
        puller._subscription = await puller._client.subscribe(
            f"{puller._inbox}.*", cb=puller._receive, pending_msgs_limit=PENDING_MSGS_LIMIT)
        return puller

    async def fetch(self, batch: int, timeout: float) -> list[Msg]:
        """Up to `batch` messages, in delivery order, as nats-py's `fetch(batch, timeout)`.

        What is already buffered comes first, topped up by a request that does not wait. With
        nothing buffered or available, one request waits until `batch` messages came or it
        expires at the deadline (`timeout` seconds from now); whatever came by then is returned.
        An eager puller returns as soon as a waiting request brings messages, and waits on
        that request, while it is open, in its next fetch.
        Raises:
            nats.errors.TimeoutError: nothing came by the deadline.
            nats.js.errors.APIError: the server refused the request (not a 404/408/409).
            nats.errors.ConnectionClosedError: the connection is closed.
        """
        deadline = time.monotonic() + timeout
        messages = self._take(batch)
        if self._eager and self._waiting() is not None:
            if not messages:
                await self._arrival(deadline)
                messages = self._take(batch)
            if messages:
                return messages
            if self._waiting() is not None:
                raise nats.errors.TimeoutError
        if len(messages) < batch:
            await self._pull(batch - len(messages), deadline, wait=False)
            messages += self._take(batch - len(messages))
        if messages:
            return messages
        remaining = deadline - time.monotonic()
        if remaining * 1e9 <= EXPIRES_MARGIN_NS:
            raise nats.errors.TimeoutError
        await self._pull(batch, deadline, wait=True)
        messages = self._take(batch)
        if not messages:
            raise nats.errors.TimeoutError
        return messages

    async def consumer_info(self) -> ConsumerInfo:
        """The consumer's state on the server (`num_pending`, ...).

        Raises:
            nats.js.errors.NotFoundError: no such consumer. nats.errors.Error: NATS failed.
        """
        info: ConsumerInfo = await self._js.consumer_info(self._stream, self._consumer)
        return info

    async def unsubscribe(self) -> None:
        """Stop receiving; a fetch waiting now returns what came (or times out).

        Raises:
            nats.errors.Error: NATS refused the unsubscribe (the connection is closed).
        """
        if self._current is not None:
            self._current[1].ended.set()
            self._current = None
        self._arrived.set()
        if self._subscription is not None:
            subscription, self._subscription = self._subscription, None
            await subscription.unsubscribe()

    async def _pull(self, wanted: int, deadline: float, *, wait: bool) -> None:
        """Send one pull request for `wanted` messages and wait until it ends, or until the
        deadline (then it is left to end by itself; what it brings stays buffered).

        A request still in flight (its fetch's deadline came just before its 408) is waited
        for first, until the deadline; one sent before the connection was re-established is
        given up at once (the server forgot it with the old connection), as is one that does
        not end by the deadline.
        Raises:
            nats.js.errors.APIError: the request ended with an error status.
        """
        if self._subscription is None:
            return  # unsubscribed: no answer could reach us
        reconnects = self._reconnects()
        if self._current is not None and (self._current[1].reconnects != reconnects
                                          or not await _ended(self._current[1], deadline)):
            self._current = None
        self._count += 1
        reply = f"{self._inbox}.{self._count}"
        body: dict[str, int | bool] = {"batch": wanted}
        if wait:
            body["expires"] = int((deadline - time.monotonic()) * 1e9) - EXPIRES_MARGIN_NS
        else:
            body["no_wait"] = True
        request = _Request(wanted, reconnects, deadline)
        self._current = (reply, request)
        await self._client.publish(self._next_subject, json.dumps(body).encode(), reply=reply)
        if wait and self._eager:
            await self._arrival(deadline)
        elif not await _ended(request, deadline):
            return
        if request.error is not None:
            raise request.error

    def _waiting(self) -> _Request | None:
        """The request in flight, if it is still open: on this connection, and not long past
        when it was due to end (`GIVE_UP_SECONDS`)."""
        if self._current is None or self._subscription is None:
            return None
        request = self._current[1]
        if (request.reconnects != self._reconnects()
                or time.monotonic() > request.due + GIVE_UP_SECONDS):
            return None
        return request

    async def _arrival(self, deadline: float) -> None:
        """Wait until a message is buffered, the request in flight ends or is given up, or the
        deadline (`time.monotonic`) passes."""
        while not self._buffer and (request := self._waiting()) is not None:
            self._arrived.clear()
            wake = min(deadline, request.due + GIVE_UP_SECONDS)
            try:
                async with asyncio.timeout_at(_loop_time(wake)):
                    await self._arrived.wait()
            except TimeoutError:
                if time.monotonic() >= deadline:
                    return

    async def _receive(self, message: Msg) -> None:
        """The subscription's callback: buffer a message, or end its request on a status."""
        current = self._current
        status = message.headers.get(STATUS_HEADER) if message.headers else None
        if status is None:
            self._buffer.append(message)
            self._arrived.set()
            if current is not None:
                current[1].received += 1
                if current[1].received >= current[1].wanted:
                    self._end()
            return
        if current is None or message.subject != current[0] or status == HEARTBEAT:
            return  # an earlier request's late status, or an idle heartbeat
        if status not in ENDING:
            current[1].error = _refusal(message)
        self._end()

    def _reconnects(self) -> int:
        """How many times the connection was re-established (nats-py's `stats`)."""
        return int(self._client.stats["reconnects"])

    def _end(self) -> None:
        """Mark the request in flight ended."""
        if self._current is not None:
            self._current[1].ended.set()
            self._current = None
        self._arrived.set()

    def _take(self, count: int) -> list[Msg]:
        """The first `count` buffered messages, removed from the buffer."""
        taken, self._buffer = self._buffer[:count], self._buffer[count:]
        return taken


def _refusal(message: Msg) -> nats.js.errors.APIError:
    """The error a status message stands for, as nats-py makes it (503: ServiceUnavailable,
    the consumer or JetStream is not there; else an APIError with the status' code and
    description, if it has one)."""
    try:
        nats.js.errors.APIError.from_msg(message)  # always raises
    except nats.js.errors.APIError as error:
        return error
    except (KeyError, ValueError):  # a status without a description, or not a number
        pass
    status = (message.headers or {}).get(STATUS_HEADER, "")
    return nats.js.errors.APIError(code=int(status) if status.isdigit() else None,
                                   description=f"status {status}")


async def _ended(request: _Request, deadline: float) -> bool:
    """Wait until `request` ended or the deadline (`time.monotonic`) passed; whether it ended."""
    if not request.ended.is_set():
        try:
            async with asyncio.timeout_at(_loop_time(deadline)):
                await request.ended.wait()
        except TimeoutError:
            return False
    return True


def _loop_time(monotonic_deadline: float) -> float:
    """`monotonic_deadline` (time.monotonic) on the running loop's clock."""
    loop = asyncio.get_running_loop()
    return loop.time() + (monotonic_deadline - time.monotonic())
