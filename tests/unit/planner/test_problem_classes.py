"""Problem classes users reported against gang schedulers: gangsched has none."""

from __future__ import annotations

from services.contracts.decisions import Placement, Rejection
from services.planner.core import backoff
from services.planner.core.config import PlannerConfig
from tests.unit.planner.builders import (
    GIB,
    PodBuilder,
    make_node,
    make_pod,
    make_podgroup,
    pod_uid,
)
from tests.unit.planner.harness import Cluster


def members(group: str, count: int, cpu_milli: int, first: int = 0) -> list[PodBuilder]:
    return [make_pod(f"{group}-{i}").requests(cpu_milli=cpu_milli).in_group(group)
            for i in range(first, first + count)]


def reserved_groups(cluster: Cluster) -> list[str]:
    return sorted({r.group for r in cluster.state.reservations.values()})


def test_c1_two_gangs_never_both_half_placed() -> None:
    cluster = Cluster().observe(make_node("n0").capacity(cpu_milli=4000),
                                make_podgroup("a", 3), make_podgroup("b", 3),
                                *members("a", 3, 1000), *members("b", 3, 1000))
    cluster.plan()
    assert reserved_groups(cluster) == ["default/a"]
    assert len(cluster.state.reservations) == 3


def test_c2_gang_that_fits_only_in_aggregate_backs_off_and_others_proceed() -> None:
    nodes = [make_node(f"n{i}").capacity(cpu_milli=2000) for i in range(4)]
    cluster = Cluster().observe(*nodes, make_podgroup("big", 2), *members("big", 2, 3000),
                                make_pod("small").requests(cpu_milli=1000).created(5))
    cluster.run()
    assert cluster.bound() == ["small"]
    rejection = cluster.rejections("default/big")[-1]
    assert rejection.retry_at_ms == backoff.UNSCHEDULABLE_FLUSH_MS  # no timed retry before
    assert "0 of 2 members fit; 0/4 nodes are available: 4 Insufficient cpu." in rejection.reason
    cluster.advance(0.5)
    assert cluster.plan() == []  # still backed off: no attempt, no repeated Rejection


def test_c3_old_unfittable_gang_does_not_starve_newer_small_groups() -> None:
    cluster = Cluster(PlannerConfig(starvation_seconds=5)).observe(
        make_node("n0").capacity(cpu_milli=4000), make_podgroup("old", 2),
        *members("old", 2, 3000))
    cluster.run()
    for second in range(1, 30):
        cluster.advance(1).observe(make_pod(f"small-{second}").requests(cpu_milli=100)
                                   .created(second * 1000))
        cluster.run()
    assert len(cluster.bound()) == 29
    assert "it would not fit even on nodes emptied of gangsched's pods" in cluster.last_reason(
        "default/old")


def test_c3_a_gang_that_fits_only_if_other_schedulers_pods_left_does_not_starve_others() -> None:
    cluster = Cluster(PlannerConfig(starvation_seconds=5)).observe(
        make_node("n0").capacity(cpu_milli=4000),
        make_pod("daemon").scheduler("default-scheduler").requests(cpu_milli=2000).on_node("n0"),
        make_podgroup("old", 2), *members("old", 2, 1500))  # 3000m: fits only without "daemon"
    cluster.run()
    for second in range(1, 30):
        cluster.advance(1).observe(make_pod(f"small-{second}").requests(cpu_milli=50)
                                   .created(second * 1000))
        cluster.run()
    assert len([name for name in cluster.bound() if name.startswith("small-")]) == 29
    assert "reserves no capacity" in cluster.last_reason("default/old")


def test_c4_no_member_holds_capacity_when_the_last_cannot_fit() -> None:
    cluster = Cluster().observe(make_node("n0").capacity(cpu_milli=5000),
                                make_podgroup("g", 3), *members("g", 3, 2000))
    cluster.run()
    assert cluster.state.reservations == {}
    assert cluster.state.node_used == {}
    assert "2 of 3 members fit" in cluster.last_reason("default/g")


