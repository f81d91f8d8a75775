"""A `--db` that names a FIFO (a named pipe) or another file no SQLite database can be is told
in one line, status 1, at once. It used to hang: SQLite refused it, and the look at the file
that says why opened it to read its header, which a FIFO with no writer never gives."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from services.cli import databases
from services.config import file_kinds

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture
def fifo(tmp_path: Path) -> Path:
    path = tmp_path / "state.db"  # a name --db takes as a new SQLite file
    os.mkfifo(path)
    return path


def test_migrate_with_a_fifo_for_a_database_is_one_line_and_ends(fifo: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "services.cli.main", "migrate", "--db", str(fifo)],
        capture_output=True, text=True, timeout=20, cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT), "GANGSCHED_NATS": ""}, check=False)
    assert (result.returncode, result.stdout, result.stderr) == (
        1, "", f"Error: cannot open the SQLite database {fifo}: it is a named pipe (FIFO), "
               "not a SQLite database file\n")


def test_a_device_for_a_database_is_refused_before_sqlite_writes_beside_it(
        tmp_path: Path) -> None:
    """SQLite, given a device, wrote its journal beside it (as root, `/dev/zero-journal`); now
    the device is refused by its kind before SQLite opens it (before, the same refusal came
    only after SQLite had failed, worded `cannot migrate the database ...`)."""
    link = tmp_path / "state.db"
    link.symlink_to("/dev/null")
    result = subprocess.run(
        [sys.executable, "-m", "services.cli.main", "migrate", "--db", str(link)],
        capture_output=True, text=True, timeout=20, cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT), "GANGSCHED_NATS": ""}, check=False)
    assert (result.returncode, result.stdout, result.stderr) == (
        1, "", "Error: cannot open the SQLite database /dev/null: it is a character device, "
               "not a SQLite database file\n")  # the link followed, as SQLite would


def _within_seconds(seconds: float, call: Callable[[], str | None]) -> str | None:
    """`call()`, run in a daemon thread so that one hanging fails the test, not the run."""
    said: list[str | None] = []
    thread = threading.Thread(target=lambda: said.append(call()), daemon=True)
    thread.start()
    thread.join(seconds)
    assert said, f"still running after {seconds} s"
    return said[0]


def test_a_fifo_or_device_is_named_without_being_opened(fifo: Path) -> None:
    assert _within_seconds(10, lambda: databases.sqlite_problem(fifo, writing=False)) == (
        "it is a named pipe (FIFO), not a SQLite database file")
    assert databases.sqlite_problem(Path("/dev/zero"), writing=True) == (
        "it is a character device, not a SQLite database file")
    assert file_kinds.special_kind(fifo.parent) is None
    assert file_kinds.special_kind(fifo.parent / "missing.db") is None
