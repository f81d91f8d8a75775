"""Read a stream without disturbing anyone: a named ephemeral pull consumer, nothing acked.

Layer: bus. For audits, subscribers and the services' own views (`gangsched replay --source
nats`, `gangsched decisions`, the binder's view and outcome lookups, the watcher's recovery):
the consumer is ephemeral (the server forgets it `inactive_threshold` after the reader goes),
in memory, with ack policy none, and ordered by hand (a gap in its delivery sequence recreates
it from the last stream sequence seen, as nats-py's ordered consumer does). It is created by
name, `<owner>-<random>`, through `$JS.API.CONSUMER.CREATE.<stream>.<name>[.<filter>]`: the
chart's NATS users may not use the nameless create, whose body could name (and so rewrite)
another service's durable. Never acks, naks or terms a message, and never touches the durable
consumers of the planner and the binder.
"""

from __future__ import annotations

import contextlib
import enum
import logging
import secrets
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import nats
import nats.js.errors
from nats.aio.msg import Msg
from nats.js import JetStreamContext
from nats.js.api import AckPolicy, ConsumerConfig, DeliverPolicy, StreamInfo

from services.bus import ack_reply, pulling, transience
from services.bus.connection import JetStream
from services.runtime import cancellation

log = logging.getLogger(__name__)

MSG_ID_HEADER = "Nats-Msg-Id"
"""The header holding a message's de-duplication id (JetStream's)."""

WAIT_SECONDS = 1.0
INACTIVE_THRESHOLD_SECONDS = 10.0
"""The server deletes the ephemeral consumer this long after the reader stops pulling."""
FETCH_BATCH = 256
RECREATE_ATTEMPTS = 3
"""How often a reader chooses where to recreate its consumer when the stream keeps being made
anew while it does (`OrderedReader._recreate`)."""
READER = "reader"
"""The owner prefix of the readers of audits and subscribers."""


@dataclass(frozen=True)
class StoredMessage:
    """One message as the stream stored it. Units: `stored_at_ms` UTC epoch milliseconds
    (rounded); `stored_at_us` the same time in UTC epoch microseconds, truncated (the
    precision both a delivery and a lookup give, so the two compare equal; None when not
    known), which tells a message from the same one stored again later."""

    seq: int
    subject: str
    data: bytes
    headers: dict[str, str]
    stored_at_ms: int
    pending: int = 0
    """How many messages of the reader's filter were still to be delivered after this one
    (0 for a direct lookup, `last_message`)."""
    stored_at_us: int | None = None


@dataclass(frozen=True)
class StreamState:
    """A stream's extent: how many messages it holds and its first and last sequence; and
    `created`, its identity (`identity`)."""

    messages: int
    first_seq: int
    last_seq: int
    created: str | None = None


def identity(info: StreamInfo) -> str | None:
    """What tells a stream from another made under the same name after it was deleted (its
    sequences start again at 1): its creation time as the server reports it, ISO 8601 UTC
    with microseconds (`2026-12-05T23:49:45.123456Z`, what nats-py keeps of the server's
    nanoseconds). Kept through server restarts and stream updates. None when the server does
    not say (no check can be made)."""
    if info.created is None:
        return None
    return info.created.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def state_of(info: StreamInfo) -> StreamState:
    """The extent and identity of a stream as the server's `info` tells them."""
    return StreamState(info.state.messages, info.state.first_seq, info.state.last_seq,
                       identity(info))


@cancellation.guarded
async def stream_state(js: JetStream, stream: str) -> StreamState:
    """The stream's current extent.

    Raises:
        NotFound: no such stream. BusUnavailable, BusRefused: NATS failed or refused.
    """
    with transience.bus_errors(f"stream info of {stream}", js):
        info = await js.stream_info(stream)
    return state_of(info)


