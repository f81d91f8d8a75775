"""Planner throughput benchmark (not a test): placed pods per second and memory.

Workload: N nodes (16 cpu, 64Gi, 110 pods), PodGroups of 2-16 identical pods (cpu 500m-2, memory
1-4Gi) until their requests reach ~90% of the cluster's cpu (capped at `--max-pods`). Everything
is applied, then the planner plans; an ideal binder confirms each placement and the planner plans
again until nothing more is placed (members past quorum wait for GroupBound, as in production).

Reports per cluster size: apply time (events/s), planning time and placed pods/s (the target is
>= 20,000 pods/s at 5,000 nodes) by wall clock and by this process's CPU time (steadier on a
shared machine), the snapshot size, and the process's peak RSS growth.

    python bench/planner_bench.py                 # 1k / 5k / 15k nodes
    python bench/planner_bench.py --nodes 5000    # one size
    python bench/planner_bench.py --batch 512     # also: plan every 512 events, like the shell
    python bench/planner_bench.py --nodes 1000 --constraints anti-affinity   # or: spread
    python bench/planner_bench.py --nodes 1000 --batch 512 --constraints volume-limits

`--constraints`: every gang's members also carry required pod anti-affinity on
`kubernetes.io/hostname` against their own gang (one member per node), or a DoNotSchedule zone
spread (maxSkew 1) over their own gang, or (`volumes`) a claim each, bound to a CSI
PersistentVolume of its own (VolumeBinding, VolumeZone), or (`volume-limits`) the same with a
CSINode on every node allowing 64 volumes of that driver (NodeVolumeLimits: the volumes of
every pod placed count, so a round's tally grows with the pods placed). The ideal binder
confirms every placement at once, so the planner's backpressure (`max_placements_in_flight`) is
off here unless given.
"""

from __future__ import annotations

import argparse
import gc
import random
import resource
import time
from dataclasses import dataclass

import msgspec

from services.contracts.decisions import Placement
from services.contracts.events import (
    AttachableVolume,
    ClaimObserved,
    CSINodeObserved,
    Event,
    GroupBound,
    NodeObserved,
    NodeSelectorRequirement,
    PodAffinityTerm,
    PodClaim,
    PodGroupObserved,
    PodObserved,
    TopologySpreadConstraint,
    VolumeObserved,
)
from services.planner.core import plan as planner
from services.planner.core.config import PlannerConfig
from services.planner.core.state import PlannerState, empty_state, encode_state

GIB = 2**30


@dataclass
class Workload:
    nodes: list[NodeObserved]
    groups: list[PodGroupObserved]
    pods: list[PodObserved]
    storage: list[Event]


CONSTRAINTS = ("none", "anti-affinity", "spread", "volumes", "volume-limits")
DRIVER = "bench.csi.example.com"
HOSTNAME, ZONE = "kubernetes.io/hostname", "topology.kubernetes.io/zone"


def constrained(pod: PodObserved, constraints: str) -> PodObserved:
    """`pod` with its gang's label and, per `constraints`, one-per-host anti-affinity or a
    zone spread over its own gang (module docstring)."""
    gang = (NodeSelectorRequirement(key="gang", operator="In", values=(pod.group_name or "",)),)
    labelled = msgspec.structs.replace(pod, labels={"gang": pod.group_name or ""})
    if constraints == "anti-affinity":
        return msgspec.structs.replace(labelled, pod_anti_affinity=(
            PodAffinityTerm(topology_key=HOSTNAME, label_selector=gang,
                            namespaces=(pod.namespace,)),))
    if constraints == "spread":
        return msgspec.structs.replace(labelled, topology_spread=(
            TopologySpreadConstraint(max_skew=1, topology_key=ZONE, label_selector=gang),))
    if constraints in ("volumes", "volume-limits"):
        return msgspec.structs.replace(pod, volume_claims=(PodClaim(pod.name),))
    return pod


def storage(load: Workload, constraints: str) -> list[Event]:
    """A claim per pod bound to a CSI volume of its own, and (`volume-limits`) a CSINode per
    node allowing 64 of the driver's volumes (module docstring)."""
    if constraints not in ("volumes", "volume-limits"):
        return []
    found: list[Event] = []
    if constraints == "volume-limits":
        found += [CSINodeObserved(at_ms=0, uid=f"c{node.uid}", name=node.name,
                                  resource_version="1", limits={DRIVER: 64})
                  for node in load.nodes]
    for pod in load.pods:
        found += [ClaimObserved(at_ms=0, uid=f"pvc-{pod.uid}", namespace=pod.namespace,
                                name=pod.name, resource_version="1", volume_name=f"pv-{pod.uid}",
                                is_bind_completed=True, phase="Bound"),
                  VolumeObserved(at_ms=0, uid=f"pv-{pod.uid}", name=f"pv-{pod.uid}",
                                 resource_version="1", phase="Bound",
                                 csi=AttachableVolume(DRIVER, f"h-{pod.uid}"))]
    return found


