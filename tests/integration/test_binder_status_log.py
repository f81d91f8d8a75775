"""The binder reads the newest PodGroup status decision of a group back from DECISIONS."""

from __future__ import annotations

import pytest
from nats.js import JetStreamContext

from services.binder.status_log import StreamStatusLog
from services.bus.publishing import Publisher
from services.config.settings import BusSettings
from services.contracts import codec, subjects
from services.contracts.decisions import StatusUpdate

pytestmark = pytest.mark.integration


def update(plan_seq: int, group: str, phase: str) -> StatusUpdate:
    return StatusUpdate(id=f"{plan_seq}-0", plan_seq=plan_seq, at_ms=0, group=group,
                        phase=phase, running=0, succeeded=0, failed=0)


async def test_the_latest_status_decision_of_a_group_is_the_last_published(
    js: JetStreamContext, bus_settings: BusSettings
) -> None:
    prefix = bus_settings.prefix
    decisions = [update(3, "ml/train", "Scheduling"), update(7, "ml/other", "Pending"),
                 update(9, "ml/train", "Running")]
    await Publisher(js).publish_many([
        (subjects.decisions_subject(prefix, "StatusUpdate", *d.group.split("/")),
         codec.encode(d), d.id) for d in decisions
    ])
    log = StreamStatusLog(js, prefix)
    assert await log.latest("ml/train") == decisions[2]
    assert await log.latest("ml/other") == decisions[1]
    assert await log.latest("ml/nothing") is None
