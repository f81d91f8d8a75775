"""Reports per lane: one at a time, in order, newest waiting one wins, older ones settled."""

from __future__ import annotations

import asyncio

import pytest

from services.binder.coalescing import Coalescer

pytestmark = pytest.mark.looptime
"""Settle times are judged on looptime's loop clock: the test's sleeps, not the machine's
speed, decide which items arrive within one."""


class Recorder:
    """Runs block until released; records what ran and what was superseded."""

    def __init__(self) -> None:
        self.ran: list[str] = []
        self.superseded: list[str] = []
        self.release = asyncio.Event()

    async def run(self, item: str) -> None:
        self.ran.append(item)
        await self.release.wait()

    async def supersede(self, item: str) -> None:
        self.superseded.append(item)


async def test_only_the_newest_waiting_item_of_a_lane_runs_after_the_running_one() -> None:
    seen = Recorder()
    coalescer: Coalescer[str] = Coalescer(seen.run, seen.supersede, concurrency=8)
    coalescer.submit("Rejection:default/g", 1, "r1")
    await asyncio.sleep(0)
    for seq, item in enumerate(["r2", "r3", "r4"], start=2):
        coalescer.submit("Rejection:default/g", seq, item)
    await asyncio.sleep(0)
    assert seen.ran == ["r1"]
    seen.release.set()
    await coalescer.idle()
    assert seen.ran == ["r1", "r4"]
    assert sorted(seen.superseded) == ["r2", "r3"]
    assert len(coalescer) == 0


async def test_lanes_do_not_wait_for_each_other() -> None:
    seen = Recorder()
    coalescer: Coalescer[str] = Coalescer(seen.run, seen.supersede, concurrency=8)
    coalescer.submit("Rejection:default/a", 1, "a1")
    coalescer.submit("StatusUpdate:default/a", 2, "s1")
    coalescer.submit("Rejection:default/b", 3, "b1")
    await asyncio.sleep(0)
    assert sorted(seen.ran) == ["a1", "b1", "s1"]
    seen.release.set()
    await coalescer.idle()
    assert seen.superseded == []


async def test_an_older_redelivery_never_runs_after_a_newer_item() -> None:
    seen = Recorder()
    coalescer: Coalescer[str] = Coalescer(seen.run, seen.supersede, concurrency=8)
    coalescer.submit("lane", 7, "new")        # running
    await asyncio.sleep(0)
    coalescer.submit("lane", 5, "old again")  # older than the running one
    coalescer.submit("lane", 9, "newer")      # waiting
    coalescer.submit("lane", 8, "late")       # older than the waiting one
    seen.release.set()
    await coalescer.idle()
    assert seen.ran == ["new", "newer"]
    assert sorted(seen.superseded) == ["late", "old again"]


async def test_concurrency_bounds_the_items_running_at_once() -> None:
    seen = Recorder()
    coalescer: Coalescer[str] = Coalescer(seen.run, seen.supersede, concurrency=2)
    for n in range(5):
        coalescer.submit(f"lane{n}", n, f"i{n}")
    await asyncio.sleep(0.01)
    assert len(seen.ran) == 2
    seen.release.set()
    await coalescer.idle()
    assert sorted(seen.ran) == [f"i{n}" for n in range(5)]


async def test_a_failing_run_is_logged_and_the_lane_goes_on() -> None:
    ran: list[str] = []

    async def run(item: str) -> None:
        ran.append(item)
        if item == "bad":
            raise RuntimeError("boom")

    async def supersede(item: str) -> None:
        raise AssertionError("nothing is superseded here")

    coalescer: Coalescer[str] = Coalescer(run, supersede, concurrency=1)
    coalescer.submit("lane", 1, "bad")
    await asyncio.sleep(0)
    coalescer.submit("lane", 2, "good")
    await coalescer.idle()
    assert ran == ["bad", "good"]


async def test_items_arriving_within_the_settle_time_run_once_as_the_newest() -> None:
    seen = Recorder()
    seen.release.set()
    coalescer: Coalescer[str] = Coalescer(seen.run, seen.supersede, concurrency=8,
                                          settle_seconds=0.05)
    for seq, item in enumerate(["s1", "s2", "s3"], start=1):
        coalescer.submit("StatusUpdate:default/g", seq, item)
        await asyncio.sleep(0.005)
    await coalescer.idle()
    assert seen.ran == ["s3"]
    assert sorted(seen.superseded) == ["s1", "s2"]


async def test_an_old_redelivery_after_the_lane_went_idle_is_not_written() -> None:
    seen = Recorder()
    seen.release.set()
    coalescer: Coalescer[str] = Coalescer(seen.run, seen.supersede, concurrency=8)
    coalescer.submit("lane", 9, "newer")
    await coalescer.idle()
    coalescer.submit("lane", 5, "older, redelivered")
    await coalescer.idle()
    assert seen.ran == ["newer"]
    assert seen.superseded == ["older, redelivered"]


async def test_a_redelivery_of_the_waiting_item_replaces_its_handle_unsettled() -> None:
    seen = Recorder()
    coalescer: Coalescer[str] = Coalescer(seen.run, seen.supersede, concurrency=8)
    coalescer.submit("lane", 1, "running")
    await asyncio.sleep(0)
    coalescer.submit("lane", 2, "first delivery")
    coalescer.submit("lane", 2, "second delivery")
    seen.release.set()
    await coalescer.idle()
    assert seen.ran == ["running", "second delivery"]
    assert seen.superseded == []


async def test_a_lane_whose_run_is_cancelled_is_dropped() -> None:
    async def run(item: str) -> None:
        raise asyncio.CancelledError

    async def supersede(item: str) -> None:
        pass

    coalescer: Coalescer[str] = Coalescer(run, supersede, concurrency=1)
    coalescer.submit("lane", 1, "a")
    await coalescer.idle()
    assert len(coalescer) == 0


async def test_a_lane_that_stays_busy_waits_twice_as_long_each_time_up_to_the_longest() -> None:
    written: list[tuple[str, float]] = []
    loop = asyncio.get_running_loop()
    start = loop.time()

    async def run(item: str) -> None:
        written.append((item, round(loop.time() - start, 3)))

    async def supersede(item: str) -> None:
        pass

    coalescer: Coalescer[str] = Coalescer(run, supersede, concurrency=8, settle_seconds=1.0,
                                          max_settle_seconds=4.0)
    for tenth in range(150):  # a new rejection of the group every 0.1 s for 15 s
        coalescer.submit("Rejection:default/g", tenth + 1, f"r{tenth + 1}")
        await asyncio.sleep(0.1)
    await coalescer.idle()
    # waits of 1, 2, 4, 4, 4 s: each write the newest item at its time
    assert [at for _, at in written] == [1.0, 3.0, 7.0, 11.0, 15.0]
    assert [item for item, _ in written] == ["r10", "r30", "r70", "r110", "r150"]


async def test_a_lane_that_went_idle_starts_again_at_the_settle_time() -> None:
    written: list[float] = []
    loop = asyncio.get_running_loop()

    async def run(item: str) -> None:
        written.append(loop.time())

    async def supersede(item: str) -> None:
        pass

    coalescer: Coalescer[str] = Coalescer(run, supersede, concurrency=8, settle_seconds=1.0,
                                          max_settle_seconds=8.0)
    coalescer.submit("lane", 1, "a")
    await coalescer.idle()  # written after 1 s, then idle for its 2 s wait: dropped
    second = loop.time()
    coalescer.submit("lane", 2, "b")
    await coalescer.idle()
    assert round(written[1] - second, 3) == 1.0
