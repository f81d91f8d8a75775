"""`gangsched decisions --data-dir DIR` never waits silently: a directory without gangsched's
data, or with the run.json of a run that died, is exit 1 at once in one line; following, it
says in one line what it waits for, once it follows: a NATS it cannot reach is the one line of
its error."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from services.cli import exit_codes, following
from services.cli.main import app


def decisions(*argv: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, ["decisions", *argv], env={"GANGSCHED_NATS": ""})
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    return result.exit_code, result.stdout, result.stderr


def test_a_directory_without_gangsched_data_is_one_line_and_status_1(tmp_path: Path) -> None:
    """(A missing one is told as by every command reading it: test_missing_data_dir.py.)"""
    data_dir = tmp_path / "empty"
    data_dir.mkdir()
    (data_dir / "notes.txt").write_text("not gangsched's\n")
    assert decisions("--data-dir", str(data_dir), "--follow") == (
        exit_codes.FAILED, "", f"Error: no NATS to read decisions from: {data_dir} holds no "
        "gangsched data (no run.json, database or lock): no gangsched runs there; give its "
        "--data-dir, or --nats\n")


def test_the_run_json_of_a_run_that_died_is_one_line_at_once(tmp_path: Path) -> None:
    """run.json and the embedded NATS's credentials left behind by a killed run, whose lock no
    process holds: no 10-second wait for a NATS that is gone."""
    (tmp_path / "run.json").write_text(json.dumps({"nats": "nats://127.0.0.1:1"}))
    (tmp_path / "nats-credentials.json").write_text(json.dumps({"user": "u", "password": "p"}))
    (tmp_path / "gangsched.db").write_bytes(b"")
    started = time.monotonic()
    assert decisions("--data-dir", str(tmp_path)) == (
        exit_codes.FAILED, "", f"Error: no NATS to read decisions from: the `gangsched run` in "
        f"{tmp_path} is no longer running (it stopped without removing its run.json: killed?). "
        f"The decisions recorded there can be read offline: gangsched replay --data-dir "
        f"{tmp_path}\n")
    assert time.monotonic() - started < 5


def test_the_run_json_of_a_gangsched_whose_pid_is_gone_is_one_line_at_once(
        tmp_path: Path) -> None:
    """A run.json naming its writer's pid, left by a killed gangsched of any kind (no
    credentials file: its NATS was not embedded): no wait for a NATS that may be gone."""
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    (tmp_path / "run.json").write_text(json.dumps({"nats": "nats://127.0.0.1:1",
                                                   "pid": gone.pid}))
    started = time.monotonic()
    assert decisions("--data-dir", str(tmp_path)) == (
        exit_codes.FAILED, "", f"Error: no NATS to read decisions from: the gangsched that "
        f"wrote {tmp_path}/run.json (pid {gone.pid}) is no longer running (it stopped without "
        "removing it: killed?); if its NATS at nats://127.0.0.1:1 still serves, give --nats "
        "nats://127.0.0.1:1\n")
    assert time.monotonic() - started < 5


@pytest.mark.parametrize(("given", "whose"), [
    ((), " of the gangsched in {tmp}"),
    (("--nats", "nats://127.0.0.1:4223", "--prefix", "team"), ""),
])
def test_following_says_in_one_line_what_it_waits_for(
        given: tuple[str, ...], whose: str, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "run.json").write_text(json.dumps({"nats": "nats://127.0.0.1:4222"}))

    async def nothing_yet(*_args: Any, started: Any = None, **_kwargs: Any) -> int:
        started()  # NATS reached, its DECISIONS stream found
        return 0

    monkeypatch.setattr(following, "print_decisions", nothing_yet)
    url, prefix = ("nats://127.0.0.1:4223", "team") if given else ("nats://127.0.0.1:4222",
                                                                    "gangsched")
    assert decisions("--data-dir", str(tmp_path), "--follow", *given) == (
        exit_codes.OK, "", f"following the decisions{whose.format(tmp=tmp_path)} on {url} "
        f"(prefix {prefix}): those stored, then each new one as it comes; Ctrl-C to stop\n")


def test_a_nats_that_cannot_be_reached_is_the_one_line_of_its_error(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """It used to say first what it was following, then that it could not."""
    from services.bus import connection
    from services.bus.errors import BusUnavailable

    async def unreachable(*_args: Any, **_kwargs: Any) -> None:
        raise BusUnavailable("NATS at nats://127.0.0.1:1 unreachable for 10s: connection refused")

    monkeypatch.setattr(connection, "connect", unreachable)
    assert decisions("--follow", "--nats", "nats://127.0.0.1:1") == (
        exit_codes.FAILED, "", "Error: NATS unavailable: NATS at nats://127.0.0.1:1 unreachable "
        "for 10s: connection refused\n")


@pytest.mark.parametrize("held", [False, True])
def test_a_run_json_that_is_a_directory_is_said_to_be_one(tmp_path: Path, held: bool) -> None:
    """It was told as a `gangsched run` not ready yet, to be tried again shortly, forever."""
    from services.cli import data_dir_lock

    (tmp_path / "run.json").mkdir()
    with data_dir_lock.hold(tmp_path) if held else contextlib.nullcontext():
        assert decisions("--data-dir", str(tmp_path)) == (
            exit_codes.FAILED, "", f"Error: no NATS to read decisions from: {tmp_path}/run.json "
            f"is a directory, not a file: a gangsched serving {tmp_path} writes its run.json "
            "there, naming its NATS; move that directory away, or give --nats\n")


def test_a_service_run_apart_that_is_not_ready_yet_is_not_called_a_gangsched_run(
        tmp_path: Path) -> None:
    """A planner run apart on the data directory's SQLite file holds its lock too, and writes
    run.json (naming the NATS it was given) once ready: neither `gangsched run` nor an
    embedded NATS."""
    from services.cli import data_dir_lock

    with data_dir_lock.hold(tmp_path):
        code, _, said = decisions("--data-dir", str(tmp_path))
    assert (code, said) == (exit_codes.FAILED, f"Error: no NATS to read decisions from: the "
                            f"gangsched in {tmp_path} (pid {os.getpid()}) is not ready yet: it "
                            "writes run.json, naming its NATS, once every service it runs is "
                            "ready; try again shortly\n")


def test_the_connection_lost_when_the_run_stops_is_said_in_words(
        monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    """Stopping the followed `gangsched run` logged `NATS client gangsched-decisions:
    UnexpectedEOF()` and a `ConnectionRefusedError(111, "Connect call failed (...)")` before
    the error line saying it stopped."""
    import asyncio
    import logging

    from nats.aio.client import Client
    from nats.errors import UnexpectedEOF

    from services.bus import connection
    from services.bus.errors import BusUnavailable
    from services.config.settings import BusSettings

    async def run_stops(*_args: Any) -> int:
        callbacks = connection._Callbacks("gangsched-decisions", Client())
        callbacks.connected = True  # following, then the server went away
        await callbacks.on_error(UnexpectedEOF())
        await callbacks.on_error(ConnectionRefusedError(
            111, "Connect call failed ('127.0.0.1', 36611)"))
        await asyncio.sleep(60)  # retrying, until the watch sees the run gone
        return 0

    monkeypatch.setattr(following, "_print", run_stops)
    monkeypatch.setattr(following, "WATCH_SECONDS", 0.01)
    with caplog.at_level(logging.WARNING, logger=connection.__name__), \
            pytest.raises(BusUnavailable, match="stopped"):
        asyncio.run(following.print_decisions(
            BusSettings(url="nats://127.0.0.1:36611"), None, follow=True, output="table",
            gone=lambda: "the gangsched in .gangsched stopped"))
    assert [record.getMessage() for record in caplog.records] == [
        "NATS client gangsched-decisions: the server closed the connection (unexpected EOF)",
        "NATS client gangsched-decisions: connection refused"]
