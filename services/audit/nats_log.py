"""The log as the NATS streams hold it: EVENTS, DECISIONS and the planner's dead letters.

Layer: audit shell (reads NATS through `services.bus.reading`: ephemeral ordered consumers,
nothing acked). NATS records no planning round that decided nothing, so the plan points are the
`plan_seq` values of the published decisions: replay plans there only and verifies the
decisions that were published. A round that decided nothing can still change the planner's
bookkeeping (a quiet retry's time), so the database (`--source db`), which records every round,
is the authoritative audit source; NATS is the one a subscriber without database access has.
Events the planner refused are skipped as it skipped them, without trusting anyone's word for
it: the planner's intake checks (undecodable, another producer's subjects, ahead of the time
NATS stored it) are re-run on every event, and a dead letter on the DEADLETTER stream, which
other users may publish to, is honoured only for what replay cannot re-run (the core raised on
the event, `planner.isolation`), only when it carries the planner's signature checked with the
decision key, and only when its bytes are the event's. Without a key, no dead letter is honoured.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

from services.bus import reading
from services.bus.connection import JetStream
from services.bus.errors import NotFound
from services.contracts import codec, dead_letters, ids, subjects
from services.contracts.signing import SIGNATURE_HEADER, DecisionKey
from services.planner import intake
from services.planner.rederive import rounds
from services.planner.rederive.rounds import LoggedEvent, PlanPoint, RecordedDecision, RoundInput

PLANNER_CONSUMER = "planner"
"""The planner's consumer name, as its dead letters carry it (`services.planner.service`)."""
PAGE_EVENTS = 1000


class IncompleteLog(Exception):
    """The EVENTS stream no longer starts at sequence 1 (retention dropped the oldest events),
    so the state cannot be rebuilt from it; the database keeps them."""


class NatsLog:
    """Rounds read from the streams of one subject prefix (module docstring)."""

    def __init__(self, js: JetStream, prefix: str, *, max_lead_ms: int = 60_000,
                 key: DecisionKey | None = None) -> None:
        """`max_lead_ms` is the planner's `--max-event-lead-seconds` (in ms); `key` the
        decision key that proves a dead letter the planner's (module docstring)."""
        self.js = js
        self.prefix = prefix
        self.checks = intake.Checks(prefix, max_lead_ms)
        self.key = key
        self.end_seq = 0
        self.recorded: list[RecordedDecision] = []
        self.refused: dict[int, bytes] = {}
        self.skipped: list[tuple[int, str]] = []

    async def load(self) -> None:
        """Read the published decisions and the planner's dead letters; fix the end of EVENTS.

        Decisions are read first: every event they were planned on is then in EVENTS.
        Raises:
            IncompleteLog: see the class.
            NotFound: the streams do not exist (wrong --prefix?). BusUnavailable, BusRefused:
                NATS failed or refused.
        """
        self.recorded = await self._decisions()
        self.refused = await self._refused()
        events = await reading.stream_state(self.js, self._stream("EVENTS"))
        if events.messages and events.first_seq > 1:
            raise IncompleteLog(
                f"stream {self._stream('EVENTS')} starts at seq {events.first_seq}: older "
                f"events expired; replay from the database (--source db) instead")
        self.end_seq = events.last_seq

    async def event_count(self) -> int:
        """How many events will be read (the end of EVENTS when `load` ran)."""
        return self.end_seq

    def rounds(self) -> AsyncIterator[RoundInput]:
        """Rounds at the published plan points, then the events after the last one."""
        return rounds.assemble_pages(self._events(), self._plan_points(), _once(self.recorded))

    async def left_out(self) -> list[tuple[int, str]]:
        """`(seq, reason)` of the events the rounds read so far left out, as the planner
        dead-lettered them, by seq."""
        return list(self.skipped)

    async def _plan_points(self) -> AsyncIterator[list[PlanPoint]]:
        yield [(point, None) for point in sorted({d.plan_seq for d in self.recorded})]

    async def _events(self) -> AsyncIterator[list[LoggedEvent]]:
        page: list[LoggedEvent] = []
        stream = self._stream("EVENTS")
        async for message in reading.read(self.js, stream, subjects.events_wildcard(self.prefix),
                                          end_seq=self.end_seq):
            if self.refused.get(message.seq) == message.data:
                self.skipped.append((message.seq, "the planner's core raised on it"))
                continue  # says the planner's signed dead letter
            try:
                event = codec.decode_event(message.data)
            except codec.PoisonedMessage as error:
                self.skipped.append((message.seq, str(error)))
                continue  # the planner dead-lettered it too
            refusal = intake.refusal_of(event, message, self.checks)
            if refusal is not None:
                self.skipped.append((message.seq, refusal[1]))
                continue  # so did the planner, by the same pure check
            page.append(LoggedEvent(message.seq, message.subject, event))
            if len(page) >= PAGE_EVENTS:
                yield page
                page = []
        yield page

    async def _decisions(self) -> list[RecordedDecision]:
        """Every published decision once (a re-publish after the duplicate window may repeat
        one), by plan point and position."""
        found: dict[str, RecordedDecision] = {}
        stream = self._stream("DECISIONS")
        async for message in reading.read(self.js, stream,
                                          subjects.decisions_wildcard(self.prefix)):
            record = recorded(stream, message.seq, message.subject, message.data)
            found.setdefault(record.id, record)
        return sorted(found.values(), key=lambda d: (d.plan_seq, d.position))

    async def _refused(self) -> dict[int, bytes]:
        """EVENTS sequence → payload of each dead letter proven the planner's by its signature
        (none without a key). The sequence header is not signed, hence the payload: it is
        honoured only for the event with these very bytes."""
        refused: dict[int, bytes] = {}
        if self.key is None:
            return refused
        try:
            async for message in reading.read(self.js, self._stream("DEADLETTER"),
                                              subjects.dead_letter_subject(self.prefix)):
                seq = is_planners(message.subject, message.data, message.headers, self.key)
                if seq is not None:
                    refused[seq] = message.data
        except NotFound:
            return refused
        return refused

    def _stream(self, suffix: str) -> str:
        return subjects.stream_name(self.prefix, suffix)


