"""A data directory that does not exist, where a command would read it (`replay`, `explain`,
`decisions`: run.json, the database, the embedded NATS's credentials), is told in the same one
line by each, from one place (`data_dirs.missing`), exit status 1, naming the option that reads
elsewhere; it used to be the first thing each lacked (`no SQLite database at
<dir>/gangsched.db`, `no NATS to read decisions from: <dir> holds no gangsched data`). Given that
option, the directory is not read, and need not exist."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from services.cli import data_dirs, exit_codes, following
from services.cli.main import app

ROOT = Path(__file__).resolve().parents[3]

READERS = [
    (("replay",), "--db"),
    (("replay", "--verify"), "--db"),
    (("replay", "--source", "nats"), "--nats"),
    (("explain", "pod", "default/x"), "--db"),
    (("explain", "podgroup", "x"), "--db"),
    (("decisions",), "--nats"),
    (("decisions", "--follow"), "--nats"),
    (("decisions", "--type", "placement", "--podgroup", "x"), "--nats"),
]
"""Each command reading its data directory, and the option with which it reads none."""


def invoke(*argv: str, env: dict[str, str] | None = None) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, list(argv), env={"GANGSCHED_NATS": "", "GANGSCHED_DB": "",
                                                      **(env or {})})
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    return result.exit_code, result.stdout, result.stderr


@pytest.mark.parametrize(("argv", "instead"), READERS, ids=lambda value: " ".join(value)
                         if isinstance(value, tuple) else value)
def test_each_command_reading_it_says_so_in_the_same_line(
        tmp_path: Path, argv: tuple[str, ...], instead: str) -> None:
    data_dir = tmp_path / "typo" / "data"
    told = (f"Error: data directory {data_dir} does not exist: give the --data-dir of a "
            f"`gangsched run`, or {instead}\n")
    assert told == f"Error: {data_dirs.missing(data_dir, instead)}\n"
    assert invoke(*argv, "--data-dir", str(data_dir)) == (exit_codes.FAILED, "", told)
    assert invoke(*argv, env={"GANGSCHED_DATA_DIR": str(data_dir)}) == (
        exit_codes.FAILED, "", told)
    assert not (tmp_path / "typo").exists()  # nothing made


def test_the_default_data_directory_is_named_as_given(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert invoke("explain", "pod", "x") == (
        exit_codes.FAILED, "", "Error: data directory .gangsched does not exist: give the "
                               "--data-dir of a `gangsched run`, or --db\n")


def test_given_the_database_or_nats_a_missing_data_directory_is_not_read(
        tmp_path: Path, log: str, monkeypatch: pytest.MonkeyPatch) -> None:
    missing = str(tmp_path / "missing")
    code, out, err = invoke("replay", "--verify", "--db", log, "--data-dir", missing)
    assert (code, err) == (exit_codes.OK, ""), err
    assert out.startswith("verified ")
    code, out, err = invoke("explain", "pod", "default/ghost", "--db", log, "--data-dir", missing)
    assert (code, err) == (exit_codes.NEGATIVE, ""), err  # read: the log never saw that pod

    async def one_decision(*_args: Any, **_kwargs: Any) -> int:
        return 1

    monkeypatch.setattr(following, "print_decisions", one_decision)
    assert invoke("decisions", "--nats", "nats://127.0.0.1:4223", "--data-dir", missing) == (
        exit_codes.OK, "", "")
    assert not Path(missing).exists()


def test_an_existing_directory_keeps_saying_what_it_lacks(tmp_path: Path) -> None:
    """Only a missing directory gets the shared line: an empty one still says which file or
    server it lacks."""
    assert invoke("explain", "pod", "x", "--data-dir", str(tmp_path)) == (
        exit_codes.FAILED, "", f"Error: no SQLite database at {tmp_path / 'gangsched.db'}\n")


def test_the_words_are_written_once() -> None:
    """One wording, from one place: no command spells it on its own."""
    words = "does not exist: give the --data-dir of a"
    holders = [path.relative_to(ROOT).as_posix() for path in (ROOT / "services").rglob("*.py")
               if words in path.read_text()]
    assert holders == ["services/cli/data_dirs.py"]
