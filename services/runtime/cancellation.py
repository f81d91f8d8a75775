"""A cancellation that was lost, or would be swallowed, is raised anyway, so a cancelled task
ends.

Layer: runtime (the bus guards its nats-py calls with it; `cancel_and_wait` stops helper
tasks with it everywhere). nats-py waits for answers, messages and flushes with
`asyncio.wait_for`, which on Python 3.11 returns the result (or raises the request's own
error) when the cancellation arrives just as the awaited answer does (CPython gh-86296, fixed
in 3.12); nats-py also swallows a cancellation outright while it flushes. The task then
carries on: a loop cancelled for shutdown keeps fetching, and whoever waits for it to end
hangs. `guarded` (a decorator for the bus's request methods) and `kept` (the same around one
block) notice that the task was cancelled during the call, and raise CancelledError however
the call ended.

A task counts as cancelled during the call when `Task.cancelling()` grew: a cleanup that
runs after a cancellation was delivered (a `finally` closing readers) is not cut short.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
from collections.abc import Awaitable, Callable, Collection, Coroutine, Iterator
from typing import Any, ParamSpec, TypeVar

P = ParamSpec("P")
T = TypeVar("T")


@contextlib.contextmanager
def kept() -> Iterator[None]:
    """Raise CancelledError at the end of the block if the current task was cancelled while
    it ran, whether the block returned, raised, or raised CancelledError itself.

    Outside a task (no running task) the block runs unguarded.
    """
    task = asyncio.current_task()
    before = task.cancelling() if task is not None else 0
    try:
        yield
    finally:
        if task is not None and task.cancelling() > before:
            raise asyncio.CancelledError


def guarded(call: Callable[P, Awaitable[T]]) -> Callable[P, Coroutine[Any, Any, T]]:
    """`call` with its whole await under `kept`: cancelling the caller during it always
    ends in CancelledError."""

    @functools.wraps(call)
    async def run(*args: P.args, **kwargs: P.kwargs) -> T:
        with kept():
            return await call(*args, **kwargs)

    return run


async def cancel_and_wait(task: asyncio.Task[Any]) -> None:
    """Cancel `task` and wait until it has ended, swallowing only its own CancelledError.

    The usual `task.cancel(); with suppress(CancelledError): await task` also swallowed a
    cancellation of the *caller* arriving while it waited, so the caller ran on as if nothing
    happened; under `kept` that cancellation is raised again.
    Raises:
        asyncio.CancelledError: the calling task was cancelled while it waited (`kept`).
        Exception: whatever `task` ended with other than its cancellation (as awaiting it).
    """
    with kept():
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


RECANCEL_SECONDS = 1.0
"""How long `cancel_until_done` waits for cancelled tasks before cancelling them again."""


async def cancel_until_done(tasks: Collection[asyncio.Future[Any]],
                            every_seconds: float = RECANCEL_SECONDS) -> None:
    """Cancel `tasks` and wait until every one has ended, cancelling those still running
    again every `every_seconds`: one cancellation lost (Python 3.11's `wait_for` inside
    nats-py, which then retries a connection forever) must not keep the caller waiting for
    good. Their results and errors are left in them (nothing is raised for them).

    Units: seconds.
    """
    while pending := [task for task in tasks if not task.done()]:
        for task in pending:
            task.cancel()
        await asyncio.wait(pending, timeout=every_seconds)

