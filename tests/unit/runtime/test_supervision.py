"""Task supervision: restart after failures with backoff, stop on return or cancellation."""

from __future__ import annotations

import asyncio

import pytest

from services.runtime.shutdown import run_until_signalled
from services.runtime.supervision import Fatal, Supervisor, supervise


async def test_a_failing_task_is_restarted_until_it_returns(
    caplog: pytest.LogCaptureFixture,
) -> None:
    attempts: list[int] = []

    async def flaky() -> None:
        attempts.append(len(attempts))
        if len(attempts) < 3:
            raise RuntimeError(f"boom {len(attempts)}")

    await supervise("flaky", flaky, first_backoff_seconds=0, max_backoff_seconds=0)
    assert attempts == [0, 1, 2]
    failures = [r for r in caplog.records if "task flaky failed" in r.getMessage()]
    assert len(failures) == 2 and failures[0].exc_info is not None


async def test_cancelling_a_supervised_task_cancels_the_running_attempt() -> None:
    started = asyncio.Event()
    cancelled = asyncio.Event()

    async def forever() -> None:
        started.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            cancelled.set()
            raise

    task = asyncio.create_task(supervise("forever", forever))
    await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert cancelled.is_set()


async def test_supervisor_stop_cancels_every_task_and_names_them_uniquely() -> None:
    supervisor = Supervisor()
    gate = asyncio.Event()

    async def wait_forever() -> None:
        await gate.wait()

    first = supervisor.start("a", wait_forever)
    supervisor.start("b", wait_forever)
    with pytest.raises(ValueError, match="already started"):
        supervisor.start("a", wait_forever)
    assert first.get_name() == "a"
    await supervisor.stop()
    assert first.cancelled()
    await supervisor.stop()


async def test_supervisor_stop_cancels_again_a_task_that_swallowed_its_cancellation(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr("services.runtime.supervision.RECANCEL_SECONDS", 0.01)
    supervisor = Supervisor()
    swallowed = []

    async def stubborn() -> None:
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            swallowed.append(True)  # as asyncio.wait_for on 3.11 may, with a result at hand
        await asyncio.Event().wait()

    task = supervisor.start("stubborn", stubborn)
    await asyncio.sleep(0)
    await asyncio.wait_for(supervisor.stop(), timeout=5)
    assert swallowed == [True] and task.cancelled()


async def test_each_restart_is_counted_by_task_name() -> None:
    from services.runtime import metrics

    before = metrics.task_restarts.labels("counted")._value.get()
    failures = iter([RuntimeError("one"), RuntimeError("two")])

    async def twice_failing() -> None:
        error = next(failures, None)
        if error is not None:
            raise error

    await supervise("counted", twice_failing, first_backoff_seconds=0, max_backoff_seconds=0)
    assert metrics.task_restarts.labels("counted")._value.get() - before == 2


class Unmendable(Fatal):
    """An error no restart mends."""


async def test_a_fatal_error_is_not_restarted_and_ends_the_supervisor_wait(
    caplog: pytest.LogCaptureFixture,
) -> None:
    attempts: list[int] = []

    async def doomed() -> None:
        attempts.append(1)
        raise Unmendable("the store was lost")

    async def forever() -> None:
        await asyncio.Event().wait()

    supervisor = Supervisor()
    supervisor.start("doomed", doomed, first_backoff_seconds=0)
    supervisor.start("forever", forever)
    try:
        with pytest.raises(Unmendable, match="the store was lost"):
            await asyncio.wait_for(supervisor.wait(), 5)
    finally:
        await supervisor.stop()
    assert attempts == [1]
    assert not [r for r in caplog.records if "doomed" in r.getMessage()]  # said once, by the caller


async def test_a_fatal_error_ends_the_process_main_even_while_it_waits_for_something_else(
) -> None:
    cleaned_up = asyncio.Event()

    async def doomed() -> None:
        raise Unmendable("the store was lost")

    async def main() -> None:  # as `serve`: it waits for readiness before the supervisor
        supervisor = Supervisor()
        supervisor.start("doomed", doomed)
        try:
            await asyncio.Event().wait()
        finally:
            await supervisor.stop()
            cleaned_up.set()

    with pytest.raises(Unmendable, match="the store was lost"):
        await asyncio.wait_for(run_until_signalled(main()), 5)
    assert cleaned_up.is_set()
