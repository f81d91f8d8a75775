"""One gangsched process per data directory: an exclusive `flock` on `<data_dir>/lock`.

Layer: cli shell. Two `gangsched run` on one data directory would share the embedded NATS
store and SQLite file and overwrite each other's `run.json`; the second one is refused instead,
naming the holder's pid. The lock is the kernel's (`fcntl.flock`), so it is released when the
holding process dies however it dies; the file itself stays (its content is only a hint).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Iterator
from pathlib import Path

from services.config.settings import Settings
from services.runtime.private_files import make_private_directory

LOCK_FILE = "lock"


def holds_state(settings: Settings, services: tuple[str, ...]) -> bool:
    """Whether these services keep state in the data directory: an embedded NATS store (no
    NATS URL), or the planner's default SQLite file (no database URL). Services run apart
    against a shared NATS and database keep none there, so several may share a directory."""
    return not settings.bus.url or ("planner" in services and not settings.store.url)


class DataDirUnusable(Exception):
    """The data directory cannot be used: another live process holds its lock (the message
    names the directory and the holder's pid), or it cannot be created or opened."""


@contextlib.contextmanager
def hold(data_dir: Path) -> Iterator[None]:
    """Hold `<data_dir>/lock` (creating the directory) for the duration of the block.

    Raises:
        DataDirUnusable: another live process holds it, or the directory cannot be created
            or the file opened or written (e.g. a path that is a file, no permission, a full
            disk).
    """
    try:
        make_private_directory(data_dir)
        fd = os.open(data_dir / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o600)
    except OSError as error:
        raise unusable(data_dir, error) from None
    try:
        _lock(fd, data_dir)
        yield
    finally:
        os.close(fd)


def _lock(fd: int, data_dir: Path) -> None:
    """Take the lock on the open lock file `fd` of `data_dir` and write this process's pid in it.

    Raises:
        DataDirUnusable: another live process holds it, or the pid cannot be written (a full
            disk: the lock, taken, is released as `fd` is closed).
    """
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = os.pread(fd, 32, 0).decode(errors="replace").strip() or "unknown"
        raise DataDirUnusable(
            f"data directory {data_dir} is in use by another gangsched (pid {holder}); "
            "stop it or give another --data-dir") from None
    try:
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
    except OSError as error:
        raise unusable(data_dir, error) from None


def unusable(data_dir: Path, error: OSError) -> DataDirUnusable:
    """The refusal of `data_dir`, in which a file cannot be made or written: `cannot use data
    directory <dir>: <the system's reason>` (e.g. `No space left on device`)."""
    return DataDirUnusable(f"cannot use data directory {data_dir}: {error.strerror or error}")


def holder(data_dir: Path) -> str | None:
    """The pid (as written) of the live process holding `<data_dir>/lock`, or None when no
    process holds it (or there is no such file). Takes no lock that outlives the call."""
    try:
        fd = os.open(data_dir / LOCK_FILE, os.O_RDONLY)
    except OSError:
        return None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return os.pread(fd, 32, 0).decode(errors="replace").strip() or "unknown"
        return None
    finally:
        os.close(fd)  # closing releases a shared lock taken above
