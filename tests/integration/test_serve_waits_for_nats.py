"""A service started before NATS: says so at once, stays alive (not ready), connects when
NATS comes up; credentials NATS refuses end it with one line."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import aiohttp
import pytest

from services.bus import connection, streams
from services.bus.embedded import EmbeddedNats, generate_credentials
from services.config.settings import BusSettings
from services.contracts import subjects
from tests.integration.test_run_locked_down import stop
from tests.integration.test_run_processes import http_address, launched, started
from tests.support.waiting import eventually, eventually_async

pytestmark = pytest.mark.integration

PROMPT_SECONDS = 3.0
"""How soon after the health endpoints are up the service must say NATS cannot be reached
(its first attempt is refused at once)."""
STARTUP_SECONDS = 10.0
"""How long the process may take to start (imports, the SQLite migration) and serve /healthz."""
READY_SECONDS = 10.0
"""How long the planner may take to be ready once NATS is up (one retry, streams, catch-up)."""
LOG_LINE = re.compile(r"^(\S+ \S+) (\w+) ([\w.]+): (.*)$")
"""One line of `configure_logging`'s format: date, time, level, logger, message."""


def free_loopback_port() -> int:
    """A TCP port free on 127.0.0.1 now (bound and released: nobody listens on it)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


class Planner:
    """`gangsched planner` in a subprocess with its own data directory, decision key, SQLite
    store and /healthz on a free port; its standard error goes to `log_path`."""

    def __init__(self, tmp_path: Path, nats_url: str, *extra: str) -> None:
        key = tmp_path / "decision.key"
        key.write_text("0123456789abcdef" * 4 + "\n")
        key.chmod(0o600)
        self.log_path = tmp_path / "planner.log"
        with self.log_path.open("wb") as log:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "services.cli.main", "planner", "--nats", nats_url,
                 "--data-dir", str(tmp_path / "data"), "--http-port", "0",
                 "--log-level", "INFO", *extra],
                stdout=log, stderr=subprocess.STDOUT,
                env={**os.environ, "PYTHONUNBUFFERED": "1",
                     "GANGSCHED_DECISION_KEY_FILE": str(key)})

    def messages(self) -> list[tuple[float, str, str]]:
        """(seconds since the epoch, logger, message) of every log line so far."""
        lines = []
        for line in self.log_path.read_text(errors="replace").splitlines():
            match = LOG_LINE.match(line)
            if match:
                stamp = time.mktime(time.strptime(match[1].split(",")[0], "%Y-%m-%d %H:%M:%S"))
                lines.append((stamp + int(match[1].split(",")[1]) / 1000, match[3], match[4]))
        return lines

    def logged(self, pattern: str) -> tuple[float, str]:
        """(time, message) of the first log message matching `pattern`.

        Raises:
            AssertionError: none yet (`eventually_async` tries again), or the process exited.
        """
        for stamp, _, message in self.messages():
            if re.fullmatch(pattern, message):
                return stamp, message
        assert self.process.poll() is None, f"planner exited:\n{self.output()}"
        raise AssertionError(f"nothing logged matches {pattern!r}")

    def output(self) -> str:
        """Everything it wrote."""
        return self.log_path.read_text(errors="replace")

    def stop(self) -> int:
        """SIGTERM, then wait (SIGKILL after 20 s); its exit status."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        return self.process.returncode


@pytest.fixture
def nats_port() -> int:
    """A loopback port nobody listens on yet; the test starts NATS on it later."""
    return free_loopback_port()


@pytest.fixture
def planner_before_nats(tmp_path: Path, nats_port: int) -> Iterator[Planner]:
    """The planner started against NATS at `nats_port`, which is not up; stopped after."""
    planner = Planner(tmp_path, f"nats://127.0.0.1:{nats_port}")
    try:
        yield planner
    finally:
        planner.stop()
        print(planner.output())


