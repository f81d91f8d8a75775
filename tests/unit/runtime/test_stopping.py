"""`cancellation.cancel_and_wait` stops a helper task without swallowing the caller's own
cancellation."""

from __future__ import annotations

import asyncio
import contextlib

import pytest

from services.runtime.cancellation import cancel_and_wait


async def forever() -> None:
    await asyncio.Event().wait()


async def test_the_helpers_own_cancellation_is_swallowed() -> None:
    helper = asyncio.create_task(forever())
    await asyncio.sleep(0)
    await cancel_and_wait(helper)
    assert helper.cancelled()


async def test_a_caller_cancelled_while_it_waits_is_cancelled_still() -> None:
    helper_started = asyncio.Event()
    release = asyncio.Event()

    async def slow_to_stop() -> None:
        helper_started.set()
        try:
            await asyncio.Event().wait()
        finally:
            await release.wait()  # takes its time to clean up

    after_stop: list[str] = []

    async def caller() -> None:
        helper = asyncio.create_task(slow_to_stop())
        await helper_started.wait()
        await cancel_and_wait(helper)
        after_stop.append("ran on")  # must not happen: the caller was cancelled

    task = asyncio.create_task(caller())
    await asyncio.sleep(0.01)
    task.cancel()  # arrives while the caller waits for the helper to end
    await asyncio.sleep(0)
    release.set()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert after_stop == []


async def test_a_cancellation_handled_before_is_not_raised_again() -> None:
    async def caller() -> str:
        with contextlib.suppress(asyncio.CancelledError):  # handled without uncancel():
            await asyncio.sleep(10)  # cancelling() stays 1
        helper = asyncio.create_task(forever())
        await asyncio.sleep(0)
        await cancel_and_wait(helper)
        return "stopped"

    task = asyncio.create_task(caller())
    await asyncio.sleep(0)
    task.cancel()
    assert await task == "stopped"


async def test_what_the_helper_failed_with_is_raised() -> None:
    async def broken() -> None:
        raise RuntimeError("boom")

    helper = asyncio.create_task(broken())
    await asyncio.sleep(0)
    with pytest.raises(RuntimeError, match="boom"):
        await cancel_and_wait(helper)
