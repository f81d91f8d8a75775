"""The three ordered streams of a log become rounds; `--until` clips them."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable
from typing import TypeVar

from services.audit.until import Until
from services.contracts.events import ClockTicked, GroupBound
from services.planner.rederive.rounds import (
    LoggedEvent,
    RecordedDecision,
    RoundInput,
    assemble,
    assemble_pages,
)

T = TypeVar("T")


async def stream(items: Iterable[T]) -> AsyncIterator[T]:
    for item in items:
        yield item


def tick(seq: int, at_ms: int | None = None) -> LoggedEvent:
    return LoggedEvent(seq, "gangsched.events.clock._.clock", ClockTicked(at_ms=at_ms or seq))


def decision(plan_seq: int, position: int) -> RecordedDecision:
    return RecordedDecision(f"{plan_seq}-{position}", plan_seq, position, "s", b"{}")


async def rounds(events: list[LoggedEvent], points: list[int],
                 recorded: list[RecordedDecision]) -> list[RoundInput]:
    named = [(point, None) for point in points]
    return [r async for r in assemble(stream(events), stream(named), stream(recorded))]


async def test_each_round_takes_the_events_up_to_its_plan_point_and_its_decisions() -> None:
    result = await rounds([tick(1), tick(2), tick(3), tick(4)], [2, 4],
                          [decision(2, 0), decision(2, 1), decision(4, 0)])
    assert [(r.plan_seq, [e.seq for e in r.events], [d.id for d in r.recorded])
            for r in result] == [(2, [1, 2], ["2-0", "2-1"]), (4, [3, 4], ["4-0"])]


async def test_pages_of_any_size_give_the_same_rounds() -> None:
    events = [tick(seq) for seq in range(1, 11)]
    points, recorded = [3, 4, 9], [decision(3, 0), decision(4, 0), decision(4, 1)]
    expected = await rounds(events, points, recorded)
    paged = [r async for r in assemble_pages(
        stream([events[:2], [], events[2:7], events[7:]]),
        stream([[(p, None) for p in points[:1]], [(p, None) for p in points[1:]]]),
        stream([recorded[:2], recorded[2:]]))]
    assert paged == expected
    assert [r.plan_seq for r in paged] == [3, 4, 9, None]


async def test_a_round_that_decided_nothing_is_still_a_round() -> None:
    result = await rounds([tick(1), tick(2)], [1, 2], [decision(2, 0)])
    assert [(r.plan_seq, len(r.events), len(r.recorded)) for r in result] == [
        (1, 1, 0), (2, 1, 1)]


async def test_events_after_the_last_plan_point_come_unplanned() -> None:
    result = await rounds([tick(1), tick(2), tick(3)], [1], [])
    assert [(r.plan_seq, [e.seq for e in r.events]) for r in result] == [(1, [1]), (None, [2, 3])]


async def test_a_decision_recorded_for_a_point_without_a_round_lands_in_the_next_round() -> None:
    result = await rounds([tick(1), tick(2), tick(3)], [1, 3], [decision(2, 0)])
    assert [d.id for d in result[1].recorded] == ["2-0"]


async def test_a_decision_recorded_after_the_last_round_comes_last_unplanned() -> None:
    result = await rounds([tick(1)], [1], [decision(7, 0)])
    assert result[-1] == RoundInput(None, [], [decision(7, 0)])


def test_until_a_sequence_stops_before_the_first_round_past_it() -> None:
    until = Until(seq=2)
    assert until.clip(RoundInput(2, [tick(1), tick(2)], [])) is not None
    assert until.clip(RoundInput(3, [tick(3)], [])) is None


def test_until_a_time_stops_before_the_first_round_with_a_later_event() -> None:
    until = Until(at_ms=1500)
    assert until.clip(RoundInput(1, [tick(1, 1000)], [])) is not None
    assert until.clip(RoundInput(3, [tick(2, 1400), tick(3, 1600)], [])) is None


def test_until_cuts_the_unplanned_tail_where_it_passes_the_limit() -> None:
    clipped = Until(seq=2).clip(RoundInput(None, [tick(1), tick(2), tick(3)], []))
    assert clipped is not None and [e.seq for e in clipped.events] == [1, 2]
    assert Until(seq=2).clip(RoundInput(None, [tick(3)], [])) is None


def test_until_a_time_is_not_stopped_by_a_binder_clock_running_ahead() -> None:
    until = Until(at_ms=1500)
    ahead = LoggedEvent(2, "gangsched.events.outcome.default.g",
                        GroupBound(at_ms=9_999_999, decision_id="1-0", group="default/g"))
    assert until.clip(RoundInput(2, [tick(1, 1000), ahead], [])) is not None
    assert until.clip(RoundInput(3, [tick(3, 1600)], [])) is None


async def test_each_round_carries_the_planner_its_plan_point_names() -> None:
    paged = [r async for r in assemble_pages(
        stream([[tick(1), tick(2), tick(3)]]), stream([[(1, "gangsched a"), (3, None)]]),
        stream([[decision(3, 0)]]))]
    assert [(r.plan_seq, r.planner) for r in paged] == [(1, "gangsched a"), (3, None)]
