"""`gangsched decisions --type T`: one decision type; `--type Preemption --podgroup G` also
shows the preemptions of other gangs that evict G's members (published under the preemptor's
subject), on a real nats-server."""

from __future__ import annotations

import json

import pytest
from nats.js import JetStreamContext

from services.bus.publishing import Publisher
from services.cli import following
from services.config.settings import BusSettings
from services.contracts import codec
from services.contracts.decisions import (
    Assignment,
    Decision,
    Placement,
    Preemption,
    StatusUpdate,
    Victim,
    decision_subject,
)

pytestmark = pytest.mark.integration


def preemption(seq: int, group: str, victims: list[tuple[str, str, str]]) -> Preemption:
    """A Preemption for `group` (priority 1000) of `victims` (name, node, group; priority 10)."""
    return Preemption(
        id=f"{seq}-0", plan_seq=seq, at_ms=seq, group=group, priority=1000, deadline_ms=seq + 60,
        nominated=tuple(Assignment(f"u-{group}-{i}", "default", f"p{i}", node)
                        for i, (_, node, _) in enumerate(victims)),
        victims=tuple(Victim(f"u-{name}", "default", name, node, owner, 10)
                      for name, node, owner in victims))


DECISIONS: list[Decision] = [
    Placement(id="1-0", plan_seq=1, at_ms=1, group="default/low", attempt=1, deadline_ms=61,
              members=(Assignment("u-low-0", "default", "low-0", "a"),)),
    StatusUpdate(id="2-0", plan_seq=2, at_ms=2, group="default/low", phase="Running",
                 running=1, succeeded=0, failed=0),
    preemption(3, "default/high", [("low-0", "a", "default/low")]),
    preemption(4, "default/other", [("solo", "b", "default/pod:solo")]),
]


async def published(js: JetStreamContext, prefix: str) -> None:
    for decision in DECISIONS:
        await Publisher(js).publish(decision_subject(prefix, decision), codec.encode(decision),
                                    msg_id=decision.id)


async def printed_ids(capsys: pytest.CaptureFixture[str], bus: BusSettings,
                      podgroup: tuple[str, str] | None, decision_type: str | None) -> list[str]:
    count = await following.print_decisions(bus, podgroup, follow=False, output="json",
                                            decision_type=decision_type)
    ids = [json.loads(line)["id"] for line in capsys.readouterr().out.splitlines()]
    assert count == len(ids)
    return ids


async def test_decisions_filter_by_type_and_a_victims_podgroup_sees_its_preemption(
        js: JetStreamContext, bus_settings: BusSettings,
        capsys: pytest.CaptureFixture[str]) -> None:
    await published(js, bus_settings.prefix)
    assert await printed_ids(capsys, bus_settings, None, "Preemption") == ["3-0", "4-0"]
    assert await printed_ids(capsys, bus_settings, ("default", "low"), "Preemption") == ["3-0"]
    assert await printed_ids(capsys, bus_settings, ("default", "low"), None) == ["1-0", "2-0"]
    assert await printed_ids(capsys, bus_settings, ("default", "low"), "StatusUpdate") == ["2-0"]
    assert await printed_ids(capsys, bus_settings, ("default", "high"), "Preemption") == ["3-0"]
    await following.print_decisions(bus_settings, None, follow=False, output="table",
                                    decision_type="Preemption")
    rows = capsys.readouterr().out.splitlines()
    assert rows[0].split() == ["Seq", "Time", "(UTC)", "Type", "Group", "Id", "Summary"]
    assert rows[1].split()[2:] == ["Preemption", "default/high", "3-0", "preempt", "for",
                                   "default/high", "(priority", "1000):", "1", "victim(s):",
                                   "default/low-0@a"]
