"""The PodGroup scheduling duration: creation to all minMember members bound, once each time."""

from __future__ import annotations

from services.contracts.decisions import StatusUpdate
from services.planner.scheduling_time import SchedulingTimes
from tests.unit.planner.builders import make_podgroup


def update(group: str, at_ms: int, reason: str) -> StatusUpdate:
    return StatusUpdate(id=f"{at_ms}-0", plan_seq=at_ms, at_ms=at_ms, group=group,
                        phase="Running", running=0, succeeded=0, failed=0,
                        condition_reason=reason)


def test_a_group_counts_once_when_it_becomes_scheduled_and_again_after_a_new_attempt() -> None:
    podgroup = make_podgroup("g", 2).created(1_700_000_000_000).build()
    podgroups = {"default/g": podgroup}
    created = podgroup.created_at_ms
    times = SchedulingTimes()
    assert times.newly_scheduled([update("default/g", created + 1_000, "Binding")],
                                 podgroups) == []
    assert times.newly_scheduled([update("default/g", created + 2_500, "Scheduled"),
                                  update("default/g", created + 3_000, "Scheduled")],
                                 podgroups) == [2.5]
    assert times.newly_scheduled([update("default/g", created + 9_000, "Unschedulable"),
                                  update("default/g", created + 12_000, "Scheduled")],
                                 podgroups) == [12.0]


def test_a_group_without_a_podgroup_is_not_measured() -> None:
    assert SchedulingTimes().newly_scheduled([update("default/x", 5, "Scheduled")], {}) == []