def workload(node_count: int, fill: float, max_pods: int, seed: int = 7,
             constraints: str = "none") -> Workload:
    """A deterministic gang workload requesting `fill` of the cluster's cpu."""
    rng = random.Random(seed)
    nodes = [NodeObserved(at_ms=0, name=f"node-{i:05d}", uid=f"n{i}", resource_version="1",
                          allocatable={"cpu": 16000, "memory": 64 * GIB, "pods": 110},
                          labels={ZONE: f"zone-{i % 3}", HOSTNAME: f"node-{i:05d}"})
             for i in range(node_count)]
    budget = int(node_count * 16000 * fill)
    groups: list[PodGroupObserved] = []
    pods: list[PodObserved] = []
    while budget > 0 and len(pods) < max_pods:
        index, size = len(groups), rng.randint(2, 16)
        cpu, memory = rng.choice((500, 1000, 1500, 2000)), rng.choice((1, 2, 4)) * GIB
        name = f"gang-{index:06d}"
        groups.append(PodGroupObserved(at_ms=0, uid=f"g{index}", namespace="bench", name=name,
                                       resource_version="1", created_at_ms=index,
                                       min_member=size))
        for member in range(size):
            pods.append(constrained(PodObserved(
                at_ms=0, uid=f"p{index}-{member}", namespace="bench", name=f"{name}-{member}",
                resource_version="1", scheduler_name="gangsched", phase="Pending",
                created_at_ms=index, requests={"cpu": cpu, "memory": memory, "pods": 1},
                group_name=name), constraints))
        budget -= size * cpu
    load = Workload(nodes, groups, pods, [])
    load.storage = storage(load, constraints)
    return load


def bind(state: PlannerState, placements: list[Placement], at_ms: int) -> PlannerState:
    """An ideal binder: every member bound (pod observed on its node), then GroupBound."""
    for placement in placements:
        for member in placement.members:
            pod = state.pods[member.pod_uid]
            state = planner.apply(state, msgspec.structs.replace(
                pod, node_name=member.node, phase="Running", at_ms=at_ms))
        state = planner.apply(state, GroupBound(at_ms=at_ms, decision_id=placement.id,
                                                group=placement.group))
    return state


def rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def run(node_count: int, fill: float, max_pods: int, batch: int | None,
        config: PlannerConfig, constraints: str = "none") -> None:
    load = workload(node_count, fill, max_pods, constraints=constraints)
    events: list[Event] = [*load.nodes, *load.storage, *load.groups, *load.pods]
    gc.collect()
    rss_before = rss_mib()
    state, seq, placed, planning, planning_cpu = empty_state(), 0, 0, 0.0, 0.0
    started = time.perf_counter()
    applying = 0.0
    step = batch or len(events)
    for first in range(0, len(events), step):
        tick = time.perf_counter()
        for event in events[first:first + step]:
            state = planner.apply(state, event)
        seq += step
        applying += time.perf_counter() - tick
        tick, cpu = time.perf_counter(), time.process_time()
        state, decisions = planner.plan(state, config, seq)
        planning += time.perf_counter() - tick
        planning_cpu += time.process_time() - cpu
        placements = [d for d in decisions if isinstance(d, Placement)]
        placed += sum(len(p.members) for p in placements)
        state = bind(state, placements, 0)
    for _ in range(100_000):  # members beyond quorum wait for GroupBound; plan until quiet
        seq += 1
        tick, cpu = time.perf_counter(), time.process_time()
        state, decisions = planner.plan(state, config, seq)
        planning += time.perf_counter() - tick
        planning_cpu += time.process_time() - cpu
        placements = [d for d in decisions if isinstance(d, Placement)]
        if not placements:
            break
        placed += sum(len(p.members) for p in placements)
        state = bind(state, placements, 0)
    total = time.perf_counter() - started
    snapshot = len(encode_state(state))
    mode = (f"batches of {batch}" if batch else "one batch") + (
        f", {constraints}" if constraints != "none" else "")
    print(f"{node_count:>6} nodes {len(load.pods):>7} pods {len(load.groups):>6} gangs ({mode}): "
          f"placed {placed:>7} ({placed / len(load.pods):.1%}); "
          f"apply {len(events) / applying:>9,.0f} events/s; "
          f"plan {planning:6.2f}s wall = {placed / planning:>7,.0f} placed pods/s "
          f"({planning_cpu:.2f}s CPU = {placed / planning_cpu:>7,.0f}/s); "
          f"total {total:6.2f}s; snapshot {snapshot / 2**20:6.1f} MiB; "
          f"peak RSS +{rss_mib() - rss_before:,.0f} MiB")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, nargs="*", default=[1000, 5000, 15000])
    parser.add_argument("--fill", type=float, default=0.9)
    parser.add_argument("--max-pods", type=int, default=150_000)
    parser.add_argument("--batch", type=int, default=None)
    parser.add_argument("--scoring", default="least-allocated")
    parser.add_argument("--constraints", choices=CONSTRAINTS, default="none")
    parser.add_argument("--max-placements-in-flight", type=int, default=0)
    args = parser.parse_args()
    config = PlannerConfig(scoring=args.scoring,
                           max_placements_in_flight=args.max_placements_in_flight)
    for node_count in args.nodes:
        run(node_count, args.fill, args.max_pods, args.batch, config, args.constraints)


if __name__ == "__main__":
    main()
