"""Preemption at its edges (found by trying to break it): victims still terminating
after their nomination lapsed, a nominated gang losing its PodGroup, a gang with minResources,
the victim candidates of a large cluster, and the node index and snapshots after such rounds."""

from __future__ import annotations

from collections.abc import Callable

import msgspec
import pytest

from services.contracts import codec
from services.contracts.decisions import Decision, Placement, Preemption
from services.contracts.events import (
    DisruptionBudgetObserved,
    NodeDeleted,
    NodeSelectorRequirement,
    PodGroupDeleted,
)
from services.contracts.ids import singleton_key
from services.planner.core import reasons
from services.planner.core.config import PlannerConfig
from services.planner.core.state import decode_state, encode_state
from tests.unit.planner.builders import PodBuilder, make_node, make_pod, make_podgroup
from tests.unit.planner.harness import Cluster, assert_index_is_a_rebuild, recorded, replay

ZONE = "topology.kubernetes.io/zone"

def _nodes(cluster: Cluster, count: int, cpu_milli: int = 4000) -> Cluster:
    return cluster.observe(*[make_node(f"n{i}").capacity(cpu_milli=cpu_milli)
                             for i in range(count)])


def _preemptions(decisions: list[Decision]) -> list[Preemption]:
    return [d for d in decisions if isinstance(d, Preemption)]


def _placed(decisions: list[Decision]) -> dict[str, list[str]]:
    return {d.group: sorted(m.name for m in d.members) for d in decisions
            if isinstance(d, Placement)}


def test_a_victim_still_terminating_when_the_nomination_lapses_is_not_joined_by_another() -> None:
    # the binder evicted the victim; it terminates for longer than the nomination lasts (a long
    # grace period). Its room is coming: evicting the other pod too would be futile
    cluster = _nodes(Cluster(PlannerConfig(nomination_seconds=30)), 2)
    cluster.observe(make_pod("low-a").requests(cpu_milli=4000).on_node("n0"),
                    make_pod("low-b").requests(cpu_milli=4000).on_node("n1"),
                    make_pod("high").requests(cpu_milli=4000).priority(100))
    [first] = _preemptions(cluster.plan())
    [victim] = first.victims
    pod = cluster.pod(victim.name)
    cluster.apply(msgspec.structs.replace(pod, is_deleting=True, at_ms=cluster.now_ms))
    later = []
    for seconds in (31, 60):
        cluster.advance(seconds)
        later += _preemptions(cluster.plan())
    assert later == []
    assert not cluster.state.nominations
    assert cluster.last_reason(singleton_key("default", "high")).endswith(
        reasons.PREEMPTION_UNDER_WAY)
    cluster.delete_pod(victim.name)
    cluster.advance(1)
    assert _placed(cluster.plan()) == {singleton_key("default", "high"): ["high"]}


def test_a_nomination_ends_when_its_gang_loses_its_podgroup() -> None:
    # the gang now waits for its PodGroup: the room its victims left goes to others at once,
    # not after the nomination's deadline
    cluster = _nodes(Cluster(), 1)
    cluster.observe(make_pod("low").requests(cpu_milli=4000).on_node("n0"),
                    make_podgroup("high", 1),
                    make_pod("high-0").requests(cpu_milli=4000).priority(100).in_group("high"))
    assert _preemptions(cluster.plan())
    assert "default/high" in cluster.state.nominations
    cluster.apply(PodGroupDeleted(at_ms=cluster.now_ms, uid="uid-pg-default-high",
                                  namespace="default", name="high"))
    cluster.delete_pod("low")
    cluster.observe(make_pod("other").requests(cpu_milli=4000))
    cluster.advance(1)
    assert _placed(cluster.plan()) == {singleton_key("default", "other"): ["other"]}
    assert not cluster.state.nominations


def _min_resources_gang(cpu_milli: int) -> Cluster:
    """Two 4-cpu nodes, a low pod on n1, and gang high (2 x 4 cpu) asking minResources cpu."""
    cluster = _nodes(Cluster(), 2)
    cluster.observe(make_pod("low").requests(cpu_milli=4000).on_node("n1"),
                    make_podgroup("high", 2).min_resources(cpu=cpu_milli))
    for i in range(2):
        cluster.observe(make_pod(f"high-{i}").requests(cpu_milli=4000).priority(100)
                        .in_group("high"))
    return cluster


