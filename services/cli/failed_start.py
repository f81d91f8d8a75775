"""A service command that fails before it is ready leaves no data directory it made itself.

Layer: cli shell. `gangsched run` makes its data directory (`.gangsched`, and any missing parent)
when it starts: the lock, the decision key, the embedded NATS store, the SQLite file. If it
then fails before every service is ready (a bad value found at start, a port in use, no
Kubernetes), nothing worth keeping was recorded, and a new user would find a stray
`.gangsched/`; so what it made is removed again: the directories, or in a data directory that
existed before, the entries it added there. Never a directory or file that existed before it
started; never once the run was ready (its run.json written: the log may hold decisions), nor
when a SQLite database in it holds a recorded round or event (a service got that far while
another never became ready: the audit log is kept); never on a clean stop.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import click

from services.cli import run_info
from services.config.paths import resolved


def first_missing(path: Path) -> Path | None:
    """The outermost of `path` and its parents that does not exist (the one whose making
    makes `path`), or None when `path` exists, or when it cannot be told (a name too long, no
    permission to look: nothing is then removed, and making the directory says why)."""
    missing = None
    for candidate in (path, *path.parents):
        try:
            if candidate.exists() or candidate.is_symlink():
                break
        except OSError:
            return None
        missing = candidate
    return missing


class StartGuard:
    """Tracks one service command's start in `data_dir` (looked at when it is made, before
    anything else touches the directory)."""

    def __init__(self, data_dir: Path) -> None:
        self.data_dir = data_dir
        self.created = first_missing(data_dir)
        self.before = set() if self.created is not None else _entries(data_dir)
        self.ready = False

    def note_ready(self) -> None:
        """Record whether the run was ever ready (its own run.json is there, not one another
        process wrote or left behind): call before it is removed."""
        self.ready = self.ready or run_info.owner(self.data_dir) == os.getpid()

    @contextlib.contextmanager
    def removing_on_failure(self, *, exclusive: bool) -> Iterator[None]:
        """Run the body; if it fails (an exception, or an exit with a non-zero status) before
        the run was ready, remove the directories made since this guard was made.
        `exclusive`: this process holds the data directory's lock, so all in it is its own
        (removed with its content); otherwise only directories left empty are removed.
        """
        try:
            yield
        except BaseException as error:
            if not self.ready and _failed(error) and not holds_records(self.data_dir):
                self._remove(exclusive=exclusive)
            raise

    def _remove(self, *, exclusive: bool) -> None:
        """Remove `created` with its content, or the entries added to the data directory that
        existed (`exclusive`); else only the directories left empty, from `data_dir` up to
        `created`."""
        if exclusive and self.created is None:
            for name in _entries(self.data_dir) - self.before:
                added = self.data_dir / name
                if added.is_dir() and not added.is_symlink():
                    shutil.rmtree(added, ignore_errors=True)
                else:
                    added.unlink(missing_ok=True)
            return
        if self.created is None:
            return
        if exclusive:
            shutil.rmtree(self.created, ignore_errors=True)
            return
        for directory in (self.data_dir, *self.data_dir.parents):
            with contextlib.suppress(OSError):
                directory.rmdir()
            if directory == self.created:
                return


RECORD_TABLES = ("rounds", "audit_events")
"""Tables whose rows are the audit log (services/store/tables.py): rounds planned, events seen."""


def holds_records(data_dir: Path) -> bool:
    """Whether a SQLite database directly in `data_dir` (`*.db`) holds a row of `RECORD_TABLES`;
    a file that cannot be read as one counts as holding records (kept: never guess it away)."""
    for database in sorted(data_dir.glob("*.db")) if data_dir.is_dir() else ():
        try:
            with contextlib.closing(sqlite3.connect(f"{resolved(database).as_uri()}?mode=ro",
                                                    uri=True)) as connection:
                names = {row[0] for row in connection.execute(
                    "SELECT name FROM sqlite_master WHERE type = 'table'")}
                for table in RECORD_TABLES:
                    if table in names and connection.execute(
                            f"SELECT 1 FROM {table} LIMIT 1").fetchone() is not None:
                        return True
        except (sqlite3.Error, OSError, ValueError):
            return database.stat().st_size > 0 if database.exists() else False
    return False


def _entries(directory: Path) -> set[str]:
    """The names in `directory` (none when it cannot be listed)."""
    try:
        return {entry.name for entry in directory.iterdir()}
    except OSError:
        return set()


def _failed(error: BaseException) -> bool:
    """Whether `error` ends the command with a non-zero status (not a clean stop: ^C, exit 0)."""
    if isinstance(error, SystemExit):
        return error.code not in (0, None)
    if isinstance(error, click.exceptions.Exit):
        return error.exit_code != 0
    return not isinstance(error, KeyboardInterrupt | GeneratorExit)
