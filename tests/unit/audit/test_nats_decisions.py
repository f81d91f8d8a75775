"""What NATS replay makes of the DECISIONS stream: the planner's decisions, and one line naming
any message there that is none (anyone allowed to publish on its subjects may have put it
there), never a traceback."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from services.audit import nats_log
from services.bus import reading
from services.bus.reading import StoredMessage
from services.contracts import codec
from services.contracts.decisions import Rejection
from services.planner.rederive.rounds import RecordedDecision

SUBJECT = "gangsched.decisions.Rejection.default.g"


def rejection(decision_id: str, plan_seq: int = 12) -> bytes:
    return codec.encode(Rejection(id=decision_id, plan_seq=plan_seq, at_ms=1, group="default/g",
                                  reason="r", pods=()))


async def decisions_of(monkeypatch: pytest.MonkeyPatch,
                       *payloads: bytes) -> list[RecordedDecision]:
    """The decisions NATS replay reads from a DECISIONS stream holding `payloads`."""
    async def read(js: Any, stream: str, subject: str, **_: Any) -> AsyncIterator[StoredMessage]:
        for seq, data in enumerate(payloads, start=1):
            yield StoredMessage(seq, SUBJECT, data, {}, 0)

    monkeypatch.setattr(reading, "read", read)
    log = nats_log.NatsLog(js=None, prefix="gangsched")  # type: ignore[arg-type]
    return await log._decisions()


async def test_the_planners_decisions_are_read_by_plan_point_and_position(
        monkeypatch: pytest.MonkeyPatch) -> None:
    read = await decisions_of(monkeypatch, rejection("12-1"), rejection("3-0", 3),
                              rejection("12-0"), rejection("12-1"))
    assert [(d.id, d.plan_seq, d.position) for d in read] == [
        ("3-0", 3, 0), ("12-0", 12, 0), ("12-1", 12, 1)]


@pytest.mark.parametrize(("payload", "why"), [
    (b"\x00garbage", "JSON is malformed: invalid character (byte 0)"),
    (rejection("bogus"), "id 'bogus' is not <plan_seq>-<position>"),
    (rejection("12-"), "id '12-' is not <plan_seq>-<position>"),
    (rejection("12-\u00b2"), "id '12-\u00b2' is not <plan_seq>-<position>"),
    (rejection("3-0", plan_seq=12), "id '3-0' is not <plan_seq>-<position> of its plan_seq 12"),
])
async def test_a_message_that_is_no_planner_decision_is_named_in_one_line(
        monkeypatch: pytest.MonkeyPatch, payload: bytes, why: str) -> None:
    """An id that is no `<plan_seq>-<position>` used to end replay with a ValueError's
    traceback; an undecodable message with msgspec's reason alone, naming no message; an id
    whose plan_seq is not the payload's was taken, its position from one, its plan point from
    the other (the database reader refuses such a row)."""
    with pytest.raises(codec.PoisonedMessage) as raised:
        await decisions_of(monkeypatch, rejection("12-0"), payload)
    assert str(raised.value) == (
        f"stream GANGSCHED_DECISIONS seq 2 ({SUBJECT}) holds no decision the planner "
        f"publishes: {why}; replay from the database (--source db) instead")