def recorded(stream: str, seq: int, subject: str, data: bytes) -> RecordedDecision:
    """The published decision `data` (at `seq` of `stream`, on `subject`) as replay verifies it.

    Raises:
        codec.PoisonedMessage: it is no decision the planner publishes (it does not decode,
            or its id is not `<plan_seq>-<position>` of its own `plan_seq`, as the database
            reader checks every outbox row; anyone allowed to publish there may have put it
            there), named by stream, sequence and subject.
    """
    try:
        decision = codec.decode_decision(data)
        plan_seq, position = ids.decision_order(decision.id)
        if position < 0:
            raise codec.PoisonedMessage(f"id {decision.id!r} is not <plan_seq>-<position>")
        if plan_seq != decision.plan_seq:  # replay would verify it at the wrong plan point
            raise codec.PoisonedMessage(f"id {decision.id!r} is not <plan_seq>-<position> of "
                                        f"its plan_seq {decision.plan_seq}")
    except codec.PoisonedMessage as error:
        raise codec.PoisonedMessage(
            f"stream {stream} seq {seq} ({subject}) holds no decision the planner publishes: "
            f"{error}; replay from the database (--source db) instead") from None
    return RecordedDecision(decision.id, decision.plan_seq, position, subject, data)


def is_planners(subject: str, data: bytes, headers: dict[str, str],
                key: DecisionKey) -> int | None:
    """The EVENTS sequence a dead letter refuses, if the planner signed it; else None."""
    seq = headers.get(dead_letters.SEQ_HEADER, "")
    if headers.get(dead_letters.CONSUMER_HEADER) != PLANNER_CONSUMER or not seq.isdigit():
        return None
    if key.check(subject, data, headers.get(SIGNATURE_HEADER)) is not None:
        return None
    return int(seq)


async def _once(items: list[RecordedDecision]) -> AsyncIterator[list[RecordedDecision]]:
    yield items
