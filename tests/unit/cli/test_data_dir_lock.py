"""One gangsched process per data directory: the second is refused in one line, the first
keeps its files."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from services.cli import data_dir_lock, run_info
from services.cli.main import app


def test_a_held_data_directory_refuses_a_second_holder_naming_the_pid(tmp_path: Path) -> None:
    with (data_dir_lock.hold(tmp_path / "data"),
          pytest.raises(data_dir_lock.DataDirUnusable) as refused,
          data_dir_lock.hold(tmp_path / "data")):
        pass
    assert str(refused.value) == (
        f"data directory {tmp_path / 'data'} is in use by another gangsched (pid {os.getpid()}); "
        "stop it or give another --data-dir")


def test_the_lock_is_released_when_the_holder_is_done(tmp_path: Path) -> None:
    with data_dir_lock.hold(tmp_path):
        pass
    with data_dir_lock.hold(tmp_path):
        assert (tmp_path / data_dir_lock.LOCK_FILE).read_text() == f"{os.getpid()}\n"


def test_a_data_directory_that_is_a_file_is_one_line(tmp_path: Path) -> None:
    path = tmp_path / "a-file"
    path.write_text("")
    with pytest.raises(data_dir_lock.DataDirUnusable) as refused, data_dir_lock.hold(path):
        pass
    assert str(refused.value) == f"cannot use data directory {path}: File exists"


def test_a_second_run_on_a_busy_data_directory_is_refused_and_leaves_its_files(
        tmp_path: Path) -> None:
    data = tmp_path / "data"
    run_info.write(data, {"nats": "nats://127.0.0.1:4222", "db": None})
    with data_dir_lock.hold(data):
        result = CliRunner().invoke(app, ["run", "--data-dir", str(data), "--http-port", "-1"],
                                    env={"GANGSCHED_NATS": ""})
    assert result.exit_code == 1
    assert result.output.strip() == (
        f"Error: data directory {data} is in use by another gangsched (pid {os.getpid()}); "
        "stop it or give another --data-dir")
    assert (data / run_info.RUN_FILE).is_file()  # the holder's run.json is not removed


def test_only_services_keeping_state_there_hold_the_data_directory() -> None:
    from services.config.settings import BusSettings, Settings, StoreSettings

    apart = Settings(bus=BusSettings(url="nats://nats:4222"),
                     store=StoreSettings(url="postgresql+asyncpg://db/g"))
    embedded = Settings()
    sqlite_planner = Settings(bus=BusSettings(url="nats://nats:4222"))
    assert not data_dir_lock.holds_state(apart, ("watcher",))
    assert not data_dir_lock.holds_state(apart, ("planner",))
    assert not data_dir_lock.holds_state(sqlite_planner, ("binder",))
    assert data_dir_lock.holds_state(sqlite_planner, ("planner",))
    assert data_dir_lock.holds_state(embedded, ("watcher", "planner", "binder"))
