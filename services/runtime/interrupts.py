"""Ctrl-C while a service starts: held, then told to its shutdown handlers.

Layer: runtime. Python turns SIGINT into `KeyboardInterrupt` wherever the main thread is: in the
middle of an import, of click's parsing, of `asyncio.run`'s set-up (where asyncio's own handler
cancels the main task): a traceback, or click's `Aborted!` and exit status 1, where a Ctrl-C once
the service runs is a clean stop, exit status 0 (`shutdown.run_until_signalled`). The `gangsched`
entry point (`services.cli.entry`) calls `hold` before it imports anything else: from then on a
SIGINT is only noted, and `run_until_signalled` acts on it as on one that comes later, once its
own handlers are installed (`take_held`). A command that is no service hands Ctrl-C back to
Python as it starts (`release`), a Ctrl-C held meanwhile raised there.

Imports nothing but `signal`, so that `hold` comes first.
"""

from __future__ import annotations

import signal
from types import FrameType


class _Held:
    """Whether a SIGINT came while held (and was not taken yet)."""

    came = False


def hold() -> None:
    """Note SIGINT from now on, instead of raising `KeyboardInterrupt`, until handlers of
    its own replace this (`shutdown.run_until_signalled`) or `release` is called. Only where
    Python's own handler is in place: a SIGINT ignored (a command started in the background
    of a shell) stays ignored. Call it from the main thread (signal handlers are set there).
    """
    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        signal.signal(signal.SIGINT, _note)


def take_held() -> bool:
    """Whether a SIGINT came while held since `hold` (or the last call): it is then taken,
    for the caller to act on."""
    came, _Held.came = _Held.came, False
    return came


def release() -> None:
    """Give SIGINT back to Python (`KeyboardInterrupt`), if it is held.

    Raises:
        KeyboardInterrupt: a SIGINT came while held: raised now, where a command that is no
            service handles it as any Ctrl-C.
    """
    if signal.getsignal(signal.SIGINT) is _note:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    if take_held():
        raise KeyboardInterrupt


def _note(signum: int, frame: FrameType | None) -> None:
    """The SIGINT handler while held: note it, nothing else."""
    _Held.came = True
