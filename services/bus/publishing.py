"""Publish to JetStream with a `Nats-Msg-Id`, wait for the PubAck, and never drop a message.

Layer: bus. Retries transient failures forever (with capped backoff) so a NATS restart only
delays publishing; JetStream drops the duplicates that retries create, within the stream's
duplicate window. Never publishes without a message id, and never takes a duplicate ack on
trust: the stored message is read back and, when it is not ours (another user published first
under our id, `services.bus.collisions`), ours is published again under a fallback id.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Sequence

import nats
import tenacity
from nats.js import JetStreamContext
from nats.js.api import PubAck

from services.bus import collisions, reading, transience
from services.bus.acks import AckWaiter
from services.bus.connection import ReadyHold
from services.bus.reading import MSG_ID_HEADER
from services.contracts.signing import SIGNATURE_HEADER, DecisionKey
from services.runtime import cancellation, metrics

log = logging.getLogger(__name__)

ACK_TIMEOUT_SECONDS = 5.0
MAX_IN_FLIGHT = 256

PublishItem = tuple[str, bytes, str]
"""`(subject, data, msg_id)` of one message of `Publisher.publish_many`."""


class MsgIdCollision(Exception):
    """Even the random fallback id was taken by another message (never expected)."""


StreamOf = Callable[[str], str | None]
"""The name of the stream that stores a subject, None if none does
(`services.bus.streams.stream_of`)."""


def stream_gone(stream: str) -> str:
    """The hold a `Publisher` puts on its service's readiness while `stream` takes none of its
    publishes: `publishing: stream GANGSCHED_EVENTS gone or leaderless` (shown by /readyz).
    NATS answers such a publish alike (no responders) whether the stream was deleted or its
    replicas are electing a leader (a clustered server restarting): the hold names both."""
    return f"publishing: stream {stream} gone or leaderless"


def no_stream_takes(subject: str) -> str:
    """The hold of a publish to `subject` no stream takes, its stream unknown to the
    publisher's `stream_of`: `publishing: no stream takes gangsched.x`."""
    return f"publishing: no stream takes {subject}"


class _StreamsGone:
    """The publishes of one `Publisher` that found no stream and are not over yet, counted
    per hold reason (one per stream): `ready` is held down with a reason while any publish
    counts under it. After `close`, nothing is held any more (the counts still end)."""

    def __init__(self, ready: ReadyHold | None) -> None:
        self._ready = ready
        self._counts: dict[str, int] = {}
        self._closed = False

    def enter(self, reason: str) -> None:
        """One more publish found no stream for `reason`: hold it (the first one)."""
        self._counts[reason] = self._counts.get(reason, 0) + 1
        if self._counts[reason] == 1 and self._ready is not None and not self._closed:
            self._ready.hold(reason)

    def leave(self, reason: str) -> None:
        """A publish counted under `reason` is over (stored, failed or cancelled): release
        the hold when it was the last."""
        self._counts[reason] -= 1
        if self._counts[reason] == 0:
            del self._counts[reason]
            if self._ready is not None and not self._closed:
                self._ready.release(reason)

    def close(self) -> None:
        """Release every hold; hold nothing from now on."""
        if self._ready is not None and not self._closed:
            for reason in self._counts:
                self._ready.release(reason)
        self._closed = True


