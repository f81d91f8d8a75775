"""MemberBudget: placements bind together while their members fit, first come first served."""

from __future__ import annotations

import asyncio

import pytest

from services.binder.member_budget import MemberBudget


async def _hold(budget: MemberBudget, members: int, name: str, order: list[str],
                release: asyncio.Event) -> None:
    async with budget.take(members):
        order.append(name)
        await release.wait()


async def _settle() -> None:
    for _ in range(5):
        await asyncio.sleep(0)


async def test_placements_that_fit_bind_together() -> None:
    budget, order, release = MemberBudget(10), list[str](), asyncio.Event()
    tasks = [asyncio.create_task(_hold(budget, n, f"p{n}", order, release)) for n in (4, 6)]
    await _settle()
    assert order == ["p4", "p6"]
    assert budget.in_use == 10
    release.set()
    await asyncio.gather(*tasks)
    assert budget.in_use == 0


async def test_a_placement_that_does_not_fit_waits_for_room() -> None:
    budget, order = MemberBudget(10), list[str]()
    first, second = asyncio.Event(), asyncio.Event()
    a = asyncio.create_task(_hold(budget, 8, "a", order, first))
    b = asyncio.create_task(_hold(budget, 3, "b", order, second))
    await _settle()
    assert order == ["a"]
    assert budget.waiting == 1
    first.set()
    await a
    await _settle()
    assert order == ["a", "b"]
    assert budget.in_use == 3
    second.set()
    await b


async def test_smaller_placements_never_overtake_one_waiting() -> None:
    """A singleton arriving behind a waiting gang waits too, though it would fit: a stream of
    singletons must not starve the gang."""
    budget, order = MemberBudget(10), list[str]()
    first, rest = asyncio.Event(), asyncio.Event()
    a = asyncio.create_task(_hold(budget, 8, "a", order, first))
    await _settle()
    gang = asyncio.create_task(_hold(budget, 5, "gang", order, rest))
    await _settle()
    single = asyncio.create_task(_hold(budget, 1, "single", order, rest))
    await _settle()
    assert order == ["a"]
    first.set()
    await _settle()
    assert order == ["a", "gang", "single"]
    rest.set()
    await asyncio.gather(a, gang, single)


async def test_a_placement_larger_than_the_budget_binds_alone() -> None:
    budget, order = MemberBudget(10), list[str]()
    first, rest = asyncio.Event(), asyncio.Event()
    a = asyncio.create_task(_hold(budget, 2, "a", order, first))
    await _settle()
    big = asyncio.create_task(_hold(budget, 50, "big", order, rest))
    after = asyncio.create_task(_hold(budget, 1, "after", order, rest))
    await _settle()
    assert order == ["a"]
    first.set()
    await _settle()
    assert order == ["a", "big"]
    assert budget.in_use == 50
    rest.set()
    await _settle()
    await asyncio.gather(a, big, after)
    assert order == ["a", "big", "after"]
    assert budget.in_use == 0


async def test_a_cancelled_waiter_lets_the_next_in_and_holds_nothing() -> None:
    budget, order = MemberBudget(10), list[str]()
    first, rest = asyncio.Event(), asyncio.Event()
    a = asyncio.create_task(_hold(budget, 6, "a", order, first))
    await _settle()
    big = asyncio.create_task(_hold(budget, 9, "big", order, rest))
    small = asyncio.create_task(_hold(budget, 4, "small", order, rest))
    await _settle()
    assert order == ["a"]
    big.cancel()
    await _settle()
    assert order == ["a", "small"]  # the head left: the next one fits beside `a`
    assert budget.in_use == 10
    first.set()
    rest.set()
    await asyncio.gather(a, small)
    assert big.cancelled()
    assert budget.in_use == 0
    assert budget.waiting == 0


async def test_a_waiter_cancelled_just_after_being_let_in_gives_its_room_back() -> None:
    budget, order, rest = MemberBudget(10), list[str](), asyncio.Event()
    held = budget.take(10)
    await held.__aenter__()
    b = asyncio.create_task(_hold(budget, 10, "b", order, rest))
    await _settle()
    await held.__aexit__(None, None, None)  # lets `b` in; `b` has not run since
    assert budget.in_use == 10
    b.cancel()
    await asyncio.gather(b, return_exceptions=True)
    assert order == []
    assert budget.in_use == 0


async def test_the_room_is_given_back_when_the_block_raises() -> None:
    budget = MemberBudget(5)
    with pytest.raises(RuntimeError):
        async with budget.take(5):
            raise RuntimeError("bind failed")
    assert budget.in_use == 0
    async with budget.take(5):
        assert budget.in_use == 5


def test_a_budget_below_one_member_is_refused() -> None:
    with pytest.raises(ValueError, match="at least 1, not 0"):
        MemberBudget(0)


async def test_a_negative_take_is_refused() -> None:
    budget = MemberBudget(5)
    with pytest.raises(ValueError, match="cannot take -1 members"):
        async with budget.take(-1):
            pass
    assert budget.in_use == 0