def test_a_gang_with_min_resources_preempts_when_the_victims_room_covers_them() -> None:
    [preemption] = _preemptions(_min_resources_gang(8000).plan())
    assert [v.name for v in preemption.victims] == ["low"]


def test_a_node_of_small_low_pods_is_found_among_many() -> None:
    # 2,000 one-cpu pods fill 500 nodes; a four-cpu pod needs the four pods of one node gone
    cluster = _nodes(Cluster(), 500)
    for i in range(2000):
        cluster.observe(make_pod(f"low{i}").requests(cpu_milli=1000).on_node(f"n{i % 500}"))
    cluster.observe(make_pod("high").requests(cpu_milli=4000).priority(100))
    [preemption] = _preemptions(cluster.plan())
    assert len(preemption.victims) == 4 and len({v.node for v in preemption.victims}) == 1
    assert [a.node for a in preemption.nominated] == [preemption.victims[0].node]


def _running_gangs(cluster: Cluster, ports: bool) -> Cluster:
    for i in range(3):
        cluster.observe(make_podgroup(f"low{i}", 2))
        for j in range(2):
            pod = make_pod(f"low{i}-{j}").requests(cpu_milli=2000).in_group(f"low{i}")
            cluster.observe((pod.host_port(80 + j) if ports else pod).on_node(f"n{i}"))
    cluster.observe(make_podgroup("high", 2))
    for j in range(2):
        pod = make_pod(f"high-{j}").requests(cpu_milli=3000).priority(100).in_group("high")
        cluster.observe(pod.host_port(80) if ports else pod)
    return cluster.observe(make_pod("mid").requests(cpu_milli=3000).priority(50))


def test_the_node_index_after_rounds_with_preemption_is_what_a_rebuild_gives() -> None:
    cluster = _running_gangs(_nodes(Cluster(), 3), ports=True)
    made = _preemptions(cluster.plan())
    assert sorted(d.group for d in made) == ["default/high", singleton_key("default", "mid")]
    assert_index_is_a_rebuild(cluster)
    cluster.advance(1)
    cluster.plan()
    assert_index_is_a_rebuild(cluster)
    for preemption in made:
        for victim in preemption.victims:
            cluster.delete_pod(victim.name)
    cluster.advance(1)
    placed = cluster.plan()
    assert sorted(_placed(placed)) == ["default/high", singleton_key("default", "mid")]
    assert_index_is_a_rebuild(cluster)
    cluster.bind(placed)
    cluster.advance(1)
    cluster.plan()
    assert_index_is_a_rebuild(cluster)
    assert replay(cluster.log, cluster.config) == recorded(cluster)


def _decided(snapshot: bool) -> list[bytes]:
    """Rounds over preemption, its nomination, a lapse and placements; the decisions' bytes,
    with the state through encode/decode between rounds (`snapshot`) or kept in memory."""
    cluster = _running_gangs(_nodes(Cluster(PlannerConfig(nomination_seconds=30)), 3),
                             ports=False)
    out = []
    for step in range(6):
        made = cluster.plan()
        out += [codec.encode(d) for d in made]
        if step % 2:
            for preemption in _preemptions(cluster.decisions):
                for victim in preemption.victims:
                    if victim.uid in cluster.state.pods:
                        cluster.delete_pod(victim.name)
        cluster.bind(made)
        if snapshot:
            cluster.state = decode_state(encode_state(cluster.state))
        cluster.advance(40 if step == 2 else 1)
    return out


def test_a_snapshot_between_rounds_changes_no_preemption_decision() -> None:
    kept = _decided(snapshot=False)
    assert any(b'"Preemption"' in encoded for encoded in kept)
    assert _decided(snapshot=True) == kept


