"""`gangsched decisions` never shows as real a decision the binder would refuse: one of a known
type that does not decode is malformed (fields are only ever added, with a default), not "a
type newer than this gangsched", and is named on stderr in both output modes; with the
planner's key at hand (`--decision-key-file`, or the `decision.key` of the `gangsched run` in
`--data-dir`), one not signed with it is left out with a line saying so. The real entry point
in a subprocess, reading a real nats-server."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from nats.js import JetStreamContext

from services.bus.publishing import Publisher
from services.cli import run_info
from services.config.settings import BusSettings
from services.contracts import codec
from services.contracts.decisions import StatusUpdate, decision_subject
from services.contracts.signing import SIGNATURE_HEADER, DecisionKey

pytestmark = pytest.mark.integration

GANGSCHED = str(Path(sys.executable).with_name("gangsched"))
KEY = DecisionKey.from_text("0123456789abcdef" * 4)
RUNNING = StatusUpdate(id="1-0", plan_seq=1, at_ms=1, group="default/g", phase="Running",
                       running=1, succeeded=0, failed=0)
FINISHED = StatusUpdate(id="2-0", plan_seq=2, at_ms=2, group="default/g", phase="Finished",
                        running=0, succeeded=1, failed=0)
NEWER = b'{"type":"Reservation","id":"3-0","plan_seq":3,"at_ms":3,"group":"default/g"}'
"""A decision of a type this gangsched does not know: only `-o json` shows it."""


async def decisions(*argv: str, cwd: Path) -> tuple[int, list[str], list[str]]:
    """`gangsched decisions` with `argv`: exit status, stdout lines, stderr lines."""
    result = await asyncio.to_thread(
        subprocess.run, [GANGSCHED, "decisions", *argv], capture_output=True, text=True,
        timeout=60, check=False, cwd=cwd)
    return result.returncode, result.stdout.splitlines(), result.stderr.splitlines()


async def publish(js: JetStreamContext, subject: str, data: bytes, msg_id: str,
                  key: DecisionKey | None = KEY) -> None:
    """Publish `data` on `subject`, signed with `key` (None: unsigned)."""
    headers = {} if key is None else {SIGNATURE_HEADER: key.sign(subject, data)}
    await Publisher(js).publish(subject, data, msg_id=msg_id, headers=headers)


@pytest.mark.parametrize("output", ["table", "json"])
async def test_a_known_type_that_does_not_decode_is_left_out_as_malformed(
        js: JetStreamContext, bus_settings: BusSettings, output: str, tmp_path: Path) -> None:
    prefix = bus_settings.prefix
    await publish(js, decision_subject(prefix, RUNNING), codec.encode(RUNNING), "1-0")
    await publish(js, f"{prefix}.decisions.Placement.default.nginx",
                  b'{"type":"Placement","id":"99-0"}', "99-0")
    await publish(js, f"{prefix}.decisions.Reservation.default.g", NEWER, "3-0")
    code, shown, said = await decisions("--nats", str(bus_settings.url), "--prefix", prefix,
                                        "-o", output, cwd=tmp_path)
    assert code == 0
    assert said == ["gangsched decisions: DECISIONS seq 2 left out: a malformed Placement "
                    "(Object missing required field `plan_seq`)"]
    if output == "json":
        assert shown == [codec.encode(RUNNING).decode(), NEWER.decode()]
    else:
        assert [line.split()[0] for line in shown] == ["Seq", "1"]


@pytest.mark.parametrize("given", ["key file", "run's data dir"])
async def test_decisions_not_signed_with_the_key_at_hand_are_left_out_with_a_line(
        js: JetStreamContext, bus_settings: BusSettings, tmp_path: Path, given: str) -> None:
    prefix = bus_settings.prefix
    subject = decision_subject(prefix, RUNNING)
    await publish(js, subject, codec.encode(RUNNING), "1-0")
    await publish(js, subject, codec.encode(FINISHED), "2-0", key=None)
    other = DecisionKey.from_text("x" * 40)
    await publish(js, subject, codec.encode(FINISHED), "2-1", key=other)
    key_file = tmp_path / "decision.key"
    key_file.write_text(KEY.secret.decode() + "\n")
    key_file.chmod(0o600)
    if given == "key file":
        argv: tuple[str, ...] = ("--nats", str(bus_settings.url), "--prefix", prefix,
                                 "--decision-key-file", str(key_file))
    else:  # as a live `gangsched run` keeps its directory: its run.json and decision.key
        (tmp_path / "run.json").write_text(json.dumps({
            "nats": bus_settings.url, "prefix": prefix, "pid": os.getpid(),
            "started": run_info.process_start(os.getpid())}))
        argv = ("--data-dir", str(tmp_path))
    code, shown, said = await decisions(*argv, "-o", "json", cwd=tmp_path)
    assert (code, shown) == (0, [codec.encode(RUNNING).decode()])
    assert said == [
        "gangsched decisions: DECISIONS seq 2 left out: not the planner's decision: not signed "
        "(no Gangsched-Signature header)",
        "gangsched decisions: DECISIONS seq 3 left out: not the planner's decision: signed with "
        f"another key (key id {other.key_id}; that of {key_file} is {KEY.key_id})"]


async def test_without_a_key_at_hand_every_well_formed_decision_is_shown_as_before(
        js: JetStreamContext, bus_settings: BusSettings, tmp_path: Path) -> None:
    """With --nats, a `decision.key` in the default data directory is no key of that NATS's
    planner: nothing is checked."""
    prefix = bus_settings.prefix
    subject = decision_subject(prefix, RUNNING)
    await publish(js, subject, codec.encode(RUNNING), "1-0")
    await publish(js, subject, codec.encode(FINISHED), "2-0", key=None)
    (tmp_path / ".gangsched").mkdir()
    (tmp_path / ".gangsched" / "decision.key").write_text("y" * 64 + "\n")
    code, shown, said = await decisions("--nats", str(bus_settings.url), "--prefix", prefix,
                                        "-o", "json", cwd=tmp_path)
    assert (code, said) == (0, [])
    assert shown == [codec.encode(RUNNING).decode(), codec.encode(FINISHED).decode()]
