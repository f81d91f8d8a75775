"""What a test can leave behind: descendant processes of this pytest process, event loops.

Cheap enough to run around every test: descendants are read from Linux's
`/proc/<pid>/task/<tid>/children` (a few small files, about 0.1 ms; psutil's scan of every
process on the machine takes about 15 ms), and event loops are recorded as they are created.

- `descendants()`: the living descendants of this process, each as `(pid, start time)` so a
  reused pid is a different process. Zombies (exited, not yet waited for) are left out: they
  hold no port, no memory and no file. A process whose parent died is re-parented to init and
  no longer a descendant; `alive()` still tells whether it runs.
- `LoopRecorder`: records every asyncio event loop created while it is installed (it wraps
  `asyncio.BaseEventLoop.__init__`, which every loop of the standard library runs), so one
  left open is found although nothing refers to it any more.
"""

from __future__ import annotations

import asyncio
import contextlib
import glob
import os
import signal
from collections.abc import Callable, Collection
from typing import Any

Process = tuple[int, int]
"""A process as `(pid, start time in clock ticks since boot)`."""

_HAS_PROC_CHILDREN = os.path.exists(f"/proc/{os.getpid()}/task/{os.getpid()}/children")


def _stat(pid: int) -> tuple[str, int] | None:
    """`(state letter, start time)` of `pid` from /proc, or None once it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            text = stat.read()
    except OSError:
        return None
    fields = text[text.rindex(")") + 2:].split()  # the name may hold spaces and parentheses
    return fields[0], int(fields[19])


def _children(pid: int) -> list[int]:
    """Direct children of `pid` (of any of its threads); [] once it is gone."""
    found: list[int] = []
    for path in glob.glob(f"/proc/{pid}/task/*/children"):
        try:
            with open(path) as children:
                found.extend(int(child) for child in children.read().split())
        except OSError:
            continue
    return found


def descendants(skip: Collection[Process] = ()) -> set[Process]:
    """Living descendants of this process, zombies excluded (module docstring); a process in
    `skip` is left out with all its descendants."""
    if not _HAS_PROC_CHILDREN:
        return _descendants_by_psutil(skip)
    found: set[Process] = set()
    pending = _children(os.getpid())
    while pending:
        pid = pending.pop()
        stat = _stat(pid)
        if stat is None or (pid, stat[1]) in skip:
            continue
        state, started = stat
        if state != "Z":
            found.add((pid, started))
        pending.extend(_children(pid))
    return found


def alive(process: Process) -> bool:
    """Whether `process` still runs (is not gone, not a zombie, its pid not reused)."""
    if not _HAS_PROC_CHILDREN:
        return _psutil_alive(process[0])
    stat = _stat(process[0])
    return stat is not None and stat[0] != "Z" and stat[1] == process[1]


def _descendants_by_psutil(skip: Collection[Process]) -> set[Process]:
    """`descendants()` where /proc has no children files (not Linux, or an old kernel)."""
    import psutil

    found: set[Process] = set()
    skipped: set[int] = set()
    for child in psutil.Process().children(recursive=True):
        try:
            process = (child.pid, int(child.create_time() * 100))
            if process in skip or child.ppid() in skipped:
                skipped.add(child.pid)
            elif child.status() != psutil.STATUS_ZOMBIE:
                found.add(process)
        except psutil.NoSuchProcess:
            continue
    return found


def _psutil_alive(pid: int) -> bool:
    import psutil

    return bool(psutil.pid_exists(pid))


def kill(process: Process) -> None:
    """SIGKILL `process` if it still runs (on Linux only if its pid was not reused since)."""
    pid, started = process
    if _HAS_PROC_CHILDREN and (stat := _stat(pid)) is not None and stat[1] != started:
        return
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.kill(pid, signal.SIGKILL)


def describe(process: Process) -> str:
    """`pid <n>: <command line>` for a failure message (the command line is read if it can)."""
    pid = process[0]
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as cmdline:
            command = cmdline.read().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        command = "?"
    return f"pid {pid}: {command[:200]}"


class LoopRecorder:
    """Records the event loops created while installed (`install`/`uninstall`, once each).

    `created` holds them, strongly, until `forget()`: a loop nobody refers to is still seen.
    """

    def __init__(self) -> None:
        self.created: list[asyncio.AbstractEventLoop] = []
        self._original: Callable[..., None] | None = None

    def install(self) -> None:
        """Wrap `asyncio.BaseEventLoop.__init__` so every new loop is recorded."""
        original = asyncio.BaseEventLoop.__init__
        created = self.created

        def recording_init(loop: asyncio.BaseEventLoop, *args: Any, **kwargs: Any) -> None:
            original(loop, *args, **kwargs)
            created.append(loop)

        self._original = original
        asyncio.BaseEventLoop.__init__ = recording_init  # type: ignore[method-assign,assignment]

    def uninstall(self) -> None:
        """Put `asyncio.BaseEventLoop.__init__` back."""
        if self._original is not None:
            asyncio.BaseEventLoop.__init__ = self._original  # type: ignore[method-assign]
            self._original = None

    def forget(self) -> None:
        """Drop the loops recorded so far."""
        self.created.clear()

    def open_loops(self) -> list[asyncio.AbstractEventLoop]:
        """Recorded loops not closed yet."""
        return [loop for loop in self.created if not loop.is_closed()]
