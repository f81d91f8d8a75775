"""Core revision 37: a gang found unschedulable is retried on a change it may fit after, or
after kube-scheduler's 5-minute unschedulable flush, never on a timer in between; the changes
that had no event before (a pending member added, changed or deleted, a nomination ended, a
starving gang's hold ended or moved) now make one. Each scenario is also replayed through
snapshots restored after every event and every round."""

from __future__ import annotations

import msgspec

from services.contracts.decisions import Rejection
from services.contracts.events import PodGroupDeleted
from services.planner.core import backoff
from services.planner.core.config import PlannerConfig
from tests.unit.planner.builders import make_node, make_pod, make_podgroup
from tests.unit.planner.harness import Cluster
from tests.unit.planner.unschedulable import (
    attempts_over,
    check_replay,
    placed,
    small_behind_a_starving_gang,
)

FLUSH_S = backoff.UNSCHEDULABLE_FLUSH_MS // 1000


def test_nothing_changed_no_attempt_until_the_flush() -> None:
    cluster = Cluster().observe(make_node("n0").capacity(cpu_milli=1000), make_podgroup("g", 2),
                                *[make_pod(f"g-{i}").requests(cpu_milli=600).in_group("g")
                                  for i in range(2)])
    assert placed(cluster.plan()) == []
    assert attempts_over(cluster, "default/g", FLUSH_S + 5) == [FLUSH_S]
    check_replay(cluster)


def test_a_member_recreated_without_what_kept_it_off_every_node_is_placed_at_once() -> None:
    """The pod of a Job whose nodeSelector names no node, deleted and recreated by its owner
    with the selector fixed: placed 1 s after the gang's last attempt, not at the flush."""
    cluster = Cluster().observe(
        make_node("n0").capacity(cpu_milli=4000).labels(disk="hdd"), make_podgroup("g", 2),
        make_pod("g-0").requests(cpu_milli=500).in_group("g"),
        make_pod("g-1").requests(cpu_milli=500).in_group("g").selector(disk="ssd"))
    assert placed(cluster.plan()) == []
    cluster.advance(30)
    assert cluster.plan() == []
    cluster.delete_pod("g-1")
    cluster.observe(make_pod("g-1b").requests(cpu_milli=500).in_group("g"))
    assert placed(cluster.plan()) == [("default/g", ["g-0", "g-1b"])]
    check_replay(cluster)


def test_a_toleration_added_to_a_waiting_member_wakes_its_gang() -> None:
    cluster = Cluster().observe(
        make_node("n0").capacity(cpu_milli=4000).taint("gpu"), make_podgroup("g", 1),
        make_pod("g-0").requests(cpu_milli=500).in_group("g"))
    assert placed(cluster.plan()) == []
    cluster.advance(40)
    cluster.observe(make_pod("g-0").requests(cpu_milli=500).in_group("g").tolerate("gpu"))
    assert placed(cluster.plan()) == [("default/g", ["g-0"])]
    check_replay(cluster)


def test_a_waiting_member_deleted_wakes_its_gang() -> None:
    cluster = Cluster().observe(make_node("n0").capacity(cpu_milli=1000), make_podgroup("g", 1),
                                *[make_pod(f"g-{i}").requests(cpu_milli=2000).in_group("g")
                                  for i in range(2)])
    cluster.plan()
    cluster.advance(20)
    cluster.delete_pod("g-1")
    cluster.plan()  # tried early (and told nothing new: it still does not fit)
    group = cluster.state.groups["default/g"]
    assert (group.last_attempt_ms, group.failures) == (20_000, 1)
    assert group.woken_at > 0
    check_replay(cluster)


def test_a_status_written_to_a_waiting_member_does_not_wake_its_gang() -> None:
    """Only the pod's resourceVersion changes (the binder's PodScheduled condition): no
    early retry, so writing the reason does not make the gang retried again and again."""
    cluster = Cluster().observe(make_node("n0").capacity(cpu_milli=1000),
                                make_pod("p").requests(cpu_milli=2000))
    cluster.plan()
    cluster.advance(10)
    again = msgspec.structs.replace(make_pod("p").requests(cpu_milli=2000).build(cluster.now_ms),
                                    resource_version="2")
    cluster.apply(again)
    assert cluster.plan() == []
    group = cluster.state.groups["default/pod:p"]
    assert (group.woken_at, group.last_attempt_ms) == (0, 0)


