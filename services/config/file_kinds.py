"""The kinds of file that are neither a regular file nor a directory, by the name a message
gives them.

Layer: config (below the CLI and the store, which both refuse such paths: a SQLite database,
a key, a run record or a manifest cannot be a pipe, a device or a socket). Linux file modes
from `os.stat`.
"""

from __future__ import annotations

import stat
from pathlib import Path

NAMES = ((stat.S_ISFIFO, "a named pipe (FIFO)"), (stat.S_ISCHR, "a character device"),
         (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))
"""Each special kind's test on a mode and its name in messages ("it is a socket")."""


def name(mode: int) -> str | None:
    """The name of the special kind of file with `mode` (`os.stat_result.st_mode`), or None
    for a regular file, a directory or a symbolic link (`os.lstat`'s)."""
    return next((kind for is_kind, kind in NAMES if is_kind(mode)), None)


def special_kind(path: Path) -> str | None:
    """The name of the special kind of file `path` leads to (links followed), else None,
    also for a path that cannot be looked at (opening it then says why)."""
    try:
        return name(path.stat().st_mode)
    except OSError:
        return None
