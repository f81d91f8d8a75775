"""Per-group order and in-progress heartbeats of decisions being handled."""

from __future__ import annotations

import asyncio

import pytest

from services.binder.consumption import GroupLocks, heartbeat
from tests.unit.binder.fakes import FakeDelivery


class Beaten(FakeDelivery):
    """A delivery that says when it has been reported in progress twice."""

    def __post_init__(self) -> None:
        super().__post_init__()
        self.twice = asyncio.Event()

    async def in_progress(self) -> None:
        await super().in_progress()
        if self.beats >= 2:
            self.twice.set()


@pytest.mark.timeout(5)
async def test_a_decision_in_progress_is_reported_until_it_is_done() -> None:
    delivery = Beaten(b"{}")
    async with heartbeat(delivery, 0.01):
        await delivery.twice.wait()
    beats = delivery.beats
    await asyncio.sleep(0)  # the heartbeat task is gone: no further beats can happen
    assert beats >= 2 and delivery.beats == beats


@pytest.mark.timeout(5)
async def test_decisions_of_one_group_run_in_order_and_other_groups_do_not_wait() -> None:
    locks = GroupLocks()
    order: list[str] = []
    release_first = asyncio.Event()

    async def handle(group: str, name: str, wait: asyncio.Event | None = None) -> None:
        async with locks.hold(group):
            order.append(f"start {name}")
            if wait is not None:
                await wait.wait()
            order.append(f"end {name}")

    first = asyncio.create_task(handle("ml/a", "a1", release_first))
    second = asyncio.create_task(handle("ml/a", "a2"))
    other = asyncio.create_task(handle("ml/b", "b1"))
    await other
    assert order == ["start a1", "start b1", "end b1"]
    release_first.set()
    await asyncio.gather(first, second)
    assert order[3:] == ["end a1", "start a2", "end a2"]
