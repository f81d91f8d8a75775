"""A data directory on a full disk: `run` says so in one line and exits 1, leaving no partial
file (an empty decision.key blocked every later start until removed by hand), and a start
racing another on a new directory reads the key the other made whole.

The disk is filled by failing the writes of the files gangsched makes (`os.fdopen`'s files,
the lock's `os.pwrite`) with ENOSPC, and, end to end, by a file size limit of 0 (EFBIG): no
mount needed.
"""

from __future__ import annotations

import errno
import logging
import os
import resource
import subprocess
import sys
from pathlib import Path
from types import TracebackType
from typing import Any

import pytest
from click.testing import CliRunner

from services.bus import embedded
from services.cli import data_dir_lock, decision_keys, serve
from services.cli.main import app
from services.config.settings import Settings
from services.runtime.health import Readiness
from services.runtime.private_files import write_private, write_private_once

RUN = ("watcher", "planner", "binder")
FULL = os.strerror(errno.ENOSPC)  # No space left on device
ENV = {"GANGSCHED_NATS": "", "GANGSCHED_DECISION_KEY_FILE": ""}


class _FullFile:
    """A file opened on a full disk: each write fails with ENOSPC."""

    def __init__(self, file: Any) -> None:
        self._file = file

    def __enter__(self) -> _FullFile:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        self._file.close()

    def write(self, text: str) -> int:
        raise OSError(errno.ENOSPC, FULL)

    def flush(self) -> None:
        self._file.flush()

    def fileno(self) -> int:
        return int(self._file.fileno())

    def close(self) -> None:
        self._file.close()


@pytest.fixture
def full_disk(monkeypatch: pytest.MonkeyPatch) -> None:
    """Files opened with `os.fdopen` (how gangsched writes its private files) take no byte."""
    real = os.fdopen
    monkeypatch.setattr(os, "fdopen", lambda fd, *args, **kwargs: _FullFile(
        real(fd, *args, **kwargs)))


def _run(data: Path) -> tuple[int, str]:
    result = CliRunner().invoke(app, ["run", "--data-dir", str(data), "--http-port", "-1"],
                                env=ENV)
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    return result.exit_code, result.output


@pytest.mark.usefixtures("full_disk")
def test_run_on_a_full_disk_is_one_line_and_leaves_no_key_file(tmp_path: Path) -> None:
    data = tmp_path / "data"
    assert _run(data) == (
        1, f"Error: cannot create the decision key file {data / 'decision.key'}: {FULL}\n")
    assert not data.exists()  # no empty key, no temporary file: the directory made, unmade
    data.mkdir()
    assert _run(data)[0] == 1
    assert list(data.iterdir()) == []  # one that was there stays


def test_the_start_after_a_full_disk_makes_the_key(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    data = tmp_path / "data"
    with monkeypatch.context() as patched:
        real = os.fdopen
        patched.setattr(os, "fdopen", lambda fd, *args, **kwargs: _FullFile(
            real(fd, *args, **kwargs)))
        with pytest.raises(decision_keys.KeyNotMade):
            decision_keys.with_key(Settings(data_dir=data), RUN)
    settings = decision_keys.with_key(Settings(data_dir=data), RUN)
    assert settings.decision_key is not None
    assert len((data / "decision.key").read_text().strip()) == 64


def test_run_with_writes_refused_by_the_kernel_leaves_no_key_file(tmp_path: Path) -> None:
    """End to end: a file size limit of 0 fails every write to a file as a full disk does (with
    EFBIG); making a file of 0 bytes still succeeds, which left the empty key behind."""
    data = tmp_path / "data"
    result = subprocess.run(
        [sys.executable, "-m", "services.cli.main", "run", "--data-dir", str(data),
         "--http-port", "-1"],
        capture_output=True, text=True, timeout=60, check=False,
        env={**os.environ, **ENV, "PYTHONDONTWRITEBYTECODE": "1"},
        preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_FSIZE, (0, resource.RLIM_INFINITY)))
    assert (result.returncode, result.stderr) == (
        1, f"Error: cannot create the decision key file {data / 'decision.key'}: "
           f"{os.strerror(errno.EFBIG)}\n")
    assert not data.exists()