def test_a_gang_that_ran_and_whose_first_members_finished_may_be_a_victim() -> None:
    # minMember 2: one member Succeeded after the gang ran, one still runs; it is no partly
    # bound gang (quorum counts the finished member), so it goes whole like any other
    cluster = _nodes(Cluster(), 2)
    cluster.observe(make_podgroup("job", 2))
    for i in range(2):
        cluster.observe(make_pod(f"job-{i}").requests(cpu_milli=4000).in_group("job"))
    cluster.run()
    cluster.set_phase("job-0", "Succeeded")
    cluster.observe(make_pod("filler").requests(cpu_milli=4000).priority(1000).on_node("n0"))
    cluster.advance(1)
    cluster.plan()
    cluster.observe(make_pod("high").requests(cpu_milli=4000).priority(100))
    cluster.advance(1)
    [preemption] = _preemptions(cluster.plan())
    assert [(v.name, v.group) for v in preemption.victims] == [("job-1", "default/job")]
    assert [(a.name, a.node) for a in preemption.nominated] == [
        ("high", cluster.node_of("job-1"))]


def test_a_pod_the_preemptor_repels_does_not_land_on_its_nominated_node() -> None:
    # the gang needs both nodes; n0's victim leaves first, n1's later. A small pod the gang's
    # members repel (anti-affinity) fits in n0's room beyond the nomination meanwhile
    host = "kubernetes.io/hostname"
    cluster = Cluster().observe(*[make_node(f"n{i}").capacity(cpu_milli=4000).label(host, f"n{i}")
                                  for i in range(2)])
    cluster.observe(make_pod("low-a").requests(cpu_milli=3000).on_node("n0"),
                    make_pod("low-b").requests(cpu_milli=3000).on_node("n1"),
                    make_podgroup("train", 2))
    for i in range(2):
        cluster.observe(make_pod(f"train-{i}").requests(cpu_milli=3000).priority(100)
                        .in_group("train").labelled(app="train").anti_affinity(host, app="noisy"))
    [preemption] = _preemptions(cluster.plan())
    assert sorted(v.name for v in preemption.victims) == ["low-a", "low-b"]
    cluster.delete_pod("low-a")
    cluster.observe(make_pod("noisy").requests(cpu_milli=500).labelled(app="noisy"))
    cluster.advance(1)
    cluster.bind(cluster.plan())
    cluster.delete_pod("low-b")
    cluster.advance(1)
    placed = [d for d in cluster.plan() if isinstance(d, Placement)]
    assert sorted(m.node for d in placed if d.group == "default/train"
                  for m in d.members) == ["n0", "n1"]


def test_a_node_with_more_small_pods_than_the_bound_still_gives_victims() -> None:
    cluster = Cluster().observe(make_node("n0").capacity(cpu_milli=200_000, pods=300))
    for i in range(200):
        cluster.observe(make_pod(f"low{i:03}").requests(cpu_milli=1000).on_node("n0"))
    cluster.observe(make_pod("high").requests(cpu_milli=10_000).priority(100))
    [preemption] = _preemptions(cluster.plan())
    assert len(preemption.victims) == 10


def test_room_a_victim_frees_goes_to_the_higher_of_two_gangs_nominated_there() -> None:
    # "a" evicted vb, then "z" (higher) evicted va, both on n0. va leaves first: its room is
    # z's, not taken by "a" while a's own victim still runs
    cluster = _nodes(Cluster(), 1)
    cluster.observe(make_pod("va").requests(cpu_milli=2000).on_node("n0"),
                    make_pod("vb").requests(cpu_milli=2000).on_node("n0"),
                    make_pod("a").requests(cpu_milli=2000).priority(100))
    [first] = _preemptions(cluster.plan())
    assert [v.name for v in first.victims] == ["vb"]
    cluster.advance(1)
    cluster.observe(make_pod("z").requests(cpu_milli=2000).priority(200))
    [second] = _preemptions(cluster.plan())
    assert [v.name for v in second.victims] == ["va"]
    cluster.delete_pod("va")
    cluster.advance(1)
    assert _placed(cluster.plan()) == {singleton_key("default", "z"): ["z"]}
    cluster.delete_pod("vb")
    cluster.advance(1)
    assert _placed(cluster.plan()) == {singleton_key("default", "a"): ["a"]}


