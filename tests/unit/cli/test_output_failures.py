"""Standard output that cannot be written (a full disk, a reader gone, closed) is one line on
stderr and exit status 1, never a traceback, for every command: the real entry point, in
subprocesses."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from services.cli import exit_codes, output

GANGSCHED = str(Path(sys.executable).with_name("gangsched"))
"""The console script `pip install` made: the entry point users run."""
EXAMPLES = Path(__file__).resolve().parents[3] / "examples"
FULL = "Error: cannot write output: No space left on device\n"



COMMANDS = [
    ("version",),
    ("--version",),
    ("--help",),
    ("schema", "--out", "{tmp}"),
    ("simulate", str(EXAMPLES)),
    ("simulate", str(EXAMPLES), "-o", "json"),
    ("replay", "--db", "{log}"),
    ("replay", "--db", "{log}", "-o", "json"),
    ("explain", "pod", "default/nginx-0", "--db", "{log}"),
]


def run(argv: tuple[str, ...], stdout: int, log: str, tmp: Path) -> tuple[int, str]:
    """`gangsched ARGV` with standard output `stdout`: its exit status and standard error."""
    args = [arg.format(log=log, tmp=tmp) for arg in argv]
    result = subprocess.run([GANGSCHED, *args], stdout=stdout, stderr=subprocess.PIPE,
                            text=True, timeout=120, check=False,
                            env={**os.environ, "GANGSCHED_NATS": ""})
    return result.returncode, result.stderr


@pytest.mark.parametrize("argv", COMMANDS, ids=" ".join)
def test_a_full_disk_is_one_line_and_status_1(argv: tuple[str, ...], log: str,
                                               tmp_path: Path) -> None:
    with open("/dev/full", "w") as full:
        assert run(argv, full.fileno(), log, tmp_path) == (1, FULL)


@pytest.fixture
def gone_reader() -> Iterator[int]:
    """The write end of a pipe whose reader is gone (closed before anything is written), as
    `| head -1` once head has its line: every write is EPIPE."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        yield write_end
    finally:
        os.close(write_end)


@pytest.mark.parametrize("argv", COMMANDS, ids=" ".join)
def test_a_reader_gone_is_status_1_quietly(argv: tuple[str, ...], log: str, tmp_path: Path,
                                           gone_reader: int) -> None:
    """Nothing on stderr (no traceback, no "Exception ignored"), as Unix tools; still 1, so
    that a script does not take a report that is not all there for a success."""
    assert run(argv, gone_reader, log, tmp_path) == (1, "")


@pytest.mark.parametrize("argv", COMMANDS, ids=" ".join)
def test_a_closed_output_is_one_line_and_status_1(argv: tuple[str, ...], log: str,
                                                  tmp_path: Path) -> None:
    """`gangsched ... >&-`: Python starts with no `sys.stdout`; the first write fails."""
    args = [arg.format(log=log, tmp=tmp_path) for arg in argv]
    result = subprocess.run([GANGSCHED, *args], stderr=subprocess.PIPE, text=True, timeout=120,
                            check=False, preexec_fn=lambda: os.close(1),
                            env={**os.environ, "GANGSCHED_NATS": ""})
    assert (result.returncode, result.stderr) == (
        1, "Error: cannot write output: standard output is closed\n")


def test_a_writable_output_is_untouched(log: str, tmp_path: Path) -> None:
    out = tmp_path / "out.txt"
    with out.open("w") as file:
        assert run(("replay", "--db", "{log}", "--from-seq", "21"), file.fileno(), log,
                   tmp_path) == (0, "")
    assert out.read_text().count("\n") == 3  # the header and the two entries at 21


class FullDisk:
    """A standard output whose writes are buffered and whose flush fails: no space left."""

    def write(self, text: str) -> int:
        return len(text)

    def flush(self) -> None:
        raise OSError(28, "No space left on device")

    def fileno(self) -> int:
        raise OSError("no file descriptor")  # a test's capture


def exiting(code: int | None) -> Callable[[], None]:
    def main() -> None:
        print("a report that cannot all be written")
        raise SystemExit(code)
    return main


@pytest.mark.parametrize("code", [0, None])
def test_a_success_whose_output_fails_to_flush_is_status_1(
        code: int | None, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(sys, "stdout", FullDisk())
    with pytest.raises(SystemExit) as exited:
        output.guarded(exiting(code))
    assert exited.value.code == exit_codes.FAILED
    assert capsys.readouterr().err == FULL


def test_a_failure_in_flight_keeps_its_status_when_the_flush_fails_too(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "stdout", FullDisk())
    with pytest.raises(SystemExit) as exited:
        output.guarded(exiting(exit_codes.NEGATIVE))  # e.g. replay: "nothing to show"
    assert exited.value.code == exit_codes.NEGATIVE

    def crash() -> None:
        print("half a report")
        raise RuntimeError("a bug")

    with pytest.raises(RuntimeError, match="a bug"):  # its traceback, not "cannot write"
        output.guarded(crash)
