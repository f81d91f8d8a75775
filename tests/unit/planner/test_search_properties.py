"""The whole-gang search is exact on small instances (hypothesis), checked against brute force.

Up to 6 nodes and 8 members of mixed sizes over cpu, memory, GPUs and pods, with host ports
and one-per-host required anti-affinity among members (and on other schedulers' pods: their
ports and labels) as the mutual constraints: gangsched places the
gang if and only if an exhaustive solver finds a placement; never a partial gang; never an
over-committed node or a doubly used port; the same input gives the same placement.
"""

from __future__ import annotations

from collections.abc import Iterable
from functools import cache
from typing import TypedDict

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from services.contracts import codec
from services.contracts.decisions import Decision, Placement
from services.planner.core.config import PlannerConfig
from tests.unit.planner.builders import (
    GIB,
    NodeBuilder,
    PodBuilder,
    PodGroupBuilder,
    make_node,
    make_pod,
    make_podgroup,
)
from tests.unit.planner.harness import Cluster

GPU = "nvidia.com/gpu"
HOST = "kubernetes.io/hostname"
CONFIG = PlannerConfig(search_budget_steps=10**6)
"""A budget no instance here reaches: exactness, not the budget, is under test."""
PORTS = [None, None, None, (80, "TCP"), (80, "TCP"), (81, "TCP"), (80, "UDP")]

Port = tuple[int, str]
Resources = tuple[int, ...]
"""Free (cpu, memory, gpu, pods)."""
Placed = tuple[tuple[str, bool], ...]
"""The (role, anti) of the pods on a node."""


class Node(TypedDict):
    name: str
    cpu: int
    memory: int
    gpu: int
    pods: int
    other: tuple[int, Port | None] | None
    other_role: str | None


class Member(TypedDict):
    cpu: int
    memory: int
    gpu: int
    port: Port | None
    role: str
    anti: bool


