"""Properties over random clusters and workloads (hypothesis), checked after every round.

Never a partial gang; never an over-committed node; never a pod of another scheduler placed;
never a pod placed on a node its filters reject; the same log gives byte-identical decisions,
also when the state goes through a snapshot (encode/decode) between rounds.
"""

from __future__ import annotations

import copy
import random
from collections.abc import Collection
from typing import Any

import msgspec
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from services.contracts import codec
from services.contracts.decisions import Decision, Placement
from services.contracts.resources import ResourceList
from services.fit import filters
from services.planner.core import plan as planner
from services.planner.core import pods
from services.planner.core.config import PlannerConfig
from services.planner.core.state import (
    PlannerState,
    decode_state,
    empty_state,
    encode_state,
    snapshot_fields,
)
from tests.unit.planner.builders import (
    GIB,
    MIB,
    NodeBuilder,
    PodBuilder,
    PodGroupBuilder,
    make_node,
    make_pod,
    make_podgroup,
)
from tests.unit.planner.harness import Cluster, replay

Built = NodeBuilder | PodBuilder | PodGroupBuilder


@st.composite
def clusters(draw: st.DrawFn) -> list[Built]:
    events: list[Built] = []
    node_count = draw(st.integers(1, 5))
    for i in range(node_count):
        node = make_node(f"n{i}").capacity(
            cpu_milli=draw(st.sampled_from([1000, 2000, 4000, 8000])),
            memory_bytes=draw(st.sampled_from([1, 2, 4])) * GIB,
            pods=draw(st.sampled_from([3, 110])))
        node = node.label("zone", draw(st.sampled_from(["a", "b"])))
        if draw(st.integers(0, 3)) == 0:
            node = node.resource("nvidia.com/gpu", draw(st.integers(1, 2)))
        if draw(st.integers(0, 4)) == 0:
            node = node.taint("dedicated", "gpu")
        if draw(st.integers(0, 6)) == 0:
            node = node.unschedulable() if draw(st.booleans()) else node.not_ready()
        events.append(node)
        if draw(st.booleans()):
            other = (make_pod(f"other-{i}").scheduler("default-scheduler")
                     .requests(cpu_milli=500, memory_bytes=GIB // 4).on_node(f"n{i}"))
            events.append(other.host_port(80) if draw(st.booleans()) else other)
    for g in range(draw(st.integers(0, 4))):
        min_member = draw(st.integers(1, 4))
        events.append(make_podgroup(f"g{g}", min_member).created(g))
        template = draw(pod_templates(f"g{g}"))
        for i in range(draw(st.integers(max(0, min_member - 1), min_member + 2))):
            events.append(template_pod(template, f"g{g}-{i}").in_group(f"g{g}"))
    for s in range(draw(st.integers(0, 4))):
        events.append(template_pod(draw(pod_templates(f"s{s}")), f"s{s}"))
    return events


@st.composite
def pod_templates(draw: st.DrawFn, name: str) -> dict[str, Any]:
    return {
        "cpu": draw(st.sampled_from([250, 500, 1000, 2000, 3000])),
        "memory": draw(st.sampled_from([GIB // 8, GIB // 2, GIB])),
        "gpu": draw(st.sampled_from([0, 0, 0, 1])),
        "zone": draw(st.sampled_from([None, None, "a", "b"])),
        "tolerate": draw(st.booleans()),
        "priority": draw(st.sampled_from([0, 10])),
        "scheduler": draw(st.sampled_from(["gangsched"] * 5 + ["default-scheduler"])),
        "gated": draw(st.integers(0, 9)) == 0,
        "port": draw(st.sampled_from([None, None, None, 80, 81])),
    }


def template_pod(template: dict[str, Any], name: str) -> PodBuilder:
    pod = (make_pod(name).requests(cpu_milli=template["cpu"], memory_bytes=template["memory"])
           .priority(template["priority"]).scheduler(template["scheduler"]))
    if template["gpu"]:
        pod = pod.resource("nvidia.com/gpu", template["gpu"])
    if template["zone"]:
        pod = pod.selector(zone=template["zone"])
    if template["tolerate"]:
        pod = pod.tolerate("dedicated", "gpu")
    if template["port"]:
        pod = pod.host_port(template["port"])
    return pod.gated() if template["gated"] else pod


def held_by_group(state: PlannerState, config: PlannerConfig) -> dict[str, int]:
    """Per group: our pods bound (active) or reserved."""
    counts: dict[str, int] = {}
    for uid, pod in state.pods.items():
        if pods.is_ours(pod, config.scheduler_name) and pod.group_name and (
                (pods.uses_capacity(pod) and not pod.is_deleting) or uid in state.reservations):
            key = f"{pod.namespace}/{pod.group_name}"
            counts[key] = counts.get(key, 0) + 1
    return counts


def succeeded_after_run(state: PlannerState, config: PlannerConfig, key: str) -> int:
    """Our Succeeded members of a gang that has run: they keep their places in its quorum
    (`quorum.has_run`), so a replacement may be placed with fewer than minMember others."""
    group = state.groups.get(key)
    if group is None or not group.has_run:
        return 0
    return sum(1 for pod in state.pods.values()
               if pods.is_ours(pod, config.scheduler_name) and pod.phase == "Succeeded"
               and f"{pod.namespace}/{pod.group_name}" == key)


def check_round(cluster: Cluster, before: dict[str, int], decisions: list[Decision],
                used_before: dict[str, ResourceList]) -> None:
    state, config = cluster.state, cluster.config
    for decision in decisions:
        if not isinstance(decision, Placement):
            continue
        for member in decision.members:
            pod, node = state.pods[member.pod_uid], state.nodes[member.node]
            assert pod.scheduler_name == config.scheduler_name
            assert filters.static_reason(pod, node) is None
        podgroup = state.podgroups.get(decision.group)
        if podgroup is not None:
            held = before.get(decision.group, 0) + succeeded_after_run(state, config,
                                                                       decision.group)
            assert held + len(decision.members) >= podgroup.min_member
    for name, node in state.nodes.items():
        # never over-commit: a node shrunk under running pods may be over, but never by us
        used, earlier = state.node_used.get(name, {}), used_before.get(name, {})
        for resource, amount in used.items():
            limit = max(node.allocatable.get(resource, 0), earlier.get(resource, 0))
            assert amount <= limit, (name, resource)
    check_ports(state, decisions)


def check_ports(state: PlannerState, decisions: list[Decision]) -> None:
    """No member placed this round shares a host port with another pod on its node."""
    on_node: dict[str, list[str]] = {}
    for uid, charge in state.charges.items():
        on_node.setdefault(charge.node, []).append(uid)
    for decision in decisions:
        if not isinstance(decision, Placement):
            continue
        for member in decision.members:
            pod = state.pods[member.pod_uid]
            for other in on_node.get(member.node, []):
                if other != member.pod_uid:
                    assert filters.node_ports(pod.host_ports, state.pods[other].host_ports) is None


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(clusters(), st.lists(st.sampled_from(["bind", "bind", "rollback", "tick", "finish",
                                             "delete", "relabel", "delete-rollback"]),
                            min_size=1, max_size=8), st.booleans(), st.data())
def test_invariants_and_determinism(events: list[Built], actions: list[str],
                                    prefer_topology: bool, data: st.DataObject) -> None:
    config = PlannerConfig(prefer_topology=prefer_topology, scoring="least-allocated")
    cluster = Cluster(config).observe(*events)
    for action in actions:
        before = held_by_group(cluster.state, config)
        used_before = copy.deepcopy(cluster.state.node_used)
        decisions = cluster.plan()
        check_round(cluster, before, decisions, used_before)
        placements = [d for d in decisions if isinstance(d, Placement)]
        if action == "bind":
            cluster.bind(decisions)
        elif action == "rollback" and placements:
            cluster.roll_back(placements[0])
            cluster.bind(list(placements[1:]))  # list[Decision]: list is invariant
        elif action in ("delete", "relabel", "delete-rollback"):
            disturb(cluster, action, placements, data)
        elif action == "finish":
            for pod in sorted(cluster.state.pods.values(), key=lambda p: p.name):
                if pod.node_name is not None and pod.phase == "Running":
                    cluster.set_phase(pod.name, "Succeeded")
                    break
        cluster.advance(7)
    recorded = b"".join(codec.encode(d) + b"\n" for d in cluster.decisions)
    assert replay(cluster.log, config) == recorded
    assert replay_through_snapshots(cluster.log, config) == recorded
    restores = data.draw(st.sets(st.integers(0, len(cluster.log) - 1), max_size=4))
    assert replay_through_snapshots(cluster.log, config, restores) == recorded


def disturb(cluster: Cluster, action: str, placements: list[Placement],
            data: st.DataObject) -> None:
    """Delete a pod (rolling back its placement for `delete-rollback`) or move it to a group."""
    names = sorted(pod.name for pod in cluster.state.pods.values())
    if not names:
        return
    name = data.draw(st.sampled_from(names))
    if action == "relabel":
        pod = cluster.pod(name)
        group = data.draw(st.sampled_from([None, "g0", "g1", "g9"]))
        cluster.apply(msgspec.structs.replace(pod, group_name=group, at_ms=cluster.now_ms))
        cluster.bind(list(placements))  # list[Decision]: list is invariant
        return
    cluster.delete_pod(name)
    if action == "delete-rollback":
        for placement in placements:
            cluster.roll_back(placement, reason="pod deleted")
    else:
        cluster.bind([p for p in placements
                      if all(m.pod_uid in cluster.state.pods for m in p.members)])


def replay_through_snapshots(log: list[tuple[str, Any]], config: PlannerConfig,
                             restores: Collection[int] | None = None) -> bytes:
    """Replay, restoring the state from its snapshot after every plan, or (given `restores`)
    after exactly those log positions (also between events, before the next plan)."""
    state = empty_state()
    out = bytearray()
    for position, (kind, item) in enumerate(log):
        if kind == "event":
            state = planner.apply(state, item)
        else:
            state, decisions = planner.plan(state, config, item)
            out += b"".join(codec.encode(d) + b"\n" for d in decisions)
        if position in restores if restores is not None else kind == "plan":
            state = decode_state(encode_state(state))
    return bytes(out)


def test_snapshot_round_trips_the_state() -> None:
    cluster = Cluster().observe(make_node("n0"), make_podgroup("g", 2),
                                *[make_pod(f"g-{i}").in_group("g") for i in range(2)])
    cluster.plan()
    restored = decode_state(encode_state(cluster.state))
    assert restored.derived is None and cluster.state.derived is not None  # never encoded
    assert snapshot_fields(restored) == snapshot_fields(cluster.state)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.randoms(use_true_random=False))
def test_cached_scores_decide_as_a_fresh_index_on_a_larger_cluster(rng: random.Random) -> None:
    """Dozens of nodes, so cached scores catch up row by row (not by full recompute); every
    round must decide exactly as a planner rebuilt from a snapshot (no cache) does."""
    config = PlannerConfig(starvation_seconds=20, scoring=rng.choice(["least-allocated",
                                                                      "most-allocated"]))
    nodes = [make_node(f"n{i:02d}").capacity(cpu_milli=rng.choice([2000, 4000, 8000]),
                                             memory_bytes=8 * GIB).label("zone", "ab"[i % 2])
             for i in range(40)]
    cluster = Cluster(config).observe(*nodes)
    for round_number in range(12):
        for g in range(rng.randint(1, 6)):
            name, size = f"r{round_number}g{g}", rng.randint(1, 6)
            cpu = rng.choice([500, 1000, 2000, 3000])
            unrequested = rng.random() < 0.3  # its missing requests counted by the score
            cluster.observe(make_podgroup(name, size), *[
                make_pod(f"{name}-{i}").requests(cpu_milli=cpu).in_group(name).unrequested(
                    cpu_milli=0, memory_bytes=rng.choice([200, 400]) * MIB if unrequested else 0)
                for i in range(size + rng.randint(0, 2))])
        before = held_by_group(cluster.state, config)
        used_before = copy.deepcopy(cluster.state.node_used)
        decisions = cluster.plan()
        check_round(cluster, before, decisions, used_before)
        placements = [d for d in decisions if isinstance(d, Placement)]
        if placements and rng.random() < 0.3:
            cluster.roll_back(placements.pop(0))
        cluster.bind(list(placements))  # list[Decision]: list is invariant
        running = sorted(p.name for p in cluster.state.pods.values() if p.phase == "Running")
        for name in rng.sample(running, min(len(running), rng.randint(0, 8))):
            cluster.set_phase(name, "Succeeded")
        if rng.random() < 0.3:
            cluster.observe(make_node(f"n{rng.randint(0, 39):02d}").capacity(
                cpu_milli=rng.choice([2000, 8000]), memory_bytes=8 * GIB).label("zone", "a"))
        cluster.advance(rng.choice([1, 5, 30]))
    recorded = b"".join(codec.encode(d) + b"\n" for d in cluster.decisions)
    assert replay_through_snapshots(cluster.log, config) == recorded
