"""A database that cannot be used is told in words that fit why: `cannot write to` a full
disk, `cannot read` a file that holds no database, `cannot reach` a server that does not
answer. Both used to read `cannot reach the database ...: database or disk is full`."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
import sqlalchemy
from click.testing import CliRunner

from services.cli import serve
from services.cli.main import app
from services.store.errors import StoreUnavailable, reaching


def _sqlite_error(message: str) -> sqlalchemy.exc.OperationalError:
    return sqlalchemy.exc.OperationalError("INSERT", {}, sqlite3.OperationalError(message))


@pytest.mark.parametrize(("said", "words"), [
    ("database or disk is full", "cannot write to"),
    ("attempt to write a readonly database", "cannot write to"),
    ("file is not a database", "cannot read"),
    ("database disk image is malformed", "cannot read"),
    ("unable to open database file", "cannot reach"),
])
def test_the_planners_store_words_the_failure_by_its_reason(said: str, words: str) -> None:
    with pytest.raises(StoreUnavailable) as raised, reaching("sqlite+aiosqlite:///x.db"):
        raise _sqlite_error(said)
    assert str(raised.value) == (
        f"{words} the database sqlite+aiosqlite:///x.db: OperationalError: {said}")
    assert raised.value.why == f"OperationalError: {said}"  # how retries tell kinds apart


def test_a_full_disk_at_start_is_told_as_such(tmp_path: Path) -> None:
    database = tmp_path / "gangsched.db"
    sqlite3.connect(database).close()  # a SQLite file, nothing wrong with it but the disk
    with pytest.raises(StoreUnavailable) as raised, serve._unreachable_database(
            f"sqlite+aiosqlite:///{database}"):
        raise _sqlite_error("database or disk is full")
    assert str(raised.value) == (
        f"cannot write to the database {database}: OperationalError: database or disk is full")


def test_a_file_that_is_no_database_is_told_as_unreadable(tmp_path: Path) -> None:
    notes, key = tmp_path / "notes.db", tmp_path / "decision.key"
    notes.write_text("plain text\n")
    key.write_text("a" * 64 + "\n")
    key.chmod(0o600)
    result = CliRunner().invoke(app, [
        "planner", "--nats", "nats://127.0.0.1:1", "--db", str(notes), "--decision-key-file",
        str(key), "--data-dir", str(tmp_path / "data"), "--http-port", "-1"])
    assert (result.exit_code, result.output.strip().splitlines()[-1]) == (
        1, f"Error: cannot read the database {notes}: not a SQLite database file")
