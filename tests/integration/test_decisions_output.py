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
            1, "gangsched: cannot write output: No space left on device\n")
    read_end, write_end = os.pipe()
    os.close(read_end)  # `| head -1` once head has its line
    try:
        assert await decisions(bus_settings, write_end) == (1, "")
    finally:
        os.close(write_end)
