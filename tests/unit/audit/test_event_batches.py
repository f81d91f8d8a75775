"""A page of events built by the database is taken whole only when it is exactly its rows in
seq order; anything else is read again row by row (`db_log._decoded` returns None)."""

from __future__ import annotations

import pytest

from services.audit import db_log
from services.contracts.events import ClockTicked
from services.planner.rederive.rounds import LoggedEvent
from services.store.audit import EventBatch


def batch(seqs: list[int], *, after: int = 0, count: int | None = None,
          last: int | None = None) -> EventBatch:
    items = ",".join(f'[{s},"s.{s}",{{"type":"ClockTicked","at_ms":{s}}}]' for s in seqs)
    return EventBatch(after, len(seqs) if count is None else count,
                      seqs[-1] if last is None else last, f"[{items}]".encode())


def test_a_whole_ordered_page_decodes_in_one_call() -> None:
    assert db_log._decoded(batch([3, 4, 9], after=2)) == [
        LoggedEvent(3, "s.3", ClockTicked(at_ms=3)), LoggedEvent(4, "s.4", ClockTicked(at_ms=4)),
        LoggedEvent(9, "s.9", ClockTicked(at_ms=9))]


@pytest.mark.parametrize("page", [
    batch([4, 3, 9], after=2, last=9),       # out of order
    batch([3, 3, 9], after=2),               # a seq twice
    batch([3, 4], after=2, count=3),         # fewer items than rows
    batch([2, 4], after=2),                  # not after the key
    batch([3, 4], after=2, last=5),          # not ending at the last row
    EventBatch(0, 1, 1, b'[[1,"s",{"type":"Clock'),   # not JSON
    EventBatch(0, 1, 1, b'[[1,"s",{"type":"Nope"}]]'),  # not an event
])
def test_anything_else_is_read_again_row_by_row(page: EventBatch) -> None:
    assert db_log._decoded(page) is None
