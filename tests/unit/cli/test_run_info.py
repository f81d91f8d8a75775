"""run.json and the embedded NATS's credentials file: 0600, no secret in run.json, and the
credentials only for the server run.json names."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from services.cli import data_dir_lock, run_info
from services.cli.main import app


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_run_json_is_private_and_keeps_no_password_of_any_url(tmp_path: Path) -> None:
    run_info.write(tmp_path, {
        "services": ["planner"], "nats": "nats://planner:natspw@nats:4222,nats://tok@n2:4222",
        "prefix": "p", "db": "postgresql+asyncpg://gangsched:dbpw@db:5432/gangsched",
        "http": None})
    path = tmp_path / "run.json"
    assert mode(path) == 0o600
    text = path.read_text()
    assert "natspw" not in text and "dbpw" not in text and "tok" not in text
    info = json.loads(text)
    assert info["nats"] == "nats://nats:4222,nats://n2:4222"
    assert info["db"] == "postgresql+asyncpg://gangsched@db:5432/gangsched"


def test_run_json_keeps_no_password_given_as_a_query_parameter(tmp_path: Path) -> None:
    run_info.write(tmp_path, {
        "nats": None, "db": "postgresql+asyncpg://gangsched@db/gangsched?password=dbpw&ssl=require"})
    text = (tmp_path / "run.json").read_text()
    assert "dbpw" not in text
    assert json.loads(text)["db"] == "postgresql+asyncpg://gangsched@db/gangsched?ssl=require"


def test_run_json_replaces_a_world_readable_one(tmp_path: Path) -> None:
    (tmp_path / "run.json").write_text("{}")
    (tmp_path / "run.json").chmod(0o644)
    run_info.write(tmp_path, {"nats": None, "db": None})
    assert mode(tmp_path / "run.json") == 0o600


def test_the_credentials_file_is_private_and_read_back_for_run_jsons_server(tmp_path: Path) -> None:
    run_info.write_credentials(tmp_path, "gangsched", "pw")
    assert mode(tmp_path / run_info.CREDENTIALS_FILE) == 0o600
    assert run_info.nats_credentials(None, tmp_path) == ("gangsched", "pw")


def test_the_embedded_credentials_are_never_sent_to_a_server_given_on_the_command_line(
        tmp_path: Path) -> None:
    run_info.write_credentials(tmp_path, "gangsched", "pw")
    assert run_info.nats_credentials("nats://elsewhere:4222", tmp_path) is None


def test_no_or_a_damaged_credentials_file_gives_no_credentials(tmp_path: Path) -> None:
    assert run_info.nats_credentials(None, tmp_path) is None
    (tmp_path / run_info.CREDENTIALS_FILE).write_text('{"user": "u"}')
    assert run_info.nats_credentials(None, tmp_path) is None


def test_run_json_records_its_writer_who_alone_removes_it(tmp_path: Path) -> None:
    run_info.write(tmp_path, {"nats": None, "db": None})
    assert run_info.owner(tmp_path) == os.getpid()
    run_info.write_credentials(tmp_path, "gangsched", "pw")
    run_info.remove_own(tmp_path)
    run_info.remove_credentials(tmp_path, "gangsched", "pw")
    assert list(tmp_path.iterdir()) == []


@pytest.fixture
def other_process() -> Iterator[int]:
    """The pid of another live process (a sleeping Python), ended after the test."""
    process = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    try:
        yield process.pid
    finally:
        process.kill()
        process.wait()


def written_by(data_dir: Path, pid: int | None) -> str:
    """Write a run.json as the process `pid` would have (None: without a pid, as an earlier
    gangsched did); its text."""
    text = json.dumps({"nats": "nats://127.0.0.1:4222", "db": None,
                       **({"pid": pid} if pid is not None else {})})
    data_dir.mkdir(exist_ok=True)
    (data_dir / "run.json").write_text(text)
    return text


def test_another_live_process_s_run_json_is_neither_removed_nor_replaced(
        tmp_path: Path, other_process: int) -> None:
    text = written_by(tmp_path, other_process)
    run_info.write_credentials(tmp_path, "theirs", "their-pw")
    run_info.remove_own(tmp_path)
    run_info.remove_credentials(tmp_path, "gangsched", "pw")  # another start's credentials
    assert (tmp_path / "run.json").read_text() == text
    assert run_info.load(tmp_path, run_info.CREDENTIALS_FILE) == {"user": "theirs",
                                                                   "password": "their-pw"}
    assert run_info.kept_by_another(tmp_path) == str(other_process)


def test_the_embedded_credentials_go_only_to_the_nats_its_lock_holder_wrote(
        tmp_path: Path, other_process: int) -> None:
    """The credentials are the lock holder's embedded server's: a run.json another process
    wrote (a service run apart against a shared NATS, ready before the `run` that holds the
    directory) names a server they must not be sent to."""
    written_by(tmp_path, other_process)
    run_info.write_credentials(tmp_path, "gangsched", "pw")
    with data_dir_lock.hold(tmp_path):
        assert run_info.nats_credentials(None, tmp_path) is None
        written_by(tmp_path, os.getpid())
        assert run_info.nats_credentials(None, tmp_path) == ("gangsched", "pw")


def test_a_run_json_of_a_process_gone_is_anybody_s_and_removed_by_any_stopping_gangsched(
        tmp_path: Path) -> None:
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    written_by(tmp_path, gone.pid)
    assert run_info.owner_alive(tmp_path) is False
    assert run_info.kept_by_another(tmp_path) is None
    run_info.remove_own(tmp_path)  # left behind by a killed gangsched: it would mislead
    assert not (tmp_path / "run.json").exists()
    assert run_info.kept_by_another(tmp_path / "none") is None


def test_a_run_json_naming_no_writer_is_removed_only_by_the_directorys_lock_holder(
        tmp_path: Path) -> None:
    text = written_by(tmp_path, None)  # an earlier gangsched's: it would hold the lock
    assert run_info.owner_alive(tmp_path) is None and run_info.kept_by_another(tmp_path) is None
    run_info.remove_own(tmp_path)
    assert (tmp_path / "run.json").read_text() == text
    with data_dir_lock.hold(tmp_path):
        run_info.remove_own(tmp_path)
    assert not (tmp_path / "run.json").exists()


def test_a_pid_given_to_another_process_or_a_zombie_is_no_live_writer(
        tmp_path: Path, other_process: int) -> None:
    written_by(tmp_path, other_process)
    info = json.loads((tmp_path / "run.json").read_text())
    (tmp_path / "run.json").write_text(json.dumps({**info, "started": 1}))  # another start
    assert run_info.owner_alive(tmp_path) is False
    assert run_info.kept_by_another(tmp_path) is None
    zombie = subprocess.Popen([sys.executable, "-c", "pass"])  # exits, never reaped here
    deadline = time.monotonic() + 30
    while run_info.process_start(zombie.pid) is not None and time.monotonic() < deadline:
        if Path(f"/proc/{zombie.pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z":
            break
        time.sleep(0.02)
    written_by(tmp_path, zombie.pid)
    assert run_info.owner_alive(tmp_path) is False
    zombie.wait()


HOLDER = """
import sys
import time
from pathlib import Path
from services.cli import data_dir_lock
with data_dir_lock.hold(Path(sys.argv[1])):
    print("held", flush=True)
    sys.stdin.read()
