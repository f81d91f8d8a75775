"""Standard output that cannot be written is one line and exit status 1, never a traceback.

Layer: cli. The `gangsched` entry point (`main.app`) runs every command under `guarded`: a
write to or flush of `sys.stdout` that fails (a full disk, `> /dev/full`; a reader gone,
`| head`; closed, `>&-`) raises `OutputFailed`, which is no `OSError`, so that no command's own
handling of a file it writes (or of a database or NATS connection) takes it for its own failure.
`guarded` then tells it in one line on standard error (nothing for a reader gone, as Unix tools
stay quiet then) and exits with `exit_codes.FAILED`: a script must not take a report that is not
all there for a success.
"""

from __future__ import annotations

import contextlib
import errno
import os
import sys
from collections.abc import Callable, Iterable
from typing import Any, TextIO, TypeVar, cast

from services.cli import exit_codes

T = TypeVar("T")


class OutputFailed(Exception):
    """Standard output could not be written: `error` says why."""

    def __init__(self, error: OSError) -> None:
        super().__init__(str(error))
        self.error = error


class _Closed:
    """The standard output of a process started with it closed (`>&-`; Python's `sys.stdout`
    is None then): every write fails as a write to a closed file descriptor does."""

    encoding = "utf-8"
    errors = "strict"

    def write(self, text: str) -> int:
        """Raises: OSError: always (EBADF, "standard output is closed")."""
        raise OSError(errno.EBADF, "standard output is closed")

    def flush(self) -> None:
        """Nothing to flush: nothing was written."""

    def isatty(self) -> bool:
        """No terminal: False."""
        return False

    def fileno(self) -> int:
        """Raises: OSError: always (no file descriptor to give)."""
        raise OSError(errno.EBADF, "standard output is closed")


class _Guarded:
    """`stream` whose writes and flushes raise `OutputFailed` instead of `OSError`; every other
    attribute is the stream's own."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        try:
            return self._stream.write(text)
        except OSError as error:
            raise OutputFailed(error) from error

    def writelines(self, lines: Iterable[str]) -> None:
        for line in lines:
            self.write(line)

    def flush(self) -> None:
        try:
            self._stream.flush()
        except OSError as error:
            raise OutputFailed(error) from error

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def guarded(main: Callable[[], T]) -> T:
    """`main()` with `sys.stdout` guarded, flushed at its end (what is still buffered fails
    here, not at the interpreter's exit).

    A standard output closed from the start (`>&-`) fails at the first write: `Error: cannot
    write output: standard output is closed`, status 1 (a command that writes nothing to it,
    a service, runs as usual). A reader gone (`| head -1` once head has its line) is a quiet
    exit, as Unix tools make it, with status 1 rather than the 141 (128 + SIGPIPE) of a tool
    killed by the signal: one "could not do its work" status for every output failure
    (`exit_codes`), which a script tells from success all the same.

    Raises:
        SystemExit: `exit_codes.FAILED` when standard output could not be written, after one
            line on standard error saying why (none when the reader went away).
    """
    stream = sys.stdout
    if stream is None:
        _hold_descriptor_1()
    guard = _Guarded(cast(TextIO, _Closed()) if stream is None else stream)
    sys.stdout = cast(TextIO, guard)
    try:
        try:
            result = main()
        except SystemExit as exiting:
            _flush(guard, failing=exiting.code not in (0, None))
            raise
        except BaseException:
            _flush(guard, failing=True)
            raise
        guard.flush()
        return result
    except OutputFailed as failed:
        sys.stdout = stream
        raise SystemExit(_told(failed.error)) from None
    finally:
        if sys.stdout is guard:
            sys.stdout = stream


def _hold_descriptor_1() -> None:
    """Point a closed file descriptor 1 at /dev/null, so that no file this process opens (a
    database) gets it, to be written by what writes to standard output (a child process)."""
    try:
        os.fstat(1)
    except OSError:
        held = os.open(os.devnull, os.O_WRONLY)
        if held != 1:
            os.dup2(held, 1)
            os.close(held)


def _flush(guard: _Guarded, *, failing: bool) -> None:
    """Flush what is still buffered as `main` ends. `failing`: it ends with an error or a
    non-zero status already, which a failed flush must not replace (a replay's "nothing to
    show", a crash's traceback); after a success, a failed flush is the failure.

    Raises:
        OutputFailed: the flush failed and `main` had succeeded.
    """
    if not failing:
        guard.flush()
        return
    with contextlib.suppress(OutputFailed):
        guard.flush()


def _told(error: OSError) -> int:
    """`exit_codes.FAILED`, after saying why on standard error (unless the reader went away)
    and pointing standard output at /dev/null, so that Python's own flush at exit does not fail
    again ("Exception ignored ...")."""
    if sys.stdout is not None:  # None: closed from the start, nothing flushes at exit
        with contextlib.suppress(OSError):  # no file descriptor (a test's capture)
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    if not isinstance(error, BrokenPipeError):
        print(f"Error: cannot write output: {error.strerror or error}", file=sys.stderr)
    return exit_codes.FAILED
