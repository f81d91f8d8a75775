"""`gangsched decisions` whose standard output cannot be written (a full disk, a reader gone)
is one line on stderr (none for a reader gone) and exit status 1, never a traceback: the real
entry point in a subprocess, reading a real nats-server."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path

import pytest
from nats.js import JetStreamContext

from services.bus.publishing import Publisher
from services.config.settings import BusSettings
from services.contracts import codec
from services.contracts.decisions import StatusUpdate, decision_subject

pytestmark = pytest.mark.integration

GANGSCHED = str(Path(sys.executable).with_name("gangsched"))


async def decisions(bus: BusSettings, stdout: int) -> tuple[int, str]:
    """`gangsched decisions` of `bus` writing to `stdout`: its exit status and stderr."""
    result = await asyncio.to_thread(
        subprocess.run, [GANGSCHED, "decisions", "--nats", str(bus.url), "--prefix", bus.prefix],
        stdout=stdout, stderr=subprocess.PIPE, text=True, timeout=60, check=False)
    return result.returncode, result.stderr


async def test_decisions_to_a_full_disk_or_a_gone_reader_is_status_1_without_traceback(
        js: JetStreamContext, bus_settings: BusSettings) -> None:
    decision = StatusUpdate(id="1-0", plan_seq=1, at_ms=1, group="default/g", phase="Running",
                            running=1, succeeded=0, failed=0)
    await Publisher(js).publish(decision_subject(bus_settings.prefix, decision),
                                codec.encode(decision), msg_id=decision.id)
    with open("/dev/full", "w") as full:
        assert await decisions(bus_settings, full.fileno()) == (
            1, "Error: cannot write output: No space left on device\n")
    read_end, write_end = os.pipe()
    os.close(read_end)  # `| head -1` once head has its line
    try:
        assert await decisions(bus_settings, write_end) == (1, "")
    finally:
        os.close(write_end)


@pytest.mark.parametrize("output", ["table", "json"])
async def test_a_message_that_is_no_decision_is_left_out_in_one_line(
        js: JetStreamContext, bus_settings: BusSettings, output: str) -> None:
    """Bytes on the DECISIONS stream that are not a decision's JSON object (not UTF-8, nested
    deeper than any decoder goes) are named on stderr and left out; the decisions around them
    print."""
    prefix = bus_settings.prefix
    first = StatusUpdate(id="1-0", plan_seq=1, at_ms=1, group="default/g", phase="Running",
                         running=1, succeeded=0, failed=0)
    last = StatusUpdate(id="2-0", plan_seq=2, at_ms=2, group="default/g", phase="Finished",
                        running=0, succeeded=1, failed=0)
    subject = decision_subject(prefix, first)
    publisher = Publisher(js)
    await publisher.publish(subject, codec.encode(first), msg_id=first.id)
    await publisher.publish(subject, b"\xff not utf-8", msg_id="junk-1")
    await publisher.publish(subject, b'{"a": ' + b"[" * 5000 + b"]" * 5000 + b"}",
                            msg_id="junk-2")
    await publisher.publish(subject, codec.encode(last), msg_id=last.id)
    result = await asyncio.to_thread(
        subprocess.run, [GANGSCHED, "decisions", "--nats", str(bus_settings.url), "--prefix",
                         prefix, "-o", output],
        capture_output=True, text=True, timeout=60, check=False)
    assert result.returncode == 0, result.stderr
    left_out = result.stderr.splitlines()
    assert [line.split(":")[1].strip() for line in left_out] == [
        "DECISIONS seq 2 left out", "DECISIONS seq 3 left out"], result.stderr
    assert "Traceback" not in result.stderr
    shown = result.stdout.splitlines()
    if output == "json":
        assert [codec.decode_decision(line.encode()) for line in shown] == [first, last]
    else:
        assert "Running" in result.stdout and "Finished" in result.stdout
