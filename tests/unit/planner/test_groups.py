"""Groups, quorum and atomic placement: what waits, what is placed, in one decision."""

from __future__ import annotations

from typing import cast

from services.contracts.decisions import Placement, Rejection
from services.planner.core.config import PlannerConfig
from tests.unit.planner.builders import PodBuilder, make_node, make_pod, make_podgroup, pod_uid
from tests.unit.planner.harness import Cluster


def members(group: str, count: int, cpu_milli: int = 1000, first: int = 0) -> list[PodBuilder]:
    return [make_pod(f"{group}-{i}").requests(cpu_milli=cpu_milli).in_group(group)
            for i in range(first, first + count)]


def test_an_unlabelled_pod_of_ours_is_a_singleton_group() -> None:
    cluster = Cluster().observe(make_node("n0"), make_pod("solo").requests(cpu_milli=100))
    placement = cluster.plan()[0]
    assert isinstance(placement, Placement)
    assert placement.group == "default/pod:solo"
    assert [m.node for m in placement.members] == ["n0"]


def test_pods_of_other_schedulers_are_never_placed() -> None:
    cluster = Cluster().observe(make_node("n0"), make_pod("theirs").scheduler("default-scheduler"),
                                make_pod("no-name").scheduler("default-scheduler").in_group("g"),
                                make_podgroup("g", 1))
    cluster.plan()
    assert cluster.placements() == []


def test_a_label_naming_a_missing_podgroup_waits_then_places_when_it_appears() -> None:
    cluster = Cluster().observe(make_node("n0"), *members("late", 2))
    first = cluster.plan()
    assert [cast(Rejection, d).reason for d in first] == ["PodGroup default/late not found"]
    assert cluster.plan() == []  # told once, not every round
    cluster.observe(make_podgroup("late", 2))
    assert isinstance(cluster.plan()[0], Placement)


def test_an_invalid_podgroup_keeps_its_members_pending_with_its_reason() -> None:
    cluster = Cluster().observe(make_node("n0"), make_podgroup("bad", 1).invalid("spec.minMember"),
                                *members("bad", 1))
    rejection = cluster.plan()[0]
    assert isinstance(rejection, Rejection)
    assert rejection.reason == "PodGroup default/bad is invalid: spec.minMember"
    assert rejection.is_unschedulable is False


def test_unsupported_constraint_is_never_ignored() -> None:
    field = "spec.affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution"
    cluster = Cluster().observe(make_node("n0"), make_pod("aff").unsupported(field))
    rejection = cluster.plan()[0]
    assert isinstance(rejection, Rejection)
    assert rejection.reason == f"unsupported constraint: {field}"
    assert cluster.placements() == []


UNSUPPORTED_G1 = "pod default/g-1: unsupported constraint: spec.resourceClaims"


def test_an_unsupported_member_quorum_needs_keeps_the_whole_gang_waiting() -> None:
    claims = members("g", 1, first=1)[0].unsupported("spec.resourceClaims")
    cluster = Cluster().observe(make_node("n0"), make_podgroup("g", 2), *members("g", 1), claims)
    cluster.plan()
    assert cluster.placements() == []
    assert cluster.last_reason("default/g") == f"gang default/g: {UNSUPPORTED_G1}"
    assert [p.name for p in cluster.rejections("default/g")[-1].pods] == ["g-0", "g-1"]


def test_a_member_that_can_never_be_placed_and_quorum_does_not_need_waits_apart() -> None:
    """Coscheduling judges each pod on its own: the unsupported pod fails its own filters,
    Permit lets the other through once minMember (1) is assigned."""
    claims = members("g", 1, first=1)[0].unsupported("spec.resourceClaims")
    cluster = Cluster().observe(make_node("n0"), make_podgroup("g", 1), *members("g", 1), claims)
    placement = next(d for d in cluster.plan() if isinstance(d, Placement))
    assert [m.name for m in placement.members] == ["g-0"]
    cluster.bind([placement])
    cluster.plan()
    rejection = cluster.rejections("default/g")[-1]
    assert rejection.reason == f"gang default/g: {UNSUPPORTED_G1}"
    assert [p.name for p in rejection.pods] == ["g-1"]
    assert cluster.bound() == ["g-0"]


def test_a_gang_left_short_of_room_tells_its_left_out_member_why_it_waits_too() -> None:
    claims = members("g", 1, first=1)[0].unsupported("spec.resourceClaims")
    cluster = Cluster().observe(make_node("n0").capacity(cpu_milli=500), make_podgroup("g", 1),
                                *members("g", 1), claims)
    cluster.plan()
    assert cluster.placements() == []
    rejection = cluster.rejections("default/g")[-1]
    assert [p.name for p in rejection.pods] == ["g-0", "g-1"]
    assert rejection.reason == (
        "gang default/g: 0 of 1 members fit; 0/1 nodes are available: 1 Insufficient cpu."
        "; pod default/g-1 waits apart (minMember does not need it): "
        "unsupported constraint: spec.resourceClaims")


def test_a_replacement_in_a_gang_that_ran_is_placed_beside_an_unsupported_newcomer() -> None:
    """Reference C.10: a gang that ran, one member deleted and recreated by its controller,
    while an extra member that can never be placed arrived: the replacement is placed."""
    cluster = Cluster().observe(make_node("n0"), make_podgroup("g", 2), *members("g", 2))
    cluster.bind(cluster.plan())
    cluster.delete_pod("g-1")
    extra = make_pod("g-3").requests(cpu_milli=1000).in_group("g").unsupported(
        "spec.resourceClaims")
    cluster.observe(*members("g", 1, first=2), extra)
    placement = next(d for d in cluster.plan() if isinstance(d, Placement))
    assert [m.name for m in placement.members] == ["g-2"]


