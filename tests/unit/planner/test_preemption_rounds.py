"""Preemption over many rounds of random clusters (hypothesis): victims that terminate slowly,
nominations that lapse, host ports, ReplicaSet-style recreation; after every round the node
index equals one rebuilt from the state, and a snapshot between rounds changes no decision."""

from __future__ import annotations

import msgspec
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from services.contracts import codec
from services.contracts.decisions import Preemption
from services.planner.core.config import PlannerConfig
from services.planner.core.state import decode_state, encode_state
from tests.unit.planner.builders import make_node, make_pod, make_podgroup
from tests.unit.planner.harness import Cluster, assert_index_is_a_rebuild


@st.composite
def scripts(draw: st.DrawFn) -> tuple[list[object], list[object], list[tuple[int, int]]]:
    """Nodes and running low-priority work; arriving higher-priority work; per round, how many
    rounds each victim terminates (0: gone at once) and the seconds to advance."""
    first: list[object] = []
    for i in range(draw(st.integers(1, 4))):
        first.append(make_node(f"n{i}").capacity(cpu_milli=4000))
    for g in range(draw(st.integers(1, 4))):
        size = draw(st.integers(1, 3))
        first.append(make_podgroup(f"low{g}", draw(st.integers(1, size))))
        cpu, priority = draw(st.sampled_from([1000, 2000])), draw(st.integers(0, 10))
        port = draw(st.sampled_from([0, 80]))
        for i in range(size):
            pod = make_pod(f"low{g}-{i}").requests(cpu_milli=cpu).in_group(f"low{g}")
            first.append((pod.host_port(port) if port else pod).priority(priority))
    later: list[object] = []
    for g in range(draw(st.integers(1, 3))):
        size = draw(st.integers(1, 3))
        later.append(make_podgroup(f"high{g}", size))
        cpu, priority = draw(st.sampled_from([1000, 2000, 4000])), draw(st.integers(5, 30))
        port = draw(st.sampled_from([0, 80]))
        for i in range(size):
            pod = make_pod(f"high{g}-{i}").requests(cpu_milli=cpu).in_group(f"high{g}")
            later.append((pod.host_port(port) if port else pod).priority(priority))
    steps = draw(st.lists(st.tuples(st.integers(0, 3), st.sampled_from([1, 5, 40])),
                          min_size=3, max_size=8))
    return first, later, steps


def _run(script: tuple[list[object], list[object], list[tuple[int, int]]],
         snapshot: bool) -> list[bytes]:
    first, later, steps = script
    cluster = Cluster(PlannerConfig(nomination_seconds=30)).observe(*first)
    cluster.run()
    cluster.observe(*later)
    leaving: dict[str, int] = {}  # victim name -> rounds left before it is gone
    out: list[bytes] = []
    for linger, seconds in steps:
        made = cluster.plan()
        out += [codec.encode(d) for d in made]
        assert_index_is_a_rebuild(cluster)
        for preemption in (d for d in made if isinstance(d, Preemption)):
            for victim in preemption.victims:
                pod = cluster.state.pods.get(victim.uid)
                if pod is not None and not pod.is_deleting:
                    cluster.apply(msgspec.structs.replace(pod, is_deleting=True,
                                                          at_ms=cluster.now_ms))
                    leaving[victim.name] = linger
        for name in sorted(leaving):
            if leaving[name] == 0:
                del leaving[name]
                cluster.delete_pod(name)
            else:
                leaving[name] -= 1
        cluster.bind(made)
        if snapshot:
            cluster.state = decode_state(encode_state(cluster.state))
        cluster.advance(seconds)
    return out


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scripts())
def test_rounds_with_preemption_keep_the_index_and_survive_snapshots(
        script: tuple[list[object], list[object], list[tuple[int, int]]]) -> None:
    assert _run(script, snapshot=True) == _run(script, snapshot=False)
