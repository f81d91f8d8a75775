"""The data directory of a command (`--data-dir`), checked before anything uses it.

Layer: cli shell. Every command taking --data-dir looks at it first, so that a path that
cannot be a directory is told as what it is, in one line, in the words of the read-only case
(`cannot use data directory /x: Read-only file system`), and not as a failure of the first
file made in it (`cannot create the decision key file /x/decision.key: Not a directory`); and
one that does not exist, where a command would read it (`replay`, `explain`, `decisions`), in
the same words for each (`missing`), not as the first file it lacks (`no SQLite database at
/x/gangsched.db`, `no NATS to read decisions from: /x holds no gangsched data`).
"""

from __future__ import annotations

import errno
from pathlib import Path

from services.cli import exit_codes
from services.runtime.private_files import make_private_directory


class Unusable(Exception):
    """The data directory cannot be used; the message names it and says why."""


LINK_TO_NOTHING = "a symbolic link that leads to nothing (a loop, or a missing target)"
"""What a path is that names a symbolic link but no file or directory (no directory can be
made there, and nothing read)."""


def problem(data_dir: Path) -> str | None:
    """Why `data_dir` can never be a directory, looking only (nothing is made): it, or one of
    its parents, exists (or is a symbolic link) and is not a directory; None otherwise (also
    when it cannot be told: using the directory then says why)."""
    for candidate in (data_dir, *data_dir.parents):
        try:
            if candidate.is_dir():
                return None
            if not candidate.exists() and not candidate.is_symlink():
                continue
        except OSError:
            return None
        what = "it" if candidate == data_dir else str(candidate)
        shape = ("a file, not a directory" if candidate.is_file() else LINK_TO_NOTHING
                 if not candidate.exists() else "not a directory")
        return f"cannot use data directory {data_dir}: {what} is {shape}"
    return None


def check(data_dir: Path) -> None:
    """Refuse a data directory that can never be one (`problem`); a missing one is fine.

    Raises:
        Unusable: it or a parent is a file.
    """
    why = problem(data_dir)
    if why is not None:
        raise Unusable(why)


def make(data_dir: Path) -> None:
    """`check`, then make `data_dir` (owner-only) and its missing parents unless it exists.

    Raises:
        Unusable: it or a parent is a file, or it cannot be made (read-only file system, no
            permission, a parent that takes no new directory such as /proc).
    """
    check(data_dir)
    try:
        make_private_directory(data_dir)
    except OSError as error:
        reason = error.strerror or str(error)
        if error.errno == errno.ENOENT:  # /proc/x: the parent exists, yet takes no directory
            reason = f"it cannot be made there ({reason})"
        raise Unusable(f"cannot use data directory {data_dir}: {reason}") from None


def missing(data_dir: Path, instead: str) -> str:
    """What a command that reads `data_dir` (and makes nothing there) says when it does not
    exist: the same words for each, naming the option (`instead`: `--db`, `--nats`) that reads
    elsewhere."""
    return (f"data directory {data_dir} does not exist: give the --data-dir of a `gangsched "
            f"run`, or {instead}")


def is_missing(data_dir: Path) -> bool:
    """Whether nothing is at `data_dir` (a link to nothing is told by `problem`; a directory
    that cannot be looked at, e.g. no permission, is not called missing: reading it says
    why)."""
    try:
        data_dir.stat()
    except FileNotFoundError:
        return True
    except OSError:
        return False
    return False


def require(data_dir: Path, *, made: bool, read_unless: str | None = None) -> None:
    """Check a command's data directory before anything is put in it or read from it; `made`:
    the command keeps files there (`make`), else it is only looked at (`check`).
    `read_unless`: the command reads it (run.json, the database), unless given that option
    (`--db`, `--nats`), which was not given: then it must exist (`missing`).

    Raises:
        exit_codes.Failed: it (or a parent) is a file, or it cannot be made, or it is read
            and does not exist (exit status 1).
    """
    try:
        (make if made else check)(data_dir)
    except Unusable as error:
        raise exit_codes.Failed(str(error)) from None
    if read_unless is not None and not made and is_missing(data_dir):
        raise exit_codes.Failed(missing(data_dir, read_unless))
