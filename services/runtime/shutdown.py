"""Graceful shutdown: SIGTERM and SIGINT stop the process's main coroutine by cancellation.

Layer: runtime. Installs handlers only on the running loop and only while `run_until_signalled`
runs; never calls `sys.exit`. A SIGINT that came before they were installed, while the process
started, is acted on the same way once they are (`services.runtime.interrupts`).
"""

from __future__ import annotations

import asyncio
import logging
import signal
from collections.abc import Coroutine
from typing import Any

from services.runtime import interrupts
from services.runtime.cancellation import cancel_and_wait

log = logging.getLogger(__name__)

SHUTDOWN_SIGNALS = (signal.SIGTERM, signal.SIGINT)


async def run_until_signalled(main: Coroutine[Any, Any, None]) -> None:
    """Run `main` until it ends or SIGTERM/SIGINT arrives; on a signal, cancel it and wait.
    A SIGINT held while the process started (`interrupts.hold`) is acted on as one arriving
    now, once the handlers are installed: `main` is then closed without running.

    Raises:
        whatever `main` raises (other than its cancellation on a signal).
    """
    loop = asyncio.get_running_loop()
    loop.set_exception_handler(log_in_one_line)
    stop = asyncio.Event()
    for sig in SHUTDOWN_SIGNALS:
        loop.add_signal_handler(sig, _on_signal, sig, stop)
    if interrupts.take_held():  # after the handlers: a SIGINT now is theirs, none is lost
        _on_signal(signal.SIGINT, stop)
        main.close()
        _remove_handlers(loop)
        return
    task = asyncio.ensure_future(main)
    waiter = asyncio.ensure_future(stop.wait())
    try:
        await asyncio.wait({task, waiter}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        waiter.cancel()
        _remove_handlers(loop)
        await cancel_and_wait(task)


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
