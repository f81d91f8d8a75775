"""Which errors mean "the database cannot be reached or read" (one line for the user) and
which are bugs in a query (a traceback, not hidden behind that line)."""

from __future__ import annotations

import socket
import sqlite3

import pytest
from sqlalchemy.exc import DatabaseError, OperationalError, ProgrammingError

from services.store.errors import schema_conflict, unusable_database


def test_unreachable_or_unreadable_databases_are_named_by_their_driver_error() -> None:
    # a database socket the server closed (standard output failing is `OutputFailed`)
    assert unusable_database(BrokenPipeError(32, "Broken pipe")) == (
        "BrokenPipeError: [Errno 32] Broken pipe")
    refused = ConnectionRefusedError(111, "Connect call failed")
    assert unusable_database(refused) == "ConnectionRefusedError: [Errno 111] Connect call failed"
    assert unusable_database(socket.gaierror(-2, "Name or service not known")) == (
        "gaierror: [Errno -2] Name or service not known")
    not_a_db = DatabaseError("SELECT 1", {}, sqlite3.DatabaseError("file is not a database"))
    assert unusable_database(not_a_db) == "DatabaseError: file is not a database"
    locked = OperationalError("SELECT 1", {}, sqlite3.OperationalError("unable to open"))
    assert unusable_database(locked) == "OperationalError: unable to open"
    # raised by the driver itself (the audit reads its pages through it, not SQLAlchemy)
    assert unusable_database(sqlite3.OperationalError("disk I/O error")) == (
        "OperationalError: disk I/O error")
    assert unusable_database(sqlite3.DatabaseError("file is not a database")) == (
        "DatabaseError: file is not a database")


def test_a_postgresql_socket_that_is_missing_or_not_permitted_is_unreachable() -> None:
    """asyncpg raises `connect()`'s own error for a Unix socket (no file name): it used to
    end replay, explain and migrate with a traceback, and the planner's waiting too."""
    assert unusable_database(FileNotFoundError(2, "No such file or directory")) == (
        "FileNotFoundError: [Errno 2] No such file or directory")
    assert unusable_database(PermissionError(13, "Permission denied")) == (
        "PermissionError: [Errno 13] Permission denied")
    # a file that cannot be opened names it, and is no database's socket: a bug elsewhere
    assert unusable_database(FileNotFoundError(2, "No such file or directory", "x.py")) is None
    assert unusable_database(FileNotFoundError("alembic migrations not found")) is None


def test_a_bug_in_a_query_or_in_writing_output_is_not_hidden() -> None:
    bad_sql = ProgrammingError("SELEC 1", {}, sqlite3.ProgrammingError("syntax error"))
    assert unusable_database(bad_sql) is None
    assert unusable_database(sqlite3.ProgrammingError("syntax error")) is None
    assert unusable_database(OSError(28, "No space left on device")) is None
    assert unusable_database(ValueError("x")) is None


def test_a_query_of_its_own_mistake_is_not_an_unreachable_database() -> None:
    """Retried for ever as "cannot reach the database", these bugs would never be seen."""
    import asyncpg
    from sqlalchemy.exc import InterfaceError

    no_column = OperationalError("SELECT nope", {},
                                 sqlite3.OperationalError("no such column: nope"))
    syntax = OperationalError("SELEC 1", {}, sqlite3.OperationalError('near "SELEC": syntax'))
    bad_argument = InterfaceError("UPDATE outbox", {}, asyncpg.exceptions._base.DataError(
        "invalid input for query argument $1: 'x'"))
    twice = InterfaceError("SELECT 1", {}, asyncpg.exceptions._base.InterfaceError(
        "cannot perform operation: another operation is in progress"))
    for error in (no_column, syntax, bad_argument, twice):
        assert unusable_database(error) is None, error
    assert unusable_database(sqlite3.OperationalError("no such column: x")) is None
    closed = InterfaceError("SELECT 1", {}, asyncpg.exceptions._base.InterfaceError(
        "connection is closed"))
    assert unusable_database(closed) == "InterfaceError: connection is closed"


@pytest.mark.parametrize(("message", "conflict"), [
    ("duplicate column name: last_stored_at_us", True),
    ("table outbox already exists", True),
    ("index ix_outbox_seq already exists", True),
    ("no such column: last_stored_at_us", True),
    ("no such table: outbox", True),
    ("attempt to write a readonly database", False),
    ("database or disk is full", False),
    ("database is locked", False),
])
def test_only_an_object_already_there_or_missing_is_a_schema_conflict(
        message: str, conflict: bool) -> None:
    """`migrate` blames a hand-edited database for these alone."""
    assert schema_conflict(OperationalError("ALTER TABLE", {},
                                            sqlite3.OperationalError(message))) is conflict
    assert schema_conflict(ValueError(message)) is False  # no driver's error
