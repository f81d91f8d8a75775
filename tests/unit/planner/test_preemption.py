"""Whole-gang preemption in the pure core: never futile, never an equal or higher
priority victim, victim gangs whole, fewest victims, PDBs avoided, capacity held, replayable."""

from __future__ import annotations

from services.contracts.decisions import Decision, Placement, Preemption, StatusUpdate
from services.contracts.events import DisruptionBudgetObserved, NodeSelectorRequirement
from services.contracts.ids import singleton_key
from services.planner.core import reasons
from services.planner.core.config import PlannerConfig
from tests.unit.planner.builders import make_node, make_pod, make_podgroup, pod_uid
from tests.unit.planner.harness import Cluster, recorded, replay


def _nodes(cluster: Cluster, count: int, cpu_milli: int = 4000) -> Cluster:
    return cluster.observe(*[make_node(f"n{i}").capacity(cpu_milli=cpu_milli)
                             for i in range(count)])


def _gang(cluster: Cluster, name: str, size: int, cpu_milli: int, priority: int = 0,
          min_member: int | None = None, on: list[str] | None = None) -> Cluster:
    """A gang of `size` pods; `on` binds its members there (a gang that already runs)."""
    cluster.observe(make_podgroup(name, size if min_member is None else min_member))
    for i in range(size):
        pod = make_pod(f"{name}-{i}").requests(cpu_milli=cpu_milli).in_group(name)
        pod = pod.priority(priority).labelled(app=name)
        cluster.observe(pod.on_node(on[i]) if on is not None else pod)
    return cluster


def _preemptions(decisions: list[Decision]) -> list[Preemption]:
    return [d for d in decisions if isinstance(d, Preemption)]


def test_a_high_priority_gang_evicts_the_low_pod_that_blocks_it_then_runs() -> None:
    cluster = _nodes(Cluster(), 2)
    cluster.observe(make_pod("low").requests(cpu_milli=4000).on_node("n1"))
    _gang(cluster, "high", 2, 4000, priority=100)
    decisions = cluster.plan()
    [preemption] = _preemptions(decisions)
    assert preemption.group == "default/high" and preemption.priority == 100
    assert [(v.name, v.node, v.group, v.priority) for v in preemption.victims] == [
        ("low", "n1", singleton_key("default", "low"), 0)]
    assert sorted((a.name, a.node) for a in preemption.nominated) == [
        ("high-0", "n0"), ("high-1", "n1")]
    assert "preempted by gang default/high (priority 100 > 0)" in preemption.reason
    assert "preempting 1 lower-priority pod(s) of 1 group(s) on 1 node(s)" in \
        cluster.last_reason("default/high")
    [status] = [d for d in decisions if isinstance(d, StatusUpdate) and d.group == "default/high"]
    assert status.condition_reason == "Preempting"
    assert not any(isinstance(d, Placement) for d in decisions)  # n0 is held, not taken alone
    cluster.advance(1)
    assert not _preemptions(cluster.plan())  # victims still leaving: never preempts again
    assert cluster.last_reason("default/high").endswith(
        f"; waiting for 1 preempted pod(s) to leave (decision {preemption.id}); the nodes are "
        "held for this gang until 1970-01-01T00:02:00Z")
    cluster.delete_pod("low")
    cluster.advance(1)
    [placement] = [d for d in cluster.plan() if isinstance(d, Placement)]
    assert placement.group == "default/high"
    assert sorted((m.name, m.node) for m in placement.members) == [
        ("high-0", "n0"), ("high-1", "n1")]
    assert "default/high" not in cluster.state.nominations
    assert replay(cluster.log, cluster.config) == recorded(cluster)


def test_nothing_is_evicted_when_the_preemptor_would_not_fit_even_then() -> None:
    cluster = _nodes(Cluster(), 2)
    cluster.observe(make_pod("low").requests(cpu_milli=4000).on_node("n1"))
    _gang(cluster, "huge", 3, 4000, priority=100)
    decisions = cluster.plan()
    assert not _preemptions(decisions)
    assert cluster.last_reason("default/huge").endswith(reasons.PREEMPTION_NOT_HELPFUL)
    assert not cluster.state.nominations


