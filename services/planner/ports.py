"""The planner shell's view of the bus and the store, as Protocols.

Layer: planner shell. Integration tests pass the real `PullConsumer`, `Publisher` and
`PlannerStore`; unit tests may pass in-memory versions. Declarations only.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:  # nats-py is not needed to name the type (audits import this module)
    from services.bus.consuming import Delivery
from services.store.planner_store import (
    AuditRow,
    DeadLetterRow,
    OutboxRow,
    PendingDeadLetter,
    PendingDecision,
    RecordedRow,
    Snapshot,
)


class EventSource(Protocol):
    """Batches of EVENTS deliveries (a durable pull consumer)."""

    async def fetch(self, batch: int, timeout_seconds: float) -> list[Delivery]: ...

    async def first_seq(self) -> int: ...

    async def repair(self, start_seq: int) -> None: ...

    @property
    def stream_created(self) -> str | None:
        """The identity of the stream it reads from now (its creation time; None: unknown)."""


class Publisher(Protocol):
    """Publishes with a de-duplication id and waits until stored."""

    async def publish(
        self, subject: str, data: bytes, *, msg_id: str, headers: dict[str, str] | None = None
    ) -> int: ...

    async def publish_many(self, items: Sequence[tuple[str, bytes, str]]) -> None: ...

    async def recent_ids(self, stream: str, count: int) -> frozenset[str]: ...


class Store(Protocol):
    """The planner's persistence (see `services.store.planner_store.PlannerStore`)."""

    async def load_snapshot(self) -> Snapshot: ...

    async def adopt_stream(self, stream_created: str) -> None: ...

    async def message_at(self, seq: int) -> tuple[str, bytes, int | None] | None: ...

    async def commit_batch(
        self,
        events: Sequence[AuditRow],
        decisions: Sequence[OutboxRow],
        plan_seq: int | None,
        state_bytes: bytes | None,
        last_seq: int,
        dead_letters: Sequence[DeadLetterRow] = (),
        published: Sequence[str] = (),
        stream_created: str | None = None,
        last_stored_at_us: int | None = None,
    ) -> None: ...

    async def save_snapshot(self, state_bytes: bytes, seq: int) -> bool: ...

    def catch_up_events(self, after_seq: int, upto_seq: int) -> AsyncIterator[AuditRow]: ...

    def catch_up_plan_points(self, after_seq: int,
                             upto_seq: int) -> AsyncIterator[tuple[int, str | None]]: ...

    def catch_up_outbox(self, after_seq: int, upto_seq: int) -> AsyncIterator[RecordedRow]: ...

    async def pending_outbox(self) -> list[PendingDecision]: ...

    async def mark_published(self, ids: Sequence[str]) -> None: ...

    async def pending_dead_letters(self) -> list[PendingDeadLetter]: ...

    async def mark_dead_letters_published(self, seqs: Sequence[int]) -> None: ...
