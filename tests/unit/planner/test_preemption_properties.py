"""Preemption properties over random clusters (hypothesis): a Preemption names only victims of
strictly lower priority, takes victim gangs whole, is never futile (once its victims are gone
the preemptor is placed in the next round), never evicts a pod twice, and the same log gives
the same victims."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from services.contracts.decisions import Decision, Placement, Preemption
from services.planner.core import pods
from tests.unit.planner.builders import make_node, make_pod, make_podgroup
from tests.unit.planner.harness import Cluster, recorded, replay


@st.composite
def workloads(draw: st.DrawFn) -> tuple[list[object], list[object]]:
    """Nodes and low-priority work that runs first; then higher-priority work that arrives."""
    first: list[object] = []
    nodes = draw(st.integers(1, 5))
    for i in range(nodes):
        first.append(make_node(f"n{i}").capacity(cpu_milli=draw(st.sampled_from([2000, 4000]))))
    for g in range(draw(st.integers(1, 4))):
        size = draw(st.integers(1, 3))
        first.append(make_podgroup(f"low{g}", draw(st.integers(1, size))))
        cpu, priority = draw(st.sampled_from([500, 1000, 2000])), draw(st.integers(0, 20))
        first.extend(make_pod(f"low{g}-{i}").requests(cpu_milli=cpu).in_group(f"low{g}")
                     .priority(priority) for i in range(size))
    later: list[object] = []
    for g in range(draw(st.integers(1, 2))):
        size = draw(st.integers(1, 4))
        later.append(make_podgroup(f"high{g}", size))
        cpu, priority = draw(st.sampled_from([1000, 2000, 4000])), draw(st.integers(0, 30))
        pod = make_pod(f"high{g}").requests(cpu_milli=cpu).priority(priority)
        if draw(st.integers(0, 4)) == 0:
            pod = pod.never_preempts()
        later.extend(pod._with(name=f"high{g}-{i}", uid=f"uid-default-high{g}-{i}")
                     .in_group(f"high{g}") for i in range(size))
    return first, later


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(workloads())
def test_preemptions_are_lower_priority_whole_gangs_and_never_futile(
        workload: tuple[list[object], list[object]]) -> None:
    first, later = workload
    cluster = Cluster().observe(*first)
    cluster.run()
    cluster.observe(*later)
    evicted: set[str] = set()
    placed: set[str] = set()
    for _ in range(4):
        decisions = cluster.plan()
        for preemption in [d for d in decisions if isinstance(d, Preemption)]:
            _check(cluster, preemption, evicted)
            evicted.update(v.uid for v in preemption.victims)
        cluster.bind(_placed(decisions, placed))
        gone = [d for d in decisions if isinstance(d, Preemption)]
        if gone:
            for preemption in gone:
                for victim in preemption.victims:
                    cluster.delete_pod(victim.name)
            cluster.advance(1)
            after = cluster.plan()
            cluster.bind(_placed(after, placed))
            missing = {p.group for p in gone} - placed
            assert not missing, f"preemptors {missing} fit once their victims are gone"
        cluster.advance(2)
    assert replay(cluster.log, cluster.config) == recorded(cluster)


def _check(cluster: Cluster, preemption: Preemption, evicted: set[str]) -> None:
    state = cluster.state
    pending = [pod for pod in state.pods.values() if pods.group_of(pod, "gangsched")
               == preemption.group and pod.node_name is None]
    assert all(pod.preemption_policy != "Never" for pod in pending)
    assert preemption.priority == max(pod.priority for pod in pending)
    for victim in preemption.victims:
        pod = state.pods[victim.uid]
        assert pod.priority < preemption.priority and victim.priority == pod.priority
        assert pod.node_name == victim.node and victim.uid not in evicted
    named = {victim.uid for victim in preemption.victims}
    for group in {victim.group for victim in preemption.victims}:
        bound = {uid for uid, pod in state.pods.items()
                 if pods.group_of(pod, "gangsched") == group and pod.node_name is not None
                 and not pods.is_terminal(pod)}
        assert bound <= named, f"victim gang {group} is taken whole"


def _placed(decisions: list[Decision], placed: set[str]) -> list[Decision]:
    """The round's Placements, their groups added to `placed`."""
    made = [d for d in decisions if isinstance(d, Placement)]
    placed.update(d.group for d in made)
    return list(made)
