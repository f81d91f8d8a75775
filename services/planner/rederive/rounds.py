"""The recorded log as replay reads it: events, plan points, recorded decisions, in rounds.

Layer: planner rederive (pure; the async generator only reorders what its sources yield).
A `RoundInput` is one planning round as the live planner ran it: the events it applied (stream
order), its plan point, and the decisions recorded for it (publication order). The database,
the NATS streams (`services.audit.db_log`, `nats_log`) and the planner's own store
(`services.planner.catchup`) are all turned into rounds here, so replay and verification never
depend on the source.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import AsyncIterator, Callable
from typing import Generic, TypeVar

import msgspec

from services.contracts.events import Event

TAIL_CHUNK_EVENTS = 10_000
T = TypeVar("T")


class LoggedEvent(msgspec.Struct, frozen=True, gc=False, array_like=True,
                  forbid_unknown_fields=True):
    """One event of the log with its EVENTS stream sequence and subject.

    JSON form `[seq, subject, event]` (the database builds pages of them, `db_log`; an extra
    element, e.g. a damaged row holding two objects, is an error, not ignored). Not tracked
    by the cyclic GC (`gc=False`): it holds only immutable data and never takes part in a cycle,
    and a replay makes a million of them.
    """

    seq: int
    subject: str
    event: Event


class RecordedDecision(msgspec.Struct, frozen=True, gc=False):
    """One decision as recorded: id, plan point, index in its round, subject, encoded JSON.

    Shapes: `data` is the exact bytes published (the outbox row, or the DECISIONS message).
    """

    id: str
    plan_seq: int
    position: int
    subject: str
    data: bytes


class RoundInput(msgspec.Struct, frozen=True):
    """One round: events applied, then (unless `plan_seq` is None) planning at `plan_seq`.

    `plan_seq` None marks events after the last recorded plan point (applied, never planned),
    and recorded decisions whose plan point has no recorded round (always a divergence).
    """

    plan_seq: int | None
    events: list[LoggedEvent]
    recorded: list[RecordedDecision]
    planner: str | None = None
    """The planner that planned the round as the log records it (`planner.core.revision`);
    None when the source does not say (NATS)."""


class _Pages(Generic[T]):
    """An ordered stream read in pages, taken from by key (no per-item awaiting)."""

    def __init__(self, pages: AsyncIterator[list[T]], key: Callable[[T], int]) -> None:
        self.pages, self.key = pages, key
        self.page: list[T] = []
        self.keys: list[int] = []
        self.index = 0

    async def through(self, limit: int | None, most: int | None = None) -> list[T]:
        """The next items with key <= `limit` (all when None), at most `most` of them."""
        taken: list[T] = []
        while most is None or len(taken) < most:
            if self.index >= len(self.page) and not await self._next():
                break
            end = len(self.page) if limit is None else bisect_right(self.keys, limit, self.index)
            if most is not None:
                end = min(end, self.index + most - len(taken))
            taken.extend(self.page[self.index:end])
            self.index = end
            if end < len(self.page):
                break
        return taken

    async def _next(self) -> bool:
        page = await anext(self.pages, None)
        while page is not None and not page:
            page = await anext(self.pages, None)
        if page is None:
            return False
        self.page, self.keys, self.index = page, [self.key(item) for item in page], 0
        return True


PlanPoint = tuple[int, str | None]
"""A recorded round: its plan point and the planner that planned it (None: not recorded)."""


async def assemble_pages(events: AsyncIterator[list[LoggedEvent]],
                         plan_points: AsyncIterator[list[PlanPoint]],
                         recorded: AsyncIterator[list[RecordedDecision]]
                         ) -> AsyncIterator[RoundInput]:
    """Merge the three ordered streams of a log, each read in pages, into rounds.

    Shapes: `events` by seq, `plan_points` ascending, `recorded` by (plan_seq, position). A
    round at plan point P takes the events with seq <= P and the recorded decisions with
    plan_seq <= P not taken yet (so a decision recorded for a plan point with no round shows
    up in the next round, where verification reports it). Then the events after the last plan
    point, in chunks of `TAIL_CHUNK_EVENTS`, and any recorded decision left, as `plan_seq` None.
    """
    logged = _Pages(events, lambda item: item.seq)
    decided = _Pages(recorded, lambda item: item.plan_seq)
    async for page in plan_points:
        for point, planner in page:
            yield RoundInput(point, await logged.through(point), await decided.through(point),
                             planner)
    while tail := await logged.through(None, TAIL_CHUNK_EVENTS):
        yield RoundInput(None, tail, [])
    left = await decided.through(None)
    if left:
        yield RoundInput(None, [], left)


def assemble(events: AsyncIterator[LoggedEvent], plan_points: AsyncIterator[PlanPoint],
             recorded: AsyncIterator[RecordedDecision]) -> AsyncIterator[RoundInput]:
    """`assemble_pages` for streams read one item at a time (same shapes and rounds)."""
    return assemble_pages(_paged(events), _paged(plan_points), _paged(recorded))


async def _paged(items: AsyncIterator[T], size: int = 1000) -> AsyncIterator[list[T]]:
    page: list[T] = []
    async for item in items:
        page.append(item)
        if len(page) >= size:
            yield page
            page = []
    if page:
        yield page
