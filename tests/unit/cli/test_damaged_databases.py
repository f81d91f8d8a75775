"""A damaged database is told in one line naming what is damaged, with status 1, never a
traceback: a row holding a value the planner never writes (SQLite keeps any value in any
column), a table or column gone, a version table recording two revisions; and `migrate`
leaves another application's database alone."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import pytest
from click.testing import CliRunner

from services.cli import exit_codes
from services.cli.main import app

DAMAGED = "Error: the database {path} is damaged: "


def invoke(*argv: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, list(argv), env={"GANGSCHED_NATS": ""})
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    return result.exit_code, result.output


def damaged(log: str, tmp_path: Path, *statements: str) -> Path:
    """A copy of the recorded log `log` with `statements` run on it."""
    path = tmp_path / "damaged.db"
    shutil.copy(log, path)
    with sqlite3.connect(path) as connection:
        for statement in statements:
            connection.execute(statement)
    connection.close()
    return path


@pytest.mark.parametrize(("statement", "told"), [
    ("UPDATE outbox SET data = X'00FF' WHERE id = '8-0'",
     "table outbox, row id '8-0': data is not UTF-8 text (invalid start byte at byte 1)"),
    ("UPDATE outbox SET data = '[1]' WHERE id = '8-0'",
     "table outbox, row id '8-0': data is a JSON list, not a decision's object"),
    ("UPDATE outbox SET data = '{\"n\":' WHERE id = '8-0'",
     "table outbox, row id '8-0': data is not JSON (Expecting value: line 1 column 6 (char 5))"),
    ("UPDATE outbox SET data = 5 WHERE id = '8-0'",
     "table outbox, row id '8-0': data holds an integer 5, not bytes"),
    ("UPDATE outbox SET plan_seq = 'x8' WHERE id = '8-0'",
     "table outbox, row id '8-0': plan_seq holds text 'x8', not an integer"),
    ("UPDATE audit_events SET data = '{\"type\":\"Bogus\"}' WHERE seq = 1",  # TEXT, not BLOB
     "table audit_events, row seq 1: data is no event: Invalid value 'Bogus' - at `$.type`"),
    ("UPDATE audit_events SET data = CAST('{\"type\":\"Bogus\"}' AS BLOB) WHERE seq = 1",
     "table audit_events, row seq 1: data is no event: Invalid value 'Bogus' - at `$.type`"),
    ("UPDATE audit_events SET data = 7 WHERE seq = 2",
     "table audit_events, row seq 2: data holds an integer 7, not bytes"),
    ("UPDATE audit_events SET subject = X'41' WHERE seq = 2",
     "table audit_events, row seq 2: subject holds bytes b'A', not text"),
    ("UPDATE audit_events SET seq = 'two' WHERE seq = 2",
     "table audit_events, row seq 'two': seq holds text 'two', not an integer"),
    ("UPDATE rounds SET plan_seq = 2.5 WHERE plan_seq = 8",
     "table rounds, row plan_seq 2.5: plan_seq holds a real number 2.5, not an integer"),
])
def test_replay_verify_names_the_damaged_row_in_one_line(
        log: str, tmp_path: Path, statement: str, told: str) -> None:
    path = damaged(log, tmp_path, statement)
    assert invoke("replay", "--verify", "--db", str(path)) == (
        exit_codes.FAILED, DAMAGED.format(path=path) + told + "\n")


@pytest.mark.parametrize(("statement", "told"), [
    ("UPDATE outbox SET data = X'00FF' WHERE id = '8-0'",
     "table outbox, row id '8-0': data is no decision: JSON is malformed: invalid character "
     "(byte 0)"),
    ("UPDATE audit_events SET data = X'00FF' WHERE seq = 3",
     "table audit_events, row seq 3: data is no event: JSON is malformed: invalid character "
     "(byte 0)"),
    ("UPDATE audit_events SET at_ms = 'soon' WHERE seq = 3",
     "table audit_events, row seq 3: at_ms holds text 'soon', not an integer"),
    # an id explain orders decisions by: these used to end it with a ValueError's traceback
    ("UPDATE outbox SET id = 'bogus', data = replace(data, '\"8-0\"', '\"bogus\"') "
     "WHERE id = '8-0'",
     "table outbox, row id 'bogus': id is not <plan_seq>-<position> of the row (8-0)"),
    ("UPDATE outbox SET data = replace(data, '\"8-0\"', '\"8-\u00b2\"') WHERE id = '8-0'",
     "table outbox, row id '8-0': data holds decision '8-\u00b2', not the row's"),
    ("UPDATE outbox SET position = 5 WHERE id = '8-0'",
     "table outbox, row id '8-0': id is not <plan_seq>-<position> of the row (8-5)"),
])
def test_explain_names_the_damaged_row_in_one_line(
        log: str, tmp_path: Path, statement: str, told: str) -> None:
    path = damaged(log, tmp_path, statement)
    assert invoke("explain", "pod", "default/nginx-0", "--db", str(path)) == (
        exit_codes.FAILED, DAMAGED.format(path=path) + told + "\n")


@pytest.mark.parametrize(("statement", "lacks"), [
    ("DROP TABLE outbox", "table outbox"),
    ("DROP TABLE rounds", "table rounds"),
    ("ALTER TABLE audit_events DROP COLUMN data", "column audit_events.data"),
])
@pytest.mark.parametrize("command", [["replay"], ["replay", "--verify"],
                                     ["explain", "pod", "default/nginx-0"]])
def test_a_table_or_column_gone_is_told_before_anything_is_read(
        log: str, tmp_path: Path, statement: str, lacks: str, command: list[str]) -> None:
    path = damaged(log, tmp_path, statement)
    url = f"sqlite+aiosqlite:///{path}"
    assert invoke(*command, "--db", str(path)) == (
        exit_codes.FAILED, f"Error: database {url} is at schema revision 0004 but lacks "
                           f"{lacks}: it is damaged; restore it from a backup or use a new "
                           "database\n")


TWO_REVISIONS = ("Error: database {url} has a damaged version table: alembic_version records 2 "
                 "revisions (0001, 0004) instead of one, so no gangsched can tell which "
                 "revision the database is at: keep only the row of the revision it is at "
                 "(`DELETE FROM alembic_version WHERE version_num = '<other revision>'`), or "
                 "use a new database")


@pytest.mark.parametrize("command", [["migrate", "--log-level", "WARNING"], ["replay"],
                                     ["explain", "pod", "default/nginx-0"]])
def test_a_version_table_with_two_revisions_is_told_in_one_line(
        log: str, tmp_path: Path, command: list[str]) -> None:
    path = damaged(log, tmp_path, "INSERT INTO alembic_version VALUES ('0001')")
    url = f"sqlite+aiosqlite:///{path}"
    assert invoke(*command, "--db", str(path)) == (
        exit_codes.FAILED, TWO_REVISIONS.format(url=url) + "\n")


def test_a_service_refuses_a_version_table_with_two_revisions_in_one_line(
        log: str, tmp_path: Path) -> None:
    path = damaged(log, tmp_path, "INSERT INTO alembic_version VALUES ('0001')")
    key = tmp_path / "key"
    key.write_text("0123456789abcdef" * 4 + "\n")
    key.chmod(0o600)
    code, output = invoke("planner", "--nats", "nats://127.0.0.1:1", "--db", str(path),
                          "--decision-key-file", str(key), "--http-port", "-1",
                          "--log-level", "CRITICAL")
    assert (code, output.splitlines()[-1]) == (
        exit_codes.FAILED, TWO_REVISIONS.format(url=f"sqlite+aiosqlite:///{path}"))


def test_a_migration_step_the_database_refuses_is_one_line_and_changes_nothing(
        tmp_path: Path) -> None:
    """A database recording an older revision than its tables have (its version table
    edited): the step adding a column finds it there. This used to be a traceback."""
    path = tmp_path / "edited.db"
    assert invoke("migrate", "--db", str(path), "--log-level", "WARNING")[0] == exit_codes.OK
    with sqlite3.connect(path) as connection:
        connection.execute("UPDATE alembic_version SET version_num = '0003'")
    connection.close()
    url = f"sqlite+aiosqlite:///{path}"
    assert invoke("migrate", "--db", str(path), "--log-level", "WARNING") == (
        exit_codes.FAILED,
        f"Error: database {url} records schema revision 0003, but upgrading it to 0004 failed "
        "(duplicate column name: last_stored_at_us): its tables are not those of that "
        "revision (changed by hand, or its alembic_version table edited); nothing was "
        "changed: restore it from a backup or use a new database\n")
    with sqlite3.connect(path) as connection:
        assert connection.execute("SELECT version_num FROM alembic_version").fetchall() == [
            ("0003",)]
    connection.close()


def through_asyncpg(error: Exception) -> Exception:
    """`error` as SQLAlchemy raises it from asyncpg: translated by its adapter, wrapped."""
    import asyncpg
    from sqlalchemy.dialects.postgresql.asyncpg import AsyncAdapt_asyncpg_dbapi
    from sqlalchemy.exc import DBAPIError

    dbapi = AsyncAdapt_asyncpg_dbapi(asyncpg)  # type: ignore[no-untyped-call]  # untyped in SQLAlchemy
    kind = next(dbapi._asyncpg_error_translate[super_] for super_ in type(error).__mro__
                if super_ in dbapi._asyncpg_error_translate)
    adapted: Exception = kind(error.args[0], error)
    adapted.__cause__ = error
    return DBAPIError.instance("ALTER TABLE outbox ADD COLUMN x", {}, adapted, dbapi.Error)


REFUSED_BY_HAND_EDITS = (": its tables are not those of that revision (changed by hand, or its "
                         "alembic_version table edited); nothing was changed: restore it from "
                         "a backup or use a new database\n")


@pytest.mark.parametrize(("refused", "told"), [
    ("InsufficientPrivilegeError", "(permission denied for table outbox); nothing was changed\n"),
    ("DiskFullError", "(could not extend file); nothing was changed\n"),
    ("LockNotAvailableError", "(lock timeout); nothing was changed\n"),
    ("DuplicateColumnError", "(column exists)" + REFUSED_BY_HAND_EDITS),
    ("DuplicateTableError", "(table exists)" + REFUSED_BY_HAND_EDITS),
    ("UndefinedColumnError", "(no column)" + REFUSED_BY_HAND_EDITS),
    ("UndefinedTableError", "(no table)" + REFUSED_BY_HAND_EDITS),
    ("UndefinedObjectError", "(no index)" + REFUSED_BY_HAND_EDITS),
    ("DuplicateObjectError", "(index exists)" + REFUSED_BY_HAND_EDITS),
])
def test_a_migration_step_refused_for_another_reason_blames_no_hand_edit(
        refused: str, told: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Only a table or column found already there (or missing) says the database was changed
    by hand; no privilege, a full disk or a lock timeout (PostgreSQL's SQLSTATE 42501, 53100,
    55P03) say nothing of its tables. Every refusal used to be blamed on a hand edit."""
    import asyncpg

    from services.store import schema

    reason = told[1:told.index(")")]
    error = through_asyncpg(getattr(asyncpg.exceptions, refused)(reason))

    def refuse(*args: object) -> None:
        raise error

    path = tmp_path / "state.db"
    assert invoke("migrate", "--db", str(path), "--log-level", "WARNING")[0] == exit_codes.OK
    with sqlite3.connect(path) as connection:
        connection.execute("UPDATE alembic_version SET version_num = '0003'")
    connection.close()
    monkeypatch.setattr(schema, "_upgrade", refuse)
    assert invoke("migrate", "--db", str(path), "--log-level", "WARNING") == (
        exit_codes.FAILED, f"Error: database sqlite+aiosqlite:///{path} records schema revision "
                           f"0003, but upgrading it to 0004 failed {told}")


