"""A PodGroup's life as the bus may deliver it (services/planner/core/apply.py): a retried
publish may be stored after later ones (`bus.publishing`), so an older observation of a
PodGroup must not undo a newer spec, a late delete must not remove the PodGroup (or Node) that
replaced it, and a late observation must not bring a deleted one back. A PodGroup created
again is a new gang, however many Succeeded pods its earlier run left; and members created
after every earlier member went away start a wait of their own (`plan._settle`)."""

from __future__ import annotations

import msgspec

from services.contracts.decisions import Placement, Rejection
from services.contracts.events import KUEUE_GROUP_API, NodeDeleted, PodGroupDeleted
from tests.unit.planner.builders import make_node, make_pod, make_podgroup
from tests.unit.planner.harness import Cluster


def placed(cluster: Cluster) -> list[str]:
    return sorted(m.name for d in cluster.decisions if isinstance(d, Placement)
                  for m in d.members)


def members(group: str, count: int, prefix: str | None = None, cpu: int = 1000) -> list[object]:
    return [make_pod(f"{prefix or group}-{i}").requests(cpu_milli=cpu).in_group(group)
            for i in range(count)]


def test_an_older_observation_stored_late_does_not_undo_a_larger_min_member() -> None:
    cluster = Cluster().observe(make_node("n0"),
                                make_podgroup("g", 4).version("12"),
                                make_podgroup("g", 2).version("11"),  # stored late
                                *members("g", 3))
    cluster.advance(5)
    cluster.plan()
    assert cluster.state.podgroups["default/g"].min_member == 4
    assert placed(cluster) == []
    assert "3 of 4 members exist" in cluster.last_reason("default/g")


def test_a_kueue_groups_count_may_go_down() -> None:
    """Its `resource_version` is the total count, not a version: 4 then 2 is a change."""
    four = make_podgroup("k", 4).version("4").build(0)
    two = make_podgroup("k", 2).version("2").build(1)
    cluster = Cluster().observe(make_node("n0"),
                                msgspec.structs.replace(four, api_version=KUEUE_GROUP_API),
                                msgspec.structs.replace(two, api_version=KUEUE_GROUP_API),
                                *members("k", 2))
    cluster.advance(5)
    cluster.plan()
    assert placed(cluster) == ["k-0", "k-1"]


def test_a_late_delete_of_a_replaced_podgroup_keeps_the_new_one() -> None:
    cluster = Cluster().observe(make_node("n0"),
                                make_podgroup("g", 2).uid("uid-run-2").version("20"))
    cluster.apply(PodGroupDeleted(at_ms=cluster.now_ms, uid="uid-pg-default-g",
                                  namespace="default", name="g"))  # the first one's, late
    cluster.observe(*members("g", 2))
    cluster.advance(5)
    cluster.plan()
    assert cluster.state.podgroups["default/g"].uid == "uid-run-2"
    assert placed(cluster) == ["g-0", "g-1"]


def test_a_late_observation_does_not_bring_a_deleted_podgroup_back() -> None:
    cluster = Cluster().observe(make_node("n0"))
    cluster.apply(PodGroupDeleted(at_ms=cluster.now_ms, uid="uid-pg-default-g",
                                  namespace="default", name="g"))
    cluster.observe(make_podgroup("g", 2), *members("g", 2))  # observed before, stored after
    cluster.advance(5)
    cluster.plan()
    assert "default/g" not in cluster.state.podgroups
    assert placed(cluster) == []
    assert cluster.last_reason("default/g") == "PodGroup default/g not found"
    cluster.observe(make_podgroup("g", 2).uid("uid-run-2"))  # created again: a new uid
    cluster.advance(1)
    cluster.plan()
    assert placed(cluster) == ["g-0", "g-1"]


def test_a_late_delete_of_a_replaced_node_keeps_the_new_node() -> None:
    old = make_node("n0").build(0)
    cluster = Cluster().observe(msgspec.structs.replace(old, uid="uid-node-n0-again"))
    cluster.apply(NodeDeleted(at_ms=0, uid=old.uid, name="n0"))
    cluster.observe(make_pod("solo").requests(cpu_milli=100))
    cluster.plan()
    assert "n0" in cluster.state.nodes
    assert placed(cluster) == ["solo"]


