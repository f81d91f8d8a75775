"""Every command taking --data-dir looks at it first: a path that cannot be a directory is one
line naming the data directory and what is wrong with it, in the read-only case's words,
never a failure of the first file made in it (`cannot create the decision key file ...`)."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from services.cli import exit_codes
from services.cli.main import app

COMMANDS = [("run", "--http-port", "-1"), ("migrate",), ("replay",), ("explain", "pod", "x"),
            ("decisions",),
            ("watcher", "--nats", "nats://127.0.0.1:1", "--http-port", "-1")]


def invoke(*argv: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, list(argv), env={"GANGSCHED_NATS": "",
                                                      "GANGSCHED_LOG_LEVEL": "CRITICAL"})
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    return result.exit_code, result.output


@pytest.mark.parametrize("command", COMMANDS, ids=lambda command: command[0])
def test_a_data_dir_that_is_a_file_is_named_so(tmp_path: Path, command: tuple[str, ...]) -> None:
    (tmp_path / "notes").write_text("a file\n")
    data_dir = tmp_path / "notes"
    assert invoke(*command, "--data-dir", str(data_dir)) == (
        exit_codes.FAILED,
        f"Error: cannot use data directory {data_dir}: it is a file, not a directory\n")
    assert invoke(*command, "--data-dir", str(data_dir / "gs")) == (
        exit_codes.FAILED, f"Error: cannot use data directory {data_dir / 'gs'}: {data_dir} is "
                           "a file, not a directory\n")
    assert sorted(path.name for path in tmp_path.iterdir()) == ["notes"]


@pytest.mark.parametrize("command", COMMANDS, ids=lambda command: command[0])
@pytest.mark.parametrize("target", ["loop", "missing/dir"])
def test_a_data_dir_that_is_a_link_to_nothing_is_named_so(
        tmp_path: Path, command: tuple[str, ...], target: str) -> None:
    """A loop of links used to be a RuntimeError's traceback (Python 3.11's `resolve`), a
    link to a missing directory `File exists` (from making it)."""
    data_dir = tmp_path / "loop"
    data_dir.symlink_to(tmp_path / target)
    assert invoke(*command, "--data-dir", str(data_dir)) == (
        exit_codes.FAILED, f"Error: cannot use data directory {data_dir}: it is a symbolic link "
                           "that leads to nothing (a loop, or a missing target)\n")


@pytest.mark.parametrize("command", [("replay",), ("migrate",), ("explain", "pod", "x")])
def test_a_database_that_is_a_loop_of_links_is_one_line(
        tmp_path: Path, command: tuple[str, ...]) -> None:
    database = tmp_path / "a.db"
    database.symlink_to(tmp_path / "b.db")
    (tmp_path / "b.db").symlink_to(database)
    code, output = invoke(*command, "--db", str(database))
    assert (code, output.count("\n")) == (exit_codes.FAILED, 1), output
    assert output.startswith("Error: ") and str(database) in output


@pytest.mark.skipif(not Path("/proc/self").is_dir(), reason="needs /proc")
def test_a_data_dir_that_cannot_be_made_is_named_not_its_decision_key() -> None:
    assert invoke("run", "--data-dir", "/proc/gangsched-test", "--http-port", "-1") == (
        exit_codes.FAILED, "Error: cannot use data directory /proc/gangsched-test: it cannot be "
                           "made there (No such file or directory)\n")
