"""The binder reads the newest PodGroup status decision of a group back from DECISIONS."""

from __future__ import annotations

import pytest
from nats.js import JetStreamContext

from services.binder.status_log import StreamStatusLog
from services.bus.publishing import Publisher
from services.config.settings import BusSettings
from services.contracts import codec, subjects
from services.contracts.decisions import StatusUpdate
from services.contracts.signing import DecisionKey

pytestmark = pytest.mark.integration

KEY = DecisionKey(b"s" * 32)


def update(plan_seq: int, group: str, phase: str) -> StatusUpdate:
    return StatusUpdate(id=f"{plan_seq}-0", plan_seq=plan_seq, at_ms=0, group=group,
                        phase=phase, running=0, succeeded=0, failed=0)


async def test_the_latest_status_decision_of_a_group_is_the_last_published(
    js: JetStreamContext, bus_settings: BusSettings
) -> None:
    prefix = bus_settings.prefix
    decisions = [update(3, "ml/train", "Scheduling"), update(7, "ml/other", "Pending"),
                 update(9, "ml/train", "Running")]
    await Publisher(js, signing_key=KEY).publish_many([
        (subjects.decisions_subject(prefix, "StatusUpdate", *d.group.split("/")),
         codec.encode(d), d.id) for d in decisions
    ])
    log = StreamStatusLog(js, prefix, KEY)
    assert await log.latest("ml/train") == decisions[2]
    assert await log.latest("ml/other") == decisions[1]
    assert await log.latest("ml/nothing") is None


async def test_a_status_the_planner_did_not_sign_or_of_a_colliding_group_is_not_taken(
    js: JetStreamContext, bus_settings: BusSettings
) -> None:
    prefix = bus_settings.prefix
    log = StreamStatusLog(js, prefix, KEY)
    signed = update(3, "ml/train", "Running")
    subject = subjects.decisions_subject(prefix, "StatusUpdate", "ml", "train")
    await Publisher(js, signing_key=KEY).publish(subject, codec.encode(signed), msg_id="a")
    forged = update(10**15, "ml/train", "Failed")
    await Publisher(js).publish(subject, codec.encode(forged), msg_id="b")  # unsigned
    assert await log.latest("ml/train") is None  # the newest is forged: trust none of it
    # `train.v1` and `train_v1` share a subject token: the other group's status is not ours
    dotted = update(5, "ml/train.v1", "Running")
    await Publisher(js, signing_key=KEY).publish(
        subjects.decisions_subject(prefix, "StatusUpdate", "ml", "train.v1"),
        codec.encode(dotted), msg_id="c")
    assert await log.latest("ml/train_v1") is None
    assert await log.latest("ml/train.v1") == dotted
