"""A SQLite `--db` whose directory is missing is refused in one line, naming it, and nothing
is created: a typo must not silently become a new tree. Only gangsched's own data directory
(the default database's home) is made when missing."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from services.cli import exit_codes
from services.cli.main import app
from services.store import schema


def invoke(*argv: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, [*argv, "--log-level", "WARNING"] if argv[0] == "migrate"
                                else list(argv), env={"GANGSCHED_NATS": ""})
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    return result.exit_code, result.output


@pytest.mark.parametrize("db", ["{tmp}/typo/deeper/state.db",
                                "sqlite+aiosqlite:///{tmp}/typo/deeper/state.db"])
def test_migrate_refuses_a_db_in_a_missing_directory_and_makes_none(
        db: str, tmp_path: Path) -> None:
    assert invoke("migrate", "--db", db.format(tmp=tmp_path)) == (
        exit_codes.FAILED,
        f"Error: cannot open the SQLite database {tmp_path}/typo/deeper/state.db: directory "
        f"{tmp_path}/typo does not exist (gangsched makes none for a --db it is given: create "
        "it first)\n")
    assert list(tmp_path.iterdir()) == []


def test_a_file_in_the_way_is_named(tmp_path: Path) -> None:
    (tmp_path / "notes").write_text("a file\n")
    assert invoke("migrate", "--db", f"{tmp_path}/notes/state.db") == (
        exit_codes.FAILED, f"Error: cannot open the SQLite database {tmp_path}/notes/state.db: "
                           f"{tmp_path}/notes is not a directory\n")


def test_a_service_refuses_it_too(tmp_path: Path) -> None:
    key = tmp_path / "key"
    key.write_text("0123456789abcdef" * 4 + "\n")
    key.chmod(0o600)
    code, output = invoke("planner", "--nats", "nats://127.0.0.1:1", "--db",
                          f"{tmp_path}/typo/state.db", "--decision-key-file", str(key),
                          "--http-port", "-1", "--log-level", "CRITICAL")
    assert (code, output.splitlines()[-1]) == (
        exit_codes.FAILED, f"Error: cannot open the SQLite database {tmp_path}/typo/state.db: "
                           f"directory {tmp_path}/typo does not exist (gangsched makes none "
                           "for a --db it is given: create it first)")
    assert sorted(path.name for path in tmp_path.iterdir()) == ["key"]


def test_the_default_database_makes_its_data_directory(tmp_path: Path) -> None:
    data_dir = tmp_path / "new" / "data"
    assert invoke("migrate", "--data-dir", str(data_dir)) == (
        exit_codes.OK, f"database at head revision {schema.head_revision()} (upgraded from an "
                       "empty database)\n")
    assert (data_dir / "gangsched.db").is_file()


def test_migrate_prints_its_one_line_and_no_log_at_the_default_level(tmp_path: Path) -> None:
    """The real entry point, in a subprocess (logging set up afresh, at INFO): alembic's
    "Context impl" and "Running upgrade" lines are not shown, the one line says what ran."""
    import os
    import subprocess
    import sys

    gangsched = str(Path(sys.executable).with_name("gangsched"))

    def migrate(*more: str) -> tuple[int, str, str]:
        done = subprocess.run([gangsched, "migrate", "--data-dir", str(tmp_path), *more],
                              capture_output=True, text=True, timeout=60, check=False,
                              env={**os.environ, "GANGSCHED_LOG_LEVEL": "INFO"})
        return done.returncode, done.stdout, done.stderr

    head = schema.head_revision()
    assert migrate() == (exit_codes.OK, f"database at head revision {head} (upgraded from an "
                                        "empty database)\n", "")
    assert migrate() == (exit_codes.OK, f"database at head revision {head} (already)\n", "")
    code, _, told = migrate("--log-level", "DEBUG")  # asked for: alembic's log is there
    assert (code, "Context impl SQLiteImpl" in told) == (exit_codes.OK, True)


def test_a_uri_filename_is_left_to_sqlite_and_migrates(tmp_path: Path) -> None:
    url = f"sqlite:///file:{tmp_path}/state.db?uri=true"
    code, output = invoke("migrate", "--db", url)
    assert (code, output.startswith("database at head revision")) == (0, True)
    assert sorted(path.name for path in tmp_path.iterdir()
                  if not path.name.endswith(("-wal", "-shm"))) == ["state.db"]


def test_a_tilde_is_a_directory_name_to_sqlite_and_so_here(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    (tmp_path / "~").mkdir()
    code, output = invoke("migrate", "--db", "sqlite:///~/state.db")
    assert (code, output.startswith("database at head revision")) == (0, True)
    assert (tmp_path / "~" / "state.db").stat().st_mode & 0o777 == 0o600
    assert not (tmp_path / "home").exists()


def test_migrate_of_a_data_directory_in_use_is_refused_and_a_given_db_is_not(
        tmp_path: Path) -> None:
    """Its default database belongs to the process holding the directory (a `gangsched run`,
    here its lock): migrated under it, the running planner would meet a schema it did not
    expect. A --db elsewhere is shared by design (services apart) and needs no lock."""
    import os

    from services.cli import data_dir_lock

    data_dir = tmp_path / "data"
    with data_dir_lock.hold(data_dir):
        code, output = invoke("migrate", "--data-dir", str(data_dir))
        assert (code, output) == (exit_codes.FAILED, (
            f"Error: data directory {data_dir} is in use by another gangsched (pid "
            f"{os.getpid()}); stop it or give another --data-dir\n"))
        assert not (data_dir / "gangsched.db").exists()
        code, _ = invoke("migrate", "--data-dir", str(data_dir), "--db", str(tmp_path / "s.db"))
        assert code == exit_codes.OK
    assert invoke("migrate", "--data-dir", str(data_dir))[0] == exit_codes.OK
