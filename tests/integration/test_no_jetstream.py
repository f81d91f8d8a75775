"""A NATS without JetStream (`nats-server` started without -js, a common misconfiguration) is
named as such: the audit commands say it in one line (exit 1), not `ServiceUnavailableError()`;
a service says it in its warnings (the first, then every tenth) and its /readyz reason while it
waits, and goes on once the server runs JetStream."""

from __future__ import annotations

import asyncio
import logging
import re
import subprocess
import sys
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import pytest

from services.bus import connection, streams, transience
from services.bus.embedded import EmbeddedNats
from services.bus.errors import JetStreamUnavailable
from services.config.settings import BusSettings
from services.runtime.health import ReadyFlag
from tests.integration.test_serve_waits_for_nats import READY_SECONDS, STARTUP_SECONDS, Planner
from tests.support.waiting import eventually_async

pytestmark = pytest.mark.integration

GANGSCHED = str(Path(sys.executable).with_name("gangsched"))


def no_jetstream(url: str) -> str:
    """What gangsched says of the server at `url`."""
    return (f"NATS at {url} has no JetStream (start nats-server with -js, or a jetstream {{}} "
            "block in its configuration)")


@pytest.fixture
async def plain_nats(tmp_path: Path) -> AsyncIterator[EmbeddedNats]:
    """A nats-server without JetStream, private to the test."""
    server = EmbeddedNats(tmp_path / "plain-nats", jetstream=False)
    await server.start()
    try:
        yield server
    finally:
        await server.stop()


@pytest.mark.parametrize("argv", [
    ("decisions",), ("decisions", "--follow"), ("replay", "--source", "nats"),
])
async def test_an_audit_of_a_nats_without_jetstream_says_so_in_one_line(
        plain_nats: EmbeddedNats, tmp_path: Path, argv: tuple[str, ...]) -> None:
    result = await asyncio.to_thread(
        subprocess.run, [GANGSCHED, *argv, "--nats", plain_nats.url, "--data-dir",
                         str(tmp_path)],
        capture_output=True, text=True, timeout=60, check=False, cwd=tmp_path)
    assert (result.returncode, result.stdout, result.stderr) == (
        1, "", f"Error: {no_jetstream(plain_nats.url)}\n")


async def test_stream_set_up_holds_readiness_with_the_cause_until_jetstream_answers(
        plain_nats: EmbeddedNats, caplog: pytest.LogCaptureFixture) -> None:
    settings = BusSettings(url=plain_nats.url, prefix=f"t{uuid.uuid4().hex[:10]}")
    client = await connection.connect(settings, name="test")
    ready = ReadyFlag("planner")
    ready.set()
    stop_following = connection.hold_while_disconnected(client, ready)
    problem = no_jetstream(plain_nats.url)
    try:
        with caplog.at_level(logging.WARNING, logger=streams.__name__):
            for _ in range(11):
                with pytest.raises(JetStreamUnavailable) as raised:
                    await streams.ensure_streams(client.jetstream(), settings)
        assert str(raised.value) == problem
        assert transience.is_transient(raised.value)  # retried: the server may get JetStream
        assert ready.holds == [problem]
        assert [record.getMessage() for record in caplog.records] == [
            f"cannot set up the streams: {problem}; retrying, not ready meanwhile",
            f"cannot set up the streams: {problem}; retrying, not ready meanwhile (11 such "
            "failures)"]

        plain_nats.jetstream = True
        await plain_nats.restart()  # same port: the client reconnects to a JetStream server

        async def set_up() -> bool:
            try:
                await streams.ensure_streams(client.jetstream(), settings)
            except JetStreamUnavailable as error:
                raise AssertionError(str(error)) from None
            return True

        await eventually_async(set_up, timeout=15, what="streams set up")
        assert ready.holds == [] and ready.is_ready
    finally:
        stop_following()
        await client.close()


async def test_a_service_says_why_in_its_log_and_readyz_then_starts_once_jetstream_runs(
        plain_nats: EmbeddedNats, tmp_path: Path) -> None:
    planner = Planner(tmp_path, plain_nats.url)
    problem = no_jetstream(plain_nats.url)
    try:
        async def serving() -> tuple[float, str]:
            return planner.logged(r"health endpoints on http://127\.0\.0\.1:\d+")

        _, served = await eventually_async(serving, timeout=STARTUP_SECONDS,
                                           what="/healthz served")
        readyz = served.removeprefix("health endpoints on ") + "/readyz"
        async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=5)) as session:
            async def answer() -> tuple[int, str]:
                async with session.get(readyz) as response:
                    return response.status, await response.text()

            async def held() -> bool:
                return await answer() == (503, f"not ready: nats, planner ({problem})\n")

            await eventually_async(held, timeout=STARTUP_SECONDS, what="/readyz naming it")
            planner.logged(rf"cannot set up the streams: {re.escape(problem)}; retrying, not "
                           r"ready meanwhile")
            plain_nats.jetstream = True
            await plain_nats.restart()

            async def ready() -> bool:
                return await answer() == (200, "ready\n")

            await eventually_async(ready, timeout=READY_SECONDS + 10, what="/readyz 200")
        assert planner.stop() == 0
    finally:
        planner.stop()
    assert "Traceback" not in planner.output()
