"""The nats-py subscriber of docs/decisions.md across a NATS restart and while idle: it reads
on, says what happened in a few one-line complaints, never a traceback, and stops quietly."""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import json
import re
import signal
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from types import ModuleType, SimpleNamespace
from typing import Any

import nats
import nats.js.errors
import pytest

from services.bus.embedded import EmbeddedNats
from tests.support import docs_scripts

pytestmark = pytest.mark.integration

PREFIX = "docs"


def _decision(number: int) -> bytes:
    """A Placement of default/g with no member (all the script prints of it is its header)."""
    return json.dumps({"type": "Placement", "id": f"d{number}", "group": "default/g",
                       "members": []}).encode()


async def _publish(url: str, number: int, *, create: bool = False) -> None:
    """Publish decision `number` to the DECISIONS stream (created first with `create`)."""
    client = await nats.connect(url)
    try:
        js = client.jetstream()
        if create:
            await js.add_stream(name=f"{PREFIX}_DECISIONS", subjects=[f"{PREFIX}.decisions.>"])
        await js.publish(f"{PREFIX}.decisions.Placement.default.g", _decision(number))
    finally:
        await client.close()


def _script_module(tmp_path: Path) -> ModuleType:
    """The docs' script imported as a module (its `main` runs only as a script)."""
    path = docs_scripts.write_python_block("decisions.md", tmp_path / "subscribe.py")
    spec = importlib.util.spec_from_file_location("docs_subscribe", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# Runs the script (argv[1], its arguments after it) as `python subscribe.py ...` would, in an
# event loop that a neighbour holds 3 ms at a time, like a busy subscriber's: its timers then
# fire late, so an idle fetch mostly sees the server's "408 Request Timeout" before its own
# timer and raises asyncio's TimeoutError, not nats.errors.TimeoutError (in an idle loop the
# timer tends to win, by a fraction of a millisecond).
BUSY_LOOP_RUNNER = """\
import asyncio, runpy, sys, time

async def neighbour():
    while True:
        time.sleep(0.003)
        await asyncio.sleep(0)

class Policy(asyncio.DefaultEventLoopPolicy):
    def new_event_loop(self):
        loop = super().new_event_loop()
        loop.call_soon(lambda: loop.create_task(neighbour()))
        return loop

asyncio.set_event_loop_policy(Policy())
sys.argv = sys.argv[1:]
runpy.run_path(sys.argv[0], run_name="__main__")
"""


def _fetch_timeout(script: Path) -> float:
    """The seconds the script's fetch waits for a message, as printed."""
    found = re.search(r"\.fetch\(\d+, timeout=(\d+(?:\.\d+)?)\)", script.read_text())
    assert found is not None, "the script's fetch call changed shape: update this test"
    return float(found.group(1))


async def test_the_subscriber_stays_up_idle_and_stops_quietly_on_ctrl_c(
        nats_server: EmbeddedNats, tmp_path: Path) -> None:
    await _publish(nats_server.url, 1, create=True)
    script = docs_scripts.write_python_block("decisions.md", tmp_path / "subscribe.py")
    idle = 2 * _fetch_timeout(script) + 2  # two fetches in a row time out with nothing to read
    runner = tmp_path / "busy_loop.py"
    runner.write_text(BUSY_LOOP_RUNNER)
    process = await asyncio.create_subprocess_exec(
        sys.executable, str(runner), str(script), nats_server.url, PREFIX,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    assert process.stdout is not None and process.stderr is not None
    try:
        first = await asyncio.wait_for(process.stdout.readline(), 30)
        try:
            await asyncio.wait_for(process.wait(), idle)
        except TimeoutError:
            pass  # still running, as it should
        else:
            pytest.fail(f"it exited ({process.returncode}) while idle: "
                        f"{(await process.stderr.read()).decode()}")
        await _publish(nats_server.url, 2)
        second = await asyncio.wait_for(process.stdout.readline(), 30)
        process.send_signal(signal.SIGINT)  # Ctrl-C
        await asyncio.wait_for(process.wait(), 30)
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
    errors = (await process.stderr.read()).decode()
    assert [first.decode(), second.decode()] == ["1 Placement d1 default/g \n",
                                                 "2 Placement d2 default/g \n"], errors
    assert errors == ""  # no traceback, and no "disconnected; reconnecting" as it closes
    assert process.returncode == 0


class _IdleOnce:
    """A pull subscription (and the JetStream making it) whose first fetch raises `timeout`,
    as nats-py's does when nothing came, and whose next returns decision 1."""

    def __init__(self, timeout: Exception) -> None:
        self.timeouts, self.subscribes, self.infos = [timeout], 0, 0

    async def pull_subscribe(self, subject: str, stream: str, config: Any) -> _IdleOnce:
        self.subscribes += 1
        return self

    async def fetch(self, batch: int, timeout: float) -> list[SimpleNamespace]:
        if self.timeouts:
            raise self.timeouts.pop()
        sequence = SimpleNamespace(consumer=1, stream=1)
        return [SimpleNamespace(metadata=SimpleNamespace(sequence=sequence))]

    async def consumer_info(self) -> None:
        self.infos += 1

    async def unsubscribe(self) -> None:
        pass


@pytest.mark.parametrize("timeout", [
    TimeoutError(),  # asyncio's: nats-py 2.15 and 2.16 when the server's 408 beats their timer
    nats.errors.TimeoutError(),  # ... when their timer comes first
    nats.js.errors.FetchTimeoutError(),  # ... when only heartbeats came
], ids=["asyncio.TimeoutError", "nats.errors.TimeoutError", "FetchTimeoutError"])
async def test_each_timeout_a_fetch_raises_means_nothing_new(
        timeout: Exception, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # Which kind a real idle fetch raises is a race (the busy loop above only tilts it): this
    # raises each kind for certain.
    fake = _IdleOnce(timeout)
    follow = _script_module(tmp_path).follow(fake, "S", "s.>", 1)
    async with contextlib.aclosing(follow):
        message = await asyncio.wait_for(anext(follow), 10)
    assert message.metadata.sequence.stream == 1
    assert (fake.subscribes, fake.infos) == (1, 1)  # the same consumer, asked if it still is
    assert capsys.readouterr().err == ""


@contextlib.asynccontextmanager
async def _following(nats_server: EmbeddedNats,
                     tmp_path: Path) -> AsyncIterator[asyncio.subprocess.Process]:
    """The docs' script run as `python subscribe.py <url> <prefix>`, once decision 1 is
    stored; killed at the end if it is still running. Its stdout and stderr are pipes."""
    await _publish(nats_server.url, 1, create=True)
    script = docs_scripts.write_python_block("decisions.md", tmp_path / "subscribe.py")
    process = await asyncio.create_subprocess_exec(
        sys.executable, str(script), nats_server.url, PREFIX,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    try:
        yield process
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()


async def test_the_subscriber_reads_on_after_a_restart_with_one_line_per_kind_of_trouble(
        nats_server: EmbeddedNats, tmp_path: Path) -> None:
    async with _following(nats_server, tmp_path) as process:
        assert process.stdout is not None and process.stderr is not None
        first = await asyncio.wait_for(process.stdout.readline(), 30)
        await nats_server.stop()
        await asyncio.sleep(3)  # a reconnect attempt or two is refused
        await nats_server.start()
        await _publish(nats_server.url, 2)
        second = await asyncio.wait_for(process.stdout.readline(), 30)
        process.terminate()
        await process.wait()
    errors = (await process.stderr.read()).decode().splitlines()
    assert [first.decode(), second.decode()] == ["1 Placement d1 default/g \n",
                                                 "2 Placement d2 default/g \n"]
    complaints = [line for line in errors if not line.startswith("reading again from ")]
    assert complaints[0] in ("nats: UnexpectedEOF: nats: unexpected EOF",  # which one: timing
                             "nats: ConnectionResetError: [Errno 104] Connection reset by peer")
    assert complaints[1:] == [
        "nats: disconnected; reconnecting",
        f"nats: ConnectionRefusedError: [Errno 111] Connect call failed "
        f"('127.0.0.1', {nats_server.port})",
        "nats: reconnected"], errors
    retries = [line for line in errors if line.startswith("reading again from ")]
    assert len(retries) == len(set(retries)), errors  # each said once
    assert {line.split(": ", 1)[0] for line in retries} <= {"reading again from sequence 2"}


async def test_ctrl_c_while_nats_is_gone_stops_the_subscriber_quietly(
        nats_server: EmbeddedNats, tmp_path: Path) -> None:
    """A new user's Ctrl-C with the server stopped: `nc.close()` in the script's `finally`
    raised `ConnectionResetError` from the lost connection, a traceback of 40 lines, exit 1."""
    async with _following(nats_server, tmp_path) as process:
        assert process.stdout is not None and process.stderr is not None
        first = await asyncio.wait_for(process.stdout.readline(), 30)
        await nats_server.stop()
        await asyncio.sleep(8)  # it reconnects in vain, and asks again, meanwhile
        process.send_signal(signal.SIGINT)  # Ctrl-C
        await asyncio.wait_for(process.wait(), 30)
    errors = (await process.stderr.read()).decode()
    assert first.decode() == "1 Placement d1 default/g \n"
    assert "Traceback" not in errors, errors
    assert process.returncode == 0, errors


async def test_a_kind_of_error_is_told_once_then_every_nth_time_until_reconnected(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    complaints = _script_module(tmp_path).Complaints(every=3)
    for _ in range(7):
        await complaints.error(ConnectionRefusedError("refused"))
    await complaints.error(TimeoutError("slow"))
    await complaints.reconnected()
    await complaints.error(ConnectionRefusedError("refused again"))
    await complaints.disconnected()
    complaints.closing = True  # the script's own nc.close() reports no disconnection
    await complaints.disconnected()
    assert capsys.readouterr().err.splitlines() == [
        "nats: ConnectionRefusedError: refused",
        "nats: ConnectionRefusedError: refused (3 so far)",
        "nats: ConnectionRefusedError: refused (6 so far)",
        "nats: TimeoutError: slow",
        "nats: reconnected",
        "nats: ConnectionRefusedError: refused again",
        "nats: disconnected; reconnecting"]
