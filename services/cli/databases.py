"""A database that cannot be used, told as which one and why in plain words.

Layer: cli. The driver says `OperationalError: unable to open database file` or `DatabaseError:
file is not a database` without naming the file; the commands say which database (a SQLite
file's path, or the URL without its secrets) and, for a SQLite file, what is wrong with it
(missing, a directory, not a SQLite file, not readable, read-only), looking at the file itself.
"""

from __future__ import annotations

import os
from pathlib import Path

from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError

from services.cli.data_dirs import LINK_TO_NOTHING
from services.config import file_kinds
from services.store import urls as database_urls
from services.store.errors import unusable_database

SQLITE_HEADER = b"SQLite format 3\x00"
"""The first 16 bytes of every SQLite database file (an empty file is one too, not yet written)."""


def sqlite_file(url: str) -> Path | None:
    """The file of a SQLite database URL, None for another database (or an in-memory one)."""
    try:
        parsed = make_url(url)
    except (ArgumentError, ValueError):  # ValueError: a port that is no number
        return None
    if parsed.get_backend_name() != "sqlite" or parsed.database in (None, "", ":memory:"):
        return None
    return Path(str(parsed.database)).expanduser()


def shown(url: str) -> str:
    """The database as a user names it: a SQLite file's path, else its URL without its
    secrets (`store.urls.shown`)."""
    path = sqlite_file(url)
    return str(path) if path is not None else database_urls.shown(url)


def sqlite_problem(path: Path, *, writing: bool) -> str | None:
    """What keeps SQLite from using the file `path` (`writing`: also from writing it), in plain
    words, or None when nothing is seen wrong with it."""
    try:
        if path.is_dir():
            return "it is a directory, not a SQLite database file"
        special = file_kinds.special_kind(path)
        if special is not None:  # opened to read its header, a pipe waits for a writer forever
            return f"it is {special}, not a SQLite database file"
        if not path.exists():
            if path.is_symlink():
                return f"it is {LINK_TO_NOTHING}"
            return "no such file" if not writing else f"cannot make it in {path.parent}"
        with path.open("rb") as file:
            header = file.read(len(SQLITE_HEADER))
    except PermissionError:
        return "not readable (permission denied)"
    except OSError as error:
        return error.strerror or str(error)
    if header and header != SQLITE_HEADER:
        return "not a SQLite database file"
    if writing:
        return _read_only(path)
    return None


def _read_only(path: Path) -> str | None:
    """Why SQLite cannot write the database file `path` (or its journal beside it), or None."""
    if os.statvfs(path).f_flag & os.ST_RDONLY:
        return "read-only (on a read-only file system)"
    if not os.access(path, os.W_OK):
        return "read-only (no permission to write it)"
    if not os.access(path.parent, os.W_OK | os.X_OK):
        return (f"read-only (no permission to write its directory {path.parent}, where SQLite "
                "keeps its journal)")
    return None


def unusable(url: str, error: BaseException, *, writing: bool) -> str | None:
    """`<database>: <reason>` when `error` says the database `url` cannot be reached or read
    (`store.errors.unusable_database`), the reason in plain words for a SQLite file; None for
    any other error (a bug)."""
    problem = unusable_database(error)
    if problem is None:
        return None
    path = sqlite_file(url)
    plain = sqlite_problem(path, writing=writing) if path is not None else None
    return f"{shown(url)}: {plain or problem}"