def test_a_podgroup_created_again_is_a_new_gang_beside_its_last_runs_succeeded_pods() -> None:
    """Three pods of the first run Succeeded and kept (a Job keeps them until its TTL); the
    PodGroup is deleted and created again; the new run's three members must go together or
    not at all, not one by one as if the old pods were the quorum."""
    cluster = Cluster().observe(make_node("n0").capacity(cpu_milli=4000), make_podgroup("g", 3),
                                *members("g", 3, "a"))
    cluster.run()
    for i in range(3):
        cluster.set_phase(f"a-{i}", "Succeeded")
    cluster.advance(1)
    cluster.plan()
    cluster.apply(PodGroupDeleted(at_ms=cluster.now_ms, uid="uid-pg-default-g",
                                  namespace="default", name="g"))
    cluster.observe(make_podgroup("g", 3).uid("uid-run-2").created(cluster.now_ms),
                    make_pod("other").requests(cpu_milli=3000).scheduler("default-scheduler")
                    .on_node("n0"),  # room for one member only
                    *members("g", 3, "b"))
    cluster.advance(5)
    cluster.plan()
    assert placed(cluster) == ["a-0", "a-1", "a-2"]  # the first run's only
    assert "1 of 3 members fit" in cluster.last_reason("default/g")


def test_a_podgroup_replaced_within_one_batch_is_a_new_gang_too() -> None:
    """The delete and the new PodGroup applied before the planner's next round: the group's
    state survives, but not the run it remembered."""
    cluster = Cluster().observe(make_node("n0").capacity(cpu_milli=4000), make_podgroup("g", 3),
                                *members("g", 3, "a"))
    cluster.run()
    for i in range(3):
        cluster.set_phase(f"a-{i}", "Succeeded")
    cluster.apply(PodGroupDeleted(at_ms=cluster.now_ms, uid="uid-pg-default-g",
                                  namespace="default", name="g"))
    cluster.observe(make_podgroup("g", 3).uid("uid-run-2"),
                    make_pod("other").requests(cpu_milli=3000).scheduler("default-scheduler")
                    .on_node("n0"),
                    *members("g", 3, "b"))
    cluster.advance(5)
    cluster.plan()
    assert placed(cluster) == ["a-0", "a-1", "a-2"]


def test_members_created_after_the_last_ones_went_away_start_their_own_wait() -> None:
    """The first members never fit and waited 400 s (past the 60 s starvation threshold); they
    are deleted, the PodGroup kept. The next members are not starving the moment they arrive:
    they hold no capacity against everyone else and are not told they waited 400 s."""
    cluster = Cluster().observe(make_node("n0").capacity(cpu_milli=2000),
                                make_node("n1").capacity(cpu_milli=2000),
                                make_podgroup("g", 2), *members("g", 2, "old", cpu=3000))
    cluster.advance(2)
    cluster.plan()
    cluster.advance(400)
    cluster.plan()
    for i in range(2):
        cluster.delete_pod(f"old-{i}")
    cluster.advance(1)
    cluster.plan()
    cluster.observe(make_pod("x").requests(cpu_milli=1500).on_node("n0"),
                    *members("g", 2, "new", cpu=1500))
    cluster.advance(2)
    decisions = cluster.plan()
    told = [d.reason for d in decisions if isinstance(d, Rejection) and d.group == "default/g"]
    assert told and not any("waited" in reason for reason in told), told
    assert cluster.state.groups["default/g"].pending_since_ms in (None, cluster.now_ms)
    assert not cluster.state.starving_group


def test_a_resource_version_too_long_for_int_is_compared_not_raised() -> None:
    """A forged 5,000-digit resourceVersion decodes (it is text) and raised ValueError in
    `apply`, the planner's pure core, where `int` refuses over 4,300 digits."""
    cluster = Cluster().observe(make_node("n0"),
                                make_podgroup("g", 4).version("1" + "0" * 5000),
                                make_podgroup("g", 2).version("9" * 5000),  # older: dropped
                                *members("g", 2))
    cluster.advance(5)
    cluster.plan()
    assert cluster.state.podgroups["default/g"].min_member == 4
