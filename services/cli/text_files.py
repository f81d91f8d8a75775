"""Reading a text file the user named on the command line, bounded.

Layer: CLI shell. A path given for a secret, a NATS credentials file or a manifest can name
something that is no file: a device such as /dev/zero or /dev/urandom never ends, so reading
it whole held the command forever while its memory grew. Such paths (character and block
devices, sockets) are refused before anything is read, in the words of `TextFileRefused`; a
regular file or a pipe (`<(kubectl get ... -o yaml)`, a FIFO with a writer) is read, up to a
limit its caller sets, past which it is refused too. A FIFO with no writer waits for one, as
`cat` and `kubectl apply -f` do.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

KIND_NAMES = ((stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
              (stat.S_ISSOCK, "a socket"))
"""The kinds of file that are refused unread, and how a refusal names them."""
ALL_KIND_NAMES = ((stat.S_ISFIFO, "a named pipe (FIFO)"), *KIND_NAMES)
"""How a refusal of anything but a regular file (`regular_only`) names it."""


class TextFileRefused(Exception):
    """The path names no file that can be read as text: a device or a socket, or a file (or
    stream) longer than the caller's limit. The message says which, without the path (the
    caller names it)."""


def read_text(path: Path, limit: int, *, regular_only: bool = False) -> str:
    """The UTF-8 text of the file at `path`, of at most `limit` bytes.

    `regular_only`: refuse a pipe as well, before waiting for a writer, for a file gangsched
    wrote itself (run.json), which a pipe never is.
    Shapes: `limit` in bytes (>= 0); the text as decoded, line ends unchanged.
    Raises:
        TextFileRefused: `path` is a character or block device or a socket (or, with
            `regular_only`, anything but a regular file), or holds more than `limit` bytes.
        OSError: `path` cannot be opened or read (no such file, a directory, permission).
        UnicodeDecodeError: the bytes are not UTF-8.
    """
    if regular_only:
        return _read_regular(path, limit).decode("utf-8")
    refused = _refused_kind(path)
    if refused is not None:
        raise TextFileRefused(f"it is {refused}, not a file")
    with path.open("rb") as file:
        data = file.read(limit + 1)
    if len(data) > limit:
        raise TextFileRefused(f"it is larger than {_size(limit)}")
    return data.decode("utf-8")


def _read_regular(path: Path, limit: int) -> bytes:
    """The bytes of the regular file `path`, at most `limit`; its kind is checked on the open
    file (opened without waiting: a FIFO opened so does not wait for a writer), so nothing
    can swap it between the look and the read."""
    descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    with os.fdopen(descriptor, "rb") as file:
        mode = os.fstat(descriptor).st_mode
        if stat.S_ISDIR(mode):  # as opening it to read says
            raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), str(path))
        if not stat.S_ISREG(mode):
            kind = next((name for is_kind, name in ALL_KIND_NAMES if is_kind(mode)),
                        "no regular file")
            raise TextFileRefused(f"it is {kind}, not a file")
        data = file.read(limit + 1)  # a regular file: O_NONBLOCK changes nothing
    if len(data) > limit:
        raise TextFileRefused(f"it is larger than {_size(limit)}")
    return data


def _refused_kind(path: Path) -> str | None:
    """The name of the refused kind `path` leads to (links followed), else None (including
    a path that cannot be looked at: opening it says why)."""
    try:
        mode = path.stat().st_mode
    except OSError:
        return None
    return next((name for is_kind, name in KIND_NAMES if is_kind(mode)), None)


def _size(limit: int) -> str:
    """`limit` bytes in the largest whole binary unit (`64 KiB`, `256 MiB`)."""
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if limit >= size and limit % size == 0:
            return f"{limit // size} {unit}"
    return f"{limit} bytes"
