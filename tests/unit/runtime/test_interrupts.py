"""A SIGINT or SIGTERM while a service starts is held (noted: no `KeyboardInterrupt`, no death
by SIGTERM's default), then acted on by `run_until_signalled` as one that comes once it runs; a
command that is no service gets SIGINT back as Python's `KeyboardInterrupt`, and SIGTERM's
default."""

from __future__ import annotations

import asyncio
import os
import signal
from collections.abc import Iterator

import pytest

from services.runtime import interrupts
from services.runtime.shutdown import run_until_signalled


@pytest.fixture(autouse=True)
def python_signals() -> Iterator[None]:
    """Python's own SIGINT and SIGTERM handling before and after each test, nothing held."""
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    interrupts.take_held()
    yield
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    interrupts.take_held()


def ctrl_c() -> None:
    """SIGINT to this process, handled before this returns (signal.raise_signal)."""
    signal.raise_signal(signal.SIGINT)


def test_a_held_sigint_is_noted_not_raised_and_taken_once() -> None:
    interrupts.hold()
    ctrl_c()  # no KeyboardInterrupt
    ctrl_c()
    assert (interrupts.take_held(), interrupts.take_held()) == (signal.SIGINT, None)


def test_release_raises_a_held_sigint_and_gives_sigint_back_to_python() -> None:
    interrupts.hold()
    ctrl_c()
    with pytest.raises(KeyboardInterrupt):
        interrupts.release()
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    with pytest.raises(KeyboardInterrupt):
        ctrl_c()


def test_release_without_a_held_sigint_raises_nothing() -> None:
    interrupts.hold()
    interrupts.release()
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_an_ignored_sigint_stays_ignored() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # started in the background of a shell
    interrupts.hold()
    assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
    interrupts.release()
    assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN


def test_a_sigint_held_at_start_stops_the_service_before_it_runs(
        caplog: pytest.LogCaptureFixture) -> None:
    import logging

    ran = []

    async def main() -> None:
        ran.append(True)

    interrupts.hold()
    ctrl_c()  # while the process starts: before asyncio.run, whose own handler is not set
    with caplog.at_level(logging.INFO, logger="services.runtime.shutdown"):
        asyncio.run(run_until_signalled(main()))  # no KeyboardInterrupt, main never awaited
    assert ran == []
    assert [record.getMessage() for record in caplog.records] == [
        "received SIGINT; shutting down"]  # as a Ctrl-C once the service runs
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    assert signal.getsignal(signal.SIGTERM) == signal.SIG_DFL


def test_a_sigint_after_the_handlers_is_theirs_not_held() -> None:
    cleaned_up = []

    async def main() -> None:
        try:
            os.kill(os.getpid(), signal.SIGINT)
            await asyncio.Event().wait()
        finally:
            cleaned_up.append(True)

    interrupts.hold()
    asyncio.run(run_until_signalled(main()))
    assert (cleaned_up, interrupts.take_held()) == ([True], None)


def test_a_sigint_held_while_a_command_that_is_no_service_starts_is_its_ctrl_c() -> None:
    from click.testing import CliRunner

    from services.cli.main import app

    interrupts.hold()
    ctrl_c()  # while `gangsched version` was imported
    result = CliRunner().invoke(app, ["version"])
    assert (result.exit_code, result.output) == (1, "\nAborted!\n")  # click's, as on any Ctrl-C
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_a_sigterm_held_at_start_stops_the_service_before_it_runs(
        caplog: pytest.LogCaptureFixture) -> None:
    """Without the hold, SIGTERM's default killed the process: exit status 143, no shutdown."""
    import logging

    ran = []

    async def main() -> None:
        ran.append(True)

    interrupts.hold()
    signal.raise_signal(signal.SIGTERM)  # this test process lives on: it was held
    signal.raise_signal(signal.SIGINT)  # the first that came is the one acted on
    with caplog.at_level(logging.INFO, logger="services.runtime.shutdown"):
        asyncio.run(run_until_signalled(main()))
    assert ran == []
    assert [record.getMessage() for record in caplog.records] == [
        "received SIGTERM; shutting down"]
    assert signal.getsignal(signal.SIGTERM) == signal.SIG_DFL


def test_release_gives_sigterm_its_default_and_an_ignored_one_stays_ignored() -> None:
    interrupts.hold()
    assert signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL
    interrupts.release()
    assert signal.getsignal(signal.SIGTERM) == signal.SIG_DFL
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    interrupts.hold()
    assert signal.getsignal(signal.SIGTERM) == signal.SIG_IGN


def test_a_sigterm_held_while_a_command_that_is_no_service_starts_ends_it_by_sigterm() -> None:
    """Delivered when released, with its default: the process dies as it would have."""
    import subprocess
    import sys

    script = ("import signal\nfrom services.runtime import interrupts\n"
              "interrupts.hold()\nsignal.raise_signal(signal.SIGTERM)\nprint('held')\n"
              "interrupts.release()\nprint('not reached')\n")
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                            timeout=60, check=False)
    assert (result.returncode, result.stdout) == (-signal.SIGTERM, "held\n")