async def _status(session: aiohttp.ClientSession, url: str) -> tuple[int, str]:
    async with session.get(url) as response:
        return response.status, await response.text()


async def test_a_service_started_before_nats_is_alive_says_why_and_connects_once_it_is_up(
        tmp_path: Path, nats_port: int, planner_before_nats: Planner) -> None:
    planner = planner_before_nats
    url = f"nats://127.0.0.1:{nats_port}"

    async def serving() -> tuple[float, str]:
        return planner.logged(r"health endpoints on http://127\.0\.0\.1:\d+")

    served_at, served = await eventually_async(serving, timeout=STARTUP_SECONDS,
                                               what="/healthz served")
    base = served.removeprefix("health endpoints on ")

    async def warned() -> tuple[float, str]:
        return planner.logged(r"cannot reach NATS at .*")

    warned_at, warning = await eventually_async(warned, timeout=STARTUP_SECONDS,
                                                what="the NATS warning")
    assert warning == f"cannot reach NATS at {url}: connection refused; retrying every 1s"
    assert warned_at - served_at < PROMPT_SECONDS
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=5)) as session:
        assert await _status(session, f"{base}/healthz") == (200, "ok\n")
        assert await _status(session, f"{base}/readyz") == (
            503, "not ready: nats, planner (NATS disconnected)\n")
        async with EmbeddedNats(tmp_path / "nats", port=nats_port):

            async def ready() -> bool:
                return await _status(session, f"{base}/readyz") == (200, "ready\n")

            await eventually_async(ready, timeout=READY_SECONDS, what="/readyz 200")
            assert await _status(session, f"{base}/healthz") == (200, "ok\n")
            assert planner.stop() == 0
    output = planner.output()
    assert "Traceback" not in output
    assert [message for _, logger, message in planner.messages()
            if logger == "services.bus.connection" and "NATS" in message
            and "closed" not in message] == [
        warning, f"connected to NATS nats://127.0.0.1:{nats_port} as gangsched-planner"]


async def test_credentials_nats_refuses_end_the_service_with_one_line(tmp_path: Path) -> None:
    async with EmbeddedNats(tmp_path / "nats", credentials=generate_credentials()) as server:
        wrong = server.url.replace("nats://", "nats://gangsched:wrong@")
        output = await _ended_with_status_1(Planner(tmp_path, wrong))
    assert "wrong" not in output
    assert "cannot reach NATS" not in output  # not transient: not retried
    assert output.strip().splitlines()[-1] == (
        f"Error: NATS unavailable: NATS at {server.url} refused the credentials of "
        "gangsched-planner: nats: 'Authorization Violation'")


@pytest.mark.parametrize(("extra", "answer"), [
    (("--stream-replicas", "3"), "replicas > 1 not supported in non-clustered mode"),
    # --stream-max-age-seconds 0.01, which NATS refuses ("max age needs to be >= 100ms"), is
    # refused as parsed now (tests/unit/cli/test_degenerate_durations.py)
])
async def test_streams_nats_refuses_end_the_service_with_one_line_not_restarts(
        tmp_path: Path, extra: tuple[str, ...], answer: str) -> None:
    async with EmbeddedNats(tmp_path / "nats") as server:
        output = await _ended_with_status_1(Planner(tmp_path, server.url, *extra))
    last = output.strip().splitlines()[-1]
    assert last.startswith("Error: NATS: stream GANGSCHED_EVENTS cannot be created: "), last
    assert answer in last
    assert last.endswith(": check --stream-replicas (more than 1 needs a NATS cluster of as "
                         "many servers) and --stream-max-age-seconds (0, or at least 0.1), and "
                         "that the NATS user may create streams")


async def _ended_with_status_1(planner: Planner) -> str:
    """Wait for `planner` to exit on its own; its output, once its status is 1 and it holds
    no traceback."""
    try:
        await eventually_async(lambda: _exited(planner), timeout=STARTUP_SECONDS + 5,
                               what="the planner's exit")
    finally:
        planner.stop()
    output = planner.output()
    assert planner.process.returncode == 1, output
    assert "Traceback" not in output
    return output