def test_a_starving_hold_that_ends_lets_the_gangs_behind_it_retry() -> None:
    """`small`, found unschedulable because of big's hold, is placed the round after big loses
    its PodGroup (it then holds nothing), not at its flush: the hold ending frees its room."""
    cluster = small_behind_a_starving_gang()
    assert "capacity reserved for waiting gang default/big" in cluster.last_reason(
        "default/pod:small")
    cluster.advance(8)
    cluster.apply(PodGroupDeleted(at_ms=cluster.now_ms, uid="uid-pg-default-big",
                                  namespace="default", name="big"))
    assert placed(cluster.plan()) == []  # the hold ends with this round
    cluster.advance(1)
    assert placed(cluster.plan()) == [("default/pod:small", ["small"])]
    check_replay(cluster)


def test_a_pending_member_of_the_starving_gang_deleted_frees_the_room_it_held() -> None:
    """Its hold may shrink on the same nodes (`apply._wake`): capacity freed at once."""
    cluster = small_behind_a_starving_gang()
    cluster.advance(8)
    cluster.delete_pod("big-0")
    cluster.delete_pod("big-1")
    assert placed(cluster.plan()) == [("default/pod:small", ["small"])]
    check_replay(cluster)


def test_a_gang_that_starts_starving_is_tried_and_told_it_holds_capacity() -> None:
    config = PlannerConfig(starvation_seconds=10)
    cluster = Cluster(config).observe(
        make_node("n0").capacity(cpu_milli=2000),
        make_pod("r").requests(cpu_milli=1500).on_node("n0"),  # ours: it may drain
        make_podgroup("g", 1), make_pod("g-0").requests(cpu_milli=1000).in_group("g"))
    cluster.plan()
    assert attempts_over(cluster, "default/g", 12) == [10, 11, 12]  # from 10 s: holding
    reasons = [r.reason for r in cluster.rejections("default/g")]
    assert len(reasons) == 2 and "reserving capacity on 1 node(s)" in reasons[-1]
    assert cluster.state.starving_group == "default/g"
    check_replay(cluster)


def test_a_starving_gang_that_fits_nowhere_even_emptied_is_not_tried_every_round() -> None:
    """Reference C.2: it holds nothing, so it is not retried as a holder is (every round)."""
    cluster = Cluster(PlannerConfig(starvation_seconds=10)).observe(
        make_node("n0").capacity(cpu_milli=1000), make_pod("p").requests(cpu_milli=2000))
    cluster.plan()
    assert attempts_over(cluster, "default/pod:p", 60) == [10]
    assert cluster.last_reason("default/pod:p").endswith(
        "it would not fit even on nodes emptied of gangsched's pods, so it reserves no capacity")
    check_replay(cluster)


def test_a_failed_early_retry_tells_a_reason_that_changed() -> None:
    """No nodes at first; a node joins (capacity freed) but too small: the early retry fails
    otherwise than told, and the new reason is told (not counted)."""
    cluster = Cluster().observe(make_pod("p").requests(cpu_milli=2000))
    cluster.plan()
    assert "no nodes are registered" in cluster.last_reason("default/pod:p")
    cluster.advance(5)
    cluster.observe(make_node("n0").capacity(cpu_milli=1000))
    cluster.plan()
    assert cluster.last_reason("default/pod:p") == "0/1 nodes are available: 1 Insufficient cpu."
    assert cluster.state.groups["default/pod:p"].failures == 1
    told = [r for r in cluster.rejections("default/pod:p") if isinstance(r, Rejection)]
    assert [r.retry_at_ms for r in told] == [backoff.UNSCHEDULABLE_FLUSH_MS] * 2
    check_replay(cluster)