def test_a_nominated_starving_gang_reserves_no_other_capacity() -> None:
    # the gang waits for its victims on n0 and n1; starving, it used to reserve n2 and n3 as
    # well, keeping a small pod out of room the gang will never take
    cluster = _nodes(Cluster(PlannerConfig(starvation_seconds=0)), 4)
    cluster.observe(make_pod("low-a").requests(cpu_milli=4000).on_node("n0"),
                    make_pod("low-b").requests(cpu_milli=4000).on_node("n1"),
                    make_pod("mid-c").requests(cpu_milli=2000).priority(200).on_node("n2"),
                    make_pod("mid-d").requests(cpu_milli=2000).priority(200).on_node("n3"),
                    make_podgroup("high", 2))
    for i in range(2):
        cluster.observe(make_pod(f"high-{i}").requests(cpu_milli=4000).priority(100)
                        .in_group("high"))
    [preemption] = _preemptions(cluster.plan())
    assert sorted(a.node for a in preemption.nominated) == ["n0", "n1"]
    assert cluster.state.starving_group is None
    cluster.advance(1)
    cluster.observe(make_pod("small").requests(cpu_milli=2000))
    assert list(_placed(cluster.plan())) == [singleton_key("default", "small")]
    cluster.delete_pod("low-a")
    cluster.delete_pod("low-b")
    cluster.advance(1)
    assert _placed(cluster.plan()) == {"default/high": ["high-0", "high-1"]}


def test_a_gang_whose_min_resources_no_eviction_can_cover_evicts_nothing() -> None:
    cluster = _min_resources_gang(12000)
    assert not _preemptions(cluster.plan())
    assert cluster.last_reason("default/high").endswith(reasons.PREEMPTION_NOT_HELPFUL)


def test_a_nomination_whose_victims_left_but_whose_room_was_taken_says_so() -> None:
    # high evicts low-a from n0; once low-a is gone another scheduler's pod takes n0: the
    # nomination holds until its deadline, and the reason no longer counts low-a as leaving
    cluster = _nodes(Cluster(PlannerConfig(nomination_seconds=120)), 2)
    cluster.observe(make_pod("low-a").requests(cpu_milli=4000).on_node("n0").priority(10),
                    make_pod("low-b").requests(cpu_milli=4000).on_node("n1").priority(10),
                    make_pod("high").requests(cpu_milli=4000).priority(1000))
    [first] = _preemptions(cluster.plan())
    assert [v.name for v in first.victims] == ["low-a"]
    cluster.advance(1)
    assert _preemptions(cluster.plan()) == []
    high = singleton_key("default", "high")
    assert "; waiting for 1 preempted pod(s) to leave (decision " in cluster.last_reason(high)
    cluster.delete_pod("low-a")
    cluster.observe(make_pod("other").requests(cpu_milli=4000).on_node("n0")
                    .scheduler("default-scheduler"))
    for _ in range(40):  # the next Rejection told (the group's backoff)
        cluster.advance(1)
        assert _preemptions(cluster.plan()) == []
    assert cluster.last_reason(high).endswith(
        f"; the pods preempted for it left (decision {first.id}) and it does not fit yet; the "
        "nodes are held for this gang until 1970-01-01T00:02:00Z")


SPREAD_LOW = {"low0": (3000, 10, "n1"), "low1": (1000, 0, "n1"), "low2": (2000, 10, "n0"),
              "low3": (3000, 10, "n2")}
"""Lower-priority pods filling three 4-cpu nodes: cpu (milli), priority, node."""


