"""Durable pull consumers: fetch batches, ack after processing, survive NATS restarts.

Layer: bus. Delivery is at least once; callers make processing idempotent (the planner skips
sequences at or below its tracked one, the binder checks what is already bound). Never acks on
the caller's behalf. Never creates a stream: a consumer whose stream is gone (the NATS store
lost, or the stream deleted) waits for it with a pause doubling up to `MAX_RETRY_SECONDS`, says
so once and then every tenth time (`services.runtime.unreachable`), and holds its service's
readiness down meanwhile; a consumer whose caller tracks positions in the stream (the planner)
raises `StreamGone` instead (docs/design-notes.md, "NATS store lost"). A stream of another
creation time (`reading.identity`) under the same name was deleted and made anew, or restored
from a backup: the consumer looks at its content, the message at the position it read up to
and the time NATS stored it (`reading.Landmark`, `reading.holding`; a restore keeps stored
times, a publish after it gets a new one). The same message there (a restored stream) keeps the
positions; another one, or none, means they belong to another stream: the consumer reads it
from its start, and one whose caller tracks positions raises `StreamRecreated`. That is
checked when the consumer is opened or recreated (after it exists, so a stream made anew in
between is seen), and, for a caller that tracks positions, when a delivery comes at or below
the position it read up to (a stream restored with its durable consumer from an older backup
delivers again from the backup's position).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Sequence
from dataclasses import dataclass, field

import nats
from nats.aio.msg import Msg
from nats.js import JetStreamContext
from nats.js.api import AckPolicy, ConsumerConfig, DeliverPolicy, StreamInfo

from services.bus import ack_reply, pulling, reading, transience
from services.bus.connection import ReadyHold
from services.bus.errors import StreamGone, StreamRecreated
from services.config import limits
from services.runtime import cancellation, metrics
from services.runtime.unreachable import Repeats

log = logging.getLogger(__name__)

ACK_ALL = AckPolicy.ALL
"""The ack policy of a consumer that processes strictly in order: acking one delivery acks
every earlier one (`PullConsumer.open(ack_policy=ACK_ALL)`)."""
CHECK_INTERVAL_SECONDS = 30.0
"""How often a consumer re-reads its configuration from the server (seconds)."""
CHECKED_FIELDS = (
    "filter_subject", "filter_subjects", "ack_policy", "ack_wait", "max_ack_pending",
    "max_deliver", "backoff", "headers_only", "deliver_subject", "rate_limit_bps",
    "sample_freq", "inactive_threshold", "replay_policy", "pause_until",
)
"""What another NATS user could change in a consumer to starve or mislead its owner."""
FIRST_RETRY_SECONDS = 1.0
MAX_RETRY_SECONDS = 30.0
"""A consumer that cannot be (re)created, its stream gone or NATS refusing it, tries again
after a pause doubling from the first to the max (seconds), until it can."""


@dataclass(frozen=True)
class DurableState:
    """What a durable consumer has done: its filter and how far it acknowledged.

    Shapes: `filter_subject` None when it filters on several subjects (or none);
    `acked_stream_seq` the stream sequence of its ack floor (0 when it acked nothing).
    """

    filter_subject: str | None
    acked_stream_seq: int


async def durable_state(js: JetStreamContext, stream: str, durable: str) -> DurableState | None:
    """The state of the durable consumer `durable` on `stream`; None when there is none (or
    no such stream: NATS answers both with "not found").

    Raises:
        BusUnavailable, BusRefused: NATS failed or refused.
    """
    info = await transience.unless_missing(js.consumer_info(stream, durable),
                                           f"consumer info of {durable} on {stream}", js)
    if info is None:
        return None
    floor = info.ack_floor.stream_seq if info.ack_floor is not None else 0
    return DurableState(info.config.filter_subject, int(floor or 0))


@dataclass
class Delivery:
    """One message handed to a consumer, with its stream position.

    `num_delivered` is 1 on first delivery (higher means a redelivery); `num_pending` is how
    many messages of the consumer's filter were still waiting after this one (consumer lag).
    `stored_at_ms` is when the NATS server stored the message (UTC epoch ms): set by the
    server, not the publisher, and the same on every delivery (and in a restored backup);
    `stored_at_us` the same time in UTC epoch microseconds (`ack_reply.Delivered`).
    """

    seq: int
    subject: str
    data: bytes
    headers: dict[str, str]
    num_delivered: int
    num_pending: int
    stored_at_ms: int
    stored_at_us: int
    msg: Msg = field(repr=False)
    _consumer: PullConsumer | None = field(default=None, repr=False)

    async def ack(self) -> None:
        """Acknowledge: processing is done. A lost ack only causes a redelivery (logged)."""
        await self._settle(self.msg.ack(), settled=True)

    async def nak(self, delay_seconds: float | None = None) -> None:
        """Ask for redelivery, after `delay_seconds` if given (seconds)."""
        await self._settle(self.msg.nak(delay=delay_seconds), settled=False)

    async def term(self) -> None:
        """Never deliver this message again (poisoned or obsolete)."""
        await self._settle(self.msg.term(), settled=True)

    @cancellation.guarded
    async def in_progress(self) -> None:
        """Tell JetStream the message is still being worked on (its ack wait starts over).
        A lost report only risks a redelivery (logged)."""
        try:
            await self.msg.in_progress()
        except transience.LOST_ACK_ERRORS as error:
            log.warning("in-progress report of %s seq %d lost: %r", self.subject, self.seq,
                        error)

    @cancellation.guarded
    async def _settle(self, reply: Awaitable[None], *, settled: bool) -> None:
        """Send an ack-type reply; remember the outcome for consumer re-creation."""
        try:
            await reply
        except nats.errors.MsgAlreadyAckdError:
            pass
        except transience.LOST_ACK_ERRORS as error:
            log.warning("ack of %s seq %d lost (will be redelivered): %r", self.subject,
                        self.seq, error)
        if settled and self._consumer is not None:
            self._consumer.settled(self.seq)


def differences(wanted: ConsumerConfig, actual: ConsumerConfig) -> list[str]:
    """The CHECKED_FIELDS where `actual` (the server's) differs from `wanted`, as
    `field wanted -> actual`; unset, zero, -1 and empty values count as the server default."""
    found = []
    for name in CHECKED_FIELDS:
        ours, theirs = _normal(getattr(wanted, name)), _normal(getattr(actual, name))
        if ours != theirs:
            found.append(f"{name} {ours!r} -> {theirs!r}")
    return found


def _normal(value: object) -> object:
    """A configuration value with the server's defaults (None, 0, -1, empty) as None."""
    if value is None or value == -1 or value == 0 or value == [] or value == "":
        return None
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


class PullConsumer:
    """A durable pull consumer on one stream with one filter subject, explicit acks (or,
    for an in-order consumer like the planner, ack-all: acking one acks every earlier one)."""

    def __init__(self, js: JetStreamContext, stream: str, config: ConsumerConfig) -> None:
        self._js = js
        self._stream = stream
        self._config = config
        self._subscription: pulling.Puller | None = None
        self._unsettled: set[int] = set()
        self._highest_delivered = 0
        self._check_interval_seconds = CHECK_INTERVAL_SECONDS
        self._next_check = time.monotonic() + self._check_interval_seconds
        self._eager = False
        self._ready: ReadyHold | None = None
        """The readiness held down while the consumer cannot consume (`open(ready=...)`)."""
        self._held: str | None = None
        """The reason it is held down for now, if any."""
        self._failures = Repeats()
        """Failures of each kind since the last fetch that worked (logged first, every 10th)."""
        self._retry_seconds = FIRST_RETRY_SECONDS
        self._stream_loss_fatal = False
        self._positioned = False
        """Whether it started from a position of the caller's (`start_seq` above 1)."""
        self._created: str | None = None
        """The identity of the stream its positions belong to (`reading.identity`)."""
        self._landmark: reading.Landmark | None = None
        """The message at the highest position delivered, with the time NATS stored it (or
        the caller's, `open(landmark=)`): what tells whether a stream of another identity
        holds the same messages."""

    @property
    def durable(self) -> str:
        """The durable consumer name."""
        assert self._config.durable_name is not None
        return self._config.durable_name

    @property
    def stream_created(self) -> str | None:
        """The identity of the stream it reads from (`reading.identity`: its creation time);
        None when the server did not say."""
        return self._created

    @classmethod
    async def open(
        cls,
        js: JetStreamContext,
        *,
        stream: str,
        durable: str,
        filter_subject: str | Sequence[str],
        ack_wait_seconds: float = 30,
        max_ack_pending: int = limits.MAX_ACK_PENDING,
        start_seq: int | None = None,
        ack_policy: AckPolicy = AckPolicy.EXPLICIT,
        start_seq_if_new: bool = False,
        check_interval_seconds: float = CHECK_INTERVAL_SECONDS,
        eager: bool = False,
        ready: ReadyHold | None = None,
        stream_loss_fatal: bool = False,
        stream_created: str | None = None,
        landmark: reading.Landmark | None = None,
    ) -> PullConsumer:
        """Create (or reuse) the durable consumer and bind a pull subscription to it.

        With `start_seq`, any existing consumer of that name is replaced by one that delivers
        from `start_seq` on: the caller's own tracking (e.g. the planner's database) is the
        truth, and in-order delivery from it avoids skipping messages whose redelivery is
        still pending. Without it, an existing consumer keeps its position; a new one starts
        at the beginning of the stream. `start_seq_if_new`: `start_seq` applies only when the
        consumer does not exist yet (an existing one is kept as it is).
        `ack_policy` ALL lets a consumer that processes strictly in order ack a whole batch
        with its last delivery. `filter_subject` may be several subjects (NATS >= 2.10); an
        existing consumer's filter is updated in place, keeping its position. Every
        `check_interval_seconds`, `fetch` re-reads the consumer's configuration and repairs
        what differs (`check_config`). `eager`: a waiting `fetch` returns as soon as messages
        come, not when its batch is full or its timeout passed (`pulling.Puller`).
        `ready`: held down (`ReadyHold.hold`) while `fetch` cannot consume (the stream gone,
        the consumer not recreated, fetches failing), released by the next fetch that works.
        `stream_loss_fatal`: for a caller that tracks positions in the stream (the planner): a
        stream gone after the consumer had a position (it delivered a message, or started from
        `start_seq` above 1) makes `fetch` raise `StreamGone` instead of waiting for it, and
        a stream of another identity that does not hold its position's message makes it raise
        `StreamRecreated` (module docstring).
        `stream_created`: the identity (`reading.identity`) of the stream the caller's
        `start_seq` belongs to (the planner's database); None: the stream's when it opens.
        `landmark`: the message the caller had at its position (the planner's last applied
        event, at `start_seq - 1`), compared when the stream's identity differs.
        Units: `ack_wait_seconds`, `check_interval_seconds` in seconds.
        Raises:
            NotFound: no such stream. BusRefused: NATS refused the consumer.
            BusUnavailable: NATS could not be reached.
            StreamRecreated: `stream_loss_fatal`, `start_seq` above 1, and the stream is not
                the one of `stream_created` and does not hold `landmark` (made anew since the
                caller checked it).
        """
        several = not isinstance(filter_subject, str) and len(filter_subject) > 1
        config = ConsumerConfig(
            name=durable,
            durable_name=durable,
            filter_subject=None if several else (
                filter_subject if isinstance(filter_subject, str) else filter_subject[0]),
            filter_subjects=list(filter_subject) if several else None,
            ack_policy=ack_policy,
            ack_wait=ack_wait_seconds,
            max_ack_pending=max_ack_pending,
            deliver_policy=DeliverPolicy.ALL,
        )
        consumer = cls(js, stream, config)
        consumer._check_interval_seconds = check_interval_seconds
        consumer._next_check = time.monotonic() + check_interval_seconds
        consumer._eager = eager
        consumer._ready = ready
        consumer._stream_loss_fatal = stream_loss_fatal
        consumer._positioned = start_seq is not None and start_seq > 1
        consumer._created = stream_created
        consumer._landmark = landmark
        with transience.bus_errors(f"opening consumer {durable} on {stream}", js):
            await consumer._create(start_seq,
                                   replace=start_seq is not None and not start_seq_if_new)
            # after the consumer exists: a stream made anew before then is seen here, one
            # made anew later takes the consumer with the old one (`_recreate` sees it)
            if not await consumer._verify(await consumer._js.stream_info(stream)):
                await consumer._create(None, replace=True)
        return consumer

    @cancellation.guarded
    async def fetch(self, batch: int, timeout_seconds: float) -> list[Delivery]:
        """Fetch up to `batch` messages, waiting at most `timeout_seconds` for the first.

        Shapes: deliveries in the order NATS sent them (stream order, redeliveries first);
        `[]` on timeout or while NATS is unavailable. A consumer that vanished (deleted, or
        lost with a memory store) is recreated from the first unacknowledged sequence seen;
        one whose stream is gone waits for it (`[]` after a pause; module docstring). Opened
        with `stream_loss_fatal`, a batch holding a sequence at or below the highest one
        delivered before has the stream's content checked first (`[]` when NATS cannot say
        now: the next fetch checks again before it consumes).
        Raises:
            StreamGone: the stream is gone and the consumer had a position in it, when opened
                with `stream_loss_fatal`.
            StreamRecreated: the stream was made anew, the consumer had a position in the
                old one and the new one does not hold its message, when opened with
                `stream_loss_fatal`.
            CancelledError: when cancelled, also when nats-py lost the cancellation
                (`cancellation`); what was fetched then is redelivered after the ack wait.
        """
        if self._subscription is None:  # a recreation failed half-way
            await self._recreate()
            return []
        if time.monotonic() >= self._next_check:
            self._next_check = time.monotonic() + self._check_interval_seconds
            with contextlib.suppress(*transience.FETCH_ERRORS):
                await self.check_config()
        try:
            messages = await self._subscription.fetch(batch, timeout=timeout_seconds)
        except (TimeoutError, nats.errors.TimeoutError):
            self._consuming()
            return []
        except transience.FETCH_ERRORS as error:
            await self._recover(error, timeout_seconds)
            return []
        self._consuming()
        if self._stepped_back(messages) and not await self._recheck(messages):
            return []  # a redelivery, or a stream restored from an older backup: checked
        return [self._delivery(message) for message in messages]

    async def check_config(self) -> list[str]:
        """Compare the server's configuration of the consumer with ours; repair a difference.

        Another NATS user allowed to create consumers on the stream could narrow the filter or
        stretch the ack wait (a create naming the durable in its body rewrites it in place;
        docs/deploy.md, "NATS security"). A
        difference is logged as an error, counted (`gangsched_consumer_repairs_total`,
        reason config_drift) and updated back in place (keeping the position); if NATS
        refuses the update, or it does not take, the consumer is recreated from the first
        unsettled sequence seen. Shapes: the differences found, as `field ours -> theirs`.
        Raises:
            the FETCH_ERRORS of `transience` when NATS cannot be asked.
        """
        found = differences(self._config,
                            (await self._js.consumer_info(self._stream, self.durable)).config)
        if not found:
            return []
        log.error("consumer %s/%s was changed behind its back (%s); repairing it",
                  self._stream, self.durable, "; ".join(found))
        metrics.consumer_repairs.labels(self.durable, "config_drift").inc()
        with contextlib.suppress(nats.js.errors.APIError):
            await self._create(None, replace=False)
            info = await self._js.consumer_info(self._stream, self.durable)
            if not differences(self._config, info.config):
                return found
        resume = self._resume_seq()
        log.error("consumer %s/%s could not be updated back; recreating it from seq %d",
                  self._stream, self.durable, resume)
        await self._create(resume if self._highest_delivered else None, replace=True)
        return found

    @cancellation.guarded
    async def repair(self, start_seq: int) -> None:
        """Recreate the consumer with our configuration, delivering from `start_seq` on (the
        caller's tracking is the truth: e.g. the planner after a gap in its deliveries).

        Raises:
            nats.js.errors.APIError: NATS refused the consumer.
        """
        await self._create(start_seq, replace=True)

    @cancellation.guarded
    async def first_seq(self) -> int:
        """The stream's first sequence now (what retention has not removed yet)."""
        return int((await self._js.stream_info(self._stream)).state.first_seq)

    async def close(self) -> None:
        """Unsubscribe; the durable consumer and its position stay on the server. A readiness
        hold this consumer set goes with it: the service's next consumer sets its own (a
        closed consumer's hold kept its service not ready for good)."""
        self._release()
        await self._unbind()

    async def _unbind(self) -> None:
        """Unsubscribe (the next `fetch` binds again through `_recreate`, which checks the
        stream first); the readiness hold stays."""
        if self._subscription is not None:
            with contextlib.suppress(nats.errors.Error):
                await self._subscription.unsubscribe()
            self._subscription = None

    def settled(self, seq: int) -> None:
        """Record that `seq` (with ack policy ALL: and every earlier one) was acked or
        terminated (called by `Delivery`)."""
        if self._config.ack_policy == AckPolicy.ALL:
            self._unsettled = {unsettled for unsettled in self._unsettled if unsettled > seq}
        else:
            self._unsettled.discard(seq)

    def _stepped_back(self, messages: list[Msg]) -> bool:
        """Whether, opened with `stream_loss_fatal`, `messages` hold a sequence at or below the
        position read up to (`_landmark`, before they move it)."""
        if not self._stream_loss_fatal or self._landmark is None:
            return False
        upto = self._landmark.seq
        return any(ack_reply.parse(message.reply).stream_seq <= upto for message in messages)

    def _delivery(self, message: Msg) -> Delivery:
        """Wrap a nats-py message, tracking it as unsettled."""
        delivered = ack_reply.parse(message.reply)
        seq = delivered.stream_seq
        self._unsettled.add(seq)
        if seq >= self._highest_delivered:
            self._landmark = reading.Landmark(seq, message.subject, message.data,
                                              delivered.stored_at_us)
        self._highest_delivered = max(self._highest_delivered, seq)
        return Delivery(
            seq=seq,
            subject=message.subject,
            data=message.data,
            headers=dict(message.headers or {}),
            num_delivered=delivered.num_delivered,
            num_pending=delivered.num_pending,
            stored_at_ms=delivered.stored_at_ms,
            stored_at_us=delivered.stored_at_us,
            msg=message,
            _consumer=self,
        )

    async def _recover(self, error: BaseException, timeout_seconds: float) -> None:
        """After a failed fetch: recreate a vanished consumer (`_recreate`), else wait out the
        outage (`timeout_seconds`), said at the first failure of a kind and every tenth."""
        try:
            await self._js.consumer_info(self._stream, self.durable)
        except nats.js.errors.NotFoundError:
            await self._recreate()
            return
        except transience.FETCH_ERRORS:
            pass
        self._hold(f"consumer {self.durable}: fetches failing")
        count = self._failures.count(f"fetch:{type(error).__name__}")
        if count is not None:
            log.warning("fetch on %s/%s failed, retrying: %r%s", self._stream, self.durable,
                        error, _times(count))
        await asyncio.sleep(timeout_seconds)

    def _resume_seq(self) -> int:
        """Where a recreated consumer delivers from: the first unsettled sequence delivered,
        else the one after the highest delivered."""
        return min(self._unsettled, default=self._highest_delivered + 1)

    async def _recreate(self) -> None:
        """The consumer is not on the server (or not bound since a check failed): recreate it
        from the first unacknowledged sequence seen, then check its stream (`_verify`: after
        the consumer exists, so a stream made anew in between is seen too); one that does not
        hold the positions' messages is read from its start. Its stream gone, or NATS refusing
        or failing to answer, it is left unbound and held not ready, said at the first failure
        of a kind and every tenth, and tried again after a pause that doubles up to
        `MAX_RETRY_SECONDS`: nothing is consumed before the check was made.

        Raises:
            StreamGone: the stream is gone, the consumer had a position in it, and it was
                opened with `stream_loss_fatal`.
            StreamRecreated: as `_verify`.
        """
        resume = self._resume_seq()
        try:
            await self._create(resume if self._highest_delivered else None, replace=False)
            if not await self._verify(await self._js.stream_info(self._stream)):
                resume = 1
                await self._create(None, replace=True)
        except nats.js.errors.NotFoundError as gone:
            await self._unbind()
            await self._wait_for_stream(gone)
            return
        except transience.FETCH_ERRORS as error:
            await self._unchecked(error, f"consumer {self.durable}: not recreated",
                                  f"vanished and cannot be recreated from seq {resume}")
            return
        log.warning("consumer %s/%s vanished; recreated it from seq %d",
                    self._stream, self.durable, resume)

    async def _recheck(self, batch: list[Msg]) -> bool:
        """A delivery of `batch` (fetched, not handed out yet) came at or below the highest
        position delivered before: check that the stream still holds the message there
        (`_verify`). Shapes: True when it does; False when NATS could not say: `batch` is
        naked (else the server would count it delivered until its ack wait ends and the next
        fetch would bring what follows it, a gap) and the consumer left unbound (the next
        `fetch` recreates and checks it before consuming anything).

        Raises:
            StreamGone, StreamRecreated: as `_recreate`.
        """
        try:
            return await self._verify(await self._js.stream_info(self._stream))
        except nats.js.errors.NotFoundError as gone:
            await self._unbind()
            await self._wait_for_stream(gone)
        except transience.FETCH_ERRORS as error:
            await _nak_all(batch)
            await self._unchecked(error, f"consumer {self.durable}: stream not checked",
                                  "delivered at or below its position again and its stream "
                                  "cannot be checked")
        return False

    async def _unchecked(self, error: BaseException, reason: str, what: str) -> None:
        """Its stream could not be checked (`error`): unbind, hold the readiness down for
        `reason`, say `what` happened (first of a kind, then every tenth) and pause."""
        await self._unbind()
        self._hold(reason)
        count = self._failures.count(f"{reason}:{type(error).__name__}")
        if count is not None:
            log.warning("consumer %s/%s %s (%r); retrying in %gs%s", self._stream, self.durable,
                        what, error, self._retry_seconds, _times(count))
        await self._pause()

    async def _wait_for_stream(self, gone: nats.js.errors.NotFoundError) -> None:
        """The stream is gone: hold the readiness down, say so (first, then every tenth
        time) and pause before the next attempt; a stream made anew is read from its start.

        Raises:
            StreamGone: the consumer had a position in it and was opened with
                `stream_loss_fatal`.
        """
        if self._tracks_positions():
            raise StreamGone(f"stream {self._stream} is gone (the NATS store was lost or "
                             "the stream deleted)") from gone
        self._hold(f"consumer {self.durable}: stream {self._stream} gone")
        self._forget_positions()
        count = self._failures.count("stream gone")
        if count is not None:
            log.warning("stream %s is gone (the NATS store was lost or the stream "
                        "deleted): consumer %s cannot consume until it exists again (each "
                        "service creates the streams at its start); retrying in %gs%s",
                        self._stream, self.durable, self._retry_seconds, _times(count))
        await self._pause()

    async def _verify(self, info: StreamInfo) -> bool:
        """Whether the stream (`info`, its server's answer now) holds the messages the
        consumer's positions belong to. Its identity (`reading.identity`) the one noted, or
        no position yet: yes, without looking further. Another identity (a stream deleted
        and made anew, or restored from a backup): the message at the position read up to
        (`_landmark`) decides, `reading.holding`; the same one there, the new identity is
        noted and the positions kept (said once, INFO); else the consumer forgets them (said
        once) and the caller reads the stream from its start, unless it tracks positions.
        Shapes: True when the positions hold, False when they were forgotten.

        Raises:
            StreamRecreated: the positions do not hold and the consumer was opened with
                `stream_loss_fatal` with a position.
            the nats-py errors of a lookup by sequence (`reading.holding`).
        """
        created, was = reading.identity(info), self._created
        if created is None or created == was or was is None or not (
                self._highest_delivered or self._positioned):
            self._created = created or was
            return True
        state = reading.state_of(info)
        found = await reading.holding(self._js, self._stream, self._landmark, state)
        if found is reading.Holding.SAME:
            assert self._landmark is not None
            log.info("stream %s was created anew at %s (restored from a backup?) and holds the "
                     "message consumer %s read at seq %d in the one created at %s: going on",
                     self._stream, created, self.durable, self._landmark.seq, was)
            self._created = created
            return True
        if self._tracks_positions():
            raise StreamRecreated(self._stream, was, created, seq=self._position(),
                                  found=found.value, first_seq=state.first_seq,
                                  last_seq=state.last_seq)
        log.warning("stream %s was created anew at %s (the one consumer %s read was "
                    "created at %s): reading it from its start", self._stream, created,
                    self.durable, was)
        self._forget_positions()
        self._created = created
        return False

    def _position(self) -> int:
        """The sequence the consumer's position is at: its landmark's, else the highest
        delivered (else the one before the caller's `start_seq`)."""
        if self._landmark is not None:
            return self._landmark.seq
        return self._highest_delivered or max((self._config.opt_start_seq or 1) - 1, 0)

    def _tracks_positions(self) -> bool:
        """Whether losing the stream loses the caller's positions: opened with
        `stream_loss_fatal`, and it started from one (`start_seq` above 1) or delivered."""
        return self._stream_loss_fatal and (self._positioned or self._highest_delivered > 0)

    def _forget_positions(self) -> None:
        """Forget every position in the stream: the next consumer made reads it from its start
        (a stream made anew holds other messages at the positions seen)."""
        self._highest_delivered = 0
        self._unsettled.clear()
        self._landmark = None
        self._positioned = False
        self._config.deliver_policy = DeliverPolicy.ALL
        self._config.opt_start_seq = None

    async def _pause(self) -> None:
        """Wait before the next attempt; the next pause is twice as long, up to the max."""
        await asyncio.sleep(self._retry_seconds)
        self._retry_seconds = min(self._retry_seconds * 2, MAX_RETRY_SECONDS)

    def _hold(self, reason: str) -> None:
        """Hold the readiness down for `reason` (in place of an earlier reason)."""
        if self._ready is None or self._held == reason:
            return
        if self._held is not None:
            self._ready.release(self._held)
        self._ready.hold(reason)
        self._held = reason

    def _consuming(self) -> None:
        """A fetch worked: release the readiness, forget the failures and the pause."""
        if self._failures.clear():
            log.info("consumer %s/%s consuming again", self._stream, self.durable)
        self._retry_seconds = FIRST_RETRY_SECONDS
        self._release()

    def _release(self) -> None:
        """Release the readiness hold this consumer set, if any."""
        if self._ready is not None and self._held is not None:
            self._ready.release(self._held)
        self._held = None

    async def _create(self, start_seq: int | None, *, replace: bool) -> None:
        """Create the consumer (replacing it if asked) and bind a fresh pull subscription."""
        if replace:
            with contextlib.suppress(nats.js.errors.NotFoundError):
                await self._js.delete_consumer(self._stream, self.durable)
        existing: ConsumerConfig | None = None
        if not replace:
            with contextlib.suppress(nats.js.errors.NotFoundError):
                existing = (await self._js.consumer_info(self._stream, self.durable)).config
        if existing is not None:
            # an existing consumer keeps where it started (NATS refuses to change that)
            self._config.deliver_policy = existing.deliver_policy
            self._config.opt_start_seq = existing.opt_start_seq
        elif start_seq is not None:
            self._config.deliver_policy = DeliverPolicy.BY_START_SEQUENCE
            self._config.opt_start_seq = start_seq
        await self._js.add_consumer(self._stream, config=self._config)
        await self.close()
        self._subscription = await pulling.Puller.bind(self._js, self._stream, self.durable,
                                                       eager=self._eager)
        self._unsettled.clear()


async def _nak_all(batch: list[Msg]) -> None:
    """Nak every message of `batch` (redelivered at once, in stream order); a lost nak only
    leaves that message to its ack wait (logged)."""
    for message in batch:
        try:
            await message.nak()
        except transience.LOST_ACK_ERRORS as error:
            log.warning("nak of %s lost (redelivered after the ack wait): %r", message.subject,
                        error)


def _times(count: int) -> str:
    """` (N such failures)` for a failure logged again; empty for the first."""
    return f" ({count} such failures)" if count > 1 else ""