"""


def test_the_lock_holder_keeps_run_json_whoever_wrote_the_one_there(
        tmp_path: Path, other_process: int) -> None:
    """A `gangsched run` (which holds the lock) writes its run.json over one a service run
    apart wrote before it; a service run apart writes none where a `run` holds the lock."""
    written_by(tmp_path, other_process)
    with data_dir_lock.hold(tmp_path):
        assert run_info.kept_by_another(tmp_path) is None  # this process holds it: it writes
    run_info.write(tmp_path, {"nats": None, "db": None})
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(tmp_path)],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        assert run_info.kept_by_another(tmp_path) == str(holder.pid)  # even over our own
    finally:
        assert holder.stdin is not None
        holder.stdin.close()
        holder.wait()


DAMAGED = [
    ({"nats": "not a url", "db": "garbage"}, None),
    ({"db": "garbage"}, '"db"'),
    ({"db": "mysql://x/y"}, '"db"'),
    ({"db": 7}, '"db"'),
    ({"db": "sqlite://"}, '"db"'),
    ({"prefix": "a b"}, '"prefix"'),
    ([1], "not an object"),
]


@pytest.mark.parametrize(("content", "named"), DAMAGED)
@pytest.mark.parametrize("argv", [["replay"], ["replay", "--verify"], ["explain", "pod", "x"]])
def test_a_damaged_or_foreign_run_json_is_one_line_naming_it_and_the_field(
        content: object, named: str | None, argv: list[str], tmp_path: Path) -> None:
    if argv[0] == "explain" and named == '"prefix"':
        pytest.skip("explain reads no prefix")
    (tmp_path / "run.json").write_text(json.dumps(content))
    result = CliRunner().invoke(app, [*argv, "--data-dir", str(tmp_path)],
                                env={"GANGSCHED_NATS": "", "GANGSCHED_DB": ""})
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    assert result.exit_code == 1
    assert result.output.startswith(f"Error: cannot use {tmp_path / 'run.json'}: ")
    assert len(result.output.splitlines()) == 1
    if named is not None:
        assert named in result.output


@pytest.mark.parametrize("argv", [["replay"], ["explain", "pod", "x"], ["decisions"]])
def test_a_run_json_that_is_not_utf8_is_damaged_not_absent(argv: list[str],
                                                           tmp_path: Path) -> None:
    """It used to be read as no run.json at all: replay and explain fell back to the default
    database, decisions said no `gangsched run` was there."""
    (tmp_path / "run.json").write_bytes(b'\xff\xfe{"db": 1}')
    result = CliRunner().invoke(app, [*argv, "--data-dir", str(tmp_path)],
                                env={"GANGSCHED_NATS": "", "GANGSCHED_DB": ""})
    assert result.exit_code == 1
    assert result.output.startswith(f"Error: cannot use {tmp_path / 'run.json'}: it is not JSON "
                                    "(not UTF-8 text); it is damaged or not gangsched's: give ")
    assert len(result.output.splitlines()) == 1


def test_decisions_refuses_a_damaged_nats_url_at_once(tmp_path: Path) -> None:
    """Not a wait of 10 s for a server named `not a url`."""
    (tmp_path / "run.json").write_text(json.dumps({"nats": "nats://not a url"}))
    result = CliRunner().invoke(app, ["decisions", "--data-dir", str(tmp_path)],
                                env={"GANGSCHED_NATS": ""})
    assert result.exit_code == 1
    assert '"nats" is not a NATS URL' in result.output


def test_a_nats_url_of_run_json_naming_no_host_is_quoted_as_written(tmp_path: Path) -> None:
    (tmp_path / "run.json").write_text(json.dumps({"nats": "nats://"}))
    result = CliRunner().invoke(app, ["decisions", "--data-dir", str(tmp_path)],
                                env={"GANGSCHED_NATS": ""})
    assert result.exit_code == 1
    assert """its "nats" is not a NATS URL ('nats://' names no host)""" in result.output


def test_a_url_given_wins_over_a_damaged_run_json(tmp_path: Path) -> None:
    (tmp_path / "run.json").write_text(json.dumps({"db": 7, "nats": "x"}))
    assert run_info.database_url("sqlite+aiosqlite:///x.db", tmp_path) == \
        "sqlite+aiosqlite:///x.db"
    assert run_info.nats_url("nats://h:4222", tmp_path) == "nats://h:4222"
    with pytest.raises(run_info.Damaged, match='"db" is 7, not a database URL'):
        run_info.database_url(None, tmp_path)


def test_a_run_json_gangsched_wrote_is_read_back(tmp_path: Path) -> None:
    run_info.write(tmp_path, {"nats": "nats://127.0.0.1:4222", "prefix": "p.q",
                              "db": f"sqlite+aiosqlite:///{tmp_path}/gangsched.db"})
    assert run_info.nats_url(None, tmp_path) == "nats://127.0.0.1:4222"
    assert run_info.prefix(None, tmp_path) == "p.q"
    assert run_info.database_url(None, tmp_path) == f"sqlite+aiosqlite:///{tmp_path}/gangsched.db"
