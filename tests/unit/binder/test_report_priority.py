"""A placement waiting for room among the queued Scheduled events lends its priority to
reports: binds then wait on reports, so reports go as if nothing bound (`ReportGate.urgent`).

Before, reports were held while other placements bound (at most `max_hold_seconds`, then a few
at a time), placements waited for their events' room, and the binder bound at the pace of the
events trickling through: a livelock that took the last 2,000 pods of workload b at 5,000 nodes
a minute to bind.
"""

from __future__ import annotations

import asyncio

import pytest

from services.binder.reporter import Reporter
from services.binder.yielding import ReportGate, YieldingKube
from tests.support.bus_view import AppliedView
from tests.unit.binder.fakes import FakeKube, FakeStatusLog
from tests.unit.binder.test_reporter import bound_placement, settle

HOLD_SECONDS = 30.0
"""Far longer than any test waits: a report held its longest would time the test out."""


def wired(gate: ReportGate) -> tuple[FakeKube, Reporter]:
    """A reporter whose reports go through `gate`, wired as the binder wires it."""
    kube = FakeKube()
    report = Reporter(YieldingKube(kube, gate), event_interval_seconds=30.0, concurrency=4,
                      status_log=FakeStatusLog(), placing_kube=kube, view=AppliedView(),
                      urgent=gate.urgent)
    return kube, report


async def test_a_placement_waiting_for_room_lets_the_queued_events_through(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("services.binder.reporter.PLACED_REPORTS", 1)
    monkeypatch.setattr("services.binder.reporter.PLACED_BACKLOG", 1)
    gate = ReportGate(while_binding=1, idle=8, max_hold_seconds=HOLD_SECONDS)
    kube, report = wired(gate)
    async with gate.binding():  # another placement binds all along
        await report.placed_in_background(*bound_placement("a"))
        await settle()
        assert kube.events == [] and gate.waiting == 1  # held: a placement binds
        # b finds the backlog full: it waits for a's event, which now goes at once
        await asyncio.wait_for(report.placed_in_background(*bound_placement("b")), 2.0)
        assert [(e.about.name, e.reason) for e in kube.events] == [("a", "Scheduled")]
        await settle()
        # b has its room: the gate holds reports again while the other placement binds
        assert [e.about.name for e in kube.events] == ["a"] and gate.waiting == 1
    await settle()
    assert [e.about.name for e in kube.events] == ["a", "b"]  # nothing binds: b's goes
    await report.close()


async def test_urgent_lets_idle_reports_run_while_binding_and_ends_with_the_wait() -> None:
    gate = ReportGate(while_binding=1, idle=4, max_hold_seconds=HOLD_SECONDS)
    running = 0
    release = asyncio.Event()

    async def report() -> None:
        nonlocal running
        async with gate.report():
            running += 1
            await release.wait()
            running -= 1

    async with gate.binding():
        tasks = [asyncio.create_task(report()) for _ in range(6)]
        await settle()
        assert running == 0 and gate.waiting == 6
        async with gate.urgent():
            await settle()
            assert running == 4 and gate.waiting == 2  # `idle` at once, none held
        release.set()
        await settle()
        assert running == 0 and gate.waiting == 2  # the wait ended: held again
    await asyncio.wait_for(asyncio.gather(*tasks), 2.0)
    assert gate.waiting == 0