@dataclass(frozen=True)
class Landmark:
    """The message a reader had at a position of a stream (`seq`): what tells whether a
    stream holds the messages that position belongs to, whatever its creation time (a stream
    restored from a backup is created anew with the same messages at the same sequences,
    each with the time it was stored; the same bytes published again after a restore are
    stored at another time).

    Units: `stored_at_us` when NATS stored the message, UTC epoch microseconds (`stored_at_us`;
    NATS keeps nanoseconds, nats-py's lookup by sequence microseconds); None when not
    recorded (a planner database written before schema revision 0004): subject and bytes
    alone decide then."""

    seq: int
    subject: str
    data: bytes
    stored_at_us: int | None = None


class Holding(enum.Enum):
    """What a stream holds at a landmark's sequence (`holding`)."""

    SAME = "same"
    """The landmark's message: the stream holds what the position belongs to."""
    OTHER = "other"
    """Another message (another subject, other bytes, or the same stored at another time):
    the stream holds other messages at the positions."""
    ENDS_BEFORE = "ends_before"
    """Nothing yet: the stream ends before the landmark's sequence."""
    REMOVED = "removed"
    """Nothing any more: retention removed it (the stream starts after it, or it went between
    the stream's extent and the lookup); only the creation time can tell then."""
    UNRECORDED = "unrecorded"
    """No landmark to compare; only the creation time can tell then."""


@cancellation.guarded
async def holding(js: JetStream, stream: str, landmark: Landmark | None,
                  state: StreamState) -> Holding:
    """Whether `stream` (whose extent now is `state`) holds `landmark`'s message at its
    sequence: same subject, same bytes and, when the landmark has it, the same stored time
    (to the microsecond). One direct lookup by sequence (`STREAM.MSG.GET`),
    none when `state` already tells (`ENDS_BEFORE`, `REMOVED`); a message removed between
    `state` and the lookup is `REMOVED` (retention); no `landmark`, `UNRECORDED`.

    Raises:
        the nats-py errors of `js.get_msg` other than "not found" (callers translate them).
    """
    if landmark is None:
        return Holding.UNRECORDED
    if state.last_seq < landmark.seq:
        return Holding.ENDS_BEFORE
    if state.first_seq > landmark.seq:
        return Holding.REMOVED
    try:
        message = await js.get_msg(stream, landmark.seq)
    except nats.js.errors.NotFoundError:
        return Holding.REMOVED
    same = (message.subject == landmark.subject and (message.data or b"") == landmark.data
            and landmark.stored_at_us in (None, stored_at_us(message.time)))
    return Holding.SAME if same else Holding.OTHER


def stored_at_us(stamp: datetime | None) -> int | None:
    """`stamp` (an aware datetime, as nats-py gives a stored message's time) in UTC epoch
    microseconds, exactly (integer arithmetic); None for None."""
    if stamp is None:
        return None
    return (stamp - _EPOCH) // timedelta(microseconds=1)


@cancellation.guarded
async def last_message(js: JetStream, stream: str, subject: str) -> StoredMessage | None:
    """The newest message stored on `subject` (one direct lookup), or None when there is none
    (or no such stream: NATS answers both with "not found").

    Shapes: `pending` is 0. Units: `stored_at_ms` UTC epoch milliseconds (0 when NATS did not
    say).
    Raises:
        BusUnavailable, BusRefused: NATS failed or refused.
    """
    message = await transience.unless_missing(js.get_last_msg(stream, subject),
                                              f"last message of {subject} in {stream}", js)
    if message is None:
        return None
    return StoredMessage(
        seq=int(message.seq or 0), subject=message.subject or subject, data=message.data or b"",
        headers=dict(message.headers or {}), stored_at_ms=_epoch_ms(message.time),
        stored_at_us=stored_at_us(message.time))


