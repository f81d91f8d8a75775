"""Ctrl-C or SIGTERM while a service starts: held, then told to its shutdown handlers.

Layer: runtime. Python turns SIGINT into `KeyboardInterrupt` wherever the main thread is: in the
middle of an import, of click's parsing, of `asyncio.run`'s set-up (where asyncio's own handler
cancels the main task): a traceback, or click's `Aborted!` and exit status 1, where a Ctrl-C once
the service runs is a clean stop, exit status 0 (`shutdown.run_until_signalled`). SIGTERM, left
to its default, killed a service in its first seconds outright: exit status 143, no shutdown,
where the README promises 0 (Kubernetes sends it to stop a pod, also one that is starting). The
`gangsched` entry point (`services.cli.entry`) calls `hold` before it imports anything else: from
then on SIGINT and SIGTERM are only noted, and `run_until_signalled` acts on the first as on
one that comes later, once its own handlers are installed (`take_held`). A command that is no
service hands both back to Python as it starts (`release`), a signal held meanwhile delivered
there.

Imports nothing but `signal`, so that `hold` comes first.
"""

from __future__ import annotations

import signal
from types import FrameType

TYPE_CHECKING = False  # not `typing`'s: importing it costs the start-up 4 ms before `hold`
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

HELD = (signal.SIGINT, signal.SIGTERM)
_DEFAULTS: dict[signal.Signals, Callable[[int, FrameType | None], Any] | signal.Handlers] = {
    signal.SIGINT: signal.default_int_handler, signal.SIGTERM: signal.SIG_DFL}
"""Python's own handling of each signal held: only that is replaced (an ignored one stays
ignored, as for a command started in the background of a shell)."""


class _Held:
    """The first signal that came while held (and was not taken yet), if any."""

    came: signal.Signals | None = None


def hold() -> None:
    """Note SIGINT and SIGTERM from now on, instead of acting on them, until handlers of
    their own replace this (`shutdown.run_until_signalled`) or `release` is called. Only where
    Python's own handling is in place. Call it from the main thread (signal handlers are set
    there).
    """
    for sig in HELD:
        if signal.getsignal(sig) is _DEFAULTS[sig]:
            signal.signal(sig, _note)


def take_held() -> signal.Signals | None:
    """The signal that came first while held since `hold` (or the last call), if any: it is
    then taken, for the caller to act on."""
    came, _Held.came = _Held.came, None
    return came


def release() -> None:
    """Give SIGINT and SIGTERM back to Python, where held, and deliver one that came while
    held: SIGTERM ends the process as it would have (its default), SIGINT raises.

    Raises:
        KeyboardInterrupt: a SIGINT came while held: raised now, where a command that is no
            service handles it as any Ctrl-C.
    """
    for sig in HELD:
        if signal.getsignal(sig) is _note:
            signal.signal(sig, _DEFAULTS[sig])
    came = take_held()
    if came == signal.SIGTERM:
        signal.raise_signal(signal.SIGTERM)
    if came == signal.SIGINT:
        raise KeyboardInterrupt


def _note(signum: int, frame: FrameType | None) -> None:
    """The handler while held: note the first signal, nothing else."""
    if _Held.came is None:
        _Held.came = signal.Signals(signum)
