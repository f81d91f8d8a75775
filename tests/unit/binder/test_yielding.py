"""Reports yield to binding: report requests are held while a placement binds (each at most
its longest hold, then a few at a time)."""

from __future__ import annotations

import asyncio

import pytest

from services.binder.yielding import ReportGate


async def _peak_reports(gate: ReportGate, reports: int, *, binding: bool) -> int:
    """Start `reports` report requests at once (each holds its slot until released) and
    return how many were in flight together at the peak."""
    in_flight = peak = 0
    release = asyncio.Event()

    async def report() -> None:
        nonlocal in_flight, peak
        async with gate.report():
            in_flight += 1
            peak = max(peak, in_flight)
            await release.wait()
            in_flight -= 1

    async def run() -> None:
        tasks = [asyncio.create_task(report()) for _ in range(reports)]
        for _ in range(10):
            await asyncio.sleep(0)
        release.set()
        await asyncio.gather(*tasks)

    if binding:
        async with gate.binding():
            await run()
    else:
        await run()
    return peak


async def test_while_a_placement_binds_no_report_request_runs_before_its_hold_ends() -> None:
    gate = ReportGate(while_binding=2, idle=8, max_hold_seconds=10.0)
    started = 0

    async def report() -> None:
        nonlocal started
        async with gate.report():
            started += 1

    async with gate.binding():
        tasks = [asyncio.create_task(report()) for _ in range(20)]
        for _ in range(10):
            await asyncio.sleep(0)
        assert started == 0 and gate.waiting == 20
    await asyncio.wait_for(asyncio.gather(*tasks), 10.0)
    assert started == 20 and gate.waiting == 0


async def test_with_no_hold_only_a_few_report_requests_run_while_a_placement_binds() -> None:
    assert await _peak_reports(ReportGate(while_binding=2, idle=8, max_hold_seconds=0.0), 20,
                               binding=True) == 2


async def test_reports_held_their_longest_go_a_few_at_a_time_while_placements_bind() -> None:
    hold = 0.5
    gate = ReportGate(while_binding=1, idle=8, max_hold_seconds=hold)
    loop = asyncio.get_running_loop()
    started: list[tuple[int, float]] = []
    first_started = asyncio.Event()
    releases = [asyncio.Event() for _ in range(3)]

    async def report(n: int) -> None:
        async with gate.report():
            started.append((n, loop.time()))
            first_started.set()
            await releases[n].wait()

    async with gate.binding():
        asked_at = loop.time()
        tasks = [asyncio.create_task(report(n)) for n in range(3)]
        for _ in range(10):
            await asyncio.sleep(0)
        assert started == []
        await asyncio.wait_for(first_started.wait(), 10.0)
        for _ in range(10):
            await asyncio.sleep(0)
        assert [n for n, _ in started] == [0]  # one at a time, the oldest first
        assert started[0][1] >= asked_at + hold
        releases[0].set()
        for _ in range(10):
            await asyncio.sleep(0)
        assert [n for n, _ in started] == [0, 1]  # already held its longest: goes at once
        releases[1].set()
        releases[2].set()
        await asyncio.wait_for(asyncio.gather(*tasks), 10.0)
    assert [n for n, _ in started] == [0, 1, 2]


async def test_with_nothing_binding_reports_get_the_idle_limit() -> None:
    assert await _peak_reports(ReportGate(while_binding=2, idle=8), 20, binding=False) == 8


async def test_reports_waiting_behind_a_placement_go_when_it_is_done() -> None:
    gate = ReportGate(while_binding=1, idle=4, max_hold_seconds=10.0)
    started: list[int] = []
    hold = asyncio.Event()

    async def report(n: int) -> None:
        async with gate.report():
            started.append(n)
            await hold.wait()

    async with gate.binding():
        tasks = [asyncio.create_task(report(n)) for n in range(4)]
        for _ in range(10):
            await asyncio.sleep(0)
        assert started == []
    for _ in range(10):
        await asyncio.sleep(0)
    assert sorted(started) == [0, 1, 2, 3]
    hold.set()
    await asyncio.gather(*tasks)


def test_limits_must_be_ordered() -> None:
    with pytest.raises(ValueError, match="need 1 <= while_binding"):
        ReportGate(while_binding=0, idle=4)
    with pytest.raises(ValueError, match="need 1 <= while_binding"):
        ReportGate(while_binding=8, idle=4)
    with pytest.raises(ValueError, match="max_hold_seconds must be >= 0"):
        ReportGate(max_hold_seconds=-1.0)


async def test_a_freed_slot_goes_to_the_oldest_waiter_and_wakes_no_other() -> None:
    gate = ReportGate(while_binding=1, idle=1)
    order: list[int] = []
    holds = [asyncio.Event() for _ in range(4)]

    async def report(n: int) -> None:
        async with gate.report():
            order.append(n)
            await holds[n].wait()

    tasks = []
    for n in range(4):
        tasks.append(asyncio.create_task(report(n)))
        await asyncio.sleep(0)
    assert order == [0] and gate.waiting == 3
    for n in range(4):
        holds[n].set()
        for _ in range(3):
            await asyncio.sleep(0)
    await asyncio.gather(*tasks)
    assert order == [0, 1, 2, 3] and gate.waiting == 0


async def test_a_waiter_cancelled_after_its_turn_came_gives_the_slot_on() -> None:
    gate = ReportGate(while_binding=1, idle=1)
    started: list[str] = []
    hold = asyncio.Event()

    async def report(name: str) -> None:
        async with gate.report():
            started.append(name)
            await hold.wait()

    first = asyncio.create_task(report("first"))
    await asyncio.sleep(0)
    second = asyncio.create_task(report("second"))
    third = asyncio.create_task(report("third"))
    await asyncio.sleep(0)
    hold.set()
    await asyncio.sleep(0)  # `first` ran and its release handed the slot to `second` ...
    assert first.done() and started == ["first"]
    second.cancel()  # ... which is cancelled before it runs: `third` must get the slot
    with pytest.raises(asyncio.CancelledError):
        await second
    await asyncio.wait_for(third, 1.0)
    assert started == ["first", "third"]
