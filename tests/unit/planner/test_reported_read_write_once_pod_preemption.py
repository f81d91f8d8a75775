"""A ReadWriteOncePod claim held by a lower-priority pod is freed by preemption, never shared.

Public reports: kubernetes/kubernetes #103132 "Enforce ReadWriteOncePod PVC access mode during
scheduling" and PR #114051 "[scheduler] Support preemption of pods using ReadWriteOncePod
PVCs" (KEP-2485: VolumeRestrictions reports the conflict `Unschedulable`, not unresolvable,
and its AddPod/RemovePod let DefaultPreemption evict the lower-priority holder); volcano-sh
#5767 / PR #5774 "fix(predicates): enforce ReadWriteOncePod volume restrictions" (a gang
scheduler that neither enforced the claim nor kept it right in its preemption simulation).

Class of defect: a volume conflict treated as resources are (only the holder's node), or as
unresolvable (never preempted), or forgotten in the preemption dry run. gangsched has none:
these pass and document it (the planner tests had disk-conflict preemption only).
"""

from __future__ import annotations

from services.contracts.decisions import Placement, Preemption
from services.fit import reasons
from tests.unit.planner.builders import (
    make_claim,
    make_node,
    make_pod,
    make_podgroup,
    make_volume,
)
from tests.unit.planner.harness import Cluster

RWOP = ("ReadWriteOncePod",)


def cluster() -> Cluster:
    return Cluster().observe(make_node("n0"), make_node("n1"),
                             make_claim("db", volume="pv", modes=RWOP),
                             make_volume("pv", modes=RWOP, claim=("default", "db")),
                             make_pod("holder").claims("db").priority(0).on_node("n0"))


def test_a_higher_priority_pod_evicts_the_lower_priority_holder_of_its_claim() -> None:
    c = cluster().observe(make_pod("hi").claims("db").priority(100))
    (preemption,) = [d for d in c.plan() if isinstance(d, Preemption)]
    assert [v.name for v in preemption.victims] == ["holder"]
    assert not c.placements()  # nothing shares the claim while the holder terminates


def test_a_gang_member_needing_the_claim_makes_its_gang_evict_the_holder() -> None:
    c = cluster().observe(make_podgroup("g", 2), make_pod("g-0").in_group("g").priority(100),
                          make_pod("g-1").in_group("g").claims("db").priority(100))
    c.advance(2)
    decisions = c.plan()
    (preemption,) = [d for d in decisions if isinstance(d, Preemption)]
    assert [v.name for v in preemption.victims] == ["holder"]
    assert not [d for d in decisions if isinstance(d, Placement)]  # all or nothing


def test_a_holder_of_equal_priority_is_no_victim_and_the_claim_stays_its() -> None:
    c = cluster().observe(make_pod("peer").claims("db").priority(0))
    decisions = c.plan()
    assert not [d for d in decisions if isinstance(d, Preemption | Placement)]
    assert c.last_reason("default/pod:peer") == (
        f"0/2 nodes are available: 2 {reasons.READ_WRITE_ONCE_POD_CONFLICT}.")
