"""A run.json that is no file is told in one line, status 1, at once. `decisions` and `explain`
read `<data-dir>/run.json` (which `gangsched run` writes) for the NATS URL and database: a FIFO
there held them for ever waiting for a writer, a link to /dev/zero read until memory ran out
(a MemoryError traceback, or the machine's memory)."""

from __future__ import annotations

import os
import resource
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from services.cli import run_info, text_files

ROOT = Path(__file__).resolve().parents[3]
MEMORY_BYTES = 1 << 30
"""The address space the command is given: reading /dev/zero whole fails within it."""


def _limited() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_BYTES, MEMORY_BYTES))


def _run(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "services.cli.main", *argv], capture_output=True, text=True,
        timeout=20, cwd=ROOT, preexec_fn=_limited, check=False,
        env={**os.environ, "PYTHONPATH": str(ROOT), "GANGSCHED_NATS": "", "GANGSCHED_DB": ""})


@pytest.mark.parametrize(("make", "kind"), [
    (os.mkfifo, "a named pipe (FIFO)"),
    (lambda path: os.symlink("/dev/zero", path), "a character device"),
])
@pytest.mark.parametrize("argv", [["decisions"], ["explain", "default/p"]])
def test_a_run_json_that_is_no_file_is_one_line(tmp_path: Path, make: Callable[[Path], object],
                                                kind: str, argv: list[str]) -> None:
    """The whole file is unusable, so every option read from it is named: naming only the
    first one asked for sent a user round from `--prefix` to `--db` and back."""
    run_json = tmp_path / run_info.RUN_FILE
    make(run_json)
    result = _run(*argv, "--data-dir", str(tmp_path))
    assert (result.returncode, result.stdout, result.stderr) == (
        1, "", f"Error: cannot use {run_json}: it is {kind}, not a file; it is damaged or not "
               "gangsched's: give every one of --db, --nats and --prefix the command takes, or "
               "remove it if no `gangsched run` serves that directory\n")


def test_reading_only_a_regular_file_refuses_a_pipe_unopened_by_a_writer(
        tmp_path: Path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(text_files.TextFileRefused, match=r"^it is a named pipe \(FIFO\), not"):
        text_files.read_text(fifo, 10, regular_only=True)
    with pytest.raises(IsADirectoryError):
        text_files.read_text(tmp_path, 10, regular_only=True)
    (tmp_path / "big").write_text("x" * 11)
    with pytest.raises(text_files.TextFileRefused, match="larger than 10 bytes"):
        text_files.read_text(tmp_path / "big", 10, regular_only=True)
    assert run_info.load(tmp_path, "fifo") == {}