class Publisher:
    """Publishes messages with de-duplication ids and waits for JetStream to store them.

    With `signing_key` (the planner's), every message carries its signature header
    (`services.contracts.signing`), so the binder can tell the planner's decisions from forged
    ones. With `ready` and `stream_of` (the stream of a subject: `streams.stream_of`), `ready`
    is held down while a publish that no stream took (`transience.NO_STREAM_ERRORS`: its
    retries back off meanwhile) is not over, one hold per stream naming it
    (`stream_gone(stream)`, or `no_stream_takes(subject)` for a subject of no stream known):
    from its first such failure until it is stored, fails or is cancelled, or the publisher
    is closed (a closed publisher holds nothing any more).
    """

    def __init__(
        self,
        js: JetStreamContext,
        *,
        ack_timeout_seconds: float = ACK_TIMEOUT_SECONDS,
        max_in_flight: int = MAX_IN_FLIGHT,
        signing_key: DecisionKey | None = None,
        ready: ReadyHold | None = None,
        stream_of: StreamOf | None = None,
    ) -> None:
        self._js = js
        self._ack_timeout_seconds = ack_timeout_seconds
        self._max_in_flight = max_in_flight
        self._signing_key = signing_key
        self._acks: AckWaiter | None = None
        self._stream_of = stream_of
        self._gone = _StreamsGone(ready)

    @cancellation.guarded
    async def publish(
        self,
        subject: str,
        data: bytes,
        *,
        msg_id: str,
        headers: dict[str, str] | None = None,
    ) -> int:
        """Publish one message and return its stream sequence once stored.

        A duplicate (same `msg_id` within the duplicate window) of this very message returns
        the sequence of the one first stored; of another message, it is a collision, handled
        as `_settle`. Retries while NATS is unavailable, without limit.
        Raises:
            nats.js.errors.APIError: a permanent refusal (e.g. message too large).
            nats.errors.ConnectionClosedError: the client was closed (shutdown).
            MsgIdCollision: see the class.
        """
        complete = self._headers(subject, data, msg_id, headers)
        ack = await self._publish_retrying(subject, data, complete)
        return await self._settle(subject, data, complete, ack)

    async def _publish_retrying(self, subject: str, data: bytes,
                                headers: dict[str, str]) -> PubAck:
        """One publish with its complete headers, retried while NATS is unavailable."""
        msg_id = headers[MSG_ID_HEADER]
        gone: list[str] = []  # this publish's hold reason, once it found no stream
        retrying = tenacity.AsyncRetrying(
            retry=tenacity.retry_if_exception(transience.is_transient),
            wait=tenacity.wait_exponential(
                multiplier=transience.RETRY_FIRST_WAIT_SECONDS,
                max=transience.RETRY_MAX_WAIT_SECONDS,
            ),
            before_sleep=self._before_retry(subject, msg_id, gone),
            reraise=True,
        )
        try:
            async for attempt in retrying:
                # a cancellation nats-py lost ends the retries (CancelledError is not transient)
                with attempt, cancellation.kept():
                    ack = await self._js.publish(
                        subject, data, timeout=self._ack_timeout_seconds, headers=headers)
        finally:  # stored, failed or cancelled: this publish no longer holds anything
            for reason in gone:
                self._gone.leave(reason)
        return ack

    def _before_retry(self, subject: str, msg_id: str,
                      gone: list[str]) -> Callable[[tenacity.RetryCallState], None]:
        """The retries' `before_sleep`: log (`_log_retry`), and, at the first failure of the
        publish that no stream took it, count it under its stream's hold reason (appended to
        `gone`, for `_publish_retrying` to end it)."""
        log_retry = _log_retry(subject, msg_id)

        def before_sleep(state: tenacity.RetryCallState) -> None:
            log_retry(state)
            error = state.outcome.exception() if state.outcome else None
            if isinstance(error, transience.NO_STREAM_ERRORS) and not gone:
                gone.append(self._gone_reason(subject))
                self._gone.enter(gone[0])

        return before_sleep

    def _gone_reason(self, subject: str) -> str:
        """The hold reason of a publish to `subject` that no stream took."""
        stream = self._stream_of(subject) if self._stream_of is not None else None
        return stream_gone(stream) if stream else no_stream_takes(subject)

    async def _settle(self, subject: str, data: bytes, headers: dict[str, str],
                      ack: PubAck) -> int:
        """The sequence our message is stored at, publishing it again while its ack is a
        duplicate of another message (a collision: logged as an error and counted)."""
        msg_id = headers[MSG_ID_HEADER]
        for fallback in collisions.fallback_ids(msg_id, subject, data):
            if not ack.duplicate:
                return int(ack.seq)
            found = await self._verdict(subject, headers, ack)
            if found is None:
                return int(ack.seq)
            metrics.msg_id_collisions.labels(found).inc()
            log.error("publish %s: msg id %s is taken by stream %s seq %d (%s); publishing "
                      "again as %s", subject, headers[MSG_ID_HEADER], ack.stream, ack.seq,
                      found, fallback)
            headers = with_msg_id(fallback, headers)
            ack = await self._publish_retrying(subject, data, headers)
        if ack.duplicate and await self._verdict(subject, headers, ack) is not None:
            raise MsgIdCollision(f"publish {subject}: msg id {msg_id} and its fallbacks taken")
        return int(ack.seq)

    async def _verdict(self, subject: str, headers: dict[str, str],
                       ack: PubAck) -> str | None:
        """`collisions.verdict` of the message stored at the ack's sequence."""
        try:
            stored = await self._js.get_msg(ack.stream, ack.seq)
        except nats.errors.Error as error:
            log.warning("cannot read back stream %s seq %d: %r", ack.stream, ack.seq, error)
            return collisions.UNREADABLE
        return collisions.verdict(stored.subject or "", stored.headers or {}, subject, headers)

    @cancellation.guarded
    async def publish_many(self, items: Sequence[PublishItem]) -> None:
        """Publish `items` pipelined, at most `max_in_flight` unacknowledged at a time.

        Shapes: items are stored in the given order when no publish fails. When one fails, it
        and every item after it in its window are re-published one by one with retries (the
        ones already stored are dropped as duplicates), so nothing is lost; a lost message may
        then be stored after later ones of its window. A duplicate ack is settled as in
        `publish`, so a collided message is also stored after later ones.
        Raises:
            as `publish`.
        """
        for start in range(0, len(items), self._max_in_flight):
            window = items[start : start + self._max_in_flight]
            acks = await self._publish_window(window)
            for (subject, data, msg_id), ack in zip(window, acks, strict=False):
                if ack.duplicate:
                    await self._settle(subject, data, self._headers(subject, data, msg_id, None),
                                       ack)
            for subject, data, msg_id in window[len(acks):]:
                await self.publish(subject, data, msg_id=msg_id)

    async def _publish_window(self, window: Sequence[PublishItem]) -> list[PubAck]:
        """Publish `window` asynchronously; return the acks up to the first unacknowledged item.

        Shapes: the acks in window order, `len(window)` of them when all were stored.
        """
        futures: list[asyncio.Future[PubAck]] = []
        try:
            if self._acks is None:
                self._acks = await AckWaiter.open(self._js)
            for subject, data, msg_id in window:
                futures.append(await self._acks.publish(
                    subject, data, self._headers(subject, data, msg_id, None)))
        except Exception as error:
            if not transience.is_transient(error):
                _cancel(futures)
                raise
        if futures:
            await asyncio.wait(futures, timeout=self._ack_timeout_seconds)
        _cancel(futures)
        acks: list[PubAck] = []
        for future in futures:
            if future.cancelled() or future.exception() is not None:
                break
            acks.append(future.result())
        return acks


    async def close(self) -> None:
        """Stop waiting for acks: unsubscribe the acks' inbox that `publish_many` opened and
        cancel the acks still awaited. A later `publish_many` opens a new one. Call it when the
        owner stops: a service restarted on the same connection would otherwise leave one
        inbox subscription behind per start. Releases the readiness holds of streams gone,
        and holds nothing from then on (a publish still retrying included). Nothing is raised
        for a closed connection."""
        self._gone.close()  # no longer publishing: its readiness no longer held down by it
        if self._acks is not None:
            acks, self._acks = self._acks, None
            with contextlib.suppress(nats.errors.Error):
                await acks.close()

    async def recent_ids(self, stream: str, count: int) -> frozenset[str]:
        """The message ids of the last `count` messages stored in `stream`
        (`reading.recent_msg_ids`): what a restarted publisher finds already stored.

        Raises:
            NotFound, BusUnavailable, BusRefused (`services.bus.errors`).
        """
        return await reading.recent_msg_ids(self._js, stream, count)

    def _headers(self, subject: str, data: bytes, msg_id: str,
                 headers: dict[str, str] | None) -> dict[str, str]:
        """`headers` plus the message id, and the signature when this publisher signs."""
        complete = with_msg_id(msg_id, headers)
        if self._signing_key is not None:
            complete[SIGNATURE_HEADER] = self._signing_key.sign(subject, data)
        return complete


def with_msg_id(msg_id: str, headers: dict[str, str] | None) -> dict[str, str]:
    """A new header dict: `headers` plus `Nats-Msg-Id: msg_id`."""
    return {**(headers or {}), MSG_ID_HEADER: msg_id}


def _cancel(futures: Sequence[asyncio.Future[PubAck]]) -> None:
    """Cancel the futures that are still pending (their acks were lost or are late)."""
    for future in futures:
        if not future.done():
            future.cancel()


def _log_retry(subject: str, msg_id: str) -> Callable[[tenacity.RetryCallState], None]:
    """A tenacity `before_sleep` hook logging the first retry and then every tenth."""

    def before_sleep(state: tenacity.RetryCallState) -> None:
        if state.attempt_number == 1 or state.attempt_number % 10 == 0:
            error = state.outcome.exception() if state.outcome else None
            log.warning(
                "publish %s (msg id %s) failed %d times, retrying: %r",
                subject, msg_id, state.attempt_number, error,
            )

    return before_sleep