def test_pods_of_equal_or_higher_priority_are_never_victims() -> None:
    cluster = _nodes(Cluster(), 2)
    cluster.observe(make_pod("same").requests(cpu_milli=4000).priority(100).on_node("n0"),
                    make_pod("above").requests(cpu_milli=4000).priority(200).on_node("n1"))
    _gang(cluster, "high", 2, 4000, priority=100)
    assert not _preemptions(cluster.plan())
    assert "preemption" not in cluster.last_reason("default/high")  # nothing it may evict


def test_a_gang_whose_members_say_never_does_not_preempt() -> None:
    cluster = _nodes(Cluster(), 1)
    cluster.observe(make_pod("low").requests(cpu_milli=4000).on_node("n0"),
                    make_pod("polite").requests(cpu_milli=4000).priority(100).never_preempts())
    assert not _preemptions(cluster.plan())
    cluster.advance(120)
    assert not _preemptions(cluster.plan())


def test_a_victim_gang_goes_whole_never_left_below_min_member() -> None:
    cluster = _nodes(Cluster(), 2)
    _gang(cluster, "low", 2, 2000, on=["n0", "n1"])  # one member per node
    cluster.observe(make_pod("big").requests(cpu_milli=4000).priority(100))
    [preemption] = _preemptions(cluster.plan())
    assert sorted(v.name for v in preemption.victims) == ["low-0", "low-1"]
    assert {v.group for v in preemption.victims} == {"default/low"}
    [status] = cluster.statuses("default/low")[-1:]
    assert status.condition_reason == "Preempted"
    assert status.condition_message.startswith("preempted by pod default/big (priority 100 > 0)")


def test_the_fewest_whole_gangs_are_evicted() -> None:
    cluster = _nodes(Cluster(), 6)
    for index, name in enumerate(("a", "b", "c")):
        nodes = [f"n{2 * index}", f"n{2 * index}", f"n{2 * index + 1}", f"n{2 * index + 1}"]
        _gang(cluster, name, 4, 2000, on=nodes)
    _gang(cluster, "high", 8, 1000, priority=100)
    [preemption] = _preemptions(cluster.plan())
    groups = {v.group for v in preemption.victims}
    assert len(groups) == 1 and len(preemption.victims) == 4
    victim_nodes = {v.node for v in preemption.victims}
    assert {a.node for a in preemption.nominated} == victim_nodes


def test_one_victim_that_suffices_alone_beats_the_reprieved_pair() -> None:
    # the reprieve keeps the largest pod first and so evicts both halves of n1; evicting the
    # one pod on n0 alone is the choice with fewer victims at the same priority
    cluster = _nodes(Cluster(), 2)
    cluster.observe(make_pod("whole").requests(cpu_milli=4000).priority(1).on_node("n0"),
                    make_pod("half-a").requests(cpu_milli=2000).priority(1).on_node("n1"),
                    make_pod("half-b").requests(cpu_milli=2000).priority(1).on_node("n1"),
                    make_pod("high").requests(cpu_milli=4000).priority(100))
    [preemption] = _preemptions(cluster.plan())
    assert [v.name for v in preemption.victims] == ["whole"]
    assert [(a.name, a.node) for a in preemption.nominated] == [("high", "n0")]


def test_a_pdb_protected_victim_is_avoided_when_another_choice_exists() -> None:
    cluster = _nodes(Cluster(), 2)
    cluster.observe(make_pod("guarded").requests(cpu_milli=4000).labelled(app="db")
                    .on_node("n0"),
                    make_pod("free").requests(cpu_milli=4000).labelled(app="web").on_node("n1"),
                    DisruptionBudgetObserved(
                        at_ms=0, uid="pdb-1", namespace="default", name="db", resource_version="1",
                        selector=(NodeSelectorRequirement("app", "In", ("db",)),),
                        disruptions_allowed=0))
    cluster.observe(make_pod("high").requests(cpu_milli=4000).priority(100))
    [preemption] = _preemptions(cluster.plan())
    assert [v.name for v in preemption.victims] == ["free"]