@cancellation.guarded
async def recent_msg_ids(js: JetStream, stream: str, count: int) -> frozenset[str]:
    """The message ids (`Nats-Msg-Id`) of the last `count` messages stored in `stream`, or of
    all it holds if fewer. One stream info, then one lookup by sequence per message (what a
    NATS user allowed only `STREAM.MSG.GET` on the stream can read).

    Raises:
        NotFound: no such stream. BusUnavailable, BusRefused: NATS failed or refused.
    """
    state = await stream_state(js, stream)
    found: set[str] = set()
    for seq in range(max(state.first_seq, state.last_seq - count + 1, 1), state.last_seq + 1):
        with transience.bus_errors(f"message {seq} of {stream}", js):
            try:
                message = await js.get_msg(stream, seq)
            except nats.js.errors.NotFoundError:  # removed by retention meanwhile
                continue
        msg_id = (message.headers or {}).get(MSG_ID_HEADER)
        if msg_id is not None:
            found.add(msg_id)
    return frozenset(found)


def consumer_name(owner: str) -> str:
    """A fresh ephemeral consumer name, `<owner>-<16 hex digits>` (no user may list consumers,
    so another cannot find it)."""
    return f"{owner}-{secrets.token_hex(8)}"


class OrderedReader:
    """A named ephemeral pull consumer delivering in stream order, recreated on a gap."""

    def __init__(self, js: JetStreamContext, stream: str, filter_subject: str, owner: str,
                 inactive_threshold_seconds: float) -> None:
        self._js, self._stream, self._owner = js, stream, owner
        self._filter = filter_subject
        self._inactive_seconds = inactive_threshold_seconds
        self._subscription: pulling.Puller | None = None
        self._eager = False
        self._name = ""
        self._delivered = 0  # the consumer's delivery sequence of the last message
        self._start_seq: int | None = None
        self.last_seq = 0
        self._created: str | None = None
        """The identity of the stream read (`identity`), once known."""
        self._landmark: Landmark | None = None
        """The last message returned, with its stored time: what tells whether a stream of
        another identity holds the messages read (`holding`)."""
        self.streams_read = 1
        """How many streams of its name it has read: one more each time it finds the stream
        deleted and made anew (`fetch`), whose messages a follower must take afresh."""

    @classmethod
    async def open(cls, js: JetStreamContext, stream: str, filter_subject: str, *, owner: str,
                   start_seq: int | None = None,
                   inactive_threshold_seconds: float = INACTIVE_THRESHOLD_SECONDS,
                   eager: bool = False, created: str | None = None) -> OrderedReader:
        """Create the consumer: from `start_seq`, or (None) the last message of every subject.
        `eager`: a waiting `fetch` returns as soon as messages come (`pulling.Puller`).
        `created`: the stream's identity (`identity`) as the caller saw it when it chose
        `start_seq` (`read` does); a stream made anew since is read from its start instead,
        as `fetch` reads one made anew later, and counted in `streams_read`. None: the
        stream's identity once the consumer exists.

        Raises:
            nats.js.errors.NotFoundError: no such stream. nats.errors.Error: NATS failed.
        """
        reader = cls(js, stream, filter_subject, owner, inactive_threshold_seconds)
        reader._start_seq = start_seq
        reader._eager = eager
        await reader._create(start_seq)
        now = identity(await js.stream_info(stream))
        reader._created = created if created is not None else now
        if now not in (None, reader._created):  # made anew since the caller looked
            await reader._recreate()
        return reader

    @property
    def name(self) -> str:
        """The consumer's current name."""
        return self._name

    @cancellation.guarded
    async def fetch(self, batch: int, timeout_seconds: float) -> list[StoredMessage]:
        """Up to `batch` messages in stream order; `[]` on timeout. After a gap in delivery
        (a message lost in transit) or a vanished consumer, recreates the consumer from the
        last stream sequence returned + 1; when the stream is another meanwhile (another
        `identity`, and it does not hold the last message returned, subject, bytes and stored
        time, at its sequence: made anew, not restored from a backup), from where the reader
        started instead (the first message of the new stream, or the last of every subject),
        said once and counted in `streams_read`.

        What came before a gap is returned alone, and the consumer recreated at the next
        call (or `num_pending`), so every message a call returns is of the stream
        `streams_read` counts when it returns: a follower that starts afresh when that count
        moves never mixes the last messages of a stream deleted into the state it builds
        from the new one.
        Raises:
            nats.errors.Error: NATS failed (a later fetch tries again). CancelledError: when
                cancelled, also when nats-py lost the cancellation (`cancellation`).
        """
        if self._subscription is None:  # after a gap, or a recreation that failed
            await self._recreate()
            assert self._subscription is not None
        try:
            messages = await self._subscription.fetch(batch, timeout=timeout_seconds)
        except (TimeoutError, nats.errors.TimeoutError):
            return []
        except nats.js.errors.APIError as error:
            log.debug("reader %s failed (%r); recreating it", self._name, error)
            await self._recreate()
            return []
        ordered: list[StoredMessage] = []
        for message in messages:
            delivered = ack_reply.parse(message.reply)
            if delivered.consumer_seq != self._delivered + 1:
                if ordered:  # theirs is the stream read so far: recreate at the next call
                    await self.close()
                else:
                    await self._recreate()
                break
            self._delivered = delivered.consumer_seq
            self.last_seq = delivered.stream_seq
            self._landmark = Landmark(delivered.stream_seq, message.subject, message.data,
                                      delivered.stored_at_us)
            ordered.append(_stored(message, delivered))
        return ordered

    def _resume_seq(self) -> int | None:
        return self.last_seq + 1 if self.last_seq else self._start_seq

    async def _recreate(self) -> None:
        """Recreate the consumer after the last message returned, or, on a stream made anew
        under its name (another identity, not holding the last message returned: `holding`),
        from where the reader started (from 1 if it started at a sequence: every message of
        the new stream is unseen). A stream restored from a backup, holding it, is read on
        after it (said once, INFO). The stream's identity is asked again once the consumer
        exists: a stream made anew between the two questions would otherwise be read on from
        the old one's sequence, uncounted; then the choice is made again (at most
        `RECREATE_ATTEMPTS` times: a stream made anew that often is read as last found).

        Raises:
            nats.js.errors.NotFoundError: no such stream. nats.errors.Error: NATS failed.
        """
        info = await self._js.stream_info(self._stream)
        for _ in range(RECREATE_ATTEMPTS):
            await self._choose_and_create(info)
            info = await self._js.stream_info(self._stream)
            if identity(info) in (None, self._created):
                return

    async def _choose_and_create(self, info: StreamInfo) -> None:
        """Create the consumer where `_recreate` says, the stream being as `info` tells."""
        created = identity(info)
        changed = created is not None and self._created is not None and created != self._created
        if changed and await holding(self._js, self._stream, self._landmark,
                                     state_of(info)) is Holding.SAME:
            assert self._landmark is not None
            log.info("stream %s was created anew at %s (restored from a backup?) and holds the "
                     "message reader %s read at seq %d in the one created at %s: going on",
                     self._stream, created, self._name, self._landmark.seq, self._created)
        elif changed:
            self._landmark = None
            log.warning("stream %s was created anew at %s (the one reader %s read was created "
                        "at %s): reading it afresh", self._stream, created, self._name,
                        self._created)
            self.last_seq = 0
            self._start_seq = None if self._start_seq is None else 1
            self.streams_read += 1
        self._created = created or self._created
        await self._create(self._resume_seq())

    @cancellation.guarded
    async def num_pending(self) -> int:
        """How many messages of the filter are still to be delivered (recreating the consumer
        first after a gap, as `fetch` would).

        Raises:
            nats.js.errors.NotFoundError: no such stream. nats.errors.Error: NATS failed.
        """
        if self._subscription is None:
            await self._recreate()
            assert self._subscription is not None
        return int((await self._subscription.consumer_info()).num_pending or 0)

    async def close(self) -> None:
        """Unsubscribe and delete the consumer now (it would expire anyway)."""
        if self._subscription is None:
            return
        with contextlib.suppress(nats.errors.Error, OSError, TimeoutError):
            await self._subscription.unsubscribe()
            await self._js.delete_consumer(self._stream, self._name)
        self._subscription = None

    async def _create(self, start_seq: int | None) -> None:
        await self.close()
        self._name = consumer_name(self._owner)
        config = ConsumerConfig(
            name=self._name, filter_subject=self._filter, ack_policy=AckPolicy.NONE,
            deliver_policy=(DeliverPolicy.LAST_PER_SUBJECT if start_seq is None
                            else DeliverPolicy.BY_START_SEQUENCE),
            opt_start_seq=None if start_seq is None else max(start_seq, 1),
            inactive_threshold=self._inactive_seconds, mem_storage=True, num_replicas=1,
        )
        await self._js.add_consumer(self._stream, config=config)
        self._subscription = await pulling.Puller.bind(self._js, self._stream, self._name,
                                                       eager=self._eager)
        self._delivered = 0


