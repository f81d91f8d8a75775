"""Ctrl-C (SIGINT) or SIGTERM while a service command starts stops it as the same signal once it
runs does: the log line `received SIGINT; shutting down` (or SIGTERM), exit status 0, and no
traceback, `KeyboardInterrupt`, click's `Aborted!` or death by SIGTERM's default (exit status
143, as before SIGTERM was held), wherever the start-up was: importing the command line,
parsing options, making the data directory, setting up the event loop, or running.

Each SIGINT is sent when the process shows that it reached a point of its start-up, never after
a guessed delay: the import of a module (Python's own import-time report, PYTHONPROFILEIMPORTTIME:
a line on standard error as each import completes), or a line of its log. The process goes on
meanwhile, so the signal lands at that point or a little later: while its start-up holds it, or
once its shutdown handlers are installed (the Ctrl-C of a running service, the last point), and
the two must not be told apart. Before gangsched's first line runs (the interpreter's own
start-up, a few tens of milliseconds) no code of gangsched can handle a signal: that is not
tested here (`tests/unit/runtime/test_interrupts.py` holds one deterministically).
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from tests.integration.test_run_locked_down import KUBECONFIG

pytestmark = pytest.mark.integration

GANGSCHED = str(Path(sys.executable).with_name("gangsched"))
STOPPED = "INFO services.runtime.shutdown: received {}; shutting down"
"""What a running service logs for a signal that stops it (`services.runtime.shutdown`)."""
LOG_TIME = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} ")
"""The date and time that start each line of the log (`main.configure_logging`)."""
LOG_LINE = re.compile(r"^(DEBUG|INFO|WARNING) [\w.]+: \S")
"""A line of the log, its time left out, below ERROR: what a stop by Ctrl-C may tell, unlike a
traceback, `KeyboardInterrupt`, click's `Aborted!` (after a blank line) or an error."""
IMPORTED = "import time:"
"""How each line of Python's import-time report starts (the module's name is its last column)."""
GIVE_UP_SECONDS = 120.0

POINTS = {
    "click": "importing the command line: the entry point's first imports",
    "services.cli.audit": "importing the command line: its last imports",
    "services.cli.failed_start": "options parsed; the data directory not yet made nor locked",
    "services.runtime.shutdown": "in asyncio.run, before the shutdown handlers are installed",
    "embedded nats-server at": "running: the embedded nats-server started (a log line)",
}
"""Where in the start-up of `gangsched run` each SIGINT is sent: when this module's import
completes, or this text is logged."""


def _reached(line: str, point: str) -> bool:
    """Whether the line of standard error shows that the process reached `point`."""
    if line.startswith(IMPORTED):
        return line.rsplit("|", 1)[-1].strip() == point
    return point in line


def interrupted(tmp_path: Path, argv: list[str], point: str,
                sig: signal.Signals = signal.SIGINT) -> tuple[int, str, list[str]]:
    """`gangsched *argv`, sent `sig` once it reached `point`: its exit status, its standard
    output and the lines of its standard error but Python's import-time report, without the
    time of a log line."""
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(KUBECONFIG)
    process = subprocess.Popen(
        [GANGSCHED, *argv, "--kubeconfig", str(kubeconfig), "--http-port", "-1",
         "--data-dir", str(tmp_path / "data")],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp_path,
        env={**os.environ, "PYTHONPROFILEIMPORTTIME": "1", "PYTHONUNBUFFERED": "1"})
    watchdog = threading.Timer(GIVE_UP_SECONDS, process.kill)  # never reached, or never stops
    watchdog.start()
    sent, said = False, []
    try:
        assert process.stderr is not None and process.stdout is not None
        for line in process.stderr:
            if not sent and _reached(line, point):
                process.send_signal(sig)
                sent = True
            if not line.startswith(IMPORTED):
                said.append(LOG_TIME.sub("", line.rstrip("\n")))
        output = process.stdout.read()
        code = process.wait()
    finally:
        watchdog.cancel()
        process.kill()
    assert sent, f"never reached {point!r}:\n{''.join(said)}"
    return code, output, said


@pytest.mark.parametrize("point", list(POINTS), ids=list(POINTS.values()))
def test_ctrl_c_while_run_starts_stops_it_as_once_it_runs(tmp_path: Path, point: str) -> None:
    code, output, said = interrupted(tmp_path, ["run"], point)
    assert (code, output, said.count(STOPPED.format("SIGINT"))) == (0, "", 1), "\n".join(said)
    assert [line for line in said if not LOG_LINE.match(line)] == [], "\n".join(said)


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
@pytest.mark.parametrize("point", ["click", "services.cli.failed_start",
                                   "services.runtime.shutdown"])
def test_a_signal_while_a_service_starts_alone_stops_it_quietly(
        tmp_path: Path, point: str, sig: signal.Signals) -> None:
    code, output, said = interrupted(
        tmp_path, ["watcher", "--nats", "nats://127.0.0.1:1"], point, sig)
    assert (code, output, said.count(STOPPED.format(sig.name))) == (0, "", 1), "\n".join(said)
    assert [line for line in said if not LOG_LINE.match(line)] == [], "\n".join(said)


@pytest.mark.parametrize("point", ["services.cli.audit", "services.runtime.shutdown"])
def test_sigterm_while_run_starts_stops_it_as_once_it_runs(tmp_path: Path, point: str) -> None:
    code, output, said = interrupted(tmp_path, ["run"], point, signal.SIGTERM)
    assert (code, output, said.count(STOPPED.format("SIGTERM"))) == (0, "", 1), "\n".join(said)
    assert [line for line in said if not LOG_LINE.match(line)] == [], "\n".join(said)