@st.composite
def instances(draw: st.DrawFn) -> tuple[list[Node], list[Member]]:
    nodes: list[Node] = []
    for i in range(draw(st.integers(1, 6))):
        nodes.append({
            "name": f"n{i}", "cpu": draw(st.sampled_from([2000, 4000, 6000, 8000])),
            "memory": draw(st.sampled_from([2, 4, 8])) * GIB,
            "gpu": draw(st.sampled_from([0, 0, 2, 4])), "pods": draw(st.sampled_from([2, 3, 110])),
            "other": draw(st.sampled_from([None, None, (500, None), (1000, (80, "TCP"))])),
            "other_role": draw(st.sampled_from([None, "a"]))})
    members: list[Member] = [{"cpu": draw(st.sampled_from([500, 1000, 2000, 3000, 5000])),
                              "memory": draw(st.sampled_from([GIB // 2, GIB, 2 * GIB, 4 * GIB])),
                              "gpu": draw(st.sampled_from([0, 0, 1, 2])),
                              "port": draw(st.sampled_from(PORTS)),
                              "role": draw(st.sampled_from(["a", "b"])),
                              "anti": draw(st.booleans())}
                             for _ in range(draw(st.integers(1, 8)))]
    return nodes, members


def events(nodes: list[Node], members: list[Member]
           ) -> list[NodeBuilder | PodBuilder | PodGroupBuilder]:
    out: list[NodeBuilder | PodBuilder | PodGroupBuilder] = []
    for node in nodes:
        built = make_node(node["name"]).capacity(
            cpu_milli=node["cpu"], memory_bytes=node["memory"],
            pods=node["pods"]).label(HOST, node["name"])
        out.append(built.resource(GPU, node["gpu"]) if node["gpu"] else built)
        if node["other"] is not None:
            cpu, port = node["other"]
            other = (make_pod(f"other-{node['name']}").scheduler("default-scheduler")
                     .requests(cpu_milli=cpu).on_node(node["name"]))
            other = other.labelled(role=node["other_role"]) if node["other_role"] else other
            out.append(other.host_port(*port) if port else other)
    out.append(make_podgroup("g", len(members)))
    for i, member in enumerate(members):
        pod = make_pod(f"g-{i}").requests(cpu_milli=member["cpu"],
                                          memory_bytes=member["memory"]).in_group("g")
        if member["gpu"]:
            pod = pod.resource(GPU, member["gpu"])
        if member["port"]:
            pod = pod.host_port(*member["port"])
        pod = pod.labelled(role=member["role"])
        out.append(pod.anti_affinity(HOST, role="a") if member["anti"] else pod)
    return out


def conflicts(member: Member, placed: Iterable[tuple[str, bool]]) -> bool:
    """Whether `member` may not join the (role, anti) pods `placed` on a node: its anti-affinity
    matches a role-a pod there, or (symmetry) a pod there with anti-affinity matches it."""
    return any((member["anti"] and role == "a") or (anti and member["role"] == "a")
               for role, anti in placed)


def initially_placed(node: Node) -> Placed:
    """The (role, anti) of the other scheduler's pod on the node, if any."""
    if node["other"] is None or node["other_role"] is None:
        return ()
    return ((node["other_role"], False),)


def room(node: Node) -> tuple[tuple[int, int, int, int], tuple[Port, ...]]:
    """Free (cpu, memory, gpu, pods) and the host ports in use, before the gang."""
    ports: tuple[Port, ...]
    cpu, ports = node["cpu"], ()
    pods = node["pods"]
    if node["other"] is not None:
        cpu -= node["other"][0]
        pods -= 1
        ports = (node["other"][1],) if node["other"][1] else ()
    return (cpu, node["memory"], node["gpu"], pods), ports


def demand(member: Member) -> tuple[int, int, int, int]:
    return (member["cpu"], member["memory"], member["gpu"], 1)


def brute_force_fits(nodes: list[Node], members: list[Member]) -> bool:
    """Whether some assignment of every member to a node fits: exhaustive, with failed states
    remembered (a state is the members left and every node's free capacity and ports)."""
    @cache
    def solve(i: int, state: tuple[tuple[Resources, tuple[Port, ...], Placed], ...]) -> bool:
        if i == len(members):
            return True
        want, port = demand(members[i]), members[i]["port"]
        for n, (free, ports, placed) in enumerate(state):
            if any(w > f for w, f in zip(want, free, strict=True)):
                continue
            if port is not None and port in ports:
                continue  # every port here is on 0.0.0.0: same port and protocol conflict
            if conflicts(members[i], placed):
                continue
            left = tuple(f - w for f, w in zip(free, want, strict=True))
            taken = tuple(sorted(ports + ((port,) if port else ())))
            joined = tuple(sorted((*placed, (members[i]["role"], members[i]["anti"]))))
            if solve(i + 1, (*state[:n], (left, taken, joined), *state[n + 1:])):
                return True
        return False
    return solve(0, tuple((*room(node), initially_placed(node)) for node in nodes))


def check_placement(nodes: list[Node], members: list[Member], placement: Placement) -> None:
    by_name = {node["name"]: node for node in nodes}
    assert len(placement.members) == len(members), "never a partial gang"
    used = {name: list(room(node)[0]) for name, node in by_name.items()}
    ports = {name: list(room(node)[1]) for name, node in by_name.items()}
    placed = {name: list(initially_placed(node)) for name, node in by_name.items()}
    for assignment in placement.members:
        member = members[int(assignment.name.split("-")[1])]
        assert not conflicts(member, placed[assignment.node]), "anti-affinity broken"
        placed[assignment.node].append((member["role"], member["anti"]))
        for k, amount in enumerate(demand(member)):
            used[assignment.node][k] -= amount
        if member["port"] is not None:
            assert member["port"] not in ports[assignment.node], "a host port used twice"
            ports[assignment.node].append(member["port"])
    for name, free in used.items():
        assert min(free) >= 0, (name, free)


def decisions_of(nodes: list[Node], members: list[Member]
                 ) -> tuple[Cluster, list[Decision]]:
    cluster = Cluster(CONFIG).observe(*events(nodes, members))
    decisions = cluster.plan()
    return cluster, decisions


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(instances())
def test_the_gang_is_placed_exactly_when_some_placement_exists(
        instance: tuple[list[Node], list[Member]]) -> None:
    nodes, members = instance
    _, decisions = decisions_of(nodes, members)
    placements = [d for d in decisions if isinstance(d, Placement)]
    assert bool(placements) is brute_force_fits(nodes, members)
    if placements:
        check_placement(nodes, members, placements[0])
    _, again = decisions_of(nodes, members)
    assert [codec.encode(d) for d in again] == [codec.encode(d) for d in decisions]
