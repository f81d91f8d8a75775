"""The outcomes published for one decision, read back from EVENTS to spot settled redeliveries.

Layer: binder shell (reads NATS, never writes). A redelivered placement reads its group's
outcome subject and keeps the outcomes of that decision (message ids
`outcome/<decision>/<type>[/<pod uid>]`, see `services.binder.outcomes`): a final one means it
is settled (only acknowledged); its MemberBound ones are the members a rollback may delete.

A group's newest outcome (`newest`, asked for every placement) is answered from the binder's
bus view when it can be known there: the stream's newest message, read once for all the
placements that asked before the read was sent (`SharedTail`), was applied by the view (which
keeps the newest message of each outcome subject), so the view holds every outcome stored
before the read, as a direct lookup of the group's subject then would. Otherwise (the view
behind it for `FEED_WAIT_SECONDS`, EVENTS made anew, no answer) the group's subject is read
directly, as before. Either way the answer is at least as new as the moment it was asked for.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Protocol

from services.binder import outcomes
from services.bus import reading
from services.bus.connection import JetStream
from services.bus.errors import BusRefused, BusUnavailable
from services.bus.reading import MSG_ID_HEADER, StoredMessage
from services.contracts import codec, subjects
from services.contracts.events import Outcome
from services.runtime import metrics

log = logging.getLogger(__name__)

OWNER = "binder-outcomes"
"""The name prefix of its readers (the binder's NATS user creates them)."""
FEED_WAIT_SECONDS = 0.05
"""How long a lookup waits for the view to apply the stream's newest message before it reads
the group's subject directly instead (the view follows EVENTS eagerly: milliseconds behind;
a placement then waits for the view to reach its plan point anyway, `service._known_at`)."""
_FROM_VIEW = metrics.outcome_lookups.labels("view")
_FROM_STREAM = metrics.outcome_lookups.labels("stream")


class OutcomeFeed(Protocol):
    """The binder's bus view of EVENTS (`view_feed.ViewFeed`) as outcome lookups use it."""

    async def caught_up(self, seq: int, timeout_seconds: float) -> bool: ...

    def has_applied(self, message: StoredMessage) -> bool: ...

    def last_outcome(self, subject: str) -> tuple[bool, bytes | None]: ...


class SharedTail:
    """The newest message of a stream, read once for every caller that asked before the read
    was sent: callers of one event-loop turn share a read, a caller arriving while a read is
    in flight waits for the next one, so each answer is newer than its caller's question.

    `read` returns the newest message (None when there is none) or raises a bus error.
    """

    def __init__(self, read: Callable[[], Awaitable[StoredMessage | None]]) -> None:
        self._read = read
        self._gathering: asyncio.Future[StoredMessage | None] | None = None
        self.reads = 0
        """Reads sent so far (tests and benchmarks count them)."""

    async def newest(self) -> StoredMessage | None:
        """The stream's newest message as read after this call began; None when there is
        none or it could not be read (the caller then reads what it needs directly)."""
        gathering = self._gathering
        if gathering is not None:  # a read not yet sent: share it
            return await asyncio.shield(gathering)
        future: asyncio.Future[StoredMessage | None] = asyncio.get_running_loop().create_future()
        self._gathering = future
        newest: StoredMessage | None = None
        try:
            try:
                await asyncio.sleep(0)  # let the callers of this turn join
            finally:
                self._gathering = None  # from here on, callers wait for the next read
            self.reads += 1
            newest = await self._read()
        except (BusUnavailable, BusRefused) as error:
            log.debug("newest message not read: %r", error)
        finally:
            future.set_result(newest)  # also when cancelled: the others read directly
        return newest


class StreamOutcomeLog:
    """Reads the outcomes of one decision from the EVENTS stream (the group's subject)."""

    def __init__(self, js: JetStream, prefix: str, feed: OutcomeFeed | None = None) -> None:
        self._js = js
        self._prefix = prefix
        self._stream = subjects.stream_name(prefix, "EVENTS")
        self._feed = feed
        self.tail = SharedTail(self._read_tail)
        self.direct_reads = 0
        """Lookups that read the group's subject directly (tests and benchmarks count them)."""

    async def of_decision(self, group: str, decision_id: str) -> list[Outcome]:
        """The outcomes published for `decision_id` of `group`, in stream order.

        Raises:
            NotFound, BusUnavailable, BusRefused (`services.bus.errors`): EVENTS cannot be
            read (the caller retries the decision later rather than undo
            anything on a guess).
        """
        subject = outcomes.subject(self._prefix, group)
        mine = f"outcome/{decision_id}/"
        found: list[Outcome] = []
        async for stored in reading.read(self._js, self._stream, subject, owner=OWNER):
            msg_id = stored.headers.get(MSG_ID_HEADER)
            if msg_id is not None and not msg_id.startswith(mine):
                continue
            try:
                event = codec.decode_event(stored.data)
            except codec.PoisonedMessage as error:
                log.warning("unreadable outcome at seq %d of %s: %s", stored.seq, subject, error)
                continue
            if outcomes.is_outcome(event) and event.decision_id == decision_id:
                found.append(event)
        return found

    async def newest(self, group: str) -> Outcome | None:
        """The last outcome published for `group` (from the view, else one direct lookup:
        module docstring), or None when there is none, it cannot be read, or it is another
        group's (names that share a subject token, `a.b` and `a_b`): the caller then proceeds
        as on a first delivery.

        Source: only the binder's user may publish on outcome subjects (the chart's NATS
        permissions; the planner binds outcomes to them).
        """
        subject = outcomes.subject(self._prefix, group)
        try:
            known, data = await self._from_feed(subject)
            (_FROM_VIEW if known else _FROM_STREAM).inc()
            if not known:
                self.direct_reads += 1
                message = await reading.last_message(self._js, self._stream, subject)
                data = None if message is None else message.data
            if data is None:
                log.debug("no last outcome for %s", group)
                return None
            event = codec.decode_event(data)
        except (BusUnavailable, BusRefused, codec.PoisonedMessage) as error:
            log.debug("no last outcome for %s: %r", group, error)
            return None
        # another group whose name maps to the same subject token is not this group's news
        return event if outcomes.is_outcome(event) and event.group == group else None

    async def _from_feed(self, subject: str) -> tuple[bool, bytes | None]:
        """`(True, the newest message's data on subject, or None)` when the view holds every
        message stored before this call (`SharedTail`, then the view applied that newest
        message within `FEED_WAIT_SECONDS`) and still keeps the subject's; `(False, None)`
        when that cannot be known. A subject the view cannot answer for now (it forgot some
        and does not keep this one) costs no read of the stream's newest: only a new outcome
        on it would make it known, and the subject's own read tells that too."""
        if self._feed is None or not self._feed.last_outcome(subject)[0]:
            return False, None
        tail = await self.tail.newest()
        if tail is None or not await self._feed.caught_up(tail.seq, FEED_WAIT_SECONDS):
            return False, None
        if not self._feed.has_applied(tail):  # EVENTS made anew, or the view far past it
            return False, None
        return self._feed.last_outcome(subject)

    async def _read_tail(self) -> StoredMessage | None:
        """The newest message stored in EVENTS (one direct lookup of `>`: the stream's last
        sequence, which nats-server looks up directly; the events wildcard, the same message
        as EVENTS holds nothing else, it matches against every subject of the stream, 1.7 ms
        of its CPU with 20,000 subjects). Were EVENTS to hold other subjects, the view (which
        follows the events wildcard) would not have applied that newest message, and the
        lookup would read the group's subject."""
        return await reading.last_message(self._js, self._stream, ">")
