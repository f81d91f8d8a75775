"""Run long-lived tasks under supervision: restart on failure with backoff, log by task name.

Layer: runtime. A supervised task that returns normally is done; one that raises is restarted
after a capped exponential backoff, unless its error is `Fatal` (no restart can mend it: the
task ends with it, and `Supervisor.wait` raises it); cancellation always propagates (graceful
shutdown).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable

from services.runtime import cancellation, metrics, shutdown

log = logging.getLogger(__name__)

FIRST_BACKOFF_SECONDS = 0.5
MAX_BACKOFF_SECONDS = 30.0
HEALTHY_RUN_SECONDS = 60.0
"""A task that ran this long before failing is restarted after the first backoff again."""

RECANCEL_SECONDS = cancellation.RECANCEL_SECONDS
"""How long `Supervisor.stop` waits for cancelled tasks before cancelling them again."""

TaskFactory = Callable[[], Awaitable[None]]
"""Makes a fresh coroutine for each (re)start of a supervised task."""


class Fatal(Exception):
    """Base (or mixin) of errors no restart can mend, which an operator must act on (the
    planner's database tracking sequences its stream no longer holds): `supervise` does not
    restart the task but raises the error, and `Supervisor.wait` raises it, so the process
    ends with its one line instead of restarting forever with a traceback."""


async def supervise(
    name: str,
    factory: TaskFactory,
    *,
    first_backoff_seconds: float = FIRST_BACKOFF_SECONDS,
    max_backoff_seconds: float = MAX_BACKOFF_SECONDS,
) -> None:
    """Run `factory()` until it returns; after each exception log it and restart it.

    Units: backoffs in seconds, doubling per consecutive failure up to the maximum.
    Raises:
        asyncio.CancelledError: when cancelled (the running attempt is cancelled too).
        Fatal: what `factory()` raised, not logged here (the caller says it in one line);
            the process's `shutdown.run_until_signalled`, if one runs, is asked to end with
            it too (its main coroutine may be waiting for readiness, not for this task).
    """
    backoff = first_backoff_seconds
    while True:
        started = time.monotonic()
        try:
            await factory()
        except asyncio.CancelledError:
            raise
        except Fatal as error:
            shutdown.end_with(error)
            raise
        except Exception:
            if time.monotonic() - started >= HEALTHY_RUN_SECONDS:
                backoff = first_backoff_seconds
            log.exception("task %s failed; restarting in %.1fs", name, backoff)
            metrics.task_restarts.labels(name).inc()
            await asyncio.sleep(backoff)
            backoff = min(backoff * 2, max_backoff_seconds)
            continue
        log.info("task %s finished", name)
        return


class Supervisor:
    """A named set of supervised tasks that stop together."""

    def __init__(self) -> None:
        self._tasks: dict[str, asyncio.Task[None]] = {}

    def start(self, name: str, factory: TaskFactory, **backoff: float) -> asyncio.Task[None]:
        """Start `factory` under `supervise` as task `name` (unique within this supervisor)."""
        if name in self._tasks:
            raise ValueError(f"task {name} already started")
        task = asyncio.create_task(supervise(name, factory, **backoff), name=name)
        self._tasks[name] = task
        return task

    async def wait(self) -> None:
        """Wait until every task has finished (normally only when cancelled), or one ended
        with a `Fatal` error.

        Cancelling the caller does not wait for the tasks (`stop` does that).
        Raises:
            Fatal: the error a task ended with (the other tasks still run: `stop` them).
        """
        if self._tasks:
            await asyncio.wait(list(self._tasks.values()),
                               return_when=asyncio.FIRST_EXCEPTION)
        for task in self._tasks.values():
            error = task.exception() if task.done() and not task.cancelled() else None
            if error is not None:
                raise error

    async def stop(self) -> None:
        """Cancel every task and wait for them to end; idempotent.

        A task still running `RECANCEL_SECONDS` after its cancellation is cancelled again:
        `asyncio.wait_for` on Python 3.11 (used inside nats-py) can swallow a cancellation that
        coincides with a result, and one lost cancellation must not keep the process alive.
        """
        tasks = list(self._tasks.values())
        await cancellation.cancel_until_done(tasks, RECANCEL_SECONDS)
        for task in tasks:
            if not task.cancelled() and task.exception() is not None \
                    and not isinstance(task.exception(), Fatal):  # `wait` raised it
                log.error("task %s ended with %r", task.get_name(), task.exception())
        self._tasks.clear()