def _spread_preemptor(low: dict[str, tuple[int, int, str]],
                      config: PlannerConfig | None = None) -> Cluster:
    """Gang h (priority 100, minMember 3, every member zone-spread maxSkew 1; h-1 asks for a
    pool no node is in) on n0 and n2 in zone a and n1 in zone b, full of the `low` pods."""
    nodes = [make_node(name).capacity(cpu_milli=4000).labels(**{ZONE: zone, "pool": "f"})
             for name, zone in (("n0", "a"), ("n1", "b"), ("n2", "a"))]
    pods = [make_pod(name).requests(cpu_milli=cpu).priority(priority).labelled(app="low")
            .on_node(node) for name, (cpu, priority, node) in sorted(low.items())]

    def member(name: str, cpu: int, pool: str | None = None) -> object:
        pod = (make_pod(name).requests(cpu_milli=cpu).priority(100).in_group("h")
               .labelled(app="h").spread(ZONE, max_skew=1))
        return pod.selector(pool=pool) if pool else pod
    gang = [make_podgroup("h", 3), member("h-0", 4000), member("h-1", 4000, "v"),
            member("h-2", 4000, "f"), member("h-3", 3000), member("h-4", 500)]
    return Cluster(config).observe(*nodes, *pods, *gang)


def test_a_spread_gang_evicts_two_pods_where_two_suffice() -> None:
    """The reprieve in importance order gives low0 back first (the gang still fits, a later
    pass placing h-2), and then needs low1, low2 and low3: three victims of the highest
    priority 10. The reprieve smallest first, made over every unit too, keeps low2 and low1:
    two victims at the same highest priority, which the choice's order (fewest victims
    after violations and highest priority, as `pickOneNodeForPreemption`) prefers."""
    [preemption] = _preemptions(_spread_preemptor(SPREAD_LOW).plan())
    assert sorted(v.name for v in preemption.victims) == ["low0", "low3"]
    assert sorted((m.name, m.node) for m in preemption.nominated) == [
        ("h-0", "n2"), ("h-3", "n1"), ("h-4", "n0")]


def test_the_gang_fits_once_those_two_are_gone() -> None:
    left = {name: pod for name, pod in SPREAD_LOW.items() if name not in ("low0", "low3")}
    decisions = _spread_preemptor(left, PlannerConfig(preemption=False)).plan()
    assert [sorted((m.name, m.node) for m in d.members) for d in decisions
            if isinstance(d, Placement)] == [[("h-0", "n2"), ("h-3", "n1"), ("h-4", "n0")]]


def test_a_pod_without_labels_matches_no_disruption_budget() -> None:
    """A budget selecting `app DoesNotExist` with no disruption left: an unlabelled pod is
    not its (kube-scheduler's `filterPodsWithPDBViolation` skips pods without labels), so
    both candidates violate nothing and the lower priority one goes."""
    cluster = _nodes(Cluster(), 2)
    cluster.observe(
        make_pod("nolabel").requests(cpu_milli=4000).priority(0).on_node("n0"),
        make_pod("labelled").requests(cpu_milli=4000).priority(10).labelled(app="x")
        .on_node("n1"),
        DisruptionBudgetObserved(
            at_ms=0, uid="pdb-1", namespace="default", name="unlabelled", resource_version="1",
            selector=(NodeSelectorRequirement("app", "DoesNotExist", ()),),
            disruptions_allowed=0))
    cluster.observe(make_pod("high").requests(cpu_milli=4000).priority(100))
    [preemption] = _preemptions(cluster.plan())
    assert [v.name for v in preemption.victims] == ["nolabel"]


def _nominated_on_n0() -> Cluster:
    """`high` evicted low0 on n0 (low1, priority 5, fills n1); low0 has left."""
    cluster = _nodes(Cluster(), 2)
    cluster.observe(make_pod("low0").requests(cpu_milli=4000).on_node("n0"),
                    make_pod("low1").requests(cpu_milli=4000).priority(5).on_node("n1"))
    cluster.observe(make_pod("high").requests(cpu_milli=4000).priority(100))
    [preemption] = _preemptions(cluster.plan())
    assert [v.name for v in preemption.victims] == ["low0"]
    cluster.advance(1)
    return cluster


