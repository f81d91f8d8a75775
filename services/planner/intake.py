"""Sort one fetched batch: already applied (skip), fresh events (apply), poisoned (dead-letter).

Layer: planner shell, pure (no I/O, no clock): decoding, checks and bookkeeping only, so it is
unit-tested without NATS. Never drops a message silently: every delivery lands in exactly one
bucket. Poisoned messages never reach the audit log or the state, so a replay of the audit log
(or of the streams, which skips the planner's dead letters) is unaffected by them.

Three checks make a message poisoned, each with its reason class (`Poisoned.reason_class`):
- `undecodable`: not an event (`codec.decode_event` refused it);
- `wrong_producer`: an event type on a subject kind its producer never publishes it on
  (`contracts.producers`): the NATS permissions bind users to subjects, so this binds types
  to users;
- `ahead_of_time`: a watcher event (observation or tick: the events that move the planner's
  clock) whose `at_ms` is more than `max_lead_ms` after the time the NATS server stored it.
  The stored time is set by the server, never by the publisher, and does not depend on when the
  planner reads the message, so the same stream always sorts the same way.
"""

from __future__ import annotations

import datetime
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

from services.contracts import codec, producers, subjects
from services.contracts.events import Event
from services.store.planner_store import AuditRow, DeadLetterRow

MAX_REASON_CHARS = 1000

UNDECODABLE = "undecodable"
WRONG_PRODUCER = "wrong_producer"
AHEAD_OF_TIME = "ahead_of_time"

LEAD_OPTION = "--max-event-lead-seconds"
"""The option setting `max_lead_ms` (named in reasons, so an operator finds it)."""


class Message(Protocol):
    """What intake needs of a delivery: its stream sequence, subject, payload, and the time the
    NATS server stored it (UTC epoch ms, from the delivery's metadata)."""

    @property
    def seq(self) -> int: ...

    @property
    def subject(self) -> str: ...

    @property
    def data(self) -> bytes: ...

    @property
    def stored_at_ms(self) -> int: ...


@dataclass(frozen=True)
class FreshEvent:
    """A decoded event the planner has not applied yet."""

    seq: int
    subject: str
    event: Event
    data: bytes

    def audit_row(self) -> AuditRow:
        """The audit-log row of this event: `(seq, subject, type, at_ms, data)`."""
        return (self.seq, self.subject, type(self.event).__name__, self.event.at_ms, self.data)


@dataclass(frozen=True)
class Poisoned:
    """A message refused before planning; `reason_class` is one of the module's classes."""

    seq: int
    subject: str
    reason_class: str
    reason: str
    data: bytes

    def dead_letter_row(self) -> DeadLetterRow:
        """The dead-letter row: `(seq, subject, reason, data)`."""
        return (self.seq, self.subject, self.reason, self.data)


@dataclass(frozen=True)
class Checks:
    """What intake checks besides decoding. Units: `max_lead_ms` milliseconds (0 = no bound).

    `prefix` is the subject prefix the subject kinds are read under.
    """

    prefix: str
    max_lead_ms: int


@dataclass
class Intake:
    """One batch, sorted. `last_seq` is the highest fresh or poisoned sequence (0 if none).

    `gap`: `(expected, delivered)` when a delivery skipped sequences that retention does not
    explain; the deliveries from `delivered` on are left out (`beyond_gap` of them).
    """

    skipped: int = 0
    fresh: list[FreshEvent] = field(default_factory=list)
    poisoned: list[Poisoned] = field(default_factory=list)
    last_seq: int = 0
    gap: tuple[int, int] | None = None
    beyond_gap: int = 0

    @property
    def has_news(self) -> bool:
        """Whether the batch holds anything past the tracked sequence."""
        return bool(self.fresh or self.poisoned)

    def events(self) -> list[Event]:
        """The fresh events, in stream order."""
        return [fresh.event for fresh in self.fresh]


def sort_batch(messages: Sequence[Message], tracked_seq: int, checks: Checks,
               floor_seq: int = 0) -> Intake:
    """Split `messages` around `tracked_seq`, decode and check the fresh ones, up to a gap.

    EVENTS sequences are contiguous (the stream denies deletes and purges; only retention
    removes its oldest messages, those below `floor_seq`, its first sequence) and the planner
    reads all of it, so the fresh sequences must follow `tracked_seq` one by one: a sequence
    past a gap that retention does not explain (its consumer was tampered with) ends the
    fresh part, and `gap` names it. Shapes: fresh and poisoned in ascending sequence order,
    each sequence once (a message delivered twice in one batch counts once). Poisoned ones
    carry their reason.
    """
    intake = Intake()
    expected = tracked_seq + 1
    for message in sorted(messages, key=lambda message: message.seq):
        if message.seq < expected:
            intake.skipped += 1
            continue
        if intake.gap is not None or (message.seq > expected and message.seq > floor_seq):
            intake.gap = intake.gap or (expected, message.seq)
            intake.beyond_gap += 1
            continue
        expected = message.seq + 1
        intake.last_seq = message.seq
        try:
            event = codec.decode_event(message.data)
        except codec.PoisonedMessage as error:
            intake.poisoned.append(_poisoned(message, UNDECODABLE, reason(error)))
            continue
        refusal = refusal_of(event, message, checks)
        if refusal is not None:
            intake.poisoned.append(_poisoned(message, *refusal))
            continue
        intake.fresh.append(FreshEvent(message.seq, message.subject, event, message.data))
    return intake


def refusal_of(event: Event, message: Message, checks: Checks) -> tuple[str, str] | None:
    """`(reason class, reason)` if a decoded `event` must not be applied, else None."""
    name = type(event).__name__
    kind = subjects.event_kind(checks.prefix, message.subject)
    if not producers.is_expected_on(event, kind):
        wanted = f"{checks.prefix}.events.{producers.kind_of(event)}.>"
        return WRONG_PRODUCER, _bounded(
            f"{name} on subject {message.subject}: only the {producers.producer_of(event)} "
            f"publishes {name} (on {wanted})")
    lead_ms = event.at_ms - message.stored_at_ms
    if producers.producer_of(event) == producers.WATCHER and 0 < checks.max_lead_ms < lead_ms:
        return AHEAD_OF_TIME, _bounded(
            f"{name} on subject {message.subject}: at_ms {event.at_ms} ({_utc(event.at_ms)}) "
            f"is {lead_ms / 1000:.3f} s ahead of the time NATS stored it "
            f"({_utc(message.stored_at_ms)}); the bound is {checks.max_lead_ms / 1000:g} s "
            f"({LEAD_OPTION}): is the watcher host's clock right?")
    return None


def reason(error: BaseException) -> str:
    """A one-line, bounded reason for a dead letter (safe as a NATS header value)."""
    return _bounded(f"{type(error).__name__}: {error}")


def _bounded(text: str) -> str:
    """`text` on one line, at most MAX_REASON_CHARS long."""
    return " ".join(text.split())[:MAX_REASON_CHARS]


def _poisoned(message: Message, reason_class: str, why: str) -> Poisoned:
    return Poisoned(message.seq, message.subject, reason_class, why, message.data)


def _utc(at_ms: int) -> str:
    """`at_ms` (UTC epoch ms) as ISO 8601. Every time it is given is one Python holds: an
    event's `at_ms` is bounded to years 1970-9999 at decoding (`contracts.integers.EpochMs`),
    and NATS stores messages at 64-bit nanoseconds (years 1677-2262). Exact: integer
    milliseconds, never a float of seconds (which told 9999's last millisecond as .998)."""
    moment = _EPOCH + datetime.timedelta(milliseconds=at_ms)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)
