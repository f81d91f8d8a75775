"""Sort one fetched batch: already applied (skip), fresh events (apply), poisoned (dead-letter).

Layer: planner shell, pure (no I/O): decoding and bookkeeping only, so it is unit-tested
without NATS. Never drops a message silently: every delivery lands in exactly one bucket.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

from services.contracts import codec
from services.contracts.events import Event
from services.store.planner_store import AuditRow, DeadLetterRow

MAX_REASON_CHARS = 1000


class Message(Protocol):
    """What intake needs of a delivery: its stream sequence, subject and payload."""

    @property
    def seq(self) -> int: ...

    @property
    def subject(self) -> str: ...

    @property
    def data(self) -> bytes: ...


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


@dataclass
class Intake:
    """One batch, sorted. `last_seq` is the highest fresh or poisoned sequence (0 if none)."""

    skipped: int = 0
    fresh: list[FreshEvent] = field(default_factory=list)
    poisoned: list[DeadLetterRow] = field(default_factory=list)
    last_seq: int = 0

    @property
    def has_news(self) -> bool:
        """Whether the batch holds anything past the tracked sequence."""
        return bool(self.fresh or self.poisoned)

    def events(self) -> list[Event]:
        """The fresh events, in stream order."""
        return [fresh.event for fresh in self.fresh]


def sort_batch(messages: Sequence[Message], tracked_seq: int) -> Intake:
    """Split `messages` around `tracked_seq` and decode the fresh ones.

    Shapes: fresh and poisoned in ascending sequence order, each sequence once (a message
    delivered twice in one batch counts once). Poisoned rows carry the decoder's reason.
    """
    intake = Intake()
    seen: set[int] = set()
    for message in sorted(messages, key=lambda message: message.seq):
        if message.seq <= tracked_seq or message.seq in seen:
            intake.skipped += 1
            continue
        seen.add(message.seq)
        intake.last_seq = message.seq
        try:
            event = codec.decode_event(message.data)
        except codec.PoisonedMessage as error:
            intake.poisoned.append((message.seq, message.subject, reason(error), message.data))
            continue
        intake.fresh.append(FreshEvent(message.seq, message.subject, event, message.data))
    return intake


def reason(error: BaseException) -> str:
    """A one-line, bounded reason for a dead letter (safe as a NATS header value)."""
    text = " ".join(f"{type(error).__name__}: {error}".split())
    return text[:MAX_REASON_CHARS]