@pytest.mark.parametrize("lost", ["deleted", "cordoned"])
def test_a_nominated_node_lost_ends_the_nomination_and_the_gang_preempts_again(
        lost: str) -> None:
    """The nominated node deleted or cordoned: the gang preempts again in the next round (it
    waited out the whole nomination, 120 s, told its node was held), as kube-scheduler's
    `PodEligibleToPreemptOthers` lets a pod whose nominated node is UnschedulableAndUnresolvable
    preempt again."""
    cluster = _nominated_on_n0()
    if lost == "deleted":
        cluster.apply(NodeDeleted(at_ms=cluster.now_ms, name="n0", uid="uid-node-n0"))
    else:
        cluster.observe(make_node("n0").capacity(cpu_milli=4000).unschedulable())
    cluster.delete_pod("low0")
    cluster.advance(1)
    [again] = _preemptions(cluster.plan())
    assert [(v.name, v.node) for v in again.victims] == [("low1", "n1")]
    assert [a.node for a in again.nominated] == ["n1"]


def _preempting_gang(nodes: int, low: list[PodBuilder], members: int, member_cpu: int,
                     *others: DisruptionBudgetObserved) -> Preemption:
    """The one Preemption of a gang of `members` (priority 100, `member_cpu` each) on
    `nodes` 4-cpu nodes holding the `low` pods (and the budgets `others`)."""
    cluster = _nodes(Cluster(), nodes).observe(*low, *others)
    cluster.observe(make_podgroup("big", members), *(
        make_pod(f"big-{i:03}").requests(cpu_milli=member_cpu).priority(100).in_group("big")
        for i in range(members)))
    [preemption] = _preemptions(cluster.plan())
    return preemption


def _small_pods(nodes: int, per_node: int, priority: Callable[[int], int] = lambda _: 0,
                labels: Callable[[int], dict[str, str]] = lambda _: {}) -> list[PodBuilder]:
    """`per_node` pods filling each of `nodes` 4-cpu nodes, of the node's priority and
    labels."""
    return [make_pod(f"low-{node:03}-{j:02}").requests(cpu_milli=4000 // per_node)
            .priority(priority(node)).labelled(**labels(node)).on_node(f"n{node}")
            for node in range(nodes) for j in range(per_node)]


def test_a_gang_needing_more_victims_than_the_bound_preempts_them_all() -> None:
    """10 nodes full of 16 small pods each (160 units, beyond the 128 weighed in full) and a
    gang of 10 four-cpu members: every small pod must go, and they do (the gang was told
    preemption was not helpful)."""
    preemption = _preempting_gang(10, _small_pods(10, 16), 10, 4000)
    assert len(preemption.victims) == 160
    assert sorted(a.node for a in preemption.nominated) == sorted(f"n{i}" for i in range(10))


def test_beyond_the_bound_units_off_the_nodes_the_gang_takes_stay() -> None:
    """130 nodes with one low pod each and a gang of 129 that needs 129 of them emptied: 129
    victims, the 130th pod reprieved."""
    preemption = _preempting_gang(130, _small_pods(130, 1), 129, 4000)
    assert len(preemption.victims) == 129
    assert {v.node for v in preemption.victims} == {a.node for a in preemption.nominated}


def test_beyond_the_bound_the_lowest_priorities_go() -> None:
    """40 nodes of 16 small pods (640 units); those of n0-n9 of priority 50, the others 1: the
    gang of 10 empties 10 nodes of priority 1 (it emptied whichever nodes it landed on with
    every unit gone, n0 and n1 among them)."""
    preemption = _preempting_gang(40, _small_pods(40, 16, lambda node: 50 if node < 10 else 1),
                                  10, 4000)
    assert len(preemption.victims) == 160
    assert max(v.priority for v in preemption.victims) == 1


def test_beyond_the_bound_no_budget_is_violated_where_none_need_be() -> None:
    """As above, all of one priority, n0-n9's pods under a budget allowing no disruption: the
    gang empties 10 other nodes."""
    guard = DisruptionBudgetObserved(
        at_ms=0, uid="pdb-1", namespace="default", name="guard", resource_version="1",
        selector=(NodeSelectorRequirement("app", "In", ("guarded",)),), disruptions_allowed=0)
    preemption = _preempting_gang(
        40, _small_pods(40, 16, labels=lambda node: {"app": "guarded"} if node < 10 else {}),
        10, 4000, guard)
    assert len(preemption.victims) == 160
    assert not [v for v in preemption.victims if int(v.node[1:]) < 10]
