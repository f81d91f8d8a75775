"""Graceful shutdown: SIGTERM and SIGINT stop the process's main coroutine by cancellation.

Layer: runtime. Installs handlers only on the running loop and only while `run_until_signalled`
runs; never calls `sys.exit`. A SIGINT or SIGTERM that came before they were installed, while
the process started, is acted on the same way once they are (`services.runtime.interrupts`).
A task that meets an error no restart mends (`end_with`, the supervisor's `Fatal`) stops the
main coroutine the same way, and `run_until_signalled` then raises that error (the process's
one line).
"""

from __future__ import annotations

import asyncio
import logging
import signal
import weakref
from collections.abc import Coroutine
from typing import Any

from services.runtime import interrupts
from services.runtime.cancellation import cancel_and_wait

log = logging.getLogger(__name__)

SHUTDOWN_SIGNALS = (signal.SIGTERM, signal.SIGINT)

_ENDINGS: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Future[BaseException]] = (
    weakref.WeakKeyDictionary())
"""The error each loop's `run_until_signalled` is asked to end with (`end_with`)."""


def end_with(error: BaseException) -> bool:
    """Ask the `run_until_signalled` of the running loop to stop its main coroutine (as a
    signal does) and raise `error`: for an error no restart mends, met by a task the main
    coroutine may not be waiting on yet (a service failing before the process is ready).

    Shapes: whether one runs (False: the caller raises `error` itself). The first error wins.
    """
    ending = _ENDINGS.get(asyncio.get_running_loop())
    if ending is None:
        return False
    if not ending.done():
        ending.set_result(error)
    return True


async def run_until_signalled(main: Coroutine[Any, Any, None]) -> None:
    """Run `main` until it ends or SIGTERM/SIGINT arrives; on a signal, cancel it and wait.
    A SIGINT or SIGTERM held while the process started (`interrupts.hold`) is acted on as one
    arriving now, once the handlers are installed: `main` is then closed without running.

    Raises:
        whatever `main` raises (other than its cancellation on a signal), or the error a task
            asked it to end with (`end_with`), after cancelling `main`.
    """
    loop = asyncio.get_running_loop()
    loop.set_exception_handler(log_in_one_line)
    stop = asyncio.Event()
    for sig in SHUTDOWN_SIGNALS:
        loop.add_signal_handler(sig, _on_signal, sig, stop)
    held = interrupts.take_held()  # after the handlers: a signal now is theirs, none is lost
    if held is not None:
        _on_signal(held, stop)
        main.close()
        _remove_handlers(loop)
        return
    task = asyncio.ensure_future(main)
    waiter = asyncio.ensure_future(stop.wait())
    ending: asyncio.Future[BaseException] = loop.create_future()
    _ENDINGS[loop] = ending
    try:
        pending: set[asyncio.Future[Any]] = {task, waiter, ending}
        await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
    finally:
        waiter.cancel()
        _remove_handlers(loop)
        try:
            await cancel_and_wait(task)
        except Exception:
            if not ending.done():
                raise
        finally:
            _ENDINGS.pop(loop, None)
    if ending.done():
        raise ending.result()


def _remove_handlers(loop: asyncio.AbstractEventLoop) -> None:
    """Back to Python's handling of SIGTERM and SIGINT (asyncio restores it)."""
    for sig in SHUTDOWN_SIGNALS:
        loop.remove_signal_handler(sig)


def log_in_one_line(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
    """The loop's handler for errors nobody awaited (a task still failing while
    `asyncio.run` shuts down, e.g. on a NATS connection already closed): one warning line
    with the message and the error, not asyncio's default traceback. Stays on the loop until
    it closes, so it also covers `asyncio.run`'s own shutdown."""
    error = context.get("exception")
    log.warning("%s%s", context.get("message", "unhandled error in the event loop"),
                f": {error!r}" if error is not None else "")


def _on_signal(sig: signal.Signals, stop: asyncio.Event) -> None:
    """Signal handler: request shutdown once."""
    log.info("received %s; shutting down", sig.name)
    stop.set()
