"""Files only their owner may read: secrets (generated passwords) and what points to them,
the state (database, event store) and the data directory that holds them.

Layer: runtime. Never writes a secret into a file that others could read, not even briefly.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
from pathlib import Path

PRIVATE_MODE = 0o600
PRIVATE_DIRECTORY_MODE = 0o700
NO_HARD_LINKS = (errno.EPERM, errno.EOPNOTSUPP)
"""What `link()` fails with on a file system that has no hard links (FAT: EPERM)."""


def make_private_directory(path: Path) -> None:
    """Create the directory `path` (and its missing parents) unless it exists; `path` itself
    is made mode 0700, only its owner may list or enter it (an existing one keeps its mode,
    as do the parents, made with the default mode).

    Raises:
        OSError: it cannot be made (a file in its way, no permission, read-only file system).
    """
    path.mkdir(mode=PRIVATE_DIRECTORY_MODE, parents=True, exist_ok=True)


def create_private(path: Path) -> None:
    """Create `path` empty, mode 0600, unless it exists (which keeps its mode); a failure is
    left to whoever opens it next, with its own message."""
    with contextlib.suppress(OSError):
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, PRIVATE_MODE))


def write_private(path: Path, text: str) -> None:
    """Write `text` to `path`, readable and writable by its owner only (mode 0600), atomically.

    The temporary file beside `path` is created 0600 before anything is written into it, is
    on disk (fsync) before it replaces `path` whole, so a reader sees the old content or the
    new, and never does anyone else; a failure leaves `path` as it was and no temporary file.
    Raises:
        OSError: the directory is missing or not writable, or the disk is full.
    """
    temporary = path.with_name(f".{path.name}.tmp")
    temporary.unlink(missing_ok=True)
    _write_new(temporary, text)
    try:
        temporary.replace(path)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise


def write_private_once(path: Path, text: str) -> bool:
    """Make `path` holding `text` (mode 0600) unless it exists, atomically: it appears whole
    or not at all, never empty or half written (a full disk, a crash, another process reading
    it while it is made). Returns whether this call made it (False: it existed, maybe made
    meanwhile by another process, whose content stays).

    The text goes into a temporary file of its own beside `path` (unique, so that two
    processes making `path` at once never write into one file), on disk (fsync) before it is
    linked as `path`, which fails if `path` exists; the temporary name is removed in any case.
    A file system without hard links (FAT, some SMB shares) gets it renamed into place unless
    `path` exists: whole all the same, but two processes making it in the same instant may
    each believe theirs is there.
    Raises:
        OSError: the directory is missing or not writable, or the disk is full.
    """
    temporary = path.with_name(f".{path.name}.{secrets.token_hex(8)}.tmp")
    _write_new(temporary, text)
    try:
        os.link(temporary, path)
    except FileExistsError:
        return False
    except OSError as error:
        if error.errno not in NO_HARD_LINKS or path.exists():
            raise
        temporary.replace(path)
    finally:
        temporary.unlink(missing_ok=True)
    return True


def _write_new(path: Path, text: str) -> None:
    """Create `path` (mode 0600; it must not exist) holding `text`, on disk (fsync); removed
    again when it cannot be written whole.

    Raises:
        OSError: it exists, cannot be created, or cannot be written (a full disk).
    """
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, PRIVATE_MODE)
    try:
        with os.fdopen(descriptor, "w", encoding="utf-8") as file:
            file.write(text)
            file.flush()
            os.fsync(file.fileno())
    except BaseException:
        path.unlink(missing_ok=True)
        raise
