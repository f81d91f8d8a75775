"""Event-order robustness and backoff: late observations, relabelled reservations, heartbeats,
repeated rollbacks, snapshot restores before the first plan, Gt/Lt parsing, release grace."""

from __future__ import annotations

import msgspec
import pytest

from services.contracts import codec
from services.contracts.decisions import Decision, Placement
from services.contracts.events import (
    GroupRolledBack,
    NodeDeleted,
    NodeSelectorRequirement,
    PodDeleted,
)
from services.fit import filters
from services.planner.core import plan as planner
from services.planner.core.apply import PRUNE_SLACK_MS, TOMBSTONE_MS
from services.planner.core.config import PlannerConfig
from services.planner.core.state import decode_state, empty_state, encode_state
from tests.unit.planner.builders import make_node, make_pod, make_podgroup, pod_uid
from tests.unit.planner.harness import Cluster, replay


def placements(decisions: list[Decision]) -> list[Placement]:
    return [d for d in decisions if isinstance(d, Placement)]


def test_a_restore_before_the_first_plan_keeps_an_outcome_for_a_group_without_pods() -> None:
    cluster = Cluster().observe(make_node("n0"), make_pod("web"))
    placement = placements(cluster.plan())[0]
    cluster.delete_pod("web")
    cluster.roll_back(placement, "pod deleted")
    cluster.plan()
    cluster.advance(100)
    cluster.observe(make_pod("web").created(100_000))
    cluster.plan()
    recorded = b"".join(codec.encode(d) + b"\n" for d in cluster.decisions)
    assert replay(cluster.log, cluster.config) == recorded
    state, out = empty_state(), bytearray()
    for position, (kind, item) in enumerate(cluster.log):
        if kind == "event":
            state = planner.apply(state, item)
        else:
            state, decisions = planner.plan(state, cluster.config, item)
            out += b"".join(codec.encode(d) + b"\n" for d in decisions)
        if position == 2:  # just after the first plan: indexes dropped before the rollback
            state = decode_state(encode_state(state))
    assert bytes(out) == recorded


def test_a_reserved_pod_moved_to_another_group_does_not_count_for_it() -> None:
    cluster = Cluster().observe(
        make_node("n0").capacity(cpu_milli=3000), make_podgroup("g1", 2), make_podgroup("g2", 2),
        *[make_pod(f"a{i}").in_group("g1") for i in (1, 2)])
    placements(cluster.plan())
    cluster.observe(make_pod("a1").in_group("g2"), make_pod("b1").in_group("g2"))
    placed = placements(cluster.plan())
    assert [sorted(m.pod_uid for m in p.members) for p in placed] == [
        [pod_uid("a1"), pod_uid("b1")]]  # a1 placed afresh with b1, not counted as reserved
    assert all(r.group != "default/g1" or uid != pod_uid("a1")
               for uid, r in cluster.state.reservations.items())


def test_successive_rollbacks_back_off_longer_up_to_the_cap() -> None:
    config = PlannerConfig(backoff_initial_seconds=1, backoff_max_seconds=8)
    cluster = Cluster(config).observe(make_node("n0"), make_pod("p"))
    placement, gaps = placements(cluster.plan())[0], []
    for _ in range(6):
        cluster.roll_back(placement)
        rolled_back_at = cluster.now_ms
        while not (placed := placements(cluster.advance(0.5).plan())):
            pass
        gaps.append(cluster.now_ms - rolled_back_at)
        placement = placed[0]
    assert gaps == [1000, 2000, 4000, 8000, 8000, 8000]


def test_a_bound_group_starts_its_backoff_over() -> None:
    cluster = Cluster().observe(make_node("n0"), make_pod("p"))
    cluster.roll_back(placements(cluster.plan())[0])
    cluster.advance(1)
    cluster.bind(cluster.plan())
    assert cluster.state.groups["default/pod:p"].failures == 0


def test_a_late_observation_of_a_deleted_pod_or_node_is_ignored() -> None:
    cluster = Cluster().observe(make_node("n0").capacity(cpu_milli=2000))
    other = make_pod("web").scheduler("default-scheduler").requests(cpu_milli=2000).on_node("n0")
    cluster.apply(PodDeleted(at_ms=5, uid=pod_uid("web"), namespace="default", name="web"))
    cluster.observe(other)
    assert pod_uid("web") not in cluster.state.pods and cluster.state.node_used == {}
    cluster.apply(NodeDeleted(at_ms=6, name="n0", uid="uid-node-n0"))
    cluster.observe(make_node("n0"))
    assert cluster.state.nodes == {}
    cluster.advance(TOMBSTONE_MS / 1000 + 1)
    cluster.observe(make_node("n0"))  # expired tombstones no longer keep it out
    assert "n0" in cluster.state.nodes
    cluster.advance(PRUNE_SLACK_MS / 1000)
    assert cluster.state.tombstones == {}  # and are dropped together a little later