async def _exited(planner: Planner) -> bool:
    """Whether the process has exited."""
    return planner.process.poll() is not None


async def test_gangsched_run_started_before_nats_waits_for_it_alive_then_starts_its_services(
        tmp_path: Path, nats_port: int) -> None:
    url = f"nats://127.0.0.1:{nats_port}"
    run = launched(tmp_path, "--nats", url, "--http-port", "0")
    try:
        def warned() -> re.Match[str] | None:
            assert run.process is not None and run.process.poll() is None, run.log_tail()
            return re.search(r"cannot reach NATS at \S+: .*", run.log_tail(400))

        warning = eventually(warned, timeout=STARTUP_SECONDS, interval=0.1,
                             what="the NATS warning")
        assert warning is not None
        assert warning[0] == f"cannot reach NATS at {url}: connection refused; retrying every 1s"
        base = http_address(run)
        async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=5)) as session:
            assert await _status(session, f"{base}/healthz") == (200, "ok\n")
            assert await _status(session, f"{base}/readyz") == (
                503, "not ready: binder, nats, planner, watcher\n")
            assert not re.search(r"\w+ process \d+ started", run.log_tail(400))  # none yet
            async with EmbeddedNats(tmp_path / "nats", port=nats_port):
                started(run)  # the three service processes, once NATS is up

                async def connected() -> bool:  # the API server stays unreachable: the
                    status, text = await _status(session, f"{base}/readyz")  # rest waits
                    return status == 503 and "nats" not in text

                await eventually_async(connected, timeout=READY_SECONDS, what="NATS ready")
                assert stop(run) == 0
    finally:
        stop(run)
    assert "Traceback" not in run.log_tail(2000)



async def test_a_shorter_retention_of_streams_holding_messages_needs_the_operators_consent(
        tmp_path: Path) -> None:
    async with EmbeddedNats(tmp_path / "nats") as server:
        nc = await connection.connect(BusSettings(url=server.url), name="test")
        (tmp_path / "refused").mkdir()
        (tmp_path / "consented").mkdir()
        try:
            js = nc.jetstream()
            await streams.ensure_streams(js, BusSettings(url=server.url))
            await js.publish(subjects.events_subject("gangsched", "node", "", "n1"), b"{}")
            output = await _ended_with_status_1(
                Planner(tmp_path / "refused", server.url, "--stream-max-age-seconds", "3600"))
            assert output.strip().splitlines()[-1] == (
                "Error: NATS: stream GANGSCHED_EVENTS holds 1 message(s) and "
                "--stream-max-age-seconds 3600 is shorter than its retention (604800 s): NATS "
                "would delete those older than that. To keep them, start with "
                "--stream-max-age-seconds 604800; to delete them, start once with "
                "--stream-shorten-retention (nothing was changed)")
            assert (await js.stream_info("GANGSCHED_EVENTS")).config.max_age == 604800
            consented = Planner(tmp_path / "consented", server.url, "--stream-max-age-seconds",
                                "3600", "--stream-shorten-retention")
            try:
                await eventually_async(lambda: _logged(
                    consented, "shortened the retention of stream GANGSCHED_EVENTS from "
                    "604800 s to 3600 s: .*"), timeout=STARTUP_SECONDS + READY_SECONDS,
                    what="the shortening logged")
            finally:
                assert consented.stop() == 0, consented.output()
            info = await js.stream_info("GANGSCHED_EVENTS")
            assert info.config.max_age == 3600 and info.state.messages == 1
        finally:
            await nc.close()


async def _logged(planner: Planner, pattern: str) -> tuple[float, str]:
    """`planner.logged(pattern)`, for `eventually_async`."""
    return planner.logged(pattern)
