"""Scheduling scenarios A: one node, memory 300 units, 32 pods.

Each case runs twice: every object arriving at once (planned together, as a batch), and
streamed (one pod per round, the planner running and binding between arrivals) when the expected
outcome does not depend on the batch (cases 4-6 are about priority among pods that are all there).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable

import pytest

from tests.unit.planner.builders import (
    NodeBuilder,
    PodBuilder,
    PodGroupBuilder,
    make_node,
    make_pod,
    make_podgroup,
)
from tests.unit.planner.harness import Cluster

MID, HIGH = 100, 1000
Runner = Callable[[list[PodGroupBuilder], list[PodBuilder]], Cluster]


def node() -> NodeBuilder:
    return make_node("node-0").capacity(cpu_milli=64000, memory_bytes=300, pods=32)


def gang(name: str, min_member: int, count: int, memory: int, priority: int = MID,
         min_memory: int | None = None) -> tuple[PodGroupBuilder, list[PodBuilder]]:
    podgroup = make_podgroup(name, min_member).timeout(10)
    if min_memory is not None:
        podgroup = podgroup.min_resources(memory=min_memory)
    pods = [make_pod(f"{name}-p{i}").requests(memory_bytes=memory).in_group(name)
            .priority(priority) for i in range(count)]
    return podgroup, pods


def plain(name: str, count: int, memory: int, priority: int = MID) -> list[PodBuilder]:
    return [make_pod(f"{name}-{i}").requests(memory_bytes=memory).priority(priority)
            for i in range(count)]


def interleave(*lists: list[PodBuilder]) -> list[PodBuilder]:
    return [pod for group in itertools.zip_longest(*lists) for pod in group if pod is not None]


def run_batch(podgroups: list[PodGroupBuilder], pods: list[PodBuilder]) -> Cluster:
    cluster = Cluster().observe(node(), *podgroups, *pods)
    cluster.run()
    cluster.advance(1).run()  # members stopped arriving: gangs short of quorum are told
    return cluster


def run_streamed(podgroups: list[PodGroupBuilder], pods: list[PodBuilder]) -> Cluster:
    cluster = Cluster().observe(node(), *podgroups)
    for pod in pods:
        cluster.advance(0.1).observe(pod)
        cluster.run()
    cluster.advance(1).run()  # members stopped arriving: gangs short of quorum are told
    return cluster


RUNNERS = [pytest.param(run_batch, id="batch"), pytest.param(run_streamed, id="streamed")]


def bound_groups(cluster: Cluster) -> list[str]:
    return sorted(name.rsplit("-", 1)[0] for name in cluster.bound())


@pytest.mark.parametrize("run", RUNNERS)
def test_a1_group_by_group_only_the_gang_that_fits_is_bound(run: Runner) -> None:
    g1, g1_pods = gang("g1", 3, 3, 50)
    g2, g2_pods = gang("g2", 4, 4, 100)
    cluster = run([g1, g2], g1_pods + g2_pods)
    assert bound_groups(cluster) == ["g1"] * 3


@pytest.mark.parametrize("run", RUNNERS)
def test_a2_interleaved_only_the_gang_that_fits_is_bound(run: Runner) -> None:
    g1, g1_pods = gang("g1", 3, 3, 50)
    g2, g2_pods = gang("g2", 4, 4, 100)
    cluster = run([g1, g2], interleave(g1_pods, g2_pods))
    assert bound_groups(cluster) == ["g1"] * 3


@pytest.mark.parametrize("run", RUNNERS)
def test_a3_gang_without_quorum_waits_while_plain_pods_bind(run: Runner) -> None:
    g1, g1_pods = gang("g1", 4, 3, 50)
    cluster = run([g1], interleave(g1_pods, plain("plain", 2, 100)))
    assert cluster.bound() == ["plain-0", "plain-1"]
    assert "3 of 4 members exist" in cluster.last_reason("default/g1")


def test_a4_group_by_group_the_high_priority_gang_wins() -> None:
    g1, g1_pods = gang("g1", 3, 3, 100, MID)
    g2, g2_pods = gang("g2", 3, 3, 50, HIGH)
    cluster = run_batch([g1, g2], g1_pods + g2_pods)
    assert bound_groups(cluster) == ["g2"] * 3


def test_a5_interleaved_the_high_priority_gang_wins() -> None:
    g1, g1_pods = gang("g1", 3, 3, 100, MID)
    g2, g2_pods = gang("g2", 3, 3, 50, HIGH)
    cluster = run_batch([g1, g2], interleave(g1_pods, g2_pods))
    assert bound_groups(cluster) == ["g2"] * 3


def test_a6_high_priority_plain_pods_win_over_a_mid_gang() -> None:
    g1, g1_pods = gang("g1", 3, 3, 50, MID)
    cluster = run_batch([g1], g1_pods + plain("high", 3, 100, HIGH))
    assert cluster.bound() == ["high-0", "high-1", "high-2"]
    assert "0 of 3 members fit" in cluster.last_reason("default/g1")


@pytest.mark.parametrize("run", RUNNERS)
def test_a7_interleaved_three_gangs_only_the_small_one_fits(run: Runner) -> None:
    g1, g1_pods = gang("g1", 3, 3, 50)
    g2, g2_pods = gang("g2", 4, 4, 100)
    g3, g3_pods = gang("g3", 4, 4, 100)
    cluster = run([g1, g2, g3], interleave(g1_pods, g2_pods, g3_pods))
    assert bound_groups(cluster) == ["g1"] * 3


@pytest.mark.parametrize("run", RUNNERS)
def test_a8_min_resources_keep_the_big_gangs_out(run: Runner) -> None:
    g1, g1_pods = gang("g1", 3, 3, 50, min_memory=150)
    g2, g2_pods = gang("g2", 4, 4, 100, min_memory=400)
    g3, g3_pods = gang("g3", 4, 4, 100, min_memory=400)
    cluster = run([g1, g2, g3], interleave(g1_pods, g2_pods, g3_pods))
    assert bound_groups(cluster) == ["g1"] * 3
    assert "minResources do not fit: memory 400 requested" in cluster.last_reason("default/g2")


@pytest.mark.parametrize("run", RUNNERS)
def test_a9_interleaved_with_min_resources_only_the_small_gang_fits(run: Runner) -> None:
    g1, g1_pods = gang("g1", 3, 3, 50, min_memory=150)
    g2, g2_pods = gang("g2", 4, 4, 100, min_memory=400)
    cluster = run([g1, g2], interleave(g1_pods, g2_pods))
    assert bound_groups(cluster) == ["g1"] * 3


def test_backoff_a_gang_that_never_fits_does_not_monopolise_the_planner() -> None:
    nodes = [make_node(f"n{i}").capacity(cpu_milli=cpu * 1000, memory_bytes=2**34)
             for i, cpu in enumerate((6, 2, 2, 2))]
    g1, g1_pods = make_podgroup("g1", 6), [
        make_pod(f"g1-{i}").requests(cpu_milli=4000).in_group("g1") for i in range(6)]
    g2, g2_pods = make_podgroup("g2", 1).created(1), [
        make_pod("g2-0").requests(cpu_milli=2000).in_group("g2")]
    cluster = Cluster().observe(*nodes, g1, g2, *g1_pods, *g2_pods)
    first = cluster.run()
    assert cluster.bound() == ["g2-0"]
    assert any(d.group == "default/g2" for d in first if type(d).__name__ == "Placement")
    for _ in range(120):
        cluster.advance(1)
        cluster.run()
    # backoff 1, 2, 4, 8, 16, 32, 60, 60 s: a handful of attempts in two minutes, not 120
    assert len(cluster.rejections("default/g1")) <= 9


def test_completed_member_does_not_count_toward_quorum() -> None:
    done = make_pod("g1-done").requests(cpu_milli=1000).in_group("g1").on_node("n0", "Succeeded")
    pending = [make_pod(f"g1-{i}").requests(cpu_milli=1000).in_group("g1") for i in range(5)]
    cluster = Cluster().observe(make_node("n0").capacity(cpu_milli=16000),
                                make_podgroup("g1", 6), done, *pending)
    cluster.advance(1).run()
    assert cluster.bound() == []
    assert cluster.state.reservations == {}
    assert "5 of 6 members exist" in cluster.last_reason("default/g1")
