"""Child processes that end with their parent, however the parent ends (even `kill -9`).

Layer: runtime. On Linux the kernel's `prctl(PR_SET_PDEATHSIG, sig)` sends `sig` to a process
when the thread that started it exits; gangsched's children ask for SIGTERM, so a parent that
is killed outright still leaves no orphan behind (they shut down as on any SIGTERM). Elsewhere
the request is a no-op and the children rely on their stdin watchdog alone
(`services.runtime.child_channel`).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import signal
import sys
from collections.abc import Callable

PR_SET_PDEATHSIG = 1
"""`<linux/prctl.h>`: the signal the kernel sends this process when its parent thread exits."""

_LIBC = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True) \
    if sys.platform.startswith("linux") else None
"""Loaded once, in the parent: a `preexec_fn` runs between fork and exec, where loading a
library is not safe."""


def die_with_parent(parent_pid: int, sig: signal.Signals = signal.SIGTERM) -> bool:
    """Have the kernel send `sig` to this process when its parent exits; send it at once when
    the parent (`parent_pid`) is already gone (it may have died before the request).

    Returns False where the kernel has no such request (not Linux).
    Raises:
        OSError: the kernel refused the request (errno as given).
    """
    if _LIBC is None:
        return False
    if _LIBC.prctl(PR_SET_PDEATHSIG, int(sig), 0, 0, 0) != 0:
        error = ctypes.get_errno()
        raise OSError(error, os.strerror(error))
    if os.getppid() != parent_pid:
        os.kill(os.getpid(), sig)
    return True


def preexec(sig: signal.Signals = signal.SIGTERM) -> Callable[[], None]:
    """A `preexec_fn` for `subprocess`/`asyncio.create_subprocess_exec` that makes the child
    (any executable: the request survives `exec`) receive `sig` when this process exits.

    Start the child from the thread that lives as long as the process (the event loop's main
    thread): the kernel watches the starting thread, not the process.
    """
    parent = os.getpid()

    def request() -> None:
        die_with_parent(parent, sig)

    return request