async def read(
    js: JetStreamContext,
    stream: str,
    filter_subject: str,
    *,
    start_seq: int = 1,
    follow: bool = False,
    end_seq: int | None = None,
    owner: str = READER,
) -> AsyncIterator[StoredMessage]:
    """Yield the stream's messages matching `filter_subject` from `start_seq` on, in order.

    Without `follow`, stops at the end of the stream as it was when reading began (or at
    `end_seq`, if earlier), or when the stream was deleted and made anew meanwhile (that end
    was the old stream's: nothing of another stream is mixed in); with it, keeps waiting for
    new messages until the caller stops, reading a stream made anew from its start.
    `owner` prefixes the consumer's name (the NATS user's, e.g. `binder`).
    Raises:
        NotFound: no such stream. BusUnavailable, BusRefused: NATS failed or refused (the
            connection closed, API timeouts, a permission).
    """
    state = await stream_state(js, stream)
    last = state.last_seq if end_seq is None else min(end_seq, state.last_seq)
    if not follow and (state.messages == 0 or last < max(start_seq, state.first_seq)):
        return
    with transience.bus_errors(f"a reader of {filter_subject} in {stream}", js):
        reader = await OrderedReader.open(js, stream, filter_subject, owner=owner,
                                          start_seq=max(start_seq, 1), created=state.created)
    try:
        async for stored in _messages(reader, follow):
            if not follow and stored.seq > last:
                return
            yield stored
            if not follow and (stored.seq >= last or stored.pending == 0):
                return
    finally:
        await reader.close()


