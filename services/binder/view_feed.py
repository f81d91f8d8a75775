"""Feeds the binder's `ClusterView` from the EVENTS stream and says when it has caught up.

Layer: binder shell. A last-per-subject reader (`services.bus.latest.LatestReader`, named
`binder-view-<random>`) on the whole EVENTS stream, starting with the last message of every
subject (the newest state of every object, without replaying history) and then following new
messages on a task of its own; nothing is acknowledged, so no one else is disturbed. An EVENTS
stream deleted and made anew (its sequences start again) replaces the view with one built
afresh from the new stream, whose sequences `caught_up` then waits for. Pod, node and
PodGroup events are decoded and applied; every other message only advances the applied sequence. A
message that does not decode is skipped (the planner dead-letters it). The newest message of
each outcome subject is kept undecoded (`last_outcome`; of the `OUTCOME_SUBJECTS` subjects
updated last), and the last `LANDMARKS` messages applied
are known by subject and identity (`has_applied`), so a caller that learned the stream's newest
message can tell whether the view holds everything up to it (`outcome_log` answers from it).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import OrderedDict

from services.binder import outcomes
from services.binder.view import ClusterView
from services.bus.connection import JetStream
from services.bus.errors import BusUnavailable
from services.bus.latest import LatestReader
from services.bus.reading import MSG_ID_HEADER, StoredMessage
from services.contracts import codec, subjects
from services.runtime.cancellation import cancel_and_wait
from services.runtime.unreachable import Repeats

log = logging.getLogger(__name__)

VIEW_KINDS = frozenset({"pod", "node", "podgroup"})
LANDMARKS = 2048
"""The last messages applied that `has_applied` knows (sequence, subject and identity)."""
OUTCOME_SUBJECTS = 16_384
"""Outcome subjects (groups) whose newest message the view keeps, those updated last: 100-300
bytes each, but a GroupRolledBack's grows 38 bytes per member it deleted (a 1,000-member gang's:
39 KB). Once one was forgotten, a subject not kept is not known to have none."""
INACTIVE_THRESHOLD_SECONDS = 30.0
OWNER = "binder-view"
FETCH_BATCH = 512
WAIT_SECONDS = 1.0


class ViewFeed:
    """Keeps `view` current from EVENTS; `caught_up(seq)` waits until it has applied `seq`."""

    def __init__(self, js: JetStream, prefix: str) -> None:
        self.view = ClusterView()
        self._js = js
        self._prefix = prefix
        self._advanced = asyncio.Condition()
        self._reader: LatestReader | None = None
        self._following: asyncio.Task[None] | None = None
        self._outcomes: OrderedDict[str, bytes] = OrderedDict()
        self._outcomes_forgotten = False
        self._landmarks: OrderedDict[int, tuple[str, str | bytes, int | None]] = OrderedDict()

    async def start(self) -> None:
        """Create the reader and follow EVENTS (messages are applied on a task of its own;
        a pull reader never drops a message as a slow consumer would).

        Raises:
            NotFound: no EVENTS stream. BusUnavailable, BusRefused: NATS failed or refused.
        """
        self._reader = await LatestReader.open(
            self._js, subjects.stream_name(self._prefix, "EVENTS"),
            subjects.events_wildcard(self._prefix), owner=OWNER,
            inactive_threshold_seconds=INACTIVE_THRESHOLD_SECONDS)
        self._following = asyncio.create_task(self._follow(self._reader),
                                              name="binder-view-feed")

    async def stop(self) -> None:
        """Stop following and delete the reader's consumer."""
        if self._following is not None:
            await cancel_and_wait(self._following)
            self._following = None
        if self._reader is not None:
            await self._reader.close()
            self._reader = None

    async def _follow(self, reader: LatestReader) -> None:
        """Apply what the reader delivers until cancelled; wait out NATS outages (and a
        stream gone), said at the first failure of a kind and every tenth, with its count
        (`services.runtime.unreachable`), and once when fetches work again."""
        failures = Repeats()
        streams_read = reader.streams_read
        while True:
            try:
                messages = await reader.fetch(FETCH_BATCH, WAIT_SECONDS)
            except BusUnavailable as error:
                count = failures.count(type(error.__cause__ or error).__name__)
                if count is not None:
                    log.warning("view feed: fetch failed, retrying every %gs: %r%s",
                                WAIT_SECONDS, error,
                                f" ({count} such failures)" if count > 1 else "")
                await asyncio.sleep(WAIT_SECONDS)
                continue
            if failures.clear():
                log.info("view feed: fetching again")
            if reader.streams_read != streams_read:  # EVENTS made anew: its state, afresh
                streams_read = reader.streams_read
                self.view = ClusterView()
                self._outcomes = OrderedDict()
                self._outcomes_forgotten = False
                self._landmarks = OrderedDict()
            try:
                for message in messages:
                    self._apply(message)
            finally:
                if messages:
                    await self._notify()

    async def caught_up(self, seq: int, timeout_seconds: float) -> bool:
        """Whether the view has applied EVENTS up to `seq`, waiting at most `timeout_seconds`."""
        if self.view.applied_seq >= seq:
            return True
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(timeout_seconds), self._advanced:
                await self._advanced.wait_for(lambda: self.view.applied_seq >= seq)
        return self.view.applied_seq >= seq

    def has_applied(self, message: StoredMessage) -> bool:
        """Whether the view applied `message` (same sequence, subject and identity: its
        `Nats-Msg-Id`, else its bytes, and when it was stored) among its last `LANDMARKS`, so
        it holds the newest message of every subject up to `message.seq` of that very stream
        (not of one made anew since, whose sequences start again, even where the same message
        was published again: the watcher's ids name an object's version)."""
        return self._landmarks.get(message.seq) == _identity(message)

    def last_outcome(self, subject: str) -> tuple[bool, bytes | None]:
        """`(True, data)` of the newest message the view applied on outcome subject
        `subject`, `(True, None)` when it applied none there, `(False, None)` when it cannot
        tell (it kept `OUTCOME_SUBJECTS` subjects and forgot older ones)."""
        data = self._outcomes.get(subject)
        if data is not None:
            return True, data
        return not self._outcomes_forgotten, None

    async def _notify(self) -> None:
        """Wake those waiting in `caught_up`. `_follow` does it once per fetched batch, also
        when applying one of its messages failed (those applied before count)."""
        async with self._advanced:
            self._advanced.notify_all()

    def _apply(self, message: StoredMessage) -> None:
        """Take one message into the view (module docstring: what each kind does)."""
        seq = message.seq
        self._landmarks[seq] = _identity(message)
        if len(self._landmarks) > LANDMARKS:
            self._landmarks.popitem(last=False)
        kind = message.subject[len(self._prefix) + len(".events."):].split(".", 1)[0]
        if kind == outcomes.KIND:
            self._outcomes[message.subject] = message.data
            self._outcomes.move_to_end(message.subject)
            if len(self._outcomes) > OUTCOME_SUBJECTS:
                self._outcomes.popitem(last=False)
                self._outcomes_forgotten = True
        if kind in VIEW_KINDS:
            try:
                self.view.apply(seq, codec.decode_event(message.data))
            except codec.PoisonedMessage:
                log.debug("view: skipping undecodable event seq %d", seq)
                self.view.applied_seq = max(self.view.applied_seq, seq)
        else:
            self.view.applied_seq = max(self.view.applied_seq, seq)


def _identity(message: StoredMessage) -> tuple[str, str | bytes, int | None]:
    """What tells a stored message from another at its sequence: its subject, its
    `Nats-Msg-Id` (every gangsched event has one) else its bytes, and when it was stored
    (microseconds: a delivery's and a lookup's agree, milliseconds are rounded apart)."""
    return (message.subject, message.headers.get(MSG_ID_HEADER) or message.data,
            message.stored_at_us)