def test_an_empty_key_file_of_run_gets_a_new_key_and_a_warning(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """Left by an earlier gangsched on a full disk: it holds no key anything could have used."""
    (tmp_path / "decision.key").write_bytes(b"")
    with caplog.at_level(logging.WARNING):
        settings = decision_keys.with_key(Settings(data_dir=tmp_path), RUN)
    assert settings.decision_key is not None
    assert len((tmp_path / "decision.key").read_text().strip()) == 64
    assert "is empty (an earlier start stopped before writing its key)" in caplog.text


def test_an_empty_key_file_given_or_linked_to_is_never_replaced(tmp_path: Path) -> None:
    given = tmp_path / "given.key"
    given.write_bytes(b"")
    with pytest.raises(decision_keys.BadKey, match="0 bytes"):
        decision_keys.with_key(Settings(data_dir=tmp_path, decision_key_file=given), RUN)
    data = tmp_path / "data"
    data.mkdir()
    (data / "decision.key").symlink_to(given)  # e.g. a mounted Secret: the user's
    with pytest.raises(decision_keys.BadKey, match="0 bytes"):
        decision_keys.with_key(Settings(data_dir=data), RUN)
    assert given.read_bytes() == b"" and (data / "decision.key").is_symlink()


def test_a_run_racing_another_reads_the_key_the_other_made_whole(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    other = "b" * 64 + "\n"
    real = os.link

    def made_meanwhile(source: Any, target: Any) -> None:
        Path(target).write_text(other)  # the other `run` links its key first
        real(source, target)

    monkeypatch.setattr(os, "link", made_meanwhile)
    settings = decision_keys.with_key(Settings(data_dir=tmp_path), RUN)
    assert settings.decision_key is not None and settings.decision_key.secret == other.strip(
        ).encode()
    assert [path.name for path in tmp_path.iterdir()] == ["decision.key"]  # no temporary file


def test_a_lock_file_that_cannot_take_the_pid_is_one_line(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    data = tmp_path / "data"
    decision_keys.with_key(Settings(data_dir=data), RUN)  # made before the disk filled

    def full(fd: int, data: bytes, offset: int) -> int:
        raise OSError(errno.ENOSPC, FULL)

    monkeypatch.setattr(os, "pwrite", full)
    assert _run(data) == (1, f"Error: cannot use data directory {data}: {FULL}\n")


@pytest.mark.usefixtures("full_disk")
def test_write_private_on_a_full_disk_keeps_the_file_and_leaves_no_temporary(
        tmp_path: Path) -> None:
    path = tmp_path / "run.json"
    path.write_text("before\n")
    with pytest.raises(OSError, match=FULL):
        write_private(path, "after\n")
    assert [(p.name, p.read_text()) for p in tmp_path.iterdir()] == [("run.json", "before\n")]


@pytest.mark.usefixtures("full_disk")
def test_write_private_once_on_a_full_disk_makes_nothing(tmp_path: Path) -> None:
    with pytest.raises(OSError, match=FULL):
        write_private_once(tmp_path / "new.key", "key\n")
    assert list(tmp_path.iterdir()) == []


class _Server:
    """An embedded nats-server that starts at once (none runs)."""

    stopped = False
    fails_with: OSError | None = None

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        pass

    async def start(self) -> str:
        if _Server.fails_with is not None:
            raise _Server.fails_with
        return "nats://127.0.0.1:1"

    async def stop(self) -> None:
        _Server.stopped = True


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> type[_Server]:
    monkeypatch.setattr(embedded, "EmbeddedNats", _Server)
    _Server.stopped, _Server.fails_with = False, None
    return _Server


@pytest.mark.usefixtures("full_disk")
async def test_credentials_that_cannot_be_written_stop_the_server_in_one_line(
        tmp_path: Path, server: type[_Server]) -> None:
    with pytest.raises(data_dir_lock.DataDirUnusable) as refused:
        async with serve.bus_url(Settings(data_dir=tmp_path)):
            pass
    assert str(refused.value) == f"cannot use data directory {tmp_path}: {FULL}"
    assert server.stopped
    assert list(tmp_path.iterdir()) == []  # no .nats-credentials.json.tmp


async def test_a_server_that_cannot_write_its_files_is_one_line(
        tmp_path: Path, server: type[_Server]) -> None:
    server.fails_with = OSError(errno.ENOSPC, FULL)  # its configuration file
    with pytest.raises(data_dir_lock.DataDirUnusable, match=f"{tmp_path}: {FULL}"):
        async with serve.bus_url(Settings(data_dir=tmp_path)):
            pass
    server.fails_with = PermissionError(errno.EACCES, "Permission denied", "/bin/nats-server")
    with pytest.raises(PermissionError):  # not the data directory's: told as it is
        async with serve.bus_url(Settings(data_dir=tmp_path)):
            pass


@pytest.mark.usefixtures("full_disk")
async def test_a_run_file_that_cannot_be_written_is_warned_about_and_the_services_run_on(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING):
        await serve.announce_when_ready(Settings(data_dir=tmp_path), Readiness(), None,
                                        ("planner",))
    assert f"cannot write {tmp_path / 'run.json'}: {FULL}; the services run on" in caplog.text
    assert list(tmp_path.iterdir()) == []