def test_c5_groups_created_together_are_kept_together() -> None:
    # pod names interleave alphabetically (a-0, b-0, a-1, ...) but each gang stays whole
    pods = [make_pod(f"{i}-{g}").requests(cpu_milli=1000).in_group(g)
            for i in range(3) for g in ("a", "b")]
    cluster = Cluster().observe(make_node("n0").capacity(cpu_milli=4000),
                                make_podgroup("a", 3), make_podgroup("b", 3), *pods)
    cluster.run()
    assert cluster.bound() == ["0-a", "1-a", "2-a"]


def test_c6_failed_scheduling_reason_names_gang_fit_count_and_nodes() -> None:
    cluster = Cluster().observe(make_node("n0").capacity(cpu_milli=10000, memory_bytes=8 * GIB),
                                make_podgroup("nginx", 4), *members("nginx", 6, 3000))
    cluster.run()
    assert cluster.last_reason("default/nginx") == (
        "gang default/nginx: 3 of 4 members fit; 0/1 nodes are available: 1 Insufficient cpu.")


def test_c6_singleton_reason_mirrors_kube_scheduler() -> None:
    cluster = Cluster().observe(
        make_node("n0").capacity(cpu_milli=1000), make_node("n1").taint("dedicated", "gpu"),
        make_node("n2").capacity(cpu_milli=500, memory_bytes=10), make_pod("p").requests(
            cpu_milli=2000, memory_bytes=100))
    cluster.run()
    assert cluster.last_reason("default/pod:p") == (
        "0/3 nodes are available: 1 Insufficient memory, 1 node(s) had untolerated taint(s), "
        "2 Insufficient cpu.")  # kube-scheduler sorts the "<count> <reason>" strings


def test_c7_deadline_counts_from_the_placement_and_expiry_waits_for_grace() -> None:
    config = PlannerConfig(release_grace_seconds=30)
    cluster = Cluster(config).observe(make_node("n0"), make_podgroup("g", 2).timeout(10))
    cluster.advance(500).observe(*members("g", 2, 1000))
    placement = next(d for d in cluster.plan() if isinstance(d, Placement))
    assert placement.deadline_ms == placement.at_ms + 10_000
    cluster.advance(39.9)
    cluster.plan()
    assert len(cluster.state.reservations) == 2
    cluster.advance(0.1)
    decisions = cluster.plan()
    assert cluster.state.reservations == {}
    assert any(isinstance(d, Rejection) and "neither bound nor rolled back" in d.reason
               for d in decisions)


def test_c8_capacity_of_finished_and_deleted_pods_is_released() -> None:
    cluster = Cluster().observe(make_node("n0").capacity(cpu_milli=3000),
                                make_podgroup("old", 3), *members("old", 3, 1000))
    cluster.run()
    assert cluster.state.node_used["n0"]["cpu"] == 3000
    cluster.set_phase("old-0", "Succeeded")
    cluster.delete_pod("old-1")
    cluster.delete_pod("old-2")
    cluster.observe(make_podgroup("new", 3), *members("new", 3, 1000))
    cluster.run()
    assert cluster.bound() == ["new-0", "new-1", "new-2"]


def test_c9_pods_bound_by_another_scheduler_use_capacity() -> None:
    other = make_pod("web").scheduler("default-scheduler").requests(cpu_milli=3000).on_node("n0")
    cluster = Cluster().observe(make_node("n0").capacity(cpu_milli=4000), other,
                                make_podgroup("g", 2), *members("g", 2, 1000))
    cluster.run()
    assert cluster.bound() == []
    assert "1 of 2 members fit" in cluster.last_reason("default/g")


def test_c10_a_replacement_member_of_a_running_gang_is_placed_alone() -> None:
    cluster = Cluster().observe(make_node("n0"), make_podgroup("g", 3), *members("g", 3, 1000))
    cluster.run()
    cluster.delete_pod("g-1")
    cluster.observe(make_pod("g-1b").requests(cpu_milli=1000).in_group("g"))
    decisions = cluster.run()
    placement = next(d for d in decisions if isinstance(d, Placement))
    assert [m.pod_uid for m in placement.members] == [pod_uid("g-1b")]
