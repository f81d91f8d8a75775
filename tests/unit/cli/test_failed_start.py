"""A `gangsched run` that fails before it is ready removes the data directory it made (and
what it added to one that existed), never anything that was there before, never once ready."""

from __future__ import annotations

import contextlib
import socket
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from services.cli import exit_codes, run_info
from services.cli.failed_start import StartGuard, first_missing
from tests.unit.kube.test_default_kubeconfig import KUBECONFIG  # its server is never reached

GANGSCHED = str(Path(sys.executable).with_name("gangsched"))


@pytest.fixture
def busy_port() -> Iterator[int]:
    """A loopback port something else listens on."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        yield int(sock.getsockname()[1])


def run(data_dir: Path, port: int, kubeconfig: Path) -> tuple[int, str]:
    """`gangsched run` on `data_dir` and `--http-port port`: its status and last stderr line."""
    kubeconfig.write_text(KUBECONFIG)
    done = subprocess.run([GANGSCHED, "run", "--data-dir", str(data_dir), "--http-port",
                           str(port), "--kubeconfig", str(kubeconfig), "--log-level", "ERROR"],
                          capture_output=True, text=True, timeout=120, check=False)
    return done.returncode, done.stderr.strip().splitlines()[-1]


def in_use(port: int) -> str:
    return (f"Error: cannot serve /healthz, /readyz and /metrics on 127.0.0.1:{port}: error "
            f"while attempting to bind on address ('127.0.0.1', {port}): address already in "
            "use; give another --http-port (-1: none)")


def test_a_run_failing_at_start_removes_the_directories_it_made(
        tmp_path: Path, busy_port: int) -> None:
    assert run(tmp_path / "new" / "data", busy_port, tmp_path / "kc") == (
        exit_codes.FAILED, in_use(busy_port))
    assert sorted(path.name for path in tmp_path.iterdir()) == ["kc"]  # `new` too


def test_in_a_directory_that_existed_it_removes_only_what_it_added(
        tmp_path: Path, busy_port: int) -> None:
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    (data_dir / "notes.txt").write_text("mine\n")
    assert run(data_dir, busy_port, tmp_path / "kc") == (exit_codes.FAILED, in_use(busy_port))
    assert sorted(path.name for path in data_dir.iterdir()) == ["notes.txt"]
    assert (data_dir / "notes.txt").read_text() == "mine\n"


def fail(guard: StartGuard, *, exclusive: bool, error: BaseException) -> None:
    """Run a start that makes the data directory and a file in it, then raises `error`."""
    with pytest.raises(type(error)), guard.removing_on_failure(exclusive=exclusive):
        guard.data_dir.mkdir(parents=True, exist_ok=True)
        (guard.data_dir / "gangsched.db").write_text("")
        raise error


@pytest.mark.parametrize("error", [KeyboardInterrupt(), SystemExit(0), SystemExit(None)])
def test_a_clean_stop_keeps_everything(tmp_path: Path, error: BaseException) -> None:
    guard = StartGuard(tmp_path / "data")
    fail(guard, exclusive=True, error=error)
    assert sorted(path.name for path in (tmp_path / "data").iterdir()) == ["gangsched.db"]


def test_a_run_that_was_ready_keeps_everything_when_it_fails(tmp_path: Path) -> None:
    guard = StartGuard(tmp_path / "data")
    guard.data_dir.mkdir()
    run_info.write(guard.data_dir, {"nats": None, "db": None})
    guard.note_ready()
    fail(guard, exclusive=True, error=SystemExit(1))
    assert sorted(path.name for path in guard.data_dir.iterdir()) == ["gangsched.db", "run.json"]


def test_a_run_json_another_process_wrote_is_no_readiness_of_this_start(tmp_path: Path) -> None:
    """One left by a killed run (or a service run apart's): this start was never ready, and
    removes what it added (the run.json that was there stays)."""
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    (data_dir / "run.json").write_text('{"pid": 1}')
    guard = StartGuard(data_dir)
    guard.note_ready()
    fail(guard, exclusive=True, error=SystemExit(1))
    assert sorted(path.name for path in guard.data_dir.iterdir()) == ["run.json"]


def test_without_the_lock_only_empty_directories_it_made_go(tmp_path: Path) -> None:
    guard = StartGuard(tmp_path / "a" / "b")
    fail(guard, exclusive=False, error=RuntimeError("crash"))
    assert (tmp_path / "a" / "b" / "gangsched.db").is_file()  # may be another process's
    (tmp_path / "a" / "b" / "gangsched.db").unlink()
    guard = StartGuard(tmp_path / "c" / "d")
    with pytest.raises(SystemExit), guard.removing_on_failure(exclusive=False):
        guard.data_dir.mkdir(parents=True)
        raise SystemExit(2)
    assert sorted(path.name for path in tmp_path.iterdir()) == ["a"]  # c/d went, empty


def test_first_missing_is_the_outermost_directory_to_make(tmp_path: Path) -> None:
    assert (first_missing(tmp_path / "x" / "y"), first_missing(tmp_path)) == (tmp_path / "x",
                                                                             None)


def test_a_data_dir_that_cannot_be_looked_at_is_one_line_not_a_traceback(
        tmp_path: Path, busy_port: int) -> None:
    data_dir = tmp_path / ("a" * 300)  # a name too long for the file system: stat fails
    guard = StartGuard(data_dir)
    assert guard.created is None  # cannot tell what a failure would have made: nothing
    status, last = run(data_dir, busy_port, tmp_path / "kubeconfig")
    assert status == 1
    assert last.startswith("Error: ") and "File name too long" in last, last


def fail_after_recording(data_dir: Path, rounds: list[int]) -> None:
    """A start that makes `data_dir` and a database with `rounds` recorded, then exits 1
    (e.g. the binder never became ready)."""
    guard = StartGuard(data_dir)
    with pytest.raises(SystemExit), guard.removing_on_failure(exclusive=True):
        data_dir.mkdir()
        with contextlib.closing(sqlite3.connect(data_dir / "gangsched.db")) as db:
            db.execute("CREATE TABLE rounds (plan_seq INTEGER)")
            db.executemany("INSERT INTO rounds VALUES (?)", [(seq,) for seq in rounds])
            db.commit()
        raise SystemExit(1)


def test_a_database_holding_recorded_rounds_is_never_removed(tmp_path: Path) -> None:
    fail_after_recording(tmp_path / "data", [7])
    assert sorted(path.name for path in (tmp_path / "data").iterdir()) == ["gangsched.db"]


def test_an_empty_database_made_by_the_failed_start_goes(tmp_path: Path) -> None:
    fail_after_recording(tmp_path / "data", [])
    assert not (tmp_path / "data").exists()
