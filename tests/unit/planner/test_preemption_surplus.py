"""A victim gang loses only its surplus when that is enough: members bound beyond minMember
(bound, plus Succeeded once it ran) are evicted one by one, least important first as
`SelectVictimsOnNode` reprieves the most important first, and the gang keeps running at
quorum; when the preemptor needs more, the gang goes whole, never left below minMember."""

from __future__ import annotations

from services.contracts.decisions import Placement, Preemption
from services.contracts.events import DisruptionBudgetObserved, NodeSelectorRequirement
from services.contracts.ids import singleton_key
from tests.unit.planner.builders import make_node, make_pod, make_podgroup
from tests.unit.planner.harness import Cluster, recorded, replay

STARTS = (1000, 4000, 2000, 3000)
"""`status.startTime` of low-0 .. low-3: low-1 started last, so it is the least important."""


def _running_gang(min_member: int, cpu_milli: int = 1000) -> Cluster:
    """One 4000m node filled by the four members of gang `low` (priority 0)."""
    cluster = Cluster().observe(make_node("n0").capacity(cpu_milli=4000),
                                make_podgroup("low", min_member))
    cluster.observe(*(make_pod(f"low-{i}").requests(cpu_milli=cpu_milli).in_group("low")
                      .started(start).on_node("n0") for i, start in enumerate(STARTS)))
    return cluster


def _victims(cluster: Cluster) -> list[str]:
    [preemption] = [d for d in cluster.plan() if isinstance(d, Preemption)]
    return sorted(victim.name for victim in preemption.victims)


def test_a_singleton_evicts_one_surplus_member_and_the_gang_runs_on() -> None:
    cluster = _running_gang(min_member=2)
    cluster.observe(make_pod("big").requests(cpu_milli=1000).priority(100))
    decisions = cluster.plan()
    [preemption] = [d for d in decisions if isinstance(d, Preemption)]
    assert [(v.name, v.node, v.group) for v in preemption.victims] == [
        ("low-1", "n0", "default/low")]
    assert preemption.reason == ("preempted by pod default/big (priority 100 > 0) to make room "
                                 f"on n0; decision {preemption.id}")
    assert cluster.last_reason(singleton_key("default", "big")).endswith(
        f"; preempting 1 lower-priority pod(s) of 1 group(s) on 1 node(s) (decision "
        f"{preemption.id}); the nodes are held for this gang until 1970-01-01T00:02:00Z")
    [status] = cluster.statuses("default/low")[-1:]
    assert (status.phase, status.condition_reason) == ("Running", "Preempted")
    assert status.condition_message == (
        f"preempted by pod default/big (priority 100 > 0) to make room on n0; decision "
        f"{preemption.id}; 1 of its 4 bound members, beyond minMember 2, so the gang keeps "
        "running")
    cluster.delete_pod("low-1")
    cluster.advance(1)
    [placement] = [d for d in cluster.plan() if isinstance(d, Placement)]
    assert [(m.name, m.node) for m in placement.members] == [("big", "n0")]
    cluster.bind([placement])
    cluster.advance(1)
    cluster.plan()
    assert cluster.bound() == ["big", "low-0", "low-2", "low-3"]
    [status] = cluster.statuses("default/low")[-1:]
    assert (status.phase, status.running) == ("Running", 3)
    assert replay(cluster.log, cluster.config) == recorded(cluster)


def test_the_lowest_priority_member_goes_before_the_latest_started() -> None:
    cluster = Cluster().observe(make_node("n0").capacity(cpu_milli=4000),
                                make_podgroup("low", 2))
    cluster.observe(*(make_pod(f"low-{i}").requests(cpu_milli=1000).in_group("low")
                      .priority(5 if i else 1).started(start).on_node("n0")
                      for i, start in enumerate(STARTS)))
    cluster.observe(make_pod("big").requests(cpu_milli=2000).priority(100))
    assert _victims(cluster) == ["low-0", "low-1"]


def test_a_member_a_budget_protects_stays_and_the_next_least_important_goes() -> None:
    # low-1 (started last) would go, but no disruption of it is allowed: it is given back
    # first, as kube-scheduler reprieves budget violators first, and low-3 goes instead
    cluster = Cluster().observe(make_node("n0").capacity(cpu_milli=4000),
                                make_podgroup("low", 2), DisruptionBudgetObserved(
                                    at_ms=0, uid="pdb-db", namespace="default", name="db",
                                    resource_version="1", disruptions_allowed=0,
                                    selector=(NodeSelectorRequirement("app", "In", ("db",)),)))
    cluster.observe(*(make_pod(f"low-{i}").requests(cpu_milli=1000).in_group("low")
                      .labelled(**({"app": "db"} if i == 1 else {})).started(start)
                      .on_node("n0") for i, start in enumerate(STARTS)))
    cluster.observe(make_pod("big").requests(cpu_milli=1000).priority(100))
    assert _victims(cluster) == ["low-3"]