async def _messages(reader: OrderedReader, follow: bool) -> AsyncIterator[StoredMessage]:
    """Messages as they arrive; without `follow`, ends once nothing is pending any more (at
    once when nothing matches: a fetch would wait its whole `WAIT_SECONDS` for nothing), or
    once the reader found its stream made anew (`OrderedReader.streams_read`)."""
    if not follow:
        with transience.bus_errors(f"reading {reader.name}"):
            if await reader.num_pending() == 0:
                return
    while True:
        with transience.bus_errors(f"reading {reader.name}"):
            messages = await reader.fetch(FETCH_BATCH, WAIT_SECONDS)
        if not follow and reader.streams_read > 1:
            return  # the stream was made anew: the end to stop at was the old one's
        for message in messages:
            yield message
        if not messages and not follow:
            with transience.bus_errors(f"reading {reader.name}"):
                if await reader.num_pending() == 0:
                    return


def _stored(message: Msg, delivered: ack_reply.Delivered) -> StoredMessage:
    return StoredMessage(
        seq=delivered.stream_seq,
        subject=message.subject,
        data=message.data,
        headers=dict(message.headers or {}),
        stored_at_ms=delivered.stored_at_ms,
        pending=delivered.num_pending,
        stored_at_us=delivered.stored_at_us,
    )


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def _epoch_ms(stamp: datetime | None) -> int:
    return round(stamp.timestamp() * 1000) if stamp is not None else 0