def test_migrate_leaves_another_applications_database_alone_and_takes_an_empty_one(
        tmp_path: Path) -> None:
    path = tmp_path / "shop.db"
    with sqlite3.connect(path) as connection:
        connection.execute("CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT)")
        connection.execute("CREATE VIEW names AS SELECT name FROM customers")
        connection.execute("INSERT INTO customers VALUES (1, 'Ada')")
    connection.close()
    url = f"sqlite+aiosqlite:///{path}"
    refused = (f"Error: database {url} is not gangsched's: it holds other tables (customers) "
               "and no gangsched schema, and gangsched adds its tables only to an empty "
               "database: give it a database of its own\n")
    assert invoke("migrate", "--db", str(path), "--log-level", "WARNING") == (
        exit_codes.FAILED, refused)
    assert invoke("replay", "--db", str(path)) == (exit_codes.FAILED, refused)
    with sqlite3.connect(path) as connection:
        names = connection.execute("SELECT name FROM sqlite_master ORDER BY name").fetchall()
    connection.close()
    assert names == [("customers",), ("names",)]

    empty = tmp_path / "empty.db"  # empty: a new file, or only alembic's empty version table
    empty.write_bytes(b"")
    stamped = tmp_path / "stamped.db"
    with sqlite3.connect(stamped) as connection:
        connection.execute("CREATE TABLE alembic_version (version_num VARCHAR(32) NOT NULL)")
    connection.close()
    viewed = tmp_path / "viewed.db"  # a view alone (as an extension may add) is no table
    with sqlite3.connect(viewed) as connection:
        connection.execute("CREATE VIEW pg_stat_statements AS SELECT 1")
    connection.close()
    for path in (empty, stamped, viewed):
        assert invoke("migrate", "--db", str(path), "--log-level", "WARNING") == (
            exit_codes.OK, "database at head revision 0004 (upgraded from an empty database)\n")
