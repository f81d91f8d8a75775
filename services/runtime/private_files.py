"""Files only their owner may read: secrets (generated passwords) and what points to them,
the state (database, event store) and the data directory that holds them.

Layer: runtime. Never writes a secret into a file that others could read, not even briefly.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

PRIVATE_MODE = 0o600
PRIVATE_DIRECTORY_MODE = 0o700


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

    The temporary file beside `path` is created 0600 before anything is written into it, and
    replaces `path` whole, so a reader sees the old content or the new, and never does anyone
    else.
    Raises:
        OSError: the directory is missing or not writable.
    """
    temporary = path.with_name(f".{path.name}.tmp")
    temporary.unlink(missing_ok=True)
    descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, PRIVATE_MODE)
    with os.fdopen(descriptor, "w") as file:
        file.write(text)
    temporary.replace(path)
