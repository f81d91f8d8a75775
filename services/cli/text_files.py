"""Reading a text file the user named on the command line, bounded.

Layer: CLI shell. A path given for a secret, a NATS credentials file or a manifest can name
something that is no file: a device such as /dev/zero or /dev/urandom never ends, so reading
it whole held the command forever while its memory grew. Such paths (character and block
devices, sockets) are refused before anything is read, in the words of `TextFileRefused`; a
regular file or a pipe (`<(kubectl get ... -o yaml)`, a FIFO with a writer) is read, up to a
limit its caller sets, past which it is refused too. A FIFO with no writer waits for one, as
`cat` and `kubectl apply -f` do. The terminal standard input reads from is read as a file
(`/dev/stdin`, ended by Ctrl-D). A file a library reads again later by its path (NATS
credentials, at every connection) must be a regular file (`require_regular`): a pipe would be
empty by then.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

from services.config import file_kinds


class TextFileRefused(Exception):
    """The path names no file that can be read as text: a device or a socket (a pipe too,
    where a regular file is required), or a file (or stream) longer than the caller's limit.
    The message says which, without the path (the caller names it)."""


def read_text(path: Path, limit: int, *, regular_only: bool = False) -> str:
    """The UTF-8 text of the file at `path`, of at most `limit` bytes.

    `regular_only`: refuse a pipe as well, before waiting for a writer, for a file gangsched
    wrote itself (run.json) or one only a regular file can be (a key file), which a pipe
    never is.
    Shapes: `limit` in bytes (>= 0); the text as decoded, line ends unchanged. The terminal
    this process reads its standard input from counts as a file (`/dev/stdin` typed or
    pasted into, ended by Ctrl-D); any other character device does not.
    Raises:
        TextFileRefused: `path` is a character or block device or a socket (or, with
            `regular_only`, a pipe too), or holds more than `limit` bytes (a regular file's
            size is looked at before it is read).
        OSError: `path` cannot be opened or read (no such file, a directory, permission).
        UnicodeDecodeError: the bytes are not UTF-8.
    """
    if regular_only:
        return _read_regular(path, limit).decode("utf-8")
    refused = refused_kind(path)
    if refused is not None:
        raise TextFileRefused(f"it is {refused}, not a file")
    with path.open("rb") as file:
        opened = os.fstat(file.fileno())
        if stat.S_ISREG(opened.st_mode) and opened.st_size > limit:
            raise TextFileRefused(f"it is larger than {_size(limit)}")
        data = file.read(limit + 1)
    if len(data) > limit:
        raise TextFileRefused(f"it is larger than {_size(limit)}")
    return data.decode("utf-8")


def _read_regular(path: Path, limit: int) -> bytes:
    """The bytes of the regular file `path`, at most `limit`. Its kind is looked at before it
    is opened (opening a device may do something; a socket cannot be opened at all), and again
    on the open file (opened without waiting: a FIFO opened so does not wait for a writer), so
    nothing can swap it between the look and the read."""
    special = file_kinds.special_kind(path)
    if special is not None:
        raise TextFileRefused(f"it is {special}, not a file")
    descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    with os.fdopen(descriptor, "rb") as file:
        opened = os.fstat(descriptor)
        mode = opened.st_mode
        if stat.S_ISDIR(mode):  # as opening it to read says
            raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), str(path))
        if not stat.S_ISREG(mode):
            raise TextFileRefused(f"it is {file_kinds.name(mode) or 'no regular file'}, "
                                  "not a file")
        if opened.st_size > limit:
            raise TextFileRefused(f"it is larger than {_size(limit)}")
        data = file.read(limit + 1)  # a regular file: O_NONBLOCK changes nothing
    if len(data) > limit:
        raise TextFileRefused(f"it is larger than {_size(limit)}")
    return data


def require_regular(path: Path, why: str) -> None:
    """Refuse `path` when it is a pipe, a device or a socket (links followed), for a file a
    library reads again later, by its path (a pipe would be empty by then); `why` says so to
    the user. A directory or a missing path passes: reading it next says why.

    Raises:
        TextFileRefused: `path` is a pipe, a device or a socket.
    """
    kind = file_kinds.special_kind(path)  # None for a path it cannot look at: reading says why
    if kind is not None:
        raise TextFileRefused(f"it is {kind}, not a file: {why}")


def refused_kind(path: Path) -> str | None:
    """The name of the refused kind `path` leads to (links followed), else None (including
    a path that cannot be looked at: opening it says why). The terminal of this process's
    standard input is not refused."""
    try:
        found = path.stat()
    except OSError:
        return None
    if stat.S_ISFIFO(found.st_mode) or (stat.S_ISCHR(found.st_mode)
                                        and _is_input_terminal(found.st_rdev)):
        return None  # a pipe is read (a FIFO waits for its writer, as `cat` does)
    return file_kinds.name(found.st_mode)


def _is_input_terminal(device: int) -> bool:
    """Whether character device `device` is the terminal standard input reads from."""
    try:
        return os.isatty(0) and os.fstat(0).st_rdev == device
    except OSError:
        return False


def _size(limit: int) -> str:
    """`limit` bytes in the largest whole binary unit (`64 KiB`, `256 MiB`)."""
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if limit >= size and limit % size == 0:
            return f"{limit // size} {unit}"
    return f"{limit} bytes"