def test_lower_priority_victims_are_preferred() -> None:
    cluster = _nodes(Cluster(), 2)
    cluster.observe(make_pod("p50").requests(cpu_milli=4000).priority(50).on_node("n0"),
                    make_pod("p10").requests(cpu_milli=4000).priority(10).on_node("n1"))
    cluster.observe(make_pod("high").requests(cpu_milli=4000).priority(100))
    [preemption] = _preemptions(cluster.plan())
    assert [v.name for v in preemption.victims] == ["p10"]


def test_the_nominated_capacity_is_not_taken_by_a_later_lower_priority_pod() -> None:
    cluster = _nodes(Cluster(), 1)
    cluster.observe(make_pod("low").requests(cpu_milli=4000).on_node("n0"))
    cluster.observe(make_pod("high").requests(cpu_milli=4000).priority(100))
    assert _preemptions(cluster.plan())
    cluster.delete_pod("low")
    cluster.observe(make_pod("low-again").requests(cpu_milli=4000).priority(0).created(0))
    cluster.advance(1)
    [placement] = [d for d in cluster.plan() if isinstance(d, Placement)]
    assert [m.name for m in placement.members] == ["high"]


def test_other_schedulers_pods_are_victims_only_when_allowed() -> None:
    foreign = make_pod("other").requests(cpu_milli=4000).scheduler("default-scheduler")
    cluster = _nodes(Cluster(), 1).observe(foreign.on_node("n0"),
                                           make_pod("high").requests(cpu_milli=4000).priority(1))
    assert not _preemptions(cluster.plan())
    allowed = _nodes(Cluster(PlannerConfig(preempt_other_schedulers=True)), 1).observe(
        foreign.on_node("n0"), make_pod("high").requests(cpu_milli=4000).priority(1))
    [preemption] = _preemptions(allowed.plan())
    assert [(v.name, v.group) for v in preemption.victims] == [
        ("other", singleton_key("default", "other"))]


def test_a_nomination_lapses_at_its_deadline_then_the_gang_may_preempt_again() -> None:
    cluster = _nodes(Cluster(PlannerConfig(nomination_seconds=30)), 1)
    cluster.observe(make_pod("low").requests(cpu_milli=4000).on_node("n0"))
    cluster.observe(make_pod("high").requests(cpu_milli=4000).priority(100))
    first = _preemptions(cluster.plan())
    assert first and first[0].deadline_ms == 30_000
    cluster.advance(29)
    assert not _preemptions(cluster.plan())
    cluster.advance(61)  # lapsed (the pod never left: e.g. a finalizer); backoff over too
    [again] = _preemptions(cluster.plan())
    assert [v.uid for v in again.victims] == [pod_uid("low")]


def test_preemption_can_be_turned_off() -> None:
    cluster = _nodes(Cluster(PlannerConfig(preemption=False)), 1)
    cluster.observe(make_pod("low").requests(cpu_milli=4000).on_node("n0"),
                    make_pod("high").requests(cpu_milli=4000).priority(100))
    assert not _preemptions(cluster.plan())


def test_a_second_preemptor_counts_the_room_the_first_ones_victims_leave() -> None:
    cluster = _nodes(Cluster(), 1)
    cluster.observe(make_pod("low-a").requests(cpu_milli=3000).priority(1).on_node("n0"),
                    make_pod("low-b").requests(cpu_milli=1000).priority(1).on_node("n0"),
                    make_pod("first").requests(cpu_milli=2000).priority(100),
                    make_pod("second").requests(cpu_milli=1000).priority(50))
    [preemption] = _preemptions(cluster.plan())
    assert preemption.group == singleton_key("default", "first")
    assert [v.name for v in preemption.victims] == ["low-a"]  # low-b stays: 1 cpu is spare
    assert cluster.last_reason(singleton_key("default", "second")).endswith(
        reasons.PREEMPTION_UNDER_WAY)
    cluster.delete_pod("low-a")
    cluster.advance(1)
    placed = {d.group: [m.node for m in d.members] for d in cluster.plan()
              if isinstance(d, Placement)}
    assert placed == {singleton_key("default", "first"): ["n0"],
                      singleton_key("default", "second"): ["n0"]}
