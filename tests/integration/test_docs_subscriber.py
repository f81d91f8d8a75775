"""The nats-py subscriber of docs/decisions.md across a NATS restart: it reads on at the same
URL, and says what happened in a few one-line complaints, never a traceback."""

from __future__ import annotations

import asyncio
import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType

import nats
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


async def test_the_subscriber_reads_on_after_a_restart_with_one_line_per_kind_of_trouble(
        nats_server: EmbeddedNats, tmp_path: Path) -> None:
    await _publish(nats_server.url, 1, create=True)
    script = docs_scripts.write_python_block("decisions.md", tmp_path / "subscribe.py")
    process = await asyncio.create_subprocess_exec(
        sys.executable, str(script), nats_server.url, PREFIX,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    assert process.stdout is not None and process.stderr is not None
    try:
        first = await asyncio.wait_for(process.stdout.readline(), 30)
        await nats_server.stop()
        await asyncio.sleep(3)  # a reconnect attempt or two is refused
        await nats_server.start()
        await _publish(nats_server.url, 2)
        second = await asyncio.wait_for(process.stdout.readline(), 30)
    finally:
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


async def test_a_kind_of_error_is_told_once_then_every_nth_time_until_reconnected(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    complaints = _script_module(tmp_path).Complaints(every=3)
    for _ in range(7):
        await complaints.error(ConnectionRefusedError("refused"))
    await complaints.error(TimeoutError("slow"))
    await complaints.reconnected()
    await complaints.error(ConnectionRefusedError("refused again"))
    await complaints.disconnected()
    assert capsys.readouterr().err.splitlines() == [
        "nats: ConnectionRefusedError: refused",
        "nats: ConnectionRefusedError: refused (3 so far)",
        "nats: ConnectionRefusedError: refused (6 so far)",
        "nats: TimeoutError: slow",
        "nats: reconnected",
        "nats: ConnectionRefusedError: refused again",
        "nats: disconnected; reconnecting"]
