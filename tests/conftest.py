"""Fixtures for every test: `no_leaks` (autouse) fails a test that leaves something running.

A test leaks what it started and did not stop by the end of its teardown: an asyncio task of
its loop still pending, an event loop it created and did not close, or a child process (or a
descendant of one) still alive, also one whose parent the teardown stopped (it was a
descendant when the test function returned; one started and orphaned within the test function
is not seen). Each test is judged on its own, so the failure names the test
that leaked, not a later one. Processes and loops that a module- or session-scoped fixture
starts are theirs to stop (the control plane, the session's PostgreSQL): they are recorded
when such a fixture is set up, even if a test asks for it late (`request.getfixturevalue`), and
are never counted against a test. What leaked is reported, then stopped, so it does not
disturb the tests after it.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Generator
from typing import Any

import pytest

from tests.support import leaks

TASK_GRACE_SECONDS = 1.0
"""How long a test's tasks may take to finish after its teardown (cancelled tasks unwinding)."""
PROCESS_GRACE_SECONDS = 2.0
"""How long a process the test told to stop may take to exit; checked only when one is left."""

_loops = leaks.LoopRecorder()
_scoped_processes: set[leaks.Process] = set()
"""Processes started while a module- or session-scoped fixture was set up: not a test's, nor
are their descendants."""
_at_call_end: set[leaks.Process] = set()
"""The descendants when the test function returned, to find those its teardown orphaned."""


def pytest_configure(config: pytest.Config) -> None:
    _loops.install()


def pytest_unconfigure(config: pytest.Config) -> None:
    _loops.uninstall()


@pytest.hookimpl(wrapper=True)
def pytest_fixture_setup(fixturedef: pytest.FixtureDef[Any]) -> Generator[None, Any, Any]:
    """Record what a wider-scoped fixture starts, so no test is blamed for it."""
    if fixturedef.scope == "function":
        return (yield)
    before, loops_before = leaks.descendants(_scoped_processes), len(_loops.created)
    try:
        return (yield)
    finally:
        _scoped_processes.update(leaks.descendants(_scoped_processes) - before)
        del _loops.created[loops_before:]


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call() -> Generator[None, None, None]:
    """Note the descendants as the test function ends (fixtures not torn down yet)."""
    try:
        return (yield)
    finally:
        _at_call_end.clear()
        _at_call_end.update(leaks.descendants(_scoped_processes))


@pytest.fixture(autouse=True)
async def no_leaks() -> AsyncIterator[None]:
    """Fail the test if it leaves asyncio tasks, open event loops or processes behind."""
    before = leaks.descendants(_scoped_processes)
    _loops.forget()
    _at_call_end.clear()
    yield
    problems = [*await _pending_tasks(), *_open_loops(), *await _living_processes(before)]
    _loops.forget()
    if problems:
        pytest.fail("the test left behind:\n  " + "\n  ".join(problems), pytrace=False)


async def _pending_tasks() -> list[str]:
    """Tasks of the test's loop not done within TASK_GRACE_SECONDS."""
    current = asyncio.current_task()
    deadline = time.monotonic() + TASK_GRACE_SECONDS
    while True:
        tasks = [task for task in asyncio.all_tasks() if task is not current and not task.done()]
        if not tasks or time.monotonic() >= deadline:
            return [f"asyncio task {task!r}" for task in tasks]
        await asyncio.sleep(0.02)


def _open_loops() -> list[str]:
    """Event loops the test created and did not close; closed here once reported."""
    running = asyncio.get_running_loop()
    found = [loop for loop in _loops.open_loops() if loop is not running]
    described = [f"event loop not closed: {loop!r}" for loop in found]
    for loop in found:
        if not loop.is_running():
            loop.close()
    return described


async def _living_processes(before: set[leaks.Process]) -> list[str]:
    """Processes started during the test and alive PROCESS_GRACE_SECONDS after it, still
    descendants or orphaned by the teardown (their parent stopped, they did not); killed here
    once reported."""
    deadline = time.monotonic() + PROCESS_GRACE_SECONDS
    while True:
        left = leaks.descendants(_scoped_processes) - before
        left |= {process for process in _at_call_end - before - _scoped_processes
                 if leaks.alive(process)}
        if not left or time.monotonic() >= deadline:
            break
        await asyncio.sleep(0.05)
    described = [f"process {leaks.describe(process)}" for process in sorted(left)]
    for process in left:
        leaks.kill(process)
    return described
