"""Which consumer takes each decision type, and the lane a decision runs in."""

from __future__ import annotations

from typing import get_args

from services.binder.service import MAIN_TYPES, REPORT_TYPES, lane
from services.contracts.decisions import Assignment, Decision, Placement, Preemption, Victim

NOW_MS = 1_700_000_000_000


def test_every_decision_type_has_exactly_one_binder_consumer() -> None:
    assert set(MAIN_TYPES) | set(REPORT_TYPES) == set(get_args(Decision))
    assert not set(MAIN_TYPES) & set(REPORT_TYPES)
    assert Preemption in MAIN_TYPES


def test_a_preemption_runs_in_its_groups_placement_lane() -> None:
    placement = Placement(id="13-0", plan_seq=13, at_ms=NOW_MS, group="default/g", attempt=1,
                          deadline_ms=NOW_MS, members=())
    preemption = Preemption(id="12-0", plan_seq=12, at_ms=NOW_MS, group="default/g",
                            priority=100, deadline_ms=NOW_MS + 30_000,
                            nominated=(Assignment("uid-h0", "default", "h0", "n1"),),
                            victims=(Victim(uid="uid-low", namespace="default", name="low",
                                            node="n1", group="default/pod:low", priority=10),),
                            reason="1 of 1 members fit once 1 pod is preempted")
    assert lane(preemption) == lane(placement) == "Placement:default/g"