def test_an_invalid_pod_waits_with_its_reason() -> None:
    cluster = Cluster().observe(make_node("n0"), make_pod("p").invalid("cpu: invalid quantity 'x'"))
    assert cast(Rejection, cluster.plan()[0]).reason == (
        "pod default/p is invalid: cpu: invalid quantity 'x'")


def test_scheduling_gated_pods_do_not_count_toward_quorum() -> None:
    pods = [*members("g", 2), members("g", 1, first=2)[0].gated()]
    cluster = Cluster().observe(make_node("n0"), make_podgroup("g", 3), *pods)
    cluster.advance(1).plan()  # told once no member joined for a second
    assert cluster.placements() == []
    assert cluster.last_reason("default/g") == (
        "gang default/g: 2 of 3 members exist; waiting for quorum (minMember 3) "
        "(1 more scheduling-gated)")


def test_a_gang_is_placed_in_one_decision_with_every_member_that_fits() -> None:
    cluster = Cluster().observe(make_node("n0").capacity(cpu_milli=5000), make_podgroup("g", 3),
                                *members("g", 6))
    decisions = cluster.plan()
    placements = [d for d in decisions if isinstance(d, Placement)]
    assert len(placements) == 1
    assert [m.name for m in placements[0].members] == ["g-0", "g-1", "g-2", "g-3", "g-4"]


def test_members_beyond_quorum_wait_for_the_placement_to_be_bound() -> None:
    cluster = Cluster().observe(make_node("n0"), make_podgroup("g", 2), *members("g", 2))
    first = cluster.plan()
    cluster.observe(*members("g", 1, first=2))
    assert [d for d in cluster.plan() if isinstance(d, Placement)] == []  # first still in flight
    cluster.bind(first)
    placement = next(d for d in cluster.plan() if isinstance(d, Placement))
    assert [m.name for m in placement.members] == ["g-2"]
    assert placement.attempt == 2


def test_bound_members_count_toward_quorum() -> None:
    running = [make_pod(f"g-{i}").requests(cpu_milli=1000).in_group("g").on_node("n0")
               for i in range(2)]
    cluster = Cluster().observe(make_node("n0"), make_podgroup("g", 3), *running,
                                *members("g", 1, first=2))
    placement = cluster.plan()[0]
    assert isinstance(placement, Placement)
    assert [m.name for m in placement.members] == ["g-2"]


def test_terminating_and_finished_members_do_not_count() -> None:
    old = [make_pod("g-0").in_group("g").on_node("n0").deleting(),
           make_pod("g-1").in_group("g").on_node("n0", "Failed")]
    cluster = Cluster().observe(make_node("n0"), make_podgroup("g", 3), *old,
                                *members("g", 2, first=2))
    cluster.advance(1).plan()
    assert cluster.placements() == []
    assert "2 of 3 members exist" in cluster.last_reason("default/g")


def test_placement_deadline_uses_the_podgroup_timeout_or_the_default() -> None:
    cluster = Cluster(PlannerConfig(default_timeout_seconds=45)).observe(
        make_node("n0"), make_podgroup("g", 1).timeout(7), *members("g", 1),
        make_pod("solo"))
    placements = {d.group: d for d in cluster.plan() if isinstance(d, Placement)}
    assert placements["default/g"].deadline_ms == 7000
    assert placements["default/pod:solo"].deadline_ms == 45000


def test_decision_ids_follow_the_plan_sequence_in_order() -> None:
    cluster = Cluster().observe(make_node("n0"), make_pod("a"), make_pod("b"))
    decisions = cluster.plan()
    assert [d.id for d in decisions] == [f"{cluster.seq}-0", f"{cluster.seq}-1"]


def test_a_quiet_round_decides_nothing() -> None:
    cluster = Cluster().observe(make_node("n0").capacity(cpu_milli=1000), make_podgroup("g", 2),
                                *members("g", 2, 800))
    cluster.run()
    cluster.advance(0.2)
    assert cluster.plan() == []


def test_pod_set_change_repeats_the_rejection_with_the_new_pods() -> None:
    cluster = Cluster().observe(make_node("n0"), make_podgroup("g", 3), *members("g", 1))
    cluster.advance(1).plan()
    cluster.observe(*members("g", 1, first=1))
    assert cluster.plan() == []  # a member just joined: more may follow
    rejection = cluster.advance(1).plan()[0]
    assert isinstance(rejection, Rejection)
    assert [p.name for p in rejection.pods] == ["g-0", "g-1"]
    assert "2 of 3 members exist" in rejection.reason


def test_members_with_different_priorities_use_the_highest_and_say_so() -> None:
    pods = [members("g", 1)[0].priority(10), members("g", 1, first=1)[0].priority(500)]
    cluster = Cluster().observe(make_node("n0"), make_podgroup("g", 3), *pods)
    cluster.advance(1).plan()
    assert cluster.last_reason("default/g").endswith(
        "; members have different priorities (500, 10), the gang uses 500")


def test_a_reserved_pod_releases_its_reservation_once_observed_bound() -> None:
    cluster = Cluster().observe(make_node("n0"), make_pod("p").requests(cpu_milli=500))
    cluster.bind(cluster.plan(), skip_group_bound=True)
    assert cluster.state.reservations == {}
    assert cluster.state.node_used["n0"]["cpu"] == 500


def test_a_deleted_reserved_pod_releases_its_capacity() -> None:
    cluster = Cluster().observe(make_node("n0"), make_pod("p").requests(cpu_milli=500))
    cluster.plan()
    cluster.delete_pod("p")
    assert cluster.state.reservations == {}
    assert cluster.state.node_used == {}
    assert pod_uid("p") not in cluster.state.charges