def test_a_preemptor_needing_more_than_the_surplus_evicts_the_whole_gang() -> None:
    cluster = _running_gang(min_member=2)
    cluster.observe(make_pod("big").requests(cpu_milli=3000).priority(100))
    [preemption] = [d for d in cluster.plan() if isinstance(d, Preemption)]
    assert sorted(v.name for v in preemption.victims) == ["low-0", "low-1", "low-2", "low-3"]
    [status] = cluster.statuses("default/low")[-1:]
    assert status.condition_message == preemption.reason  # no word of running on


def test_a_preemptor_needing_just_the_surplus_evicts_all_of_it() -> None:
    cluster = _running_gang(min_member=2)
    cluster.observe(make_pod("big").requests(cpu_milli=2000).priority(100))
    assert _victims(cluster) == ["low-1", "low-3"]  # the two started last


def test_a_gang_without_surplus_is_evicted_whole_or_not_at_all() -> None:
    cluster = _running_gang(min_member=4)
    cluster.observe(make_pod("big").requests(cpu_milli=1000).priority(100))
    assert _victims(cluster) == ["low-0", "low-1", "low-2", "low-3"]
    huge = _running_gang(min_member=4)
    huge.observe(make_pod("huge").requests(cpu_milli=5000).priority(100))
    assert not [d for d in huge.plan() if isinstance(d, Preemption)]


def test_succeeded_members_count_toward_the_quorum_once_the_gang_ran() -> None:
    # minMember 3: two members bound and two Succeeded hold four, so one bound member is
    # surplus (bound alone, the gang would be short of quorum and no victim at all)
    cluster = Cluster().observe(make_node("n0").capacity(cpu_milli=2000),
                                make_podgroup("low", 3))
    cluster.observe(*(make_pod(f"low-{i}").requests(cpu_milli=1000).in_group("low")
                      .started(1000 * (i + 1)).on_node("n0") for i in range(4)))
    cluster.plan()
    cluster.set_phase("low-0", "Succeeded")
    cluster.set_phase("low-1", "Succeeded")
    cluster.observe(make_pod("big").requests(cpu_milli=1000).priority(100))
    assert _victims(cluster) == ["low-3"]


def test_the_smallest_reprieve_keeps_the_small_members_and_evicts_the_big_one() -> None:
    # in importance order the big member comes back first and both small ones would go, more
    # than the surplus of one (kube-scheduler evicts them both, leaving the gang below
    # minMember); given back smallest first, the big one alone goes and the gang runs on
    cluster = Cluster().observe(make_node("n0").capacity(cpu_milli=4000),
                                make_podgroup("low", 2))
    cluster.observe(
        make_pod("low-big").requests(cpu_milli=2000).in_group("low").started(1).on_node("n0"),
        *(make_pod(f"low-s{i}").requests(cpu_milli=1000).in_group("low").started(2)
          .on_node("n0") for i in range(2)))
    cluster.observe(make_pod("big").requests(cpu_milli=2000).priority(100))
    assert _victims(cluster) == ["low-big"]


def test_a_surplus_member_goes_with_a_pod_on_its_node_the_rest_of_its_gang_elsewhere_stays(
) -> None:
    # n0 holds two members of `low` (minMember 2), n1 its third and a pod: emptying n0 would
    # leave the gang one member, so it would go whole (three victims); emptying n1 takes its
    # one surplus member and the pod (two)
    cluster = Cluster().observe(make_node("n0").capacity(cpu_milli=4000),
                                make_node("n1").capacity(cpu_milli=4000),
                                make_podgroup("low", 2))
    cluster.observe(*(make_pod(f"low-{i}").requests(cpu_milli=2000).in_group("low")
                      .started(i + 1).on_node("n0") for i in range(2)),
                    make_pod("low-2").requests(cpu_milli=2000).in_group("low").started(3)
                    .on_node("n1"),
                    make_pod("other").requests(cpu_milli=2000).on_node("n1"))
    cluster.observe(make_pod("big").requests(cpu_milli=4000).priority(100))
    assert _victims(cluster) == ["low-2", "other"]
    [status] = cluster.statuses("default/low")[-1:]
    assert status.condition_message.endswith(
        "; 1 of its 3 bound members, beyond minMember 2, so the gang keeps running")