def test_an_observation_older_than_the_held_one_is_ignored() -> None:
    cluster = Cluster().observe(make_node("n0"), make_pod("p"))
    newer = msgspec.structs.replace(cluster.pod("p"), resource_version="10", phase="Failed")
    cluster.apply(newer)
    cluster.apply(msgspec.structs.replace(newer, resource_version="9", phase="Pending"))
    assert cluster.pod("p").phase == "Failed"
    cluster.apply(msgspec.structs.replace(newer, resource_version="opaque", phase="Pending"))
    assert cluster.pod("p").phase == "Pending"  # not both integers: the later event wins
    node = cluster.state.nodes["n0"]
    cluster.apply(msgspec.structs.replace(node, resource_version="7", is_ready=False))
    cluster.apply(msgspec.structs.replace(node, resource_version="6"))
    assert not cluster.state.nodes["n0"].is_ready


def test_a_node_heartbeat_does_not_count_as_freed_capacity() -> None:
    cluster = Cluster().observe(make_node("n0"))
    freed = cluster.state.capacity_freed_at
    cluster.advance(5)
    node = cluster.state.nodes["n0"]
    cluster.apply(msgspec.structs.replace(node, resource_version="2", at_ms=cluster.now_ms))
    assert cluster.state.capacity_freed_at == freed
    cluster.apply(msgspec.structs.replace(node, resource_version="3", at_ms=cluster.now_ms,
                                          labels={"zone": "b"}))
    assert cluster.state.capacity_freed_at == cluster.state.moments > freed


@pytest.mark.parametrize(("value", "matches"), [
    ("5", True), ("+5", True), ("0x10", False), (" 5", False), ("5_0", False), ("\u0665", False),
    ("9223372036854775807", True), ("9223372036854775808", False), ("-1", False)])
def test_gt_parses_integers_as_go(value: str, matches: bool) -> None:
    requirement = NodeSelectorRequirement(key="k", operator="Gt", values=("1",))
    assert filters.requirement_matches(requirement, {"k": value}) is matches


def test_release_grace_outlasts_the_binder_ack_wait() -> None:
    assert PlannerConfig().release_grace_seconds == 90


def test_release_grace_outlasts_the_binders_bind_stop_by_the_rollback_margin() -> None:
    from services.contracts import binding_window
    from services.contracts.binding_window import BIND_GRACE_MS  # what the binder's placing uses

    grace_ms = PlannerConfig().release_grace_seconds * 1000
    assert grace_ms - BIND_GRACE_MS == binding_window.ROLLBACK_MARGIN_MS == 30_000


def test_a_binder_clock_running_ahead_does_not_move_the_planners_clock() -> None:
    cluster = Cluster(config=PlannerConfig(backoff_initial_seconds=1.0)).observe(
        make_node("n0").capacity(cpu_milli=4000), make_podgroup("g", min_member=2),
        make_pod("a").in_group("g").requests(cpu_milli=1000),
        make_pod("b").in_group("g").requests(cpu_milli=1000))
    placement = next(d for d in cluster.plan() if isinstance(d, Placement))
    hour_ahead = cluster.now_ms + 3_600_000
    cluster.apply(GroupRolledBack(at_ms=hour_ahead, decision_id=placement.id,
                                  group=placement.group, reason="bind refused"))
    assert cluster.state.now_ms < hour_ahead
    cluster.advance(2.0)  # the backoff after the rollback passes by the watcher's clock
    retried = [d for d in cluster.plan() if isinstance(d, Placement)]
    assert [d.group for d in retried] == ["default/g"]


def test_capacity_a_rollback_frees_in_the_same_tick_lets_a_backed_off_group_retry_early() -> None:
    cluster = Cluster(PlannerConfig(backoff_initial_seconds=1.0, backoff_max_seconds=60))
    cluster.observe(make_node("n").capacity(cpu_milli=4000),
                    make_pod("blocker").requests(cpu_milli=4000).on_node("n"),
                    make_pod("x").requests(cpu_milli=2000))
    for _ in range(5):  # x fails while the blocker runs: not tried again on a timer
        cluster.plan()
        cluster.advance(20)
    cluster.delete_pod("blocker")
    cluster.observe(make_podgroup("a", min_member=2),
                    make_pod("a1").in_group("a").priority(1000).requests(cpu_milli=2000),
                    make_pod("a2").in_group("a").priority(1000).requests(cpu_milli=2000))
    placement = next(d for d in cluster.plan() if isinstance(d, Placement))
    cluster.apply(GroupRolledBack(at_ms=cluster.now_ms + 300, decision_id=placement.id,
                                  group=placement.group, reason="refused"))
    cluster.delete_pod("a1")
    cluster.delete_pod("a2")
    cluster.advance(1)
    # x's early retry when the blocker left failed (a, higher priority, took the room): its
    # next one comes 2 s after that attempt, as kube-scheduler's backoff queue paces a pod
    assert [d.group for d in cluster.plan() if isinstance(d, Placement)] == []
    cluster.advance(1)
    assert [d.group for d in cluster.plan() if isinstance(d, Placement)] == ["default/pod:x"]
